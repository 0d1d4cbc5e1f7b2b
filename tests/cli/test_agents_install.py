"""``openenv-train agents install``: several agents install at once, and one failing install loses none of the others.

npm's registry cannot be reached from tests, so ``npm`` here is a stand-in script on PATH that lays out the
package's binary where the real one would; everything above it (the cache, the CLI) is the real code.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from openenv_train.cli import main
from openenv_train.harbor import AGENT_SPECS, installed_dir

# Each stand-in waits until every install of the command has started, so installs run one after another fail it.
_FAKE_NPM = """#!{python}
import json, pathlib, sys, time
argv = sys.argv[1:]
folder, package = pathlib.Path(argv[argv.index("--prefix") + 1]), argv[-1]
state = pathlib.Path({state!r})
plan = json.loads((state / "plan.json").read_text())
(state / ("started-" + package.replace("/", "_"))).touch()
deadline = time.monotonic() + 60
while len(list(state.glob("started-*"))) < plan["installs"]:
    if time.monotonic() > deadline:
        sys.exit("npm stand-in: the other installs never started beside this one")
    time.sleep(0.05)
if package in plan["fail"]:
    sys.exit("npm ERR! 404 Not Found: " + package)
binary = folder / plan["binaries"][package]
binary.parent.mkdir(parents=True, exist_ok=True)
binary.write_text("#!/bin/sh\\n")
binary.chmod(0o755)
"""


def test_agents_install_at_once_and_a_failure_keeps_the_others(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    npm_agents = [s for s in AGENT_SPECS.values() if s.installer == "npm"]
    good, bad = npm_agents[:3], npm_agents[3]
    state, bin_dir, cache = tmp_path / "state", tmp_path / "bin", tmp_path / "agents"
    state.mkdir()
    bin_dir.mkdir()
    (state / "plan.json").write_text(json.dumps({
        "installs": 4, "fail": [bad.pinned], "binaries": {s.pinned: s.binary for s in npm_agents}}))
    npm = bin_dir / "npm"
    npm.write_text(_FAKE_NPM.format(python=sys.executable, state=str(state)))
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("OPENENV_TRAIN_AGENTS_DIR", str(cache))

    code = main(["agents", "install", *(s.name for s in good), bad.name])
    err = capsys.readouterr().err
    assert code == 1
    assert f"{bad.name}: installing {bad.pinned} failed" in err and "404 Not Found" in err, err
    assert "never started beside" not in err, err
    for spec in good:  # installed where runs look for them, each with its marker
        folder = installed_dir(spec)
        assert (folder / spec.binary).is_file() and (folder / "installed.json").is_file()
    assert not (cache / bad.name / bad.version / "installed.json").exists()

    assert main(["agents", "install", good[0].name]) == 0  # already there: a no-op that starts no npm
    assert len(list(state.glob("started-*"))) == 4
