"""``openenv-train view RUN`` in a subprocess, driven in headless Chromium: table, filters, episode, curves."""

from __future__ import annotations

import os
from typing import Any

import pytest

if os.environ.get("OPENENV_TRAIN_REQUIRE_BROWSER") != "1":  # with it set, a missing selenium fails collection
    pytest.importorskip("selenium", reason="selenium is not installed (pip install selenium)")

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.web.conftest import has_colour


def _wait(driver: Any, condition: Any, timeout: float = 15) -> Any:
    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(condition)


def _body(driver: Any, attr: str) -> str | None:
    return driver.find_element(By.TAG_NAME, "body").get_attribute(attr)


def _rows(driver: Any) -> list[list[str]]:
    return [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in driver.find_elements(By.CSS_SELECTOR, "#episodes tbody tr")]


def _reload_table(driver: Any, action: Any) -> list[list[str]]:
    before = _body(driver, "data-table-loaded")
    action()
    _wait(driver, lambda d: _body(d, "data-table-loaded") != before)
    return _rows(driver)


def test_table_filters_episode_and_curves(browser: Any, viewer_url: str, screenshot: Any) -> None:
    browser.get(viewer_url + "/")
    _wait(browser, lambda d: _body(d, "data-ready") == "1")
    rows = _rows(browser)
    assert [r[0] for r in rows] == [str(i) for i in range(12)]
    assert [r[1] for r in rows] == [f"ep{i}" for i in range(12)]
    assert rows[3][5] == "failed" and rows[3][8] == "EnvTimeout" and rows[3][4] == "–"
    assert browser.find_element(By.ID, "page-info").text == "1–12 of 12"
    # curves come from metrics.jsonl (its torn last line is skipped): reward and win_rate first
    figures = browser.find_elements(By.CSS_SELECTOR, "#curves figure.curve")
    assert [f.get_attribute("data-name") for f in figures] == ["reward", "win_rate", "loss"]
    assert all(f.get_attribute("data-points") == "8" for f in figures)
    assert len(figures[0].find_element(By.TAG_NAME, "polyline").get_attribute("points").split()) == 8
    # a series that never changes is folded into one line; any other can be picked
    flat = browser.find_element(By.ID, "curve-flat")
    assert "1 series that never change" in flat.text
    flat.find_element(By.TAG_NAME, "summary").click()
    assert "clip_ratio = 0" in flat.text
    picker = browser.find_element(By.ID, "curve-picker")
    picker.find_element(By.TAG_NAME, "summary").click()
    picker.find_element(By.CSS_SELECTOR, 'input[value="lr"]').click()
    _wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, '#curves figure.curve[data-name="lr"]')) == 1)
    screenshot(browser, "table")

    # filters: env, ok, reward range, group; each asks the server again
    rows = _reload_table(browser, lambda: Select(browser.find_element(By.ID, "filter-env")).select_by_value("echo"))
    assert [r[1] for r in rows] == ["ep1", "ep5", "ep9"] and {r[3] for r in rows} == {"echo"}
    rows = _reload_table(browser, lambda: Select(browser.find_element(By.ID, "filter-env")).select_by_value(""))
    rows = _reload_table(browser, lambda: Select(browser.find_element(By.ID, "filter-ok")).select_by_value("false"))
    assert [r[1] for r in rows] == ["ep3"]
    Select(browser.find_element(By.ID, "filter-ok")).select_by_value("")
    browser.find_element(By.ID, "filter-min").send_keys("0.5")
    browser.find_element(By.ID, "filter-max").send_keys("0.9")
    rows = _reload_table(browser, lambda: browser.find_element(By.ID, "apply").click())
    assert [r[1] for r in rows] == ["ep6", "ep7", "ep8", "ep9"]
    assert all(0.5 <= float(r[4]) <= 0.9 for r in rows)
    browser.find_element(By.ID, "filter-group").send_keys("g3")
    rows = _reload_table(browser, lambda: browser.find_element(By.ID, "apply").click())
    assert [r[1] for r in rows] == ["ep6", "ep7"] and {r[2] for r in rows} == {"g3"}
    screenshot(browser, "filtered")
    rows = _reload_table(browser, lambda: browser.find_element(By.ID, "clear").click())
    assert len(rows) == 12

    # an episode: outcome, reward components, env steps, chat turns, logprob shading
    browser.find_element(By.LINK_TEXT, "ep4").click()
    _wait(browser, lambda d: _body(d, "data-episode"))
    assert browser.find_element(By.ID, "episode-view").is_displayed()
    assert not browser.find_element(By.ID, "table-view").is_displayed()
    assert browser.find_element(By.ID, "ep-reward").text == "0.364"
    components = {tr.get_attribute("data-name"): tr.find_element(By.TAG_NAME, "td").text
                  for tr in browser.find_elements(By.CSS_SELECTOR, "#components tr")}
    assert components == {"wordle.greens": "0.2", "wordle.correct": "0.364"}
    steps = browser.find_elements(By.CSS_SELECTOR, "#steps tr.step")
    assert [s.find_element(By.CLASS_NAME, "reward").text for s in steps] == ["0", "0.1"]
    assert "[crane]" in steps[0].text and "GYXXX" in steps[0].text
    # the env's human view of the recorded observation (WordleEnvironment.render_observation) above its JSON
    board = steps[0].find_element(By.CSS_SELECTOR, ".human-view .wordle-board")
    tiles = board.find_elements(By.CSS_SELECTOR, '.guess[data-guess="crane"] .tile')
    assert [t.get_attribute("data-mark") for t in tiles] == list("GYXXX")
    assert board.location["y"] < steps[0].find_element(By.CSS_SELECTOR, "pre.json").location["y"]
    browser.execute_script("arguments[0].scrollIntoView()", board)
    assert has_colour(board.screenshot_as_png, (106, 170, 100)) and has_colour(board.screenshot_as_png, (201, 180, 88))
    turns = browser.find_elements(By.CSS_SELECTOR, "#turns .turn")
    assert len(turns) == 2
    roles = [m.get_attribute("data-role") for m in turns[0].find_elements(By.CLASS_NAME, "message")]
    assert roles == ["system", "user", "assistant"]
    assert "Game 4, guess 1" in turns[0].text and "Game 4, guess 2" in turns[1].text
    tokens = turns[0].find_elements(By.CSS_SELECTOR, ".tokens .tok")
    assert [t.text for t in tokens] == ["[", "cr", "ane", "]"]  # token strings stored in the row
    shades = [t.value_of_css_property("background-color") for t in tokens]
    alpha = [float(s.rsplit(",", 1)[1].rstrip(")")) for s in shades]
    assert alpha[1] == max(alpha) and alpha[1] > 0.7 and alpha[0] < 0.05, shades  # "cr" (logp -2.3) is darkest
    assert "logp -2.3000" in tokens[1].get_attribute("title")
    browser.execute_script("arguments[0].scrollIntoView()", turns[0])
    screenshot(browser, "episode")

    # a row without token strings and no local tokenizer: the ids are shown, still shaded
    browser.get(viewer_url + "/#/")
    _wait(browser, lambda d: _body(d, "data-ready") == "1")
    browser.find_element(By.LINK_TEXT, "ep5").click()
    _wait(browser, lambda d: _body(d, "data-episode"))
    turns = browser.find_elements(By.CSS_SELECTOR, "#turns .turn")
    calls = turns[0].find_elements(By.CLASS_NAME, "tool-call")
    assert [c.text for c in calls] == ['echo_message({"message": "crane"})']
    roles = [m.get_attribute("data-role") for m in turns[1].find_elements(By.CLASS_NAME, "message")]
    assert roles == ["tool", "user", "assistant"]  # the tool result, the next request, the reply
    tokens = browser.find_elements(By.CSS_SELECTOR, "#turns .turn .tokens .tok")
    assert tokens[0].text.startswith("⟨") and "id" in tokens[0].get_attribute("class")
    assert tokens[0].get_attribute("data-logp") == "-0.01"

    browser.find_element(By.ID, "back").click()
    _wait(browser, lambda d: d.find_element(By.ID, "table-view").is_displayed())


