"""The shop database: built once per process from package data, copied read-only into each session.

Each session queries its own in-memory copy through a connection that cannot write: an
authorizer allows only reading statements (and a few schema pragmas), ``query_only`` is on,
strings are capped in length, and a progress handler stops a query at its time limit.
"""

from __future__ import annotations

import csv
import io
import math
import sqlite3
import threading
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ...core import OpenEnvTrainError

__all__ = ["QueryRefused", "QueryResult", "QueryTimeout", "ReadOnlyDatabase", "shop_database"]

TABLES = ("customers", "products", "orders", "order_items", "reviews")
#: Schema pragmas an agent may run; they only read.
READ_PRAGMAS = frozenset({"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"})
_READ_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE})
_DENIED_FUNCTIONS = frozenset({"load_extension"})
#: VM instructions between two looks at the clock.
_PROGRESS_EVERY = 5_000

_master: sqlite3.Connection | None = None
_master_lock = threading.Lock()


class QueryRefused(OpenEnvTrainError, ValueError):
    """The statement would write, or is not valid SQL for this database."""


class QueryTimeout(OpenEnvTrainError):
    """The query ran past its time limit and was stopped."""


@dataclass(frozen=True)
class QueryResult:
    """Column names and at most ``max_rows`` rows; ``truncated`` when more were there."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool

    def as_dict(self) -> dict[str, Any]:
        """The tool's JSON value."""
        return {"columns": self.columns, "rows": self.rows, "row_count": len(self.rows), "truncated": self.truncated}


def _data(name: str) -> str:
    return resources.files(__package__).joinpath("data").joinpath(name).read_text(encoding="utf-8")


def _build() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.executescript(_data("schema.sql"))
    for table in TABLES:
        header, *rows = csv.reader(io.StringIO(_data(f"{table}.csv")))
        marks = ", ".join("?" * len(header))
        # Empty CSV cells are NULLs; column affinity turns the other strings into numbers.
        db.executemany(f"INSERT INTO {table} ({', '.join(header)}) VALUES ({marks})",
                       [[cell if cell != "" else None for cell in row] for row in rows])
    db.commit()
    return db


def shop_database() -> sqlite3.Connection:
    """The process's master copy of the shop (built on first use); never hand it to an agent."""
    global _master
    with _master_lock:
        if _master is None:
            _master = _build()
        return _master


def _authorize(action: int, arg1: str | None, arg2: str | None, db_name: str | None, source: str | None) -> int:
    if action in _READ_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() not in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in READ_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


class ReadOnlyDatabase:
    """One session's private, read-only copy of the shop.

    Example:
        >>> db = ReadOnlyDatabase()
        >>> db.query("SELECT COUNT(*) AS n FROM products").rows
        [[30]]
        >>> db.query("DELETE FROM products")
        Traceback (most recent call last):
        ...
        openenv_train.envs.sql_tools._database.QueryRefused: refused: the database is read-only; ...
    """

    def __init__(self, *, max_rows: int = 200, time_limit_s: float = 2.0, max_value_chars: int = 100_000,
                 max_result_chars: int = 500_000) -> None:
        self.max_rows = max_rows
        self.time_limit_s = time_limit_s
        self.max_result_chars = max_result_chars
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        master = shop_database()
        with _master_lock:
            master.backup(self._conn)
        self._conn.execute("PRAGMA query_only = ON")
        self._conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_chars)
        self._conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        self._conn.set_authorizer(_authorize)
        self._lock = threading.Lock()
        self._deadline = math.inf
        self._conn.set_progress_handler(self._past_deadline, _PROGRESS_EVERY)

    def _past_deadline(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> QueryResult:
        """Run one statement and fetch at most ``max_rows`` rows.

        Raises:
            QueryRefused: a writing statement, several statements, or an SQL error.
            QueryTimeout: the query ran past ``time_limit_s``.
        """
        with self._lock:
            self._deadline = time.monotonic() + self.time_limit_s
            try:
                cursor = self._conn.execute(sql, params)
                result = self._fetch(cursor)
            except sqlite3.OperationalError as exc:
                if time.monotonic() > self._deadline and "interrupt" in str(exc):
                    raise QueryTimeout(f"query stopped after its {self.time_limit_s:g} s time limit") from None
                raise _refusal(exc) from None
            except (sqlite3.DatabaseError, sqlite3.Warning, sqlite3.ProgrammingError) as exc:
                raise _refusal(exc) from None
            finally:
                self._deadline = math.inf
        return result

    def _fetch(self, cursor: sqlite3.Cursor) -> QueryResult:
        columns = [d[0] for d in cursor.description or ()]
        rows: list[list[Any]] = []
        size = 0
        for raw in cursor:
            if len(rows) == self.max_rows or size > self.max_result_chars:
                return QueryResult(columns, rows, truncated=True)
            row = [_jsonable(v) for v in raw]
            size += sum(len(str(v)) for v in row)
            rows.append(row)
        return QueryResult(columns, rows, truncated=False)

    def tables(self) -> list[str]:
        """Names of the shop's tables."""
        rows = self.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").rows
        return [str(r[0]) for r in rows]

    def describe(self, table: str) -> dict[str, Any]:
        """Columns, foreign keys and row count of ``table``.

        Raises:
            QueryRefused: no such table (the message lists the tables).
        """
        known = self.tables()
        if table not in known:
            raise QueryRefused(f"no table {table!r}; tables: {', '.join(known)}")
        columns = self.query(f'PRAGMA table_info("{table}")').rows
        keys = self.query(f'PRAGMA foreign_key_list("{table}")').rows
        count = self.query(f'SELECT COUNT(*) FROM "{table}"').rows[0][0]
        return {
            "table": table,
            "columns": [{"name": c[1], "type": c[2], "nullable": not c[3], "primary_key": bool(c[5])} for c in columns],
            "foreign_keys": [{"column": k[3], "references": f"{k[2]}.{k[4]}"} for k in keys],
            "row_count": count,
        }

    def close(self) -> None:
        """Close the session's connection."""
        self._conn.close()


def _refusal(exc: Exception) -> QueryRefused:
    text = str(exc)
    if "not authorized" in text or "authorization denied" in text or "readonly" in text or "attempt to write" in text:
        return QueryRefused(
            f"refused: the database is read-only; only SELECT statements (WITH ... SELECT included) and "
            f"PRAGMA {', '.join(sorted(READ_PRAGMAS))} may run ({text})"
        )
    if "one statement at a time" in text:
        return QueryRefused("refused: send one SQL statement per query")
    return QueryRefused(f"SQL error: {text}")
