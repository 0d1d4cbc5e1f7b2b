"""Trace rows -> ART trajectories: pure fields always; real ``art`` objects when openpipe-art is installed."""

from __future__ import annotations

import importlib.util

import pytest

from openenv_train.integrations.art import to_art_groups, to_art_trajectory_fields
from tests.integrations._art import ART_MISSING
from tests.rubrics._rows import wordle_row


def test_fields_carry_messages_reward_and_metadata() -> None:
    row = wordle_row("crane", ["[slate]", "[crane]"], group_id="g0")
    fields = to_art_trajectory_fields(row)
    # each call prompts with the current board alone: two lines, the later one the main line, neither lost
    roles = [m["role"] for m in fields["messages_and_choices"]]
    assert roles == ["user", "assistant"] and fields["messages_and_choices"][-1]["content"] == "[crane]"
    (other,) = fields["additional_histories"]
    assert [m["role"] for m in other["messages_and_choices"]] == ["user", "assistant"]
    assert other["messages_and_choices"][-1]["content"] == "[slate]"
    assert fields["reward"] == row.reward and fields["metadata"]["group_id"] == "g0"
    assert fields["metrics"]["turns"] == 2 and fields["metrics"]["done"] is True


@pytest.mark.skipif(ART_MISSING, reason="openpipe-art is not installed (optional extra)")
def test_real_art_objects() -> None:  # pragma: no cover - needs the optional package
    rows = [wordle_row("crane", ["[crane]"], group_id="g0", episode_id=f"e{i}") for i in range(2)]
    groups = to_art_groups(rows)
    assert len(groups) == 1 and len(groups[0].trajectories) == 2


def test_without_art_the_error_says_what_to_install() -> None:
    if importlib.util.find_spec("art") is not None:
        pytest.skip("openpipe-art is installed")
    with pytest.raises(ImportError, match="pip install 'openpipe-art"):
        to_art_groups([wordle_row("crane", ["[crane]"])])
