"""A local backend's engine in a process of its own: the model decodes there, off the endpoint's GIL.

The endpoint's process parses, renders and batches requests, streams and captures; each batch goes over a pipe
to the engine process (:mod:`.protocol`), which runs an :class:`~.core.EngineCore`.

- **Start.** Processes come from a forkserver (the endpoint's process has threads, so ``fork`` is unsafe) that
  has imported torch, transformers and the model's module once: a new engine starts in tens of milliseconds
  after the first. The model and tokenizer are sent by pickle with torch's shared-memory reductions.
- **Live weights.** ``model.share_memory()`` moves the parameters and buffers into shared memory *in place*, so
  the engine reads the very tensors a trainer's in-place optimizer step writes (no copy per step). Before each
  batch the endpoint compares every tensor's storage with what it shared: an optimizer or a ``model.to()`` that
  replaced a tensor restarts the engine over the model as it is now (:meth:`ProcessEngine.sync_weights` does it
  on demand). A weights epoch (storages and in-place version counters) goes with the policy version, so the
  engine's prefix cache is dropped when the endpoint sees the weights change.
- **Hooks.** Module hooks that do not pickle are left out of the engine's copy (a trainer's: gradient
  checkpointing's input hook is a local function); the engine runs no backward and needs none of them.
- **Faults.** The engine exits when the endpoint's end of the pipe closes (its parent died or closed it). If the
  engine dies, the batch it held fails with :class:`~._errors.EngineUnavailable` (503) and a new engine is started
  at once for the next one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import logging
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import threading
import types
import warnings
from collections.abc import Callable, Iterator
from multiprocessing.reduction import ForkingPickler
from typing import Any

from .._errors import BackendFailed, EngineUnavailable
from .core import CoreSettings, EngineCore, PrefixStats
from .generation import Row, RowOutput
from .protocol import (
    Batch,
    BatchInFlight,
    Cancel,
    Done,
    EngineStreams,
    Finished,
    GuideSender,
    GuideStore,
    Hello,
    Setup,
    Started,
    Tokens,
    wire_rows,
)

__all__ = ["ProcessEngine", "serve_engine"]

#: The hook tables of a ``torch.nn.Module`` that may hold a trainer's functions.
_HOOK_TABLES = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
                "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                "_load_state_dict_post_hooks")

log = logging.getLogger("openenv_train.policy")

#: Modules the forkserver imports once, so that engines forked from it start without importing them.
_PRELOAD = ["torch", "transformers", "openenv_train.policy._engine.process", "openenv_train.policy._engine.llama_decode",
            "transformers.models.qwen2.modeling_qwen2", "transformers.models.llama.modeling_llama"]


class ProcessEngine:
    """The endpoint's handle on an engine process: start, run batches, restart, close.

    Batches are run from the batcher's worker threads (one at a time, or several that the engine decodes together
    with ``settings.continuous``): a reader thread hands each message to its batch; :meth:`close` may come from
    any thread.

    Args:
        model: The model (on the CPU); its parameters and buffers are moved to shared memory in place.
        tokenizer: Its tokenizer (a copy goes to the engine).
        settings: The core's settings.
        start_timeout_s: How long a new engine may take to say it is ready.
    """

    kind = "process"

    def __init__(self, model: Any, tokenizer: Any, settings: CoreSettings, *, start_timeout_s: float = 300.0) -> None:
        self.model, self.tokenizer, self.settings = model, tokenizer, settings
        self.start_timeout_s = start_timeout_s
        self.pid: int | None = None
        """The engine process's id (None before the first start)."""
        self.threads = 0
        """torch threads the engine runs with (as it reported)."""
        self.starts = 0
        """Engines started so far (the first, then one per restart)."""
        self.batches_sent = 0
        """Batches handed to the engine process."""
        self.batches_started = 0
        """Batches the engine reported it began decoding."""
        self.decoding = threading.Event()
        """Set while the engine decodes a batch (from its report that it started until the batch's end)."""
        self.prefix_cache: PrefixStats | None = PrefixStats() if settings.prefix_bytes else None
        """The engine's prefix cache counters after its last batch (None when the cache is off)."""
        self._lock = threading.RLock()  # sending a batch, starting and restarting
        self._idle = threading.Condition(self._lock)  # notified when no batch is in flight
        self._send_lock = threading.Lock()  # close() and cancellations may send while a batch is sent
        self._inboxes: dict[int, queue.SimpleQueue[Any]] = {}  # batch id -> its messages (the reader fills them)
        self._pids: dict[int, int | None] = {}  # starts -> that engine's pid
        self._losses: dict[int, str] = {}  # starts -> how that engine died
        self._process: Any = None
        self._conn: Any = None
        self._ids = itertools.count()
        self._shared: list[int] = []  # each tensor's data_ptr when it was shared
        self._weights_key: Any = None
        self._epoch = 0
        self._guides = GuideSender()
        self._closing = False  # close() ended the engine: a batch that loses it does not start another

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the engine (or a new one in place of a dead or stale one).

        Raises:
            BackendFailed: the engine could not be started (its error says why).
        """
        with self._lock:
            self._stop()
            self._closing = False
            import torch.multiprocessing  # noqa: F401  (registers the shared-memory reductions with pickle)

            context = multiprocessing.get_context("forkserver")
            module = type(self.model).__module__
            context.set_forkserver_preload(list(dict.fromkeys([*_PRELOAD, module])))  # no effect once it runs
            self.model.share_memory()
            self._shared = [t.data_ptr() for t in _tensors(self.model)]
            ours, theirs = context.Pipe()
            process = context.Process(target=serve_engine, args=(theirs,), name="policy-engine", daemon=True)
            with _main_hidden():
                process.start()
            theirs.close()  # the engine holds its end: its death shows here as the end of the pipe
            self._process, self._conn = process, ours
            try:
                with warnings.catch_warnings():  # a trainer's gradient hooks stay here: the engine runs no backward
                    warnings.filterwarnings("ignore", message="backward hook", category=UserWarning)
                    ours.send_bytes(_setup_bytes(Setup(self.model, self.tokenizer, self.settings)))
                if not ours.poll(self.start_timeout_s):
                    raise TimeoutError(f"no answer within {self.start_timeout_s:g}s")
                hello = ours.recv()
            except Exception as exc:
                code = self._stop()
                raise BackendFailed(f"the engine process could not be started ({type(exc).__name__}: {exc}; exit "
                                    f"code {code}); serve with LocalConfig(engine='thread') to decode in this "
                                    "process") from None
            assert isinstance(hello, Hello)
            self.pid, self.threads = hello.pid, hello.threads
            self._guides.resend()
            self.starts += 1
            self._pids[self.starts] = self.pid
            threading.Thread(target=self._read, args=(ours,), name="policy-engine-read", daemon=True).start()

    def close(self) -> None:
        """Stop the engine (a later :meth:`run` starts a new one)."""
        process, conn = self._process, self._conn
        if process is None:
            return
        self._closing = True
        with self._send_lock:
            try:
                conn.send(None)  # the engine exits at once, mid-batch or not
            except (OSError, ValueError):
                pass
        process.join(5.0)
        with self._lock:
            self._stop()

    def _stop(self) -> int | None:
        """Kill and reap the current engine, if any; its exit code."""
        process, conn, self._process, self._conn = self._process, self._conn, None, None
        self.decoding.clear()
        if conn is not None:
            conn.close()
        if process is None:
            return None
        if process.is_alive():
            process.kill()
        process.join()
        return process.exitcode  # type: ignore[no-any-return]

    def sync_weights(self) -> None:
        """Restart the engine over the model's tensors as they are now (after an optimizer or a ``load`` that
        replaced tensors instead of writing into them; :meth:`run` does this by itself when it sees it)."""
        with self._lock:
            self.start()

    # -- batches ---------------------------------------------------------------------------------
    def run(self, rows: list[Row], version: Any = None,
            on_rows: Callable[[list[int], list[RowOutput]], None] | None = None) -> list[RowOutput]:
        """Decode a batch in the engine; streamed rows get their tokens as the engine samples them. Several
        threads may each run one at once (an engine with ``settings.continuous`` decodes them together, and hands
        ``on_rows`` the rows that end before the rest of their batch, with their outputs, as they end).

        Raises:
            EngineUnavailable: the engine died while it held the batch (a new one has been started).
            Exception: what the model raised on the batch.
        """
        with self._lock:
            while self._inboxes and self._stale():
                self._idle.wait()  # a restart would lose the batches in flight: it waits for them
            if self._stale():
                self.start()
            batch_id = next(self._ids)
            wired, streamed, guides = wire_rows(rows, self._guides)
            flight = BatchInFlight.of(batch_id, rows)
            inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
            self._inboxes[batch_id] = inbox
            starts = self.starts
            try:
                self._send(Batch(batch_id, wired, streamed, (version, self._epoch), guides,
                                 self._guides.forgotten()))
                self.batches_sent += 1
            except (EOFError, OSError) as exc:
                self._close_inbox(batch_id)
                raise self._lost(exc, starts) from None
        try:
            return self._receive(flight, inbox, starts, on_rows)
        finally:
            with self._lock:
                self._close_inbox(batch_id)

    def _close_inbox(self, batch_id: int) -> None:
        self._inboxes.pop(batch_id, None)
        if not self._inboxes:
            self.decoding.clear()
            self._idle.notify_all()

    def _receive(self, flight: BatchInFlight, inbox: queue.SimpleQueue[Any], starts: int,
                 on_rows: Callable[[list[int], list[RowOutput]], None] | None) -> list[RowOutput]:
        while True:
            message = inbox.get()
            if isinstance(message, BaseException):  # the pipe ended: the engine died or was closed
                with self._lock:
                    raise self._lost(message, starts) from None
            if isinstance(message, Tokens):
                cancel = flight.tokens(message)
                if cancel is not None:
                    self._send(cancel)
            elif isinstance(message, Finished):
                if on_rows is not None:
                    on_rows(message.rows, message.outputs)
            elif isinstance(message, Started):
                self.batches_started += 1
                self.decoding.set()
            elif isinstance(message, Done):
                if message.stats is not None:
                    self.prefix_cache = message.stats
                if message.error is not None:
                    self._guides.resend()
                    raise message.error
                assert message.outputs is not None
                return message.outputs

    def _read(self, conn: Any) -> None:
        """The pipe's reader (a thread per engine): each message to its batch's inbox; when the pipe ends, the
        error to every batch in flight."""
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError) as exc:
                with self._lock:
                    if self._conn is conn or self._conn is None:
                        for inbox in self._inboxes.values():
                            inbox.put(exc)
                return
            waiting = self._inboxes.get(message.batch_id)
            if waiting is not None:
                waiting.put(message)

    def _send(self, message: Any) -> None:
        with self._send_lock:
            self._conn.send(message)

    def _lost(self, exc: BaseException, starts: int) -> EngineUnavailable:
        """The engine that held a batch died (``starts``: the engines started when it was sent): reap it and start
        a new one unless that was done for another batch of it, and say so."""
        pid = self._pids.get(starts, self.pid)
        if self.starts != starts:  # another batch it held reaped it
            return EngineUnavailable(f"the model's engine process (pid {pid}) died while decoding this request "
                                     f"({self._losses.get(starts)}); a new engine (pid {self.pid}) was started; "
                                     "send the request again")
        code = self._stop()
        how = self._losses[starts] = f"killed by signal {signal.Signals(-code).name}" if code is not None and code < 0 \
            else f"exit code {code}"
        if self._closing:
            return EngineUnavailable(f"the model's engine process (pid {pid}) was closed while decoding this request")
        try:
            self.start()
            now = f"a new engine (pid {self.pid}) was started; send the request again"
        except BackendFailed as failed:
            now = f"no new engine could be started: {failed.message}"
        log.error("the policy engine process (pid %s) died while decoding a batch (%s); %s", pid, how, now)
        return EngineUnavailable(f"the model's engine process (pid {pid}) died while decoding this request ({how}); "
                                 f"{now}")

    def _stale(self) -> bool:
        """Whether the engine must be (re)started: none, dead, or over tensors since replaced."""
        return self._process is None or not self._process.is_alive() or self._moved()

    def _moved(self) -> bool:
        """Whether a tensor was replaced since it was shared (then the engine is restarted); counts in-place
        changes into the weights epoch (then the engine drops its prefix cache)."""
        tensors = _tensors(self.model)
        if [t.data_ptr() for t in tensors] != self._shared:
            log.info("the served model's tensors were replaced (not written in place): restarting its engine over "
                     "the new ones")
            return True
        key = tuple(t._version for t in tensors)
        if key != self._weights_key:
            self._weights_key, self._epoch = key, self._epoch + 1
        return False


@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
    """Start a process without the parent's ``__main__``: multiprocessing would run the parent's script (or
    notebook) again in the engine, which needs nothing from it."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _tensors(model: Any) -> list[Any]:
    return [*model.parameters(), *model.buffers()]


