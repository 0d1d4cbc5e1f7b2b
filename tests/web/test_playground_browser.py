"""The /web playground of a real ``serve --web`` subprocess, driven in headless Chromium."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

if os.environ.get("OPENENV_TRAIN_REQUIRE_BROWSER") != "1":  # with it set, a missing selenium fails collection
    pytest.importorskip("selenium", reason="selenium is not installed (pip install selenium)")

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from openenv_train.envs.wordle.solver import WordleSolver
from tests.web.conftest import has_colour


def _wait(driver: Any, condition: Any, timeout: float = 15) -> Any:
    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(condition)


def _open(driver: Any, url: str) -> None:
    driver.get(f"{url}/web")  # the redirect to /web/ is part of what is tested
    _wait(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    _wait(driver, lambda d: d.find_element(By.ID, "status").get_attribute("data-state") == "open")
    assert driver.current_url.endswith("/web/")


def _history(driver: Any) -> list[list[str]]:
    rows = driver.find_elements(By.CSS_SELECTOR, "#history tbody tr")
    return [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows]


def _click_and_wait(driver: Any, button: str) -> list[str]:
    before = len(_history(driver))
    driver.find_element(By.ID, button).click()
    _wait(driver, lambda d: len(_history(d)) > before)
    return _history(driver)[-1]


def _json(driver: Any, element_id: str) -> Any:
    return json.loads(driver.find_element(By.ID, element_id).text)


def test_play_wordle_to_the_end(browser: Any, wordle_web: str, screenshot: Any) -> None:
    _open(browser, wordle_web)
    assert browser.find_element(By.ID, "env-name").text == "wordle"
    # the form is built from GET /schema: WordleAction has one string field, `message`
    field = browser.find_element(By.ID, "field-message")
    assert field.get_attribute("data-kind") == "string"
    assert not browser.find_element(By.ID, "tool-picker").is_displayed()  # not an MCP env
    browser.find_element(By.ID, "seed").send_keys("7")
    row = _click_and_wait(browser, "reset")
    assert row[1] == "reset" and json.loads(row[2]) == {"seed": 7}
    assert _json(browser, "observation")["guesses"] == []
    assert browser.find_element(By.ID, "done").text == "false"
    # the State panel shows what a player may see: Wordle's secret only once "show hidden" is ticked
    toggle = browser.find_element(By.ID, "show-hidden")
    assert toggle.is_displayed() and not toggle.is_selected()
    assert browser.find_element(By.ID, "hidden-names").text == "secret"
    assert "secret" not in _json(browser, "state") and "max_guesses" in _json(browser, "state")
    toggle.click()
    _wait(browser, lambda d: "secret" in json.loads(d.find_element(By.ID, "state").text))
    assert len(_json(browser, "state")["secret"]) == 5
    toggle.click()
    _wait(browser, lambda d: "secret" not in json.loads(d.find_element(By.ID, "state").text))
    screenshot(browser, "wordle-reset")

    solver, steps = WordleSolver(), 0
    while browser.find_element(By.ID, "done").text != "true":
        obs = _json(browser, "observation")
        guess = solver.next_guess(list(zip(obs["guesses"], obs["feedback"], strict=True)))
        field.clear()
        field.send_keys(f"My guess is [{guess}]")
        row = _click_and_wait(browser, "step")
        steps += 1
        assert row[1] == "step" and json.loads(row[2]) == {"message": f"My guess is [{guess}]"}
        assert _json(browser, "observation")["guesses"][-1] == guess
        assert steps <= 6, "the game should end within six guesses"
    obs = _json(browser, "observation")
    state = _json(browser, "state")
    assert state["done"] is True and state["step_count"] == steps and state["guesses"] == obs["guesses"]
    assert obs["feedback"][-1] == "GGGGG", f"the solver should win seed 7: {obs['feedback']}"
    assert browser.find_element(By.ID, "reward").text == "1"  # JSON 1.0 as JavaScript prints it
    history = _history(browser)
    assert len(history) == steps + 1 and history[-1][3:] == ["1", "true"]
    assert browser.find_element(By.ID, "step-count").text == str(steps)
    assert browser.find_element(By.ID, "error").is_displayed() is False
    # the env's human view (WordleEnvironment.render_observation) above the JSON: a tile row per guess
    _wait(browser, lambda d: d.find_element(By.ID, "human-view").get_attribute("data-rendered") is not None
          and len(d.find_elements(By.CSS_SELECTOR, "#human-view .guess[data-guess]")) == steps)
    view = browser.find_element(By.ID, "human-view")
    assert view.is_displayed() and view.location["y"] < browser.find_element(By.ID, "observation").location["y"]
    rows = view.find_elements(By.CSS_SELECTOR, ".guess[data-guess]")
    assert [r.get_attribute("data-guess") for r in rows] == obs["guesses"]
    assert [t.get_attribute("data-mark") for t in rows[-1].find_elements(By.CLASS_NAME, "tile")] == ["G"] * 5
    screenshot(browser, "wordle-won")
    assert has_colour(view.screenshot_as_png, (106, 170, 100)), "no green tile on the rendered board"


def test_errors_are_shown_and_the_session_stays(browser: Any, wordle_web: str) -> None:
    _open(browser, wordle_web)
    # an action field the schema does not have: the server's VALIDATION_ERROR reaches the page
    browser.execute_script(
        "const i = document.createElement('input'); i.name = 'bogus'; i.value = 'x'; i.dataset.kind = 'string';"
        "document.querySelector('#action-form').append(i);")
    row = _click_and_wait(browser, "step")
    assert row[1] == "step (error)"
    error = browser.find_element(By.ID, "error")
    assert error.is_displayed() and "VALIDATION_ERROR" in error.text and "bogus" in error.text
    assert browser.find_element(By.ID, "status").get_attribute("data-state") == "open"
    _click_and_wait(browser, "reset")
    assert not browser.find_element(By.ID, "error").is_displayed()


def test_mcp_env_lists_tools_and_calls_one(browser: Any, echo_web: str, screenshot: Any) -> None:
    _open(browser, echo_web)
    _wait(browser, lambda d: d.find_element(By.ID, "tool-picker").is_displayed())
    tools = [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#tool option")]
    assert {"echo_message", "echo_with_length"} <= set(tools)
    _click_and_wait(browser, "reset")
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.ID, "tool")).select_by_value("echo_with_length")
    _wait(browser, lambda d: d.find_elements(By.ID, "field-message"))
    browser.find_element(By.ID, "field-message").send_keys("hello web")
    row = _click_and_wait(browser, "step")
    assert json.loads(row[2]) == {"type": "call_tool", "tool_name": "echo_with_length",
                                  "arguments": {"message": "hello web"}}
    obs = _json(browser, "observation")
    assert obs["tool_name"] == "echo_with_length" and obs["error"] is None
    assert obs["result"]["data"] == {"message": "hello web", "length": 9}
    assert _json(browser, "state")["step_count"] == 1
    screenshot(browser, "echo-tool-call")


def test_atari_shows_its_screen_and_steps_from_its_action_buttons(browser: Any, atari_web: str,
                                                                  screenshot: Any) -> None:
    _open(browser, atari_web)
    browser.find_element(By.ID, "seed").send_keys("3")
    _click_and_wait(browser, "reset")
    # the screen: the observation's base64 PNG as an image, decoded by the browser at the emulator's size
    frame = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#human-view img[data-frame]"))[0]
    assert browser.execute_script("return [arguments[0].naturalWidth, arguments[0].naturalHeight]", frame) == [160, 210]
    first_src = frame.get_attribute("src")
    assert first_src == "data:image/png;base64," + _json(browser, "observation")["screen_png"]
    # a button per action meaning (Pong's minimal set), each stepping with its action_id
    buttons = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#action-buttons button"))
    meanings = _json(browser, "observation")["action_meanings"]
    assert [b.text for b in buttons] == meanings and meanings[:2] == ["NOOP", "FIRE"]
    fire = browser.find_element(By.CSS_SELECTOR, "#action-buttons button[data-action-id='1']")
    frames = []
    for steps in range(1, 4):
        fire.click()
        _wait(browser, lambda d, n=steps: len(_history(d)) == n + 1)
        _wait(browser, lambda d, n=steps: d.find_element(By.CSS_SELECTOR, "#human-view img").get_attribute(
            "data-frame") == str(4 * n))  # frameskip 4: the image follows each step
        frames.append(browser.find_element(By.CSS_SELECTOR, "#human-view img").get_attribute("src"))
        assert json.loads(_history(browser)[-1][2]) == {"action_id": 1}
    assert frames[0] != first_src, "the image shows the frame after the step, not the reset's"
    assert browser.find_element(By.ID, "step-count").text == "3"
    screenshot(browser, "atari-playground")
