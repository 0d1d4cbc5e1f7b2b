"""Hypothesis fuzzing of ``load_config``: random YAML files and ``key=value`` overrides (dotted keys too).

The contract: a config of the right types, or a ``ValueError`` whose message names what is wrong (the
file, the override, or the option); never another exception type. The config under test has a
nested section, as the recipes' configs do.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openenv_train.recipes._config import load_config

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclasses.dataclass
class Grpo:
    max_steps: int = 1
    learning_rate: float = 1e-5
    beta: float | None = None
    loss: str = "grpo"
    tags: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Config:
    model: str = "tiny"
    seed: int = 0
    output_dir: str | None = None
    bf16: bool = False
    grpo: Grpo = dataclasses.field(default_factory=Grpo)


KEYS = ["model", "seed", "output_dir", "bf16", "grpo", "grpo.max_steps", "grpo.learning_rate", "grpo.beta",
        "grpo.loss", "grpo.tags", "grpo.nope", "nope", "grpo.max_steps.x", "seed.x", "", ".", "grpo.", ".seed",
        "grpo..beta", "GRPO.max_steps", "model.grpo"]
text = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
yaml_snippets = st.sampled_from([
    "1", "-3", "1e400", ".nan", ".inf", "0x1F", "true", "yes", "null", "~", "[1, 2]", "{a: 1}", "{max_steps: 3}",
    "'quoted'", '"x', "[", "{", "!!python/object:os.system ls", "&a [*a]", "2" * 4000, "- a\n- b", "",
    "!!binary aGk=", "2026-11-30", "{1: 2, a: 3}", "*undefined",
])
overrides = st.builds(lambda k, v: f"{k}={v}", st.sampled_from(KEYS) | text, yaml_snippets | text) | text
scalars = st.none() | st.booleans() | st.integers() | st.floats() | text
values = st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(text | st.integers(), c, max_size=3),
                      max_leaves=8)
mappings = st.dictionaries(st.sampled_from(["model", "seed", "output_dir", "bf16", "grpo", "nope"]) | text,
                           values | st.dictionaries(st.sampled_from(["max_steps", "beta", "loss", "tags", "x"])
                                                    | text, values, max_size=3)
                           | st.dictionaries(st.integers(), values, max_size=2),
                           max_size=4)
yaml_texts = (mappings.map(lambda m: yaml.safe_dump(m, allow_unicode=True)) | text | yaml_snippets
              | st.lists(yaml_snippets, max_size=3).map("\n".join))

_SEEN_ERRORS: dict[str, str] = {}


def _check(config: Config) -> None:
    assert isinstance(config, Config) and isinstance(config.grpo, Grpo)
    assert isinstance(config.seed, int) and isinstance(config.grpo.max_steps, int)
    assert isinstance(config.model, str) and isinstance(config.grpo.loss, str)
    assert isinstance(config.bf16, bool)
    assert isinstance(config.grpo.learning_rate, float)
    assert config.grpo.beta is None or isinstance(config.grpo.beta, float)
    assert config.output_dir is None or isinstance(config.output_dir, str)
    assert isinstance(config.grpo.tags, list) and all(isinstance(t, str) for t in config.grpo.tags)


def _load(yaml_text: str | None, items: list[str]) -> Config | ValueError:
    with tempfile.TemporaryDirectory() as tmp:
        path: Path | None = None
        if yaml_text is not None:
            path = Path(tmp) / "config.yaml"
            path.write_text(yaml_text)
        try:
            return load_config(Config, path, items)
        except ValueError as exc:  # any other exception type fails the test
            return exc


def _names_the_problem(message: str, yaml_text: str | None, items: list[str]) -> bool:
    """The message names the file, an override, or one of the options involved."""
    if "config.yaml" in message:
        return True
    for item in items:
        key = item.partition("=")[0]
        if item in message or repr(item) in message or (key and key in message) or repr(key) in message \
                or any(p and (p in message or repr(p) in message) for p in key.split(".")):
            return True
    if yaml_text is not None:
        try:
            loaded = yaml.safe_load(yaml_text)
        except (yaml.YAMLError, ValueError):
            return False
        if isinstance(loaded, dict):
            names = [str(k) for k in loaded] + [str(k) for v in loaded.values() if isinstance(v, dict) for k in v]
            if any(not n.strip() for n in names) and "unknown option" in message:
                return True  # a blank key, listed (invisibly) in the message
            return any(n.strip() and (n in message or repr(n) in message) for n in names)
    return "option" in message


@given(yaml_text=st.none() | yaml_texts, items=st.lists(overrides, max_size=3))
@FUZZ
def test_fuzz_load_config(yaml_text: str | None, items: list[str]) -> None:
    result = _load(yaml_text, items)
    if isinstance(result, ValueError):
        message = str(result)
        assert message, (yaml_text, items)
        assert _names_the_problem(message, yaml_text, items), (yaml_text, items, message)
    else:
        _check(result)


@pytest.mark.parametrize(("items", "needle"), [
    (["grpo.max_steps=2"], None),
    (["grpo.max_steps=two"], "grpo.max_steps"),
    (["grpo.nope=1"], "grpo.nope"),
    (["nope.max_steps=1"], "nope"),
    (["grpo=3"], "grpo"),
    (["grpo.max_steps.x=1"], "max_steps"),
    (["seed"], "seed"),
    (["grpo.tags=[a, b]"], None),
    (["grpo.beta=null"], None),
    (["grpo.learning_rate=1e400"], None),  # YAML reads it as a string, pydantic as inf: a float all the same
])
def test_dotted_overrides(items: list[str], needle: str | None) -> None:
    result = _load(None, items)
    if needle is None:
        assert isinstance(result, Config), result
        _check(result)
    else:
        assert isinstance(result, ValueError) and needle in str(result), result


@pytest.mark.parametrize("yaml_text", [
    "grpo:\n  1: 2\n  a: 3\n",         # int and str keys in a section
    "a: &a [*a]\n",                     # a recursive alias
    "grpo: &g {max_steps: 1}\nseed: *g\n",
    "lol: &a [x, x, x, x, x, x, x, x, x]\nlol2: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "lol3: [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n",  # a small alias bomb: unknown keys, refused by name
    "seed: !!python/object/apply:os.system ['true']\n",
    "? [a, b]\n: 1\n",
])
def test_hostile_yaml_is_a_value_error(yaml_text: str) -> None:
    result = _load(yaml_text, [])
    assert isinstance(result, ValueError), result
    assert str(result)


@pytest.mark.parametrize(("yaml_text", "items", "needle"), [
    ("seed: " + "9" * 5000 + "\n", [], "config.yaml"),
    (None, ["seed=" + "9" * 5000], "seed"),
])
def test_huge_integers_name_the_source(yaml_text: str | None, items: list[str], needle: str) -> None:
    result = _load(yaml_text, items)
    assert isinstance(result, ValueError) and needle in str(result), result
