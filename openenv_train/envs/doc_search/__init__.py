"""The doc_search env (MCP): answer questions by searching a local corpus (the Python standard library's
docstrings) with BM25 ``search`` and ``fetch`` tools; offline."""

from ._bm25 import BM25Index, tokenize
from ._corpus import MODULES, Corpus, Document, stdlib_corpus
from ._env import CORPUS_NOTE, DocSearchEnvironment
from ._models import DocSearchQuestionObservation, DocSearchState
from ._questions import Question, answer_matches, bundled_questions, choose_question
from .client import DocSearchEnv

__all__ = [
    "CORPUS_NOTE",
    "MODULES",
    "BM25Index",
    "Corpus",
    "DocSearchEnv",
    "DocSearchEnvironment",
    "DocSearchQuestionObservation",
    "DocSearchState",
    "Document",
    "Question",
    "answer_matches",
    "bundled_questions",
    "choose_question",
    "stdlib_corpus",
    "tokenize",
]