def test_an_agent_episode_shows_its_calls_as_a_tree(browser: Any, branched_viewer_url: str, screenshot: Any) -> None:
    browser.get(branched_viewer_url + "/")
    _wait(browser, lambda d: _body(d, "data-ready") == "1")
    browser.find_element(By.LINK_TEXT, "agent0").click()
    _wait(browser, lambda d: _body(d, "data-episode"))
    assert browser.find_element(By.ID, "call-graph-panel").is_displayed()

    def calls(line: Any) -> list[str]:
        return [b.get_attribute("data-node") for b in line.find_elements(By.XPATH, "./li/button[@data-node]")]

    # top level: the main line's root and the two calls that continue no earlier call, in call order
    roots = browser.find_elements(By.CSS_SELECTOR, "#call-tree > ol.call-line")
    assert [calls(r) for r in roots] == [["a", "b2", "c"], ["title"], ["d"]]
    assert "main" in roots[0].get_attribute("class") and "branch" in roots[1].get_attribute("class")
    # the first try b forks from a: a branch nested under a's node
    (fork,) = roots[0].find_elements(By.CSS_SELECTOR, "ol.call-line.branch")
    assert calls(fork) == ["b"] and "forks from #0 a" in fork.text.lower()  # the label is upper-cased by CSS
    assert fork.find_element(By.XPATH, "./ancestor::li[1]/button").get_attribute("data-node") == "a"
    # each break says where the ids first differ
    brk = roots[2].find_element(By.CLASS_NAME, "prefix-break")
    assert brk.get_attribute("data-common") == "4" and "at token 4" in brk.text and "#0 a" in brk.text
    assert roots[1].find_element(By.CLASS_NAME, "prefix-break").get_attribute("data-common") == "1"
    # a click shows that call as a turn: its prompt and its reply
    browser.find_element(By.CSS_SELECTOR, '#call-tree .call[data-node="b2"]').click()
    _wait(browser, lambda d: d.find_element(By.ID, "call-detail").get_attribute("data-index") == "3")
    detail = browser.find_element(By.CSS_SELECTOR, "#call-detail .turn")
    assert detail.get_attribute("data-node") == "b2" and "go on" in detail.text and "second try" in detail.text
    assert "fix the bug" not in detail.text  # only what b2 added to a's prompt and reply
    assert "selected" in browser.find_element(By.CSS_SELECTOR, '#call-tree .call[data-node="b2"]').get_attribute("class")
    browser.execute_script("arguments[0].scrollIntoView()", browser.find_element(By.ID, "call-graph-panel"))
    screenshot(browser, "call-tree")
