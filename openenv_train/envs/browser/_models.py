"""Wire types of the browser env, field for field those of OpenEnv's browsergym_env."""

from __future__ import annotations

from pydantic import Field

from ...core import Action, Observation, State

__all__ = ["BrowserAction", "BrowserObservation", "BrowserState"]

MAX_ACTION_CHARS = 10_000


class BrowserAction(Action):
    """One BrowserGym high-level action string."""

    action_str: str = Field(
        default="noop()",
        max_length=MAX_ACTION_CHARS,
        description="A BrowserGym action such as click('13'), fill('7', 'text'), select_option('9', 'Red'), "
        "press('7', 'Enter'), check('4'), scroll(0, 200), noop(), send_msg_to_user('done').",
    )


class BrowserObservation(Observation):
    """The page after the action: goal, accessibility tree (with bids), pruned HTML, optional screenshot."""

    text: str = Field(default="", description="The page as text (the same as axtree_txt).")
    url: str = Field(default="", description="URL of the page.")
    screenshot: str | None = Field(
        default=None, description="Base64 PNG of the viewport when the episode was reset with screenshot=True.")
    goal: str = Field(default="", description="The task's instruction.")
    axtree_txt: str = Field(default="", description="Flattened accessibility tree: one `[bid] role 'name'` line per node.")
    pruned_html: str = Field(default="", description="The visible page as compact HTML with bid attributes.")
    error: str = Field(default="", description="Why the last action failed (parse error, unknown bid, ...), or ''.")
    last_action_error: bool = Field(default=False, description="Whether the last action failed.")


class BrowserState(State):
    """Episode state: which MiniWoB task and seed, its goal and the reward so far."""

    benchmark: str = Field(default="miniwob", description="The benchmark the task comes from.")
    task_name: str = Field(default="", description="The MiniWoB task, e.g. 'click-button'.")
    task_id: str | None = Field(default=None, description="Unused for MiniWoB (kept for browsergym_env clients).")
    goal: str = Field(default="", description="The task's instruction.")
    current_url: str = Field(default="", description="URL of the page.")
    max_steps: int | None = Field(default=None, description="Steps after which the episode is cut off.")
    cum_reward: float = Field(default=0.0, description="Sum of the rewards of this episode.")
    seed: int | None = Field(default=None, description="The seed of the page.")
