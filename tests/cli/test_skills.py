"""``openenv-train skills add|preview``: the SKILL.md, its central copy and each agent's link."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_train.cli import main


def test_preview_prints_the_skill(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["skills", "preview"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("---\nname: openenv-train-cli\n") and "openenv-train validate" in text


def test_add_links_claude_and_codex_to_one_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["skills", "add", "--claude", "--codex"]) == 0
    central = tmp_path / ".agents/skills/openenv-train-cli/SKILL.md"
    for agent in (".claude", ".codex"):
        link = tmp_path / agent / "skills/openenv-train-cli"
        assert link.is_symlink() and (link / "SKILL.md").read_text() == central.read_text()
    assert main(["skills", "add", "--claude"]) == 1  # already there
    assert "--force" in capsys.readouterr().err
    assert main(["skills", "add", "--claude", "--force"]) == 0


def test_add_to_a_destination_and_global(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["skills", "add", "--dest", str(tmp_path / "mine")]) == 0
    assert (tmp_path / "mine/openenv-train-cli/SKILL.md").is_file()
    assert main(["skills", "add", "--dest", str(tmp_path / "x"), "--claude"]) == 2
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert main(["skills", "add", "--global", "--codex"]) == 0
    assert (tmp_path / "home/.codex/skills/openenv-train-cli/SKILL.md").is_file()
