"""Every moved name still imports from its old place, with a deprecation warning that names the new one."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

from openenv_train.core import REMOVED_IN, OpenEnvTrainDeprecationWarning

MOVED = {
    "openenv_train.harbor": {
        **dict.fromkeys([
            "ATIF_VERSION", "ROW_SCHEMA_VERSION", "TRACE_SCHEMA", "TURN_METADATA_KEYS", "CaptureError",
            "CaptureSessionExists", "CaptureStore", "EnvInfo", "EnvStep", "EpisodeKey", "ErrorInfo", "HubPushError",
            "PolicyInfo", "RunDirLocked", "TraceReadError", "TraceRow", "TraceWriteError", "TraceWriter",
            "TrainingTrace", "TrainingTurn", "UnknownCaptureSession", "build_turn", "completion_loss_mask",
            "conversation", "episode_key", "export_atif", "iter_traces", "load_dataset", "openai_logprobs",
            "push_to_hub", "read_traces", "sft_features", "shard_paths", "to_atif", "to_sft_dataset", "traces_glob",
        ], "openenv_train.trace"),
        "policy_endpoint": "openenv_train.policy",
        "docker_available": "openenv_train.containers",
    },
    "openenv_train.client": {
        **dict.fromkeys(["DockerLimits", "DockerProvider", "InProcessProvider", "LocalProcessProvider",
                         "RemoteProvider", "UnixSocketProvider", "space_url"], "openenv_train.launch"),
        "docker_available": "openenv_train.containers",
    },
    "openenv_train.web": {"Asset": "openenv_train.http"},
    "openenv_train.core": dict.fromkeys(["EventLoopThread", "LoopThread", "run_on_loop"], "openenv_train.loops"),
    "openenv_train.envs.spiel_table": dict.fromkeys(["GAMES", "SpielGame"], "openenv_train.envs.pyspiel_games"),
    "openenv_train.envs.textarena_table": dict.fromkeys(["TEXTARENA_GAMES", "TextArenaGame"],
                                                        "openenv_train.envs.textarena_games"),
}
#: Modules that moved whole: each name the new module exports imports from the old one, with a warning.
MOVED_MODULES = {
    "openenv_train.envs.openspiel": "openenv_train.envs.python_games",
    "openenv_train.envs.openspiel.client": "openenv_train.envs.python_games.client",
    "openenv_train.envs.spiel": "openenv_train.envs.pyspiel_games",
    "openenv_train.envs.spiel.client": "openenv_train.envs.pyspiel_games.client",
    "openenv_train.envs.family": "openenv_train.envs.family_clients",
    "openenv_train.envs.sandboxing": "openenv_train.envs.run_limits",
}
for _old, _new in MOVED_MODULES.items():
    MOVED[_old] = dict.fromkeys(importlib.import_module(_new).__all__, _new)
CASES = [(old, name, new) for old, names in MOVED.items() for name, new in names.items()]


@pytest.mark.parametrize(("old", "name", "new"), CASES, ids=[f"{o}.{n}" for o, n, _ in CASES])
def test_a_moved_name_imports_from_its_old_place_with_a_warning(old: str, name: str, new: str) -> None:
    module = importlib.import_module(old)
    vars(module).pop(name, None)  # a name is cached after its first use: look it up afresh
    with pytest.warns(OpenEnvTrainDeprecationWarning) as caught:
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(new), name)
    message = str(caught[0].message)
    assert f"{old}.{name} moved to {new}.{name}" in message and REMOVED_IN in message
    assert caught[0].filename == __file__  # the warning points at the code that used the old name
    assert name not in module.__all__ and name in dir(module)


def test_from_import_of_a_moved_name_warns_at_the_importing_line() -> None:
    code = ("import warnings; warnings.simplefilter('error')\n"
            "try:\n    from openenv_train.client import LocalProcessProvider\n"
            "except DeprecationWarning as exc:\n    print(type(exc).__name__, exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("OpenEnvTrainDeprecationWarning openenv_train.client.LocalProcessProvider moved to "
                          "openenv_train.launch.LocalProcessProvider")


def test_names_that_did_not_move_stay_silent_and_unknown_names_fail() -> None:
    import openenv_train.harbor as harbor

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert harbor.HarborError.__module__ == "openenv_train.harbor._task_errors"
        assert harbor.TaskError.__mro__[1] is harbor.HarborError
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
        harbor.NoSuchName  # noqa: B018


@pytest.mark.parametrize(("old", "new"), [("GRPOSection", "WordleGRPOSection"), ("EvalSection", "WordleEvalSection")])
def test_the_wordle_recipes_renamed_sections_import_by_their_old_names_with_a_warning(old: str, new: str) -> None:
    import openenv_train.recipes.grpo_wordle as recipe
    import openenv_train.recipes.wordle as wordle

    with pytest.warns(OpenEnvTrainDeprecationWarning) as caught:
        value = getattr(recipe, old)
    assert value is getattr(wordle, new)
    message = str(caught[0].message)
    assert f"grpo_wordle.{old} is now openenv_train.recipes.wordle.{new}" in message and REMOVED_IN in message
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the recipe's other names stay where they were, silently
        assert recipe.GrpoWordleConfig is wordle.GrpoWordleConfig and recipe.WordleAgent is wordle.WordleAgent
        assert recipe.TeacherSection is wordle.TeacherSection and recipe.EnvSection is wordle.EnvSection
