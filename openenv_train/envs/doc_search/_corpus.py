"""The corpus: the docstrings of the running Python's standard library (PSF licence), one document per module,
function and class of a fixed list of modules, and its BM25 index."""

from __future__ import annotations

import functools
import importlib
import inspect
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ._bm25 import BM25Index

__all__ = ["MODULES", "Corpus", "Document", "stdlib_corpus"]

MODULES = (
    "abc", "argparse", "array", "ast", "base64", "binascii", "bisect", "bz2", "calendar", "cmath", "codecs",
    "collections", "colorsys", "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "enum",
    "fnmatch", "fractions", "functools", "getopt", "glob", "graphlib", "gzip", "hashlib", "heapq", "hmac", "html",
    "inspect", "io", "ipaddress", "itertools", "json", "keyword", "locale", "lzma", "math", "numbers", "operator",
    "pathlib", "platform", "pprint", "queue", "quopri", "random", "re", "sched", "secrets", "shlex", "shutil",
    "sqlite3", "statistics", "string", "struct", "tarfile", "tempfile", "textwrap", "time", "timeit", "tokenize",
    "traceback", "types", "typing", "unicodedata", "urllib.parse", "uuid", "warnings", "weakref", "zipfile", "zlib",
)
"""Standard-library modules whose docstrings make the corpus: pure, importable everywhere, no side effects."""


@dataclass(frozen=True)
class Document:
    """One searchable text: ``id`` is the dotted name (``math.isqrt``), ``title`` the name and signature."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class Corpus:
    """The documents in id order, a lookup by id and their index (ranks on id, title and text)."""

    documents: tuple[Document, ...]
    by_id: dict[str, Document]
    index: BM25Index

    def search(self, query: str, k: int) -> list[tuple[Document, float]]:
        """The ``k`` best documents for ``query`` and their BM25 scores."""
        return [(self.documents[i], score) for i, score in self.index.search(query, k=k)]


def _signature(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):  # many C functions and classes have none
        return ""


def _public(module: ModuleType) -> list[tuple[str, Any]]:
    """The module's functions and classes: ``__all__``, else public names it defines itself."""
    listed = getattr(module, "__all__", None)
    names = list(listed) if listed is not None else sorted(n for n in vars(module) if not n.startswith("_"))
    found = []
    for name in names:
        obj = getattr(module, name, None)
        if not (inspect.isroutine(obj) or inspect.isclass(obj)):
            continue
        if listed is None and getattr(obj, "__module__", module.__name__) != module.__name__:
            continue  # imported from elsewhere
        found.append((name, obj))
    return found


def _documents(module_name: str) -> list[Document]:
    module = importlib.import_module(module_name)
    members = _public(module)
    docs = [Document(module_name, f"module {module_name}",
                     f"{inspect.getdoc(module) or ''}\n\nContents: {', '.join(name for name, _ in members)}")]
    for name, obj in members:
        doc = inspect.getdoc(obj)
        if not doc:
            continue
        text = doc
        if inspect.isclass(obj):
            methods = sorted(n for n, v in vars(obj).items() if not n.startswith("_") and inspect.isroutine(v))
            text += f"\n\nMethods: {', '.join(methods)}" if methods else ""
        kind = "class" if inspect.isclass(obj) else "function"
        docs.append(Document(f"{module_name}.{name}", f"{kind} {module_name}.{name}{_signature(obj)}", text))
    return docs


@functools.cache
def stdlib_corpus() -> Corpus:
    """The corpus of :data:`MODULES` (built once per process, about a second) with its index."""
    by_id: dict[str, Document] = {}
    for module_name in MODULES:
        for doc in _documents(module_name):
            by_id.setdefault(doc.id, doc)
    documents = tuple(sorted(by_id.values(), key=lambda d: d.id))
    # the name counts twice: a search for "isqrt" should rank math.isqrt above texts that mention it
    index = BM25Index([f"{d.id} {d.id} {d.title}\n{d.text}" for d in documents])
    return Corpus(documents, {d.id: d for d in documents}, index)