def serve_engine(conn: Any) -> None:
    """The engine process: set up from the first message, then decode batches until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the endpoint's to handle; the engine follows it
    setup = conn.recv()
    assert isinstance(setup, Setup)
    core = EngineCore(setup.model, setup.tokenizer, setup.settings)
    import torch

    if setup.settings.threads:
        torch.set_num_threads(setup.settings.threads)
    conn.send(Hello(os.getpid(), torch.get_num_threads()))
    guides = GuideStore(core.guide_for)
    batches: queue.SimpleQueue[Batch] = queue.SimpleQueue()
    current: dict[int, EngineStreams] = {}  # the batches decoding now, for cancellations

    def receive() -> None:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                message = None
            if message is None:  # the endpoint closed us or died: nothing is waiting for what we would send
                os._exit(0)
            if isinstance(message, Cancel):
                streams = current.get(message.batch_id)
                if streams is not None:
                    streams.cancel(message)
            else:
                batches.put(message)

    def begin(batch: Batch) -> tuple[list[Row], Any]:
        """The batch's rows with their guides and stand-in streams, and what sends its streamed tokens."""
        streams = current[batch.batch_id] = EngineStreams(batch)
        conn.send(Started(batch.batch_id))

        def flush() -> None:
            tokens = streams.take()
            if tokens is not None:
                conn.send(tokens)

        guides.forget(batch.forget)
        rows = [dataclasses.replace(row, guide=guides.guide(ref)) if ref is not None else row
                for row, ref in zip(streams.rows(batch.rows), batch.guides, strict=True)]
        return rows, flush if batch.streamed else None

    def end(batch_id: int, result: list[RowOutput] | BaseException, rows: list[int] | None = None) -> None:
        if rows is not None:  # some rows ended before the rest of their batch
            assert not isinstance(result, BaseException)
            conn.send(Finished(batch_id, rows, result))
            return
        current.pop(batch_id, None)
        if isinstance(result, BaseException):  # the model failed on the batch: the endpoint retries its jobs
            conn.send(Done(batch_id, error=_sendable(result), stats=core.stats()))
        else:
            conn.send(Done(batch_id, result, stats=core.stats()))

    threading.Thread(target=receive, name="engine-receive", daemon=True).start()
    if core.joining is not None:
        _serve_joining(core, batches, begin, end)
    while True:
        batch = batches.get()
        try:
            rows, flush = begin(batch)
            result: list[RowOutput] | BaseException = core.run(rows, batch.version, on_step=flush)
        except Exception as exc:
            result = exc
        end(batch.batch_id, result)


