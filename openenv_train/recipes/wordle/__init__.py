"""The Wordle recipe's library (``python -m openenv_train.recipes.grpo_wordle`` runs it): the chat a small model
plays, the teacher and the distillation that warm-start it, the recipe's settings and its episode player.

``chat`` (prompt, agent, per-game metrics and turn rewards), ``teacher`` (the consistent-answer teacher),
``distill`` (SFT on the teacher's next-letter distributions), ``config`` (:class:`GrpoWordleConfig` and its
sections), ``games`` (the rollout pool with the Wordle agent), ``coverage`` (held-out words training never showed).
"""

from .chat import (
    ANY_ORDER_TOKENS,
    FIRST_TURN,
    ORDERS,
    SYSTEM_PROMPT,
    BranchPlan,
    WordleAgent,
    consistency_turn_rewards,
    consistent,
    explored_turns,
    game_metrics,
    prompt_ids,
    read_guess,
    render_turn,
    teacher_conversation,
    wordle_history,
    write_guess,
)
from .config import (
    REWARD_RUBRIC,
    RUN_NAME,
    SET_ELSEWHERE,
    EnvSection,
    GrpoWordleConfig,
    TeacherSection,
    WordleEvalSection,
    WordleGRPOSection,
)
from .coverage import guessed_words, unseen_held_out, unseen_words
from .distill import DistillCollator, distill_loss, distill_trainer, games_dataset, guess_orders, teacher_dataset
from .games import WordleGames
from .teacher import ConsistentTeacher

__all__ = [
    "ANY_ORDER_TOKENS", "FIRST_TURN", "ORDERS", "REWARD_RUBRIC", "RUN_NAME", "SET_ELSEWHERE", "SYSTEM_PROMPT",
    "BranchPlan", "ConsistentTeacher", "DistillCollator", "EnvSection", "GrpoWordleConfig", "TeacherSection",
    "WordleAgent", "WordleEvalSection", "WordleGRPOSection", "WordleGames", "consistency_turn_rewards", "consistent",
    "distill_loss", "distill_trainer", "explored_turns", "game_metrics", "games_dataset", "guess_orders",
    "guessed_words", "prompt_ids", "read_guess", "render_turn", "teacher_conversation", "teacher_dataset",
    "unseen_held_out", "unseen_words", "wordle_history", "write_guess",
]
