"""``catalog build`` / ``catalog inspect`` / ``discover``: OpenEnv's metadata-only snapshots of committed env folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenv_train.cli import main

from ._catalog_repo import URI, make_repo


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    out = tmp_path / "catalog.json"
    assert main(["catalog", "build", "--repository", str(repo), "--repository-uri", URI, "--publisher", "example.org",
                 "--output", str(out)]) == 0
    return out


def test_build_writes_a_complete_snapshot(snapshot: Path) -> None:
    data = json.loads(snapshot.read_text())
    assert data["schema_version"] == "0.1-draft" and data["complete"] and data["inventory"]["paths"] == [
        "envs/maze", "envs/poker"]
    maze, poker = data["entries"]
    assert maze["data"]["license"] == "MIT" and maze["data"]["framework_requirement"] == "openenv>=0.10"
    assert poker["data"]["license"] == "Apache-2.0" and poker["tags"] == ["cards"]
    assert maze["identifier"].startswith("urn:air:example.org:openenv:")


def test_inspect_and_discover(snapshot: Path, capsys: pytest.CaptureFixture[str]) -> None:
    maze_id = json.loads(snapshot.read_text())["entries"][0]["identifier"]
    capsys.readouterr()
    assert main(["catalog", "inspect", maze_id, "--catalog", str(snapshot)]) == 0
    assert json.loads(capsys.readouterr().out)["displayName"] == "maze"
    assert main(["discover", "grid exit", "--catalog", str(snapshot), "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert [(r["displayName"], r["score"]) for r in results] == [("maze", 100)]
    assert main(["discover", "--catalog", str(snapshot), "--filter", "license=Apache-2.0"]) == 0
    assert capsys.readouterr().out.startswith("poker: Heads-up poker")
    assert main(["discover", "wordle", "--json"]) == 0  # no snapshot: the built-in catalog
    assert "wordle" in [r["name"] for r in json.loads(capsys.readouterr().out)]


def test_bad_input_is_named(snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "inspect", "urn:air:nope", "--catalog", str(snapshot)]) == 1
    assert "no entry 'urn:air:nope'" in capsys.readouterr().err
    edited = json.loads(snapshot.read_text())
    edited["entries"][0]["description"] = "changed"
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    assert main(["discover", "x", "--catalog", str(tmp_path / "edited.json")]) == 1
    assert "does not match its digest" in capsys.readouterr().err
    assert main(["discover", "x", "--catalog", str(snapshot), "--filter", "color=red"]) == 1
    assert "unsupported filter color" in capsys.readouterr().err
    broken = make_repo(tmp_path / "broken", broken=True)
    assert main(["catalog", "build", "--repository", str(broken), "--repository-uri", URI, "--publisher",
                 "example.org", "--output", str(tmp_path / "b.json")]) == 1
    assert "envs/broken: Environment needs an authored task description" in capsys.readouterr().err
    assert main(["catalog", "build", "--repository", str(tmp_path), "--repository-uri", "http://x", "--publisher",
                 "example.org", "--output", str(tmp_path / "c.json")]) == 1
    assert "GitHub HTTPS clone URI" in capsys.readouterr().err
