"""The browser env through a real ``openenv-train serve browser`` process: scripted solvers, seeding, errors, a crash."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openenv.core import GenericEnvClient as OpenEnvGenericClient  # heavy: imported at collection, not in a test

from openenv_train.client import GenericEnvClient
from openenv_train.envs import list_envs
from openenv_train.envs.browser import GRAMMAR, SOLVABLE_TASKS, ActionError, BrowserEnvironment, parse_action
from tests.envs._browser_solvers import SOLVERS, require_browser, solve

Obs = dict[str, Any]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """One ``serve browser`` subprocess (one Chromium) shared by this module's tests."""
    require_browser()
    tmp = tmp_path_factory.mktemp("browser")
    ready, log = tmp / "url", tmp / "serve.log"
    process = subprocess.Popen([sys.executable, "-m", "openenv_train.cli", "serve", "browser", "--port", "0",
                                "--ready-file", str(ready)], stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not ready.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"serve browser did not start: {log.read_text()[-2000:]}")
        time.sleep(0.05)
    try:
        yield ready.read_text().strip(), process
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def env(server: tuple[str, subprocess.Popen[bytes]]) -> Iterator[Any]:
    with GenericEnvClient(server[0], reply_timeout_s=120).sync() as client:
        yield client


class Session:
    """A sync client with observations as plain dicts."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def reset(self, **options: Any) -> Obs:
        result = self.client.reset(**options)
        return {**result.observation, "done": result.done, "reward": result.reward}

    def step(self, action: str) -> Obs:
        result = self.client.step({"action_str": action})
        return {**result.observation, "done": result.done, "reward": result.reward}


def test_catalog_lists_every_solvable_task_and_each_has_a_solver() -> None:
    names = {spec.name for spec in list_envs()}
    assert {f"browser/{task}" for task in SOLVABLE_TASKS} | {"browser"} <= names
    assert set(SOLVABLE_TASKS) == set(SOLVERS) and len(SOLVABLE_TASKS) >= 15


def test_action_strings_parse_or_name_the_grammar() -> None:
    assert parse_action("click('13')").args == {"bid": "13"}
    assert parse_action('select_option("4", ["a", "b"])').args == {"bid": "4", "options": ["a", "b"]}
    assert parse_action("noop()").args == {"wait_ms": 0}
    for bad in ("clik('1')", "click(", "click(x)", "__import__('os')", "fill('1')", "click('1', '2')", "1 + 1"):
        with pytest.raises(ActionError, match="cannot parse action") as info:
            parse_action(bad)
        assert GRAMMAR in str(info.value)


@pytest.mark.parametrize("task", SOLVABLE_TASKS)
def test_scripted_solver_gets_reward_one(env: Any, task: str) -> None:
    session = Session(env)
    first = session.reset(task=task, seed=11)
    assert first["goal"] and first["axtree_txt"].startswith("RootWebArea") and first["done"] is False
    last = solve(session.step, first, SOLVERS[task])
    assert last["reward"] == 1.0, last
    state = env.state()
    assert state["benchmark"] == "miniwob" and state["task_name"] == task
    assert state["goal"] == first["goal"] and state["cum_reward"] == 1.0


def test_same_seed_same_page_and_the_mix_draws_by_seed(env: Any) -> None:
    session = Session(env)
    a, b = session.reset(task="click-checkboxes", seed=5), session.reset(task="click-checkboxes", seed=5)
    assert (a["goal"], a["axtree_txt"], a["pruned_html"]) == (b["goal"], b["axtree_txt"], b["pruned_html"])
    assert session.reset(task="click-checkboxes", seed=6)["axtree_txt"] != a["axtree_txt"]
    drawn = {(session.reset(seed=seed), env.state()["task_name"])[1] for seed in range(4)}
    assert drawn <= set(SOLVABLE_TASKS) and len(drawn) > 1


def test_bad_actions_and_unknown_bids_come_back_as_errors(env: Any) -> None:
    session = Session(env)
    first = session.reset(task="click-button", seed=2)
    bad = session.step("clik('3')")
    assert bad["last_action_error"] is True and GRAMMAR in bad["error"] and bad["done"] is False
    missing = session.step("click('9999')")
    assert "no element with bid '9999'" in missing["error"] and missing["last_action_error"] is True
    button = SOLVERS["click-button"](first).__next__().split("'")[1]
    refused = session.step(f"select_option('{button}', 'x')")
    assert "select_option needs the bid of a <select>" in refused["error"]
    fine = session.step("noop()")
    assert fine["error"] == "" and fine["last_action_error"] is False
    assert fine["axtree_txt"] == first["axtree_txt"]
    with pytest.raises(Exception, match="no MiniWoB task 'click-buton'; did you mean 'click-button'"):
        session.reset(task="click-buton")


def test_screenshot_is_opt_in_and_rendered_for_people(env: Any) -> None:
    session = Session(env)
    plain = session.reset(task="click-tab", seed=1)
    assert plain["screenshot"] is None
    view = BrowserEnvironment.render_observation(plain)
    assert view is not None and view.startswith("<pre>") and "Goal: Click on Tab #" in view
    shot = session.reset(task="click-tab", seed=1, screenshot=True)
    assert base64.b64decode(shot["screenshot"]).startswith(b"\x89PNG\r\n\x1a\n")
    assert (BrowserEnvironment.render_observation(shot) or "").startswith('<img alt="page screenshot" src="data:image/png')
    hostile = {"goal": "<script>alert(1)</script>", "axtree_txt": "", "screenshot": "\"><script>x</script>"}
    assert "<script>" not in (BrowserEnvironment.render_observation(hostile) or "")


def test_openenv_generic_client_solves_a_task(server: tuple[str, subprocess.Popen[bytes]]) -> None:
    with OpenEnvGenericClient(base_url=server[0]).sync() as client:
        result = client.reset(task_name="login-user", seed=3)  # browsergym_env's spelling of the option
        obs: Obs = {**result.observation, "done": result.done, "reward": result.reward}

        def step(action: str) -> Obs:
            out = client.step({"action_str": action})
            return {**out.observation, "done": out.done, "reward": out.reward}

        assert solve(step, obs, SOLVERS["login-user"])["reward"] == 1.0


def test_missing_extra_names_the_install_line(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['miniwob'] = None\n"
            "from openenv_train.envs.browser import BrowserEnvironment\n"
            "BrowserEnvironment().reset(task='click-button')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "pip install 'openenv-train[browser]'" in out.stderr, out.stderr[-2000:]


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _chromium_pid(server_pid: int) -> int:
    """The browser process: the child named chromium of the server's chromedriver."""
    for driver in _children(server_pid):
        for child in _children(driver):
            if "chrom" in Path(f"/proc/{child}/comm").read_text():
                return child
    raise AssertionError("no chromium process under the env server")


