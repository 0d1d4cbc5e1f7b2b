"""Recipe configs: the Wordle recipe's ``pool:`` section is a PoolConfig (every field settable, the recipe's defaults
kept), a section given in part keeps its default's other values, and bad keys name the known ones."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml

from openenv_train.pool import PoolConfig
from openenv_train.recipes._config import load_config
from openenv_train.recipes.collect import CollectConfig
from openenv_train.recipes.grpo_wordle import GrpoWordleConfig, PoolSection, recipe_pool
from openenv_train.recipes.wordle import SET_ELSEWHERE
from openenv_train.rubrics import get_rubric

ROOT = Path(__file__).resolve().parents[2]


def test_the_games_pool_is_the_one_the_recipe_built_before() -> None:
    """The recipe's figures depend on these: 2 actors x 50 sessions, 120 s a game, PoolConfig's other defaults."""
    assert GrpoWordleConfig().pool_config(sandbox=True) == PoolConfig(
        num_actors=2, sessions_per_actor=50, episode_timeout_s=120.0, max_turns=10, sandbox=True, show_progress=True,
        run_id="grpo-wordle")


def test_a_pool_field_the_section_did_not_have_reaches_the_pool(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("pool:\n  max_retries: 0\n  max_in_flight: 16\n  actor_resources: {rollout: 1}\n")
    cfg = load_config(GrpoWordleConfig, path, ["pool.write=actors", "env.max_turns=7", "output.name=mine"])
    pool = cfg.pool_config(sandbox=False)
    assert (pool.max_retries, pool.max_in_flight, pool.actor_resources, pool.write) == (0, 16, {"rollout": 1}, "actors")
    # the fields not given keep the recipe's defaults, not PoolConfig's (300 s, 8 sessions)
    assert (pool.num_actors, pool.sessions_per_actor, pool.episode_timeout_s) == (2, 50, 120.0)
    assert (pool.max_turns, pool.run_id) == (7, "mine")


def test_the_saved_config_leaves_out_the_pool_fields_other_options_set_and_loads_back(tmp_path: Path) -> None:
    cfg = load_config(GrpoWordleConfig, None, ["env.max_turns=7", "pool.max_retries=0"])
    saved = cfg.as_dict()
    assert not set(SET_ELSEWHERE) & set(saved["pool"])  # not PoolConfig's defaults where the run used others
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(saved, sort_keys=False))
    assert load_config(GrpoWordleConfig, path) == cfg


def test_a_section_given_in_part_keeps_its_defaults_other_values() -> None:
    cfg = load_config(GrpoWordleConfig, ROOT / "configs" / "grpo_wordle_smoke.yaml", [])
    assert (cfg.pool.num_actors, cfg.pool.sessions_per_actor, cfg.pool.episode_timeout_s) == (1, 8, 120.0)
    # sft's default (budget_s=600) comes from the recipe's default_factory, not SFTSection's (None)
    assert load_config(GrpoWordleConfig, None, ["sft.epochs=2"]).sft.budget_s == 600.0


def test_a_bad_pool_key_names_the_key_and_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown option 'pool\.num_actorz'.*options of pool: num_actors, "
                                         r"sessions_per_actor"):
        load_config(GrpoWordleConfig, None, ["pool.num_actorz=1"])
    path = tmp_path / "bad.yaml"
    path.write_text("pool:\n  max_retriez: 1\n")
    with pytest.raises(ValueError, match=r"unknown option\(s\) pool\.max_retriez; options of pool: .*max_retries"):
        load_config(GrpoWordleConfig, path)
    with pytest.raises(ValueError, match=r"option pool\.write: Input should be 'driver' or 'actors'"):
        load_config(GrpoWordleConfig, None, ["pool.write=disk"])
    with pytest.raises(ValueError, match=r"num_actors and sessions_per_actor must be >= 1"):
        load_config(GrpoWordleConfig, None, ["pool.num_actors=0"])


@pytest.mark.parametrize(("item", "owner"), [("pool.max_turns=3", "env.max_turns"), ("pool.sandbox=true", "env.sandbox"),
                                             ("pool.run_id=x", "output.name"), ("pool.show_progress=true", "show_progress")])
def test_pool_fields_other_options_set_are_refused_naming_the_option(item: str, owner: str) -> None:
    with pytest.raises(ValueError, match=rf"{item.split('=')[0]} is set by {owner} in this recipe: set {owner} instead"):
        load_config(GrpoWordleConfig, None, [item])


def test_reward_weights_take_the_rubrics_component_names() -> None:
    names = get_rubric("wordle").component_names
    assert names[0] == "wordle" and {"speed", "consistent", "invalid_guesses", "greens"} <= set(names)
    cfg = load_config(GrpoWordleConfig, None, ["grpo.reward_weights={env: 1.0, wordle: 0.5, greens: 0.1}"])
    assert cfg.grpo.reward_weights == {"env": 1.0, "wordle": 0.5, "greens": 0.1}
    with pytest.raises(ValueError, match=r"unknown component\(s\) \['spead'\]; components: .*'speed'"):
        load_config(GrpoWordleConfig, None, ["grpo.reward_weights={spead: 1.0}"])
    with pytest.raises(ValueError, match=r"reward_weights: none given"):
        load_config(GrpoWordleConfig, None, ["grpo.reward_weights={}"])


def test_the_old_section_name_still_builds_the_recipes_pool_with_a_warning() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pool = PoolSection(num_actors=1)
    assert pool == recipe_pool(num_actors=1) and (pool.sessions_per_actor, pool.num_actors) == (50, 1)
    assert any(issubclass(w.category, DeprecationWarning) and "recipe_pool" in str(w.message) for w in caught)


def test_collect_pool_mapping_is_checked_against_poolconfig() -> None:
    assert load_config(CollectConfig, None, ["pool={max_in_flight: 3}"]).pool == {"max_in_flight": 3}
    with pytest.raises(ValueError, match=r"unknown option\(s\) pool\.bogus; options of pool: num_actors"):
        load_config(CollectConfig, None, ["pool={bogus: 1}"])
    with pytest.raises(ValueError, match=r"pool\.num_actors is the recipe's option num_actors: set num_actors"):
        load_config(CollectConfig, None, ["pool={num_actors: 3}"])
    with pytest.raises(ValueError, match=r"pool\.run_id is the recipe's option name"):
        CollectConfig(pool={"run_id": "x"})
