"""A small Git repository of env folders, committed, for the catalog snapshot tests (ours and the compat ones)."""

from __future__ import annotations

import subprocess
from pathlib import Path

URI = "https://github.com/example/envs.git"


def make_repo(root: Path, *, broken: bool = False) -> Path:
    """``root`` as a Git repository with ``envs/maze`` and ``envs/poker`` (and ``envs/broken`` without a description)."""
    envs = {
        "maze": ("name: maze\nspec_version: 1\ndescription: Find the exit of a grid maze\n",
                 '[project]\nname = "maze"\nlicense = "mit"\ndependencies = ["openenv>=0.10"]\n',
                 "---\ntags: [grid, navigation]\n---\n# Maze\n"),
        "poker": ("name: poker\ndescription: Heads-up poker against a fixed bot\n", None,
                  "---\nlicense: apache-2.0\ntags: [cards]\n---\n# Poker\n"),
    }
    if broken:
        envs["broken"] = ("name: broken\n", None, None)
    for name, (manifest, pyproject, readme) in envs.items():
        folder = root / "envs" / name
        folder.mkdir(parents=True)
        (folder / "openenv.yaml").write_text(manifest)
        if pyproject:
            (folder / "pyproject.toml").write_text(pyproject)
        if readme:
            (folder / "README.md").write_text(readme)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-C", str(root)]
    subprocess.run([*git[:-2], "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "envs"], check=True)
    return root
