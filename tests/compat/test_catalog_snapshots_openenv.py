"""Catalog snapshots both ways: openenv 0.10's ``build_catalog`` and ours give the same snapshot (digest and all)
of the same committed env folders, and each reads the other's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenv_train.cli._catalog_snapshot import build_snapshot, load_snapshot, search
from tests.cli._catalog_repo import URI, make_repo
from tests.compat._release import CURRENT

pytestmark = pytest.mark.skipif(not CURRENT, reason="catalog snapshots are openenv >= 0.10")


def test_the_same_snapshot_from_both_and_each_reads_the_others(tmp_path: Path) -> None:
    from openenv.discovery import build_catalog, load_catalog, search_catalog, write_catalog

    repo = make_repo(tmp_path / "repo")
    theirs = build_catalog(repo, repository_uri=URI, publisher="example.org")
    ours = build_snapshot(repo, repository_uri=URI, publisher="example.org")
    assert ours == theirs.model_dump(by_alias=True, exclude_none=True, mode="json")
    (tmp_path / "ours.json").write_text(json.dumps(ours))
    assert load_catalog(tmp_path / "ours.json").digest == ours["digest"]
    write_catalog(theirs, tmp_path / "theirs.json")
    hits = search(load_snapshot(tmp_path / "theirs.json"), "poker bot")
    assert [(entry["displayName"], score) for entry, score in hits] == [
        (m.entry.display_name, m.score) for m in search_catalog(theirs, "poker bot")]
