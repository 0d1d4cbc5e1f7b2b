"""Seeded calendar tasks and their checks on the final store."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from ._store import DAYS, PEOPLE, TAGS, CalendarStore, parse_time

__all__ = ["CalendarTask", "KINDS", "make_task"]

KINDS = ("schedule", "reschedule", "cancel", "complete_tag", "add_todo")


@dataclass(frozen=True)
class CalendarTask:
    """A request in words and a check that scores the store when the agent submits."""

    kind: str
    text: str
    check: Callable[[CalendarStore], tuple[bool, str]]


def _free_day(store: CalendarStore, rng: random.Random, day: str, minutes: int, days: list[str]) -> str:
    """``day`` if ``minutes`` fit in it, else a random one of ``days`` where they do (a full day has no slot)."""
    if store.free_slots(day, minutes):
        return day
    free = [d for d in days if store.free_slots(d, minutes)]
    if not free:
        raise ValueError(f"no day has {minutes} free minutes for a calendar task; the seeded store is full")
    return rng.choice(free)


def _schedule(store: CalendarStore, rng: random.Random) -> CalendarTask:
    day, minutes = rng.choice(DAYS), rng.choice([30, 60, 90])
    who = sorted(rng.sample(PEOPLE, 2))
    title = f"sync with {who[0]} and {who[1]}"
    day = _free_day(store, rng, day, minutes, list(DAYS))
    expected = store.free_slots(day, minutes)[0]

    def check(final: CalendarStore) -> tuple[bool, str]:
        made = [e for e in final.events(day) if e["title"].lower() == title]
        if len(made) != 1:
            return False, f"expected one event titled {title!r} on {day}, found {len(made)}"
        e = made[0]
        ok = (e["start"] == expected and parse_time(e["end"]) - parse_time(e["start"]) == minutes
              and set(e["attendees"]) >= set(who))
        return ok, f"expected {expected} for {minutes} min with {', '.join(who)}; got {e['start']}-{e['end']}"

    text = (f"Schedule a {minutes}-minute event titled '{title}' with {who[0]} and {who[1]} on {day}, "
            "at the earliest time that day that is free (half-hour starts, 09:00-17:00).")
    return CalendarTask("schedule", text, check)


def _reschedule(store: CalendarStore, rng: random.Random) -> CalendarTask:
    event = rng.choice(store.events())
    length = parse_time(event["end"]) - parse_time(event["start"])
    others = [d for d in DAYS if d != event["day"]] or list(DAYS)
    day = _free_day(store, rng, rng.choice(others), length, others)
    start = store.free_slots(day, length)[-1]

    def check(final: CalendarStore) -> tuple[bool, str]:
        moved = [e for e in final.events() if e["id"] == event["id"]]
        ok = bool(moved) and moved[0]["day"] == day and moved[0]["start"] == start
        return ok, f"expected event {event['id']} on {day} at {start}; got {moved[0] if moved else 'deleted'}"

    text = (f"Move the '{event['title']}' event of {event['day']} at {event['start']} to {day} at {start}, "
            "keeping its length.")
    return CalendarTask("reschedule", text, check)


def _cancel(store: CalendarStore, rng: random.Random) -> CalendarTask:
    event = rng.choice(store.events())
    day, person = event["day"], rng.choice(event["attendees"])
    doomed = {e["id"] for e in store.events(day, person)}
    keep = {e["id"] for e in store.events()} - doomed

    def check(final: CalendarStore) -> tuple[bool, str]:
        left = {e["id"] for e in final.events()}
        ok = not (left & doomed) and keep <= left
        return ok, f"expected events {sorted(doomed)} gone and the other {len(keep)} kept"

    return CalendarTask("cancel", f"Cancel every event on {day} that {person} attends; leave the others.", check)


def _complete_tag(store: CalendarStore, rng: random.Random) -> CalendarTask:
    tag = rng.choice(sorted({t["tag"] for t in store.todos()}))
    target = {t["id"] for t in store.todos(tag=tag)}

    def check(final: CalendarStore) -> tuple[bool, str]:
        done = {t["id"] for t in final.todos(done=True)}
        return done == target, f"expected exactly todos {sorted(target)} done, got {sorted(done)}"

    return CalendarTask("complete_tag", f"Mark every todo tagged '{tag}' as done, and no other.", check)


def _add_todo(store: CalendarStore, rng: random.Random) -> CalendarTask:
    title, tag, due = rng.choice(["send invoice", "fix bike", "plan trip"]), rng.choice(TAGS), rng.choice(DAYS)
    before = len(store.todos())

    def check(final: CalendarStore) -> tuple[bool, str]:
        match = [t for t in final.todos() if t["title"].lower() == title and t["tag"] == tag and t["due"] == due]
        ok = len(match) == 1 and len(final.todos()) == before + 1
        return ok, f"expected one new todo {title!r} tagged {tag!r} due {due}"

    return CalendarTask("add_todo", f"Add a todo '{title}' tagged '{tag}', due {due}.", check)


_MAKERS = {"schedule": _schedule, "reschedule": _reschedule, "cancel": _cancel, "complete_tag": _complete_tag,
           "add_todo": _add_todo}


def make_task(store: CalendarStore, seed: int, kind: str | None) -> CalendarTask:
    """A task of ``kind`` (drawn from the seed when None) on this store. Raises ValueError for unknown kinds."""
    rng = random.Random(f"calendar-task/{seed}")
    kind = kind or rng.choice(KINDS)
    if kind not in _MAKERS:
        raise ValueError(f"task kind {kind!r} is unknown; use one of {', '.join(KINDS)}")
    return _MAKERS[kind](store, rng)
