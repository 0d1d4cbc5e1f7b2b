"""``ray start --head`` on loopback, then ``ray job submit`` of the collection recipe; the job writes traces."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_train.trace import read_traces
from tests.pool._ray_head import LOOPBACK, RAY, free_port, ray_env, short_temp_dir, submit_job
from tests.pool._ray_head import ray_head as head_process

pytest.importorskip("ray.dashboard.modules.job", reason="the job API needs ray[default]")
pytestmark = pytest.mark.usefixtures("no_shared_ray")  # its `ray start` head owns the machine's Ray alone


@pytest.fixture(scope="module")
def ray_head() -> Iterator[tuple[str, dict[str, str]]]:
    """A Ray head on 127.0.0.1 with its dashboard (job API); a token only this module knows; stopped by its pid.

    One head serves both jobs (each writes its own folder): a head and its dashboard take seconds to start."""
    if RAY is None:
        pytest.skip("the ray CLI is not installed")
    temp_dir = short_temp_dir()
    env = ray_env(temp_dir, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32), **{LOOPBACK: "0"})
    dashboard = free_port()
    args = ("--num-cpus=2", "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}")
    try:
        with head_process(temp_dir, extra_args=args, env=env):
            yield f"http://127.0.0.1:{dashboard}", env
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.mark.timeout(300)
def test_ray_job_submit_runs_the_collection_recipe(ray_head: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    address, env = ray_head
    job = [RAY, "job", "submit", "--address", address, "--", sys.executable, "-m", "openenv_train.recipes.collect",
           f"output_dir={tmp_path}", "name=job", "tasks=3", "num_generations=2", "show_progress=false"]
    done = submit_job(job, env, timeout_s=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "succeeded" in done.stdout + done.stderr
    rows = read_traces(tmp_path / "job")
    assert sorted(r.episode_id for r in rows) == [f"g{i}-{k}" for i in range(3) for k in range(2)]
    assert all(r.ok and r.run_id == "job" for r in rows)
    assert (tmp_path / "job" / "summary.json").exists()


@pytest.mark.timeout(600)
def test_ray_job_submit_runs_the_grpo_wordle_recipe(ray_head: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    """The rollouts guide's ``ray job submit`` of the training recipe, with the smoke config, on a local head node."""
    address, env = ray_head
    # the games run on an env server that is already up (--env-url), as with a remote or OpenEnv server
    ready = tmp_path / "ready"
    server = subprocess.Popen([sys.executable, "-m", "openenv_train.cli", "serve", "wordle", "--port", "0",
                               "--ready-file", str(ready)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            if ready.exists() and ready.read_text().strip():
                break
            time.sleep(0.1)
        url = ready.read_text().strip()
        config = Path(__file__).resolve().parents[2] / "configs" / "grpo_wordle_smoke.yaml"
        job = [RAY, "job", "submit", "--address", address, "--", sys.executable, "-m",
               "openenv_train.recipes.grpo_wordle", "--config", str(config), "--env-url", url, f"output.dir={tmp_path}",
               "output.name=job", "grpo.steps=2", "grpo.save_steps=2",
               # bounded by work, not by the clock: a few SFT steps and small evaluations, whatever the load
               "sft.episodes=256", "eval.words=4", "eval.unconstrained=false"]
        done = submit_job(job, env, timeout_s=540)
    finally:
        server.terminate()
        server.wait(30)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "succeeded" in done.stdout + done.stderr
    rows = read_traces(tmp_path / "job")
    assert sum(r.episode_id.startswith("grpo-") for r in rows) == 2 * 2 * 2
    assert all(r.ok for r in rows) and {r.env.name for r in rows} == {url}
    import json

    summary = json.loads((tmp_path / "job" / "summary.json").read_text())
    assert set(summary["phases"]) == {"untrained", "sft", "grpo", "sft_beam", "grpo_beam"} and "improvement" in summary
