"""DocSearchEnvironment: answer a question by searching the standard library's docstrings (search, fetch)."""

from __future__ import annotations

import platform
from importlib import resources
from typing import Annotated, Any, ClassVar

from pydantic import Field

from ...core import CallToolObservation, ListToolsObservation, Observation, ToolError, ToolErrorType, did_you_mean
from ...server import MCPEnvironment, TaskSplit, ToolCallFailed, listed_split, tool
from ._corpus import Corpus, stdlib_corpus
from ._models import DocSearchQuestionObservation, DocSearchState
from ._questions import Question, answer_matches, bundled_questions, choose_question

__all__ = ["CORPUS_NOTE", "DocSearchEnvironment"]

CORPUS_NOTE = (f"the docstrings of Python {platform.python_version()}'s standard library (functions, classes and "
               "modules of 74 modules; PSF License Agreement), indexed with BM25")
SNIPPET_CHARS = 240
FETCH_CHARS = 8_000


class DocSearchEnvironment(MCPEnvironment):
    """Answer a question with search and fetch tools over a local corpus; submit_answer pays 1.0 if right.

    The corpus is the docstrings of the running Python's standard library (one document per module, function
    and class of 74 modules), ranked by a pure-Python BM25 index: offline, nothing downloaded. Tools:
    ``search`` (ranked ids, titles, snippets), ``fetch`` (a document's text) and ``submit_answer`` (ends the
    episode). ``reset(question_id=...)`` or ``reset(seed=...)`` picks the question.

    Example:
        >>> from openenv_train.core import CallToolAction
        >>> env = DocSearchEnvironment()
        >>> env.reset(question_id="isqrt").question_id
        'isqrt'
        >>> done = env.step(CallToolAction(tool_name="submit_answer", arguments={"answer": "math.isqrt"}))
        >>> done.reward, done.done
        (1.0, True)
    """

    name = "doc_search"
    observation_type: ClassVar[Any] = ListToolsObservation | CallToolObservation | DocSearchQuestionObservation
    state_type = DocSearchState
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")
    #: The first episode of a process builds the index (about a second): keep it off the event loop.
    blocking = True
    _state: DocSearchState

    def __init__(self) -> None:
        super().__init__()
        self._state = DocSearchState()
        self._question: Question | None = None

    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, episode_id: str | None = None, question_id: str | None = None
    ) -> DocSearchQuestionObservation:
        """Start an episode on question ``question_id``, else one drawn with ``seed``.

        Raises:
            ValueError: no such question id; the previous episode is kept.
        """
        question = choose_question(question_id=question_id, seed=seed)
        corpus = stdlib_corpus()
        super().reset(seed=seed, episode_id=episode_id)
        self._question = question
        self._state = DocSearchState(episode_id=self._state.episode_id, question_id=question.id)
        return DocSearchQuestionObservation(question_id=question.id, question=question.text, corpus=CORPUS_NOTE,
                                            documents=len(corpus.documents), reward=0.0,
                                            metadata={"question_id": question.id})

    @property
    def state(self) -> DocSearchState:
        return self._state

    def step(self, action: Any) -> Observation:
        """Run a tool step; every observation after the answer was submitted has ``done`` set."""
        obs = super().step(action)
        assert isinstance(obs, Observation), "doc_search has only sync tools"
        obs.done = self._state.submitted
        return obs

    def call_tool(self, tool_name: str, arguments: dict[str, Any]) -> Any:
        """Run a tool; refused before a reset and once the answer is in."""
        if tool_name in self.tools and (self._question is None or self._state.submitted):
            why = "no question yet: call reset first" if self._question is None else (
                "the episode is over: the answer was submitted; call reset for a new question")
            raise ToolCallFailed(ToolError(error_type=ToolErrorType.EXECUTION_ERROR, message=why))
        return super().call_tool(tool_name, arguments)

    def reward_for(self, tool_name: str, arguments: dict[str, Any], value: Any) -> float | None:
        return float(value["reward"]) if tool_name == "submit_answer" else None

    def task_splits(self) -> list[TaskSplit]:
        """The bundled questions: every third one (in file order) is ``test``, the rest ``train``."""
        ids = [q.id for q in bundled_questions()]
        return [listed_split("train", "train", [q for i, q in enumerate(ids) if i % 3 != 2], "question_id"),
                listed_split("test", "test", ids[2::3], "question_id")]

    @staticmethod
    def _corpus() -> Corpus:
        return stdlib_corpus()

    # -- tools ---------------------------------------------------------------------------------------------
    @tool
    def search(self, query: Annotated[str, Field(min_length=1, max_length=1_000)],
               k: Annotated[int, Field(ge=1, le=20)] = 5) -> dict[str, Any]:
        """Search the corpus (BM25): the ``k`` best documents, best first, each with its id, title, score and
        the start of its text. Fetch a document by id to read all of it."""
        self._state.searches += 1
        hits = self._corpus().search(query, k)
        return {"query": query, "results": [
            {"id": doc.id, "title": doc.title, "score": round(score, 3), "snippet": doc.text[:SNIPPET_CHARS]}
            for doc, score in hits]}

    @tool
    def fetch(self, doc_id: Annotated[str, Field(min_length=1, max_length=200)]) -> dict[str, Any]:
        """A document's whole text by its id (a dotted name such as ``json.dumps``, as ``search`` gives it)."""
        corpus = self._corpus()
        doc = corpus.by_id.get(doc_id)
        if doc is None:
            raise ValueError(f"no document {doc_id!r}{did_you_mean(doc_id, corpus.by_id, otherwise='.')} "
                             "Use the ids that search returns")
        self._state.fetches += 1
        return {"id": doc.id, "title": doc.title, "text": doc.text[:FETCH_CHARS],
                "truncated": len(doc.text) > FETCH_CHARS}

    @tool
    def submit_answer(self, answer: Annotated[str | int | float, Field(description="The answer: a name or a value.")]
                      ) -> dict[str, Any]:
        """Submit the final answer; ends the episode. Reward 1.0 if it matches the reference, else 0.0."""
        assert self._question is not None  # call_tool refuses tools before a reset
        correct = answer_matches(self._question.answers, answer)
        self._state.submitted, self._state.correct = True, correct
        return {"correct": correct, "reward": 1.0 if correct else 0.0, "expected": self._question.answers[0]}
