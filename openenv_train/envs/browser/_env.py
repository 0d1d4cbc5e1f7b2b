"""BrowserEnvironment: a MiniWoB++ task in a real headless Chromium, with BrowserGym's actions and observations."""

from __future__ import annotations

import base64
import binascii
import html
import random
import uuid
from functools import cache
from importlib import resources
from typing import Any, ClassVar

from ...server import Environment
from ._actions import ActionError, parse_action, perform
from ._browser import BrowserCrashed, Tab, host
from ._models import BrowserAction, BrowserObservation, BrowserState
from ._page import flatten_axtree, pruned_html, read_axtree
from ._tasks import SOLVABLE_TASKS, check_task

__all__ = ["BrowserEnvironment", "task_environment"]

#: MiniWoB ends an episode after core.EPISODE_MAX_TIME ms (10 s by default); a model thinking for minutes
#: between steps must not lose on time, so the timer is set to ~11 days (setTimeout's limit is 2**31 ms).
EPISODE_MAX_TIME_MS = 1_000_000_000
DEFAULT_MAX_STEPS = 30
_START = """
Math.seedrandom(arguments[0]);
core.EPISODE_MAX_TIME = arguments[1];
core.startEpisodeReal();
// the human HUD (timer, last reward, click marks) and the start cover are not part of the task
for (const id of ['reward-display', 'click-canvas', 'sync-task-cover']) {
  const el = document.getElementById(id); if (el) el.style.display = 'none';
}
"""
#: Resolves once the page's own ``window.onload`` (``core.startEpisode``: the display, its canvas, the start
#: cover) has run: WebDriver's ``get`` returns at ``readyState == "complete"``, which can come before the load
#: handlers, and starting the episode then fails on the missing canvas.
_LOADED = """
const done = arguments[arguments.length - 1];
(function check() { if (document.getElementById('sync-task-cover')) done(true); else setTimeout(check, 5); })();
"""
_STATUS = "return [WOB_DONE_GLOBAL, WOB_RAW_REWARD_GLOBAL, WOB_REWARD_REASON, core.getUtterance()];"