def test_a_killed_browser_is_restarted_and_the_session_told(env: Any, server: tuple[str, subprocess.Popen[bytes]]) -> None:
    session = Session(env)
    session.reset(task="click-button", seed=4)
    old = _chromium_pid(server[1].pid)
    os.kill(old, signal.SIGKILL)
    started = time.monotonic()
    lost = session.step("noop()")
    assert "browser crashed" in lost["error"] and "call reset" in lost["error"] and lost["done"] is True
    assert time.monotonic() - started < 60
    first = session.reset(task="click-button", seed=4)  # a fresh browser, a fresh tab
    assert solve(session.step, first, SOLVERS["click-button"])["reward"] == 1.0
    assert _chromium_pid(server[1].pid) != old


def test_a_killed_env_server_leaves_no_browser_behind(server: tuple[str, subprocess.Popen[bytes]]) -> None:
    # runs last: it kills the module's server
    browser = _chromium_pid(server[1].pid)
    server[1].kill()
    server[1].wait(30)
    deadline = time.monotonic() + 60
    while Path(f"/proc/{browser}").exists() and "Z" not in Path(f"/proc/{browser}/stat").read_text().rsplit(")", 1)[1][:3]:
        assert time.monotonic() < deadline, f"chromium {browser} outlived its env server"
        time.sleep(0.1)
