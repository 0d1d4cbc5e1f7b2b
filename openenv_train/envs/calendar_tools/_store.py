"""The calendar and todo store: one in-memory SQLite database per session, filled from the seed."""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from typing import Any

__all__ = ["DAYS", "PEOPLE", "CalendarStore", "parse_time"]

DAYS = [(dt.date(2026, 3, 2) + dt.timedelta(days=i)).isoformat() for i in range(5)]  # Monday..Friday
PEOPLE = ["alice", "bob", "chen", "dana", "eli", "fatima", "goran"]
TITLES = ["standup", "design review", "1:1", "planning", "customer call", "lunch", "interview", "demo",
          "budget sync", "dentist"]
TODOS = ["book flights", "renew passport", "buy milk", "buy eggs", "file expenses", "call plumber",
         "update resume", "pay rent", "water plants", "read report"]
TAGS = ["home", "work", "groceries", "travel"]
DAY_START, DAY_END = 9 * 60, 17 * 60

_SCHEMA = """
CREATE TABLE events (id INTEGER PRIMARY KEY, title TEXT NOT NULL, day TEXT NOT NULL, start_min INTEGER NOT NULL,
                     end_min INTEGER NOT NULL, attendees TEXT NOT NULL DEFAULT '');
CREATE TABLE todos (id INTEGER PRIMARY KEY, title TEXT NOT NULL, due TEXT, tag TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0);
"""


def parse_time(text: str) -> int:
    """Minutes after midnight of ``HH:MM``. Raises ValueError naming the format."""
    try:
        hours, minutes = text.strip().split(":")
        value = int(hours) * 60 + int(minutes)
    except ValueError:
        raise ValueError(f"time {text!r} is not HH:MM (24-hour), e.g. '14:30'") from None
    if not 0 <= value < 24 * 60 or not 0 <= int(minutes) < 60:
        raise ValueError(f"time {text!r} is not a time of day")
    return value


def _fmt(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _check_day(day: str) -> str:
    if day not in DAYS:
        raise ValueError(f"day {day!r} is not in this calendar; days are {', '.join(DAYS)} (YYYY-MM-DD)")
    return day


class CalendarStore:
    """Events and todos of one episode, in SQLite."""

    def __init__(self, seed: int) -> None:
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.db.executescript(_SCHEMA)
        rng = random.Random(f"calendar/{seed}")
        for day in DAYS:
            slots = sorted(rng.sample(range(DAY_START, DAY_END - 30, 30), rng.randint(2, 5)))
            for start in slots:
                length = rng.choice([30, 30, 60])
                if self._overlaps(day, start, start + length):
                    continue
                people = ",".join(sorted(rng.sample(PEOPLE, rng.randint(1, 3))))
                self.db.execute("INSERT INTO events (title, day, start_min, end_min, attendees) VALUES (?,?,?,?,?)",
                                (rng.choice(TITLES), day, start, start + length, people))
        for title in rng.sample(TODOS, 8):
            self.db.execute("INSERT INTO todos (title, due, tag) VALUES (?,?,?)",
                            (title, rng.choice([*DAYS, None]), rng.choice(TAGS)))

    def close(self) -> None:
        self.db.close()

    # -- events ------------------------------------------------------------------------------------------
    def events(self, day: str | None = None, attendee: str | None = None) -> list[dict[str, Any]]:
        """Events, earliest first, optionally of one day and/or with one attendee."""
        rows = self.db.execute("SELECT id, title, day, start_min, end_min, attendees FROM events "
                               "ORDER BY day, start_min, id").fetchall()
        out = [{"id": r[0], "title": r[1], "day": r[2], "start": _fmt(r[3]), "end": _fmt(r[4]),
                "attendees": [p for p in r[5].split(",") if p]} for r in rows]
        if day is not None:
            out = [e for e in out if e["day"] == _check_day(day)]
        if attendee is not None:
            out = [e for e in out if attendee.lower() in e["attendees"]]
        return out

    def event(self, event_id: int) -> dict[str, Any]:
        for event in self.events():
            if event["id"] == event_id:
                return event
        raise ValueError(f"no event with id {event_id}; list_events shows the ids")

    def _overlaps(self, day: str, start: int, end: int, ignore: int | None = None) -> bool:
        row = self.db.execute("SELECT COUNT(*) FROM events WHERE day=? AND start_min<? AND end_min>? AND id IS NOT ?",
                              (day, end, start, ignore)).fetchone()
        return bool(row[0])

    def _span(self, day: str, start: str, end: str, ignore: int | None = None) -> tuple[int, int]:
        begin, finish = parse_time(start), parse_time(end)
        if finish <= begin:
            raise ValueError(f"end {end} is not after start {start}")
        if self._overlaps(_check_day(day), begin, finish, ignore):
            raise ValueError(f"{day} {start}-{end} overlaps another event; find_free_slots lists free times")
        return begin, finish

    def create_event(self, title: str, day: str, start: str, end: str, attendees: list[str]) -> dict[str, Any]:
        begin, finish = self._span(day, start, end)
        cur = self.db.execute("INSERT INTO events (title, day, start_min, end_min, attendees) VALUES (?,?,?,?,?)",
                              (title, day, begin, finish, ",".join(sorted(p.lower() for p in attendees))))
        return self.event(int(cur.lastrowid or 0))

    def move_event(self, event_id: int, day: str, start: str) -> dict[str, Any]:
        event = self.event(event_id)
        length = parse_time(event["end"]) - parse_time(event["start"])
        begin = parse_time(start)
        self._span(day, start, _fmt(begin + length), ignore=event_id)
        self.db.execute("UPDATE events SET day=?, start_min=?, end_min=? WHERE id=?",
                        (day, begin, begin + length, event_id))
        return self.event(event_id)

    def delete_event(self, event_id: int) -> dict[str, Any]:
        event = self.event(event_id)
        self.db.execute("DELETE FROM events WHERE id=?", (event_id,))
        return event

    def free_slots(self, day: str, minutes: int) -> list[str]:
        """Start times (on the half hour, 09:00-17:00) where ``minutes`` fit without overlap."""
        _check_day(day)
        return [_fmt(s) for s in range(DAY_START, DAY_END - minutes + 1, 30) if not self._overlaps(day, s, s + minutes)]

    # -- todos -------------------------------------------------------------------------------------------
    def todos(self, tag: str | None = None, done: bool | None = None) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT id, title, due, tag, done FROM todos ORDER BY id").fetchall()
        out = [{"id": r[0], "title": r[1], "due": r[2], "tag": r[3], "done": bool(r[4])} for r in rows]
        return [t for t in out if (tag is None or t["tag"] == tag) and (done is None or t["done"] == done)]

    def add_todo(self, title: str, tag: str, due: str | None) -> dict[str, Any]:
        if due is not None:
            _check_day(due)
        cur = self.db.execute("INSERT INTO todos (title, due, tag) VALUES (?,?,?)", (title, due, tag))
        return next(t for t in self.todos() if t["id"] == cur.lastrowid)

    def complete_todo(self, todo_id: int) -> dict[str, Any]:
        if self.db.execute("UPDATE todos SET done=1 WHERE id=?", (todo_id,)).rowcount == 0:
            raise ValueError(f"no todo with id {todo_id}; list_todos shows the ids")
        return next(t for t in self.todos() if t["id"] == todo_id)
