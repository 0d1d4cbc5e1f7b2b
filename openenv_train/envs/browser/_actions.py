"""BrowserGym's high-level action strings, parsed without eval and run through Selenium on bid-marked elements.

Grammar (one call per step, arguments are Python literals)::

    click(bid) dblclick(bid) hover(bid) focus(bid) clear(bid) fill(bid, text) select_option(bid, option)
    press(bid, key)  check(bid) uncheck(bid) scroll(dx, dy) noop(wait_ms=0) send_msg_to_user(text)

``bid`` is the number in square brackets in ``axtree_txt`` (a string or an int); ``select_option`` takes an
option's text or value (or a list of them for a multi-select); ``press`` takes a key such as ``Enter`` or a
combination such as ``Control+a``.
"""

from __future__ import annotations

import ast
import time
from dataclasses import dataclass
from typing import Any

from ...core import OpenEnvTrainError

__all__ = ["ActionError", "GRAMMAR", "ParsedAction", "parse_action", "perform"]

GRAMMAR = (
    "click(bid), dblclick(bid), hover(bid), focus(bid), clear(bid), fill(bid, text), select_option(bid, option), "
    "press(bid, key), check(bid), uncheck(bid), scroll(dx, dy), noop(wait_ms=0), send_msg_to_user(text)"
)
#: Parameter names of each action, in order.
SIGNATURES: dict[str, tuple[str, ...]] = {
    "click": ("bid",), "dblclick": ("bid",), "hover": ("bid",), "focus": ("bid",), "clear": ("bid",),
    "fill": ("bid", "value"), "select_option": ("bid", "options"), "press": ("bid", "key_comb"),
    "check": ("bid",), "uncheck": ("bid",), "scroll": ("delta_x", "delta_y"), "noop": ("wait_ms",),
    "send_msg_to_user": ("text",),
}
_OPTIONAL = {"noop": 0}
MAX_WAIT_MS = 5000
_KEYS = {"enter": "ENTER", "return": "RETURN", "tab": "TAB", "escape": "ESCAPE", "esc": "ESCAPE",
         "backspace": "BACKSPACE", "delete": "DELETE", "space": "SPACE", "arrowup": "ARROW_UP",
         "arrowdown": "ARROW_DOWN", "arrowleft": "ARROW_LEFT", "arrowright": "ARROW_RIGHT", "home": "HOME",
         "end": "END", "pageup": "PAGE_UP", "pagedown": "PAGE_DOWN", "control": "CONTROL", "ctrl": "CONTROL",
         "shift": "SHIFT", "alt": "ALT", "meta": "META", "controlormeta": "CONTROL"}


class ActionError(OpenEnvTrainError, ValueError):
    """An action string that does not parse, or one the page cannot carry out; the message says why."""


@dataclass(frozen=True)
class ParsedAction:
    """One parsed call: its name and arguments by parameter name."""

    name: str
    args: dict[str, Any]


def parse_action(text: str) -> ParsedAction:
    """Parse one BrowserGym action string such as ``click('13')`` or ``fill('5', "hello")``.

    Raises:
        ActionError: not a single call of the grammar with literal arguments; the message gives the grammar.

    Example:
        >>> parse_action("fill('12', 'hi')")
        ParsedAction(name='fill', args={'bid': '12', 'value': 'hi'})
    """
    def fail(why: str) -> ActionError:
        return ActionError(f"cannot parse action {text.strip()[:200]!r}: {why}. Actions: {GRAMMAR}")

    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise fail("it is not a Python-style call") from None
    call = tree.body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        raise fail("expected one call such as click('12')")
    name = call.func.id
    if name not in SIGNATURES:
        raise fail(f"unknown action {name!r}")
    params = SIGNATURES[name]
    try:
        positional = [ast.literal_eval(arg) for arg in call.args]
        keywords = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg}
    except ValueError:
        raise fail("arguments must be literals (strings or numbers)") from None
    if len(positional) > len(params) or set(keywords) - set(params):
        raise fail(f"{name} takes ({', '.join(params)})")
    args = dict(zip(params, positional, strict=False)) | keywords
    if name in _OPTIONAL:
        args.setdefault(params[0], _OPTIONAL[name])
    missing = [p for p in params if p not in args]
    if missing:
        raise fail(f"{name} needs {', '.join(missing)}")
    if "bid" in args:
        if not isinstance(args["bid"], str | int) or isinstance(args["bid"], bool):
            raise fail("bid must be a string such as '12'")
        args["bid"] = str(args["bid"])
    return ParsedAction(name, args)