def _serve_joining(core: EngineCore, batches: queue.SimpleQueue[Batch], begin: Any, end: Any) -> None:
    """Decode batches as they come (never returns). Those waiting join the running decode together, as one group,
    once the oldest has waited :data:`_HOLD_STEPS` steps (at once when nothing decodes): fewer groups, each with
    its own sampling step, for a few steps' wait. A batch of another policy version waits for the running ones to
    end, and those after it wait behind it."""
    assert core.joining is not None
    waiting: list[tuple[Batch, int]] = []  # each with the step count when it came
    steps = 0
    while True:
        if core.joining.idle and not waiting:
            waiting.append((batches.get(), steps))
        while True:
            try:
                waiting.append((batches.get_nowait(), steps))
            except queue.Empty:
                break
        version = waiting[0][0].version if waiting else None
        if waiting and core.joining.admits(version) and (core.joining.idle or steps - waiting[0][1] >= _HOLD_STEPS):
            joining = []
            while waiting and waiting[0][0].version == version:
                batch = waiting.pop(0)[0]
                try:
                    rows, flush = begin(batch)
                except Exception as exc:
                    end(batch.batch_id, exc)
                    continue
                joining.append((batch.batch_id, rows, flush))
            for ended in core.add(joining, version) if joining else []:
                end(ended.key, ended.outputs, ended.rows)
        if not core.joining.idle:
            for ended in core.step():
                end(ended.key, ended.outputs, ended.rows)
            steps += 1


#: Steps a batch waits for others to join the running decode with it.
_HOLD_STEPS = 2


def _sendable(exc: BaseException) -> BaseException:
    """``exc`` if it pickles, else a RuntimeError with its text."""
    try:
        pickle.dumps(exc)
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


def _setup_bytes(setup: Setup) -> bytes:
    """``setup`` pickled as a pipe's ``send`` would (torch's shared-memory reductions), with every module hook
    table that does not pickle sent empty instead."""
    unpicklable: set[int] = set()
    for module in setup.model.modules():
        for name in _HOOK_TABLES:
            table = getattr(module, name, None)
            if table:
                try:
                    pickle.dumps(table)
                except Exception:
                    unpicklable.add(id(table))

    class _Pickler(ForkingPickler):
        def reducer_override(self, obj: Any) -> Any:
            return (type(obj), ()) if id(obj) in unpicklable else NotImplemented

    buffer = io.BytesIO()
    _Pickler(buffer, pickle.HIGHEST_PROTOCOL).dump(setup)
    return buffer.getvalue()
