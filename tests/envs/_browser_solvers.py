"""Scripted MiniWoB solvers that read only the observation (the goal, the accessibility tree, the pruned HTML).

Each solver is a generator: it yields an action string, receives the next observation, and yields again.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Generator, Iterator
from typing import Any

Obs = dict[str, Any]
Solver = Callable[[Obs], Generator[str, Obs, None]]
_LINE = re.compile(r"^\t*(?:\[(\d+)\] )?(\S+) ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")(.*)$")


def nodes(obs: Obs) -> Iterator[tuple[str | None, str, str, str]]:
    """(bid, role, name, rest of line) of each axtree line."""
    for line in obs["axtree_txt"].splitlines():
        match = _LINE.match(line)
        if match:
            yield match[1], match[2], ast.literal_eval(match[3]), match[4]


def bids(obs: Obs, role: str, name: str | None = None) -> list[str]:
    """Bids of the nodes with ``role`` (and ``name``), in page order."""
    return [b for b, r, n, _ in nodes(obs) if b and r == role and (name is None or n.strip() == name)]


def bid(obs: Obs, role: str, name: str | None = None) -> str:
    found = bids(obs, role, name)
    assert found, f"no {role} {name!r} in:\n{obs['axtree_txt']}"
    return found[0]


def quoted(goal: str) -> list[str]:
    return re.findall(r'"([^"]*)"', goal)


def click_button(obs: Obs) -> Generator[str, Obs, None]:
    yield f"click('{bid(obs, 'button', quoted(obs['goal'])[0])}')"


def click_button_sequence(obs: Obs) -> Generator[str, Obs, None]:
    obs = yield f"click('{bid(obs, 'button', 'ONE')}')"
    yield f"click('{bid(obs, 'button', 'TWO')}')"


def _select_and_submit(role: str) -> Solver:
    def solve(obs: Obs) -> Generator[str, Obs, None]:
        listed = re.match(r"Select (.*) and click Submit\.", obs["goal"])
        assert listed, obs["goal"]
        wanted = [] if listed[1] == "nothing" else [w.strip() for w in listed[1].split(",")]
        for name in wanted:
            obs = yield f"click('{bid(obs, role, name)}')"
        yield f"click('{bid(obs, 'button', 'Submit')}')"
    return solve


def click_link(obs: Obs) -> Generator[str, Obs, None]:
    target = quoted(obs["goal"])[0]
    yield f"click('{bid(obs, 'StaticText', target)}')"


def click_tab(obs: Obs) -> Generator[str, Obs, None]:
    number = re.search(r"Tab #(\d+)", obs["goal"])
    assert number, obs["goal"]
    yield f"click('{bid(obs, 'link', f'Tab #{number[1]}')}')"


def click_dialog(obs: Obs) -> Generator[str, Obs, None]:
    yield f"click('{bid(obs, 'button', 'Close')}')"


def click_collapsible(obs: Obs) -> Generator[str, Obs, None]:
    section = next(b for b, r, n, _ in nodes(obs) if r == "tab" and n.startswith("Section"))
    obs = yield f"click('{section}')"
    yield f"click('{bid(obs, 'button', 'Submit')}')"


def enter_text(obs: Obs) -> Generator[str, Obs, None]:
    text = quoted(obs["goal"])[0]
    if "upper case" in obs["goal"]:
        text = text.upper()
    elif "lower case" in obs["goal"]:
        text = text.lower()
    obs = yield f"fill('{bid(obs, 'textbox')}', {text!r})"
    yield f"click('{bid(obs, 'button', 'Submit')}')"


def enter_password(obs: Obs) -> Generator[str, Obs, None]:
    password = quoted(obs["goal"])[0]
    first, second = bids(obs, "textbox")[:2]
    obs = yield f"fill('{first}', {password!r})"
    obs = yield f"fill('{second}', {password!r})"
    yield f"click('{bid(obs, 'button', 'Submit')}')"


def login_user(obs: Obs) -> Generator[str, Obs, None]:
    user, password = quoted(obs["goal"])[:2]
    username_box, password_box = bids(obs, "textbox")[:2]
    obs = yield f"fill('{username_box}', {user!r})"
    obs = yield f"fill('{password_box}', {password!r})"
    yield f"click('{bid(obs, 'button', 'Login')}')"


def choose_list(obs: Obs) -> Generator[str, Obs, None]:
    listed = re.match(r"Select (.*) from the list and click Submit\.", obs["goal"])
    assert listed, obs["goal"]
    obs = yield f"select_option('{bid(obs, 'combobox')}', {listed[1]!r})"
    yield f"click('{bid(obs, 'button', 'Submit')}')"


def focus_text(obs: Obs) -> Generator[str, Obs, None]:
    nth = re.search(r"(\d+)(?:st|nd|rd|th) input", obs["goal"])
    index = int(nth[1]) - 1 if nth else 0
    yield f"focus('{bids(obs, 'textbox')[index]}')"


def navigate_tree(obs: Obs) -> Generator[str, Obs, None]:
    target = quoted(obs["goal"])[0]
    opened: set[str] = set()
    while True:
        hit = bids(obs, "StaticText", target)
        if hit:
            yield f"click('{hit[0]}')"
            return
        # folders are <span class="folder"> in the pruned HTML; open the first one not opened yet
        folders = re.findall(r'<span bid="(\d+)" class="folder">', obs["pruned_html"])
        todo = [f for f in folders if f not in opened]
        assert todo, f"{target!r} not found and no folder left:\n{obs['pruned_html']}"
        opened.add(todo[0])
        obs = yield f"click('{todo[0]}')"


def use_autocomplete(obs: Obs) -> Generator[str, Obs, None]:
    parts = quoted(obs["goal"])
    start, end = parts[0], parts[1] if len(parts) > 1 else ""
    box = bid(obs, "textbox")
    obs = yield f"fill('{box}', {start!r})"
    obs = yield "noop(wait_ms=800)"  # jQuery UI opens its menu 300 ms after the last key
    match = [b for b, r, n, _ in nodes(obs) if b and r in ("menuitem", "option", "listitem")
             and n.startswith(start) and n.endswith(end)]
    if not match:  # the menu text sits in a StaticText under the item
        match = [b for b, r, n, _ in nodes(obs) if b and r == "StaticText" and n.startswith(start)
                 and n.endswith(end) and n != start]
    assert match, obs["axtree_txt"]
    obs = yield f"click('{match[0]}')"
    yield f"click('{bid(obs, 'button', 'Submit')}')"


SOLVERS: dict[str, Solver] = {
    "click-button": click_button,
    "click-button-sequence": click_button_sequence,
    "click-checkboxes": _select_and_submit("checkbox"),
    "click-option": _select_and_submit("radio"),
    "click-link": click_link,
    "click-tab": click_tab,
    "click-dialog": click_dialog,
    "click-collapsible": click_collapsible,
    "enter-text": enter_text,
    "enter-text-2": enter_text,
    "enter-password": enter_password,
    "login-user": login_user,
    "choose-list": choose_list,
    "focus-text": focus_text,
    "focus-text-2": focus_text,
    "navigate-tree": navigate_tree,
    "use-autocomplete": use_autocomplete,
}


def solve(step: Callable[[str], Obs], first: Obs, solver: Solver, max_steps: int = 20) -> Obs:
    """Drive ``solver`` from the first observation until the episode ends; returns the last observation."""
    gen = solver(first)
    action = next(gen)
    obs = first
    for _ in range(max_steps):
        obs = step(action)
        assert not obs["error"], f"{action}: {obs['error']}"
        if obs["done"]:
            return obs
        try:
            action = gen.send(obs)
        except StopIteration:
            raise AssertionError(f"solver finished but the episode did not end:\n{obs['axtree_txt']}") from None
    raise AssertionError("too many steps")


def require_browser() -> None:
    """Skip where Chromium, chromedriver, selenium or miniwob is missing; fail instead when CI requires them."""
    import importlib.util

    from tests import _system_parts

    _system_parts.require("browser")
    for module in ("selenium", "miniwob"):
        if importlib.util.find_spec(module) is None:
            _system_parts.skip_or_fail("browser", f"{module} is not installed: pip install 'openenv-train[browser]'")