def _element(driver: Any, bid: str) -> Any:
    from selenium.webdriver.common.by import By

    found = driver.find_elements(By.CSS_SELECTOR, f'[bid="{bid}"]') if bid.isdigit() else []
    if not found:
        raise ActionError(f"no element with bid {bid!r} on the page: use a [number] from axtree_txt")
    return found[0]


def _keys(key_comb: str) -> str:
    from selenium.webdriver.common.keys import Keys

    parts = []
    for part in str(key_comb).split("+"):
        named = _KEYS.get(part.strip().lower())
        if named is None and len(part) != 1:
            raise ActionError(f"unknown key {part!r} in {key_comb!r}: use Enter, Tab, ArrowDown, Control+a, ...")
        parts.append(getattr(Keys, named) if named else part)
    # WebDriver holds modifier keys down until NULL: "Control+a" is CONTROL, "a", NULL
    return "".join(parts) + Keys.NULL if len(parts) > 1 else parts[0]


def perform(driver: Any, action: ParsedAction) -> None:
    """Carry out ``action`` in the page.

    Raises:
        ActionError: no such bid, or the element refused (not visible, not a select, no such option, ...).
    """
    from selenium.common.exceptions import WebDriverException

    try:
        _perform(driver, action.name, action.args)
    except WebDriverException as exc:
        reason = (exc.msg or type(exc).__name__).splitlines()[0]
        raise ActionError(f"{action.name} failed: {reason}") from None


def _perform(driver: Any, name: str, args: dict[str, Any]) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import Select

    if name == "noop":
        time.sleep(min(max(float(args["wait_ms"]), 0.0), MAX_WAIT_MS) / 1000)
        return
    if name == "send_msg_to_user":
        return  # recorded by the env; MiniWoB pages do not read chat
    if name == "scroll":
        driver.execute_script("window.scrollBy(arguments[0], arguments[1]);", float(args["delta_x"]),
                              float(args["delta_y"]))
        return
    element = _element(driver, args["bid"])
    if name == "click":
        element.click()
    elif name == "dblclick":
        ActionChains(driver).double_click(element).perform()
    elif name == "hover":
        ActionChains(driver).move_to_element(element).perform()
    elif name == "focus":
        driver.execute_script("arguments[0].focus();", element)
    elif name == "clear":
        element.clear()
    elif name == "fill":
        element.clear()
        element.send_keys(str(args["value"]))
    elif name == "press":
        element.send_keys(_keys(args["key_comb"]))
    elif name in ("check", "uncheck"):
        if element.is_selected() != (name == "check"):
            element.click()
    elif name == "select_option":
        _select(Select(element) if element.tag_name == "select" else None, args["options"])


def _select(select: Any, options: Any) -> None:
    if select is None:
        raise ActionError("select_option needs the bid of a <select> element (a combobox or listbox)")
    wanted = [options] if isinstance(options, str) else list(options)
    for option in wanted:
        for candidate in select.options:
            if option in (candidate.text.strip(), candidate.get_attribute("value")):
                select.select_by_visible_text(candidate.text)
                break
        else:
            names = [c.text.strip() for c in select.options]
            raise ActionError(f"no option {option!r} in the select: options are {names}")