class BrowserEnvironment(Environment[BrowserAction, BrowserObservation, BrowserState]):
    """A MiniWoB++ task page in the server's headless Chromium (one tab per session).

    ``reset(task="click-button", seed=..., screenshot=False, max_steps=30)`` loads the task's page and seeds
    it (same seed, same page); without a task, one of SOLVABLE_TASKS is drawn by seed. Each step is one
    BrowserGym action string; the reward is MiniWoB's raw reward when the task ends (1.0 success, -1.0 or a
    partial score otherwise), 0.0 before.
    """

    name = "browser"
    action_type = BrowserAction
    observation_type = BrowserObservation
    state_type = BrowserState
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")
    #: Selenium calls block for tens of milliseconds: run them in worker threads.
    blocking = True
    #: The task of a ``browser/<task>`` catalog entry; None draws from SOLVABLE_TASKS.
    default_task: ClassVar[str | None] = None

    def __init__(self) -> None:
        self._tab: Tab | None = None
        self._state = BrowserState()
        self._screenshot = False
        self._done = True
        self._chat: list[str] = []

    def reset(  # type: ignore[override]
        self,
        *,
        seed: int | None = None,
        episode_id: str | None = None,
        task: str | None = None,
        task_name: str | None = None,
        screenshot: bool = False,
        max_steps: int = DEFAULT_MAX_STEPS,
    ) -> BrowserObservation:
        """Load ``task`` (``task_name`` is browsergym_env's spelling) seeded with ``seed``.

        Raises:
            ValueError: unknown task or bad max_steps.
            RuntimeError: the browser extra, Chromium or chromedriver is missing (the message says what to install).
        """
        if seed is None:
            seed = random.randrange(2**31)
        chosen = task or task_name or self.default_task or random.Random(seed).choice(SOLVABLE_TASKS)
        check_task(chosen)
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        browser = host()
        if self._tab is None:
            self._tab = browser.open_tab()
        url = f"{browser.base_url}miniwob/{chosen}.html"

        def load(driver: Any) -> None:
            # every tab acts as the focused one (as Playwright does), else focus events skip background tabs
            driver.execute_cdp_cmd("Emulation.setFocusEmulationEnabled", {"enabled": True})
            driver.get(url)
            driver.execute_async_script(_LOADED)
            driver.execute_script(_START, seed, EPISODE_MAX_TIME_MS)

        try:
            browser.run(self._tab, load)
        except BrowserCrashed:
            self._tab = browser.open_tab()  # the browser was restarted: a fresh tab, then load once more
            browser.run(self._tab, load)
        self._screenshot, self._done, self._chat = bool(screenshot), False, []
        self._state = BrowserState(episode_id=episode_id or uuid.uuid4().hex, task_name=chosen, current_url=url,
                                   max_steps=max_steps, seed=seed)
        return self._observe(reward=0.0)

    def step(self, action: BrowserAction) -> BrowserObservation:
        """Run one action string; a malformed action or unknown bid comes back as ``error``, not an exception."""
        if self._tab is None or self._done:
            return BrowserObservation(done=self._done, reward=None, goal=self._state.goal, error=(
                "the episode is over: call reset" if self._tab else "no page yet: call reset first (options: task, seed)"),
                last_action_error=True)
        state = self._state
        state.step_count += 1
        error = ""
        try:
            parsed = parse_action(action.action_str)
            if parsed.name == "send_msg_to_user":
                self._chat.append(str(parsed.args["text"]))
            host().run(self._tab, lambda driver: perform(driver, parsed))
        except ActionError as exc:
            error = str(exc)
        except BrowserCrashed as exc:
            self._done, self._tab = True, None
            return BrowserObservation(done=True, reward=0.0, goal=state.goal, error=str(exc), last_action_error=True)
        return self._observe(reward=None, error=error)

    def _observe(self, *, reward: float | None, error: str = "") -> BrowserObservation:
        assert self._tab is not None
        state, want_png = self._state, self._screenshot

        def look(driver: Any) -> tuple[list[Any], list[Any], str, str | None]:
            status = driver.execute_script(_STATUS)
            nodes = read_axtree(driver)
            return status, nodes, pruned_html(driver), driver.get_screenshot_as_base64() if want_png else None

        (done, raw, reason, goal), nodes, pruned, png = host().run(self._tab, look)
        if reward is None:  # a step: MiniWoB's raw reward once the task has ended
            reward = float(raw) if done else 0.0
        state.cum_reward += reward
        state.goal = state.goal or str(goal)
        truncated = not done and state.step_count >= (state.max_steps or DEFAULT_MAX_STEPS)
        self._done = bool(done) or truncated
        axtree = flatten_axtree(nodes)
        metadata: dict[str, Any] = {"task": state.task_name, "raw_reward": float(raw) if done else None,
                                    "reason": None if reason is None else str(reason), "truncated": truncated}
        if self._chat:
            metadata["chat"] = list(self._chat)
        return BrowserObservation(
            text=axtree, url=state.current_url, screenshot=png, goal=state.goal, axtree_txt=axtree,
            pruned_html=pruned, error=error, last_action_error=bool(error), done=self._done, reward=reward,
            metadata=metadata,
        )

    @property
    def state(self) -> BrowserState:
        return self._state

    def close(self) -> None:
        """Close this session's tab."""
        if self._tab is not None:
            host().close_tab(self._tab)
            self._tab = None

    @staticmethod
    def render_observation(observation: dict[str, Any]) -> str | None:
        """A safe HTML view for people: the screenshot when there is one, else the goal and the tree."""
        png = observation.get("screenshot")
        if isinstance(png, str) and png:
            try:
                data = base64.b64encode(base64.b64decode(png, validate=True)).decode("ascii")
            except (binascii.Error, ValueError):
                data = ""
            if data:
                return f'<img alt="page screenshot" src="data:image/png;base64,{data}">'
        goal, tree = str(observation.get("goal") or ""), str(observation.get("axtree_txt") or "")
        if not goal and not tree:
            return None
        return f"<pre>{html.escape(f'Goal: {goal}' + chr(10) * 2 + tree)}</pre>"


def _class_name(task: str) -> str:
    return "".join(part.capitalize() for part in task.replace("_", "-").split("-")) + "BrowserEnvironment"


@cache
def task_environment(task: str) -> type[BrowserEnvironment]:
    """The ``browser/<task>`` env class: BrowserEnvironment with ``task`` as its default.

    Example:
        >>> task_environment("click-button").name
        'browser/click-button'
    """
    cls = type(_class_name(task), (BrowserEnvironment,), {
        "name": f"browser/{task}", "default_task": task, "__module__": "openenv_train.envs.browser",
        "__doc__": f"The MiniWoB++ task {task!r} in headless Chromium (see BrowserEnvironment).",
    })
    return cls
