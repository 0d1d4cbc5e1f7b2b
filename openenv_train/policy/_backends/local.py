"""A policy backend that runs a transformers causal LM in this process, batching concurrent requests.

Prompts are rendered with the model's chat template (tools included); completions come back with their exact
token ids and logprobs (see :mod:`.._engine.generation` for which distribution), so every answer is training data.
Requests may be constrained to a list of choices or a regex (:mod:`.._engine.guide`). A streamed request gets its
tokens as the batch samples them (:mod:`.token_feed`), and its rows stop when its client leaves.

This process renders, batches, streams and answers; the batches decode in an engine (:mod:`.._engine.core`): by
default, for a model on the CPU, in a process of its own (:mod:`.._engine.process`), so decoding does not share
the GIL with the endpoint's event loop or a trainer.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import AsyncGenerator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._engine.batcher import Batcher
from .._engine.core import CoreSettings, EngineCore, PrefixStats, ThreadEngine
from .._errors import ContextLengthExceeded, EngineUnavailable, InvalidRequest
from .._types import ChatChoice, ChatRequest, ChatResult, FinishReason, StreamEvent, StreamStart
from .._wire.constraint_fields import unsupported_locally
from .._wire.messages import reply_message
from .token_feed import RowText, Sampled, TokenFeed

if TYPE_CHECKING:
    import torch

    from .._engine.prefix_cache import PrefixCache

log = logging.getLogger("openenv_train.policy")

__all__ = ["GUIDED_TURNS_KEPT", "LocalBackend", "LocalConfig", "WeightsLock"]

#: Batches in flight to an engine that lets them join the running decode (threads of the batcher, each waiting).
_JOINING_FLIGHTS = 8
#: Options a local model cannot honour, with their neutral values (anything else gets a 400).
_NEUTRAL = {"frequency_penalty": 0, "presence_penalty": 0, "repetition_penalty": 1, "min_p": 0, "min_tokens": 0}


@dataclass(frozen=True)
class LocalConfig:
    """Options of a :class:`LocalBackend`."""

    batch_window_s: float = 0.005
    """The longest a request waits for others to share its batch (only while other requests are arriving or the
    previous batch was larger; a request alone runs at once)."""
    batch_wait_fraction: float = 0.25
    """While fewer requests are pending than the previous batch held, a request may also wait up to this fraction
    of that batch's generate time for the rest (multi-turn episodes answered together come back a few ms apart,
    after their env steps; one that runs alone costs a whole batch's time again). 0: only ``batch_window_s``."""
    max_batch_rows: int = 128
    """Most completions generated together (a small model answers a whole 100-game evaluation turn at once)."""
    default_max_tokens: int = 1024
    """Completion limit when a request sets none (always capped by the context left)."""
    context: int | None = None
    """Context length in tokens; None reads ``max_position_embeddings`` from the model config."""
    fast_decode: bool = True
    """Decode Qwen2/Llama models with a static KV cache and a lean step over the model's modules (same logits up
    to float rounding); False always uses transformers' forward. Other architectures always use the latter."""
    decode_threads: int | None = None
    """torch threads while a batch decodes (the setting is process-wide; the previous one is restored after each
    batch). None: 1 for a model on the CPU with fewer than 10M parameters, whose matmuls are too small to gain
    from threads, while threads waiting for a core that a rollout actor holds stall every step (measured: 3-4x
    slower decoding beside one busy process on 2 cores); torch's setting otherwise. 0: torch's setting."""
    decode_switch_s: float | None = 0.0001
    """Python's thread switch interval while a batch decodes (``sys.setswitchinterval``; process-wide, restored
    after each batch). Each of a decode step's ~100 torch ops gives up the GIL and must take it back; beside a
    busy Python thread (the endpoint's event loop parsing requests, a trainer's loop) every take-back can wait a
    whole interval, Python's default 5 ms (``benchmarks/decode_gil.py`` measures a batch alone and beside one).
    None or 0: Python's setting."""
    prefix_cache_mb: float = 256
    """Memory for the keys and values of earlier turns, so a conversation's next turn prefills only its new
    tokens (fast decoding only; dropped when ``version`` or the weights change); 0 turns it off."""
    engine: Literal["auto", "process", "thread"] = "auto"
    """Where batches decode. "process": an engine process of its own (the model's tensors moved to shared memory,
    so a trainer's in-place updates are what it decodes with; the endpoint's event loop and a trainer no longer
    share a GIL with decoding). "thread": the batcher's worker thread in this process (as before; for models that
    cannot be pickled into another process, or code that hooks the model in this process). "auto": "process"
    for a model on the CPU, else "thread"; a model that cannot be sent to a process falls back to "thread" with a
    warning."""
    engines: int = 1
    """Engine processes (``engine`` "process"): with more than one, a batch of at least ``shard_rows`` rows is cut
    into contiguous shards that decode side by side, one per engine (data parallel; each engine decodes on its own
    torch threads, so a small model's wide batches use more than one core); narrower batches go to the first
    engine whole and decode exactly as with one."""
    shard_rows: int = 16
    """The narrowest batch that ``engines`` > 1 split."""
    continuous: bool = False
    """Continuous batching (one engine process, a Qwen2/Llama model on the fast path): a batch joins the one
    decoding a few steps after it comes instead of waiting for it to end, and each request is answered when its own
    rows end, not its batch's longest (:mod:`.._engine.continuous`). A seeded row samples the same tokens either way.
    Measured on 2 cores (``benchmarks/mixed_lengths.py``, ``benchmarks/generation_throughput.py``): requests of 8,
    64 and 256 tokens at once, 1.2-1.3x the tokens/s and the short ones answered 5-13x sooner; requests of one
    length in lock step (the GRPO recipes' turns), 0.87-1.02x the tokens/s and up to 30% more engine CPU a token
    (each batch that joins samples on its own). Off by default for that."""

    def __post_init__(self) -> None:
        if self.max_batch_rows < 1 or self.default_max_tokens < 1 or self.batch_window_s < 0 \
                or self.prefix_cache_mb < 0 or (self.decode_threads or 0) < 0 or self.batch_wait_fraction < 0 \
                or (self.decode_switch_s or 0) < 0:
            raise ValueError("max_batch_rows and default_max_tokens must be >= 1; batch_window_s, batch_wait_fraction, "
                             "prefix_cache_mb, decode_threads and decode_switch_s >= 0")
        if self.engine not in ("auto", "process", "thread"):
            raise ValueError(f"engine must be 'auto', 'process' or 'thread', got {self.engine!r}")
        if self.engines < 1 or self.shard_rows < 2:
            raise ValueError(f"engines must be >= 1 and shard_rows >= 2, got {self.engines} and {self.shard_rows}")


class WeightsLock:
    """The served weights' lock: batches decode under it together (:meth:`shared`), a trainer's write takes it
    alone (``acquire``/``release`` or ``with``) once the batches decoding have ended, and batches that come while a
    write waits wait for it (so a stream of joining batches cannot hold a write off)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        """Held by a batch while it decodes."""
        with self._cond:
            self._cond.wait_for(lambda: not self._writing and not self._writers_waiting)
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    def acquire(self) -> bool:
        """Wait for the decoding batches to end, then hold the weights alone."""
        with self._cond:
            self._writers_waiting += 1
            self._cond.wait_for(lambda: not self._writing and not self._readers)
            self._writers_waiting -= 1
            self._writing = True
        return True

    def release(self) -> None:
        """Let batches decode again."""
        with self._cond:
            self._writing = False
            self._cond.notify_all()

    def __enter__(self) -> WeightsLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@dataclass
class _Prepared:
    """A request rendered into rows, with what its result records."""

    rows: list[Any]
    prompt: list[int]
    continued: str | None
    render_s: float
    max_new: int
    seed: int
    stop_ids: frozenset[int]
    guide: Any = None


class LocalBackend:
    """Serve a causal LM from a path or a live model object (e.g. the one a trainer is training).

    Requests are batched in one worker thread and decoded by the engine (``config.engine``); the model is not put
    in eval mode or otherwise touched, so a trainer's weights are used as they are at each forward pass. With the
    process engine the model's tensors are moved to shared memory in place (``model.share_memory()``); a tensor
    later replaced rather than written into (``model.to(...)``, a non in-place optimizer) restarts the engine over
    the new one before the next batch.

    Args:
        model: A folder or Hub id to load with ``AutoModelForCausalLM.from_pretrained``, or a loaded model.
        tokenizer: The tokenizer (required with a model object; loaded from the path otherwise).
        config: Batching and limits.
        model_id: Name served in ``/v1/models``; default the path or ``config.name_or_path``.
    """

    def __init__(self, model: str | Path | Any, tokenizer: Any = None, *, config: LocalConfig | None = None,
                 model_id: str | None = None) -> None:
        if isinstance(model, str | Path):
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = tokenizer or AutoTokenizer.from_pretrained(model)
            model_id = model_id or str(model)
            model = AutoModelForCausalLM.from_pretrained(model).eval()
        elif tokenizer is None:
            raise ValueError("a model object needs its tokenizer: LocalBackend(model, tokenizer)")
        if tokenizer.chat_template is None:
            raise ValueError("the tokenizer has no chat template; set tokenizer.chat_template before serving it")
        self.model = model
        self.tokenizer = tokenizer
        self.config = config or LocalConfig()
        self._model_id = model_id or getattr(model.config, "name_or_path", None) or "local"
        self.context = self.config.context or int(getattr(model.config, "max_position_embeddings", 0) or 2048)
        self.eos_ids = _eos_ids(model, tokenizer)
        self._eos_texts = [str(t) for t in tokenizer.convert_ids_to_tokens(sorted(self.eos_ids)) if t]
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.eos_ids)
        self.version: int | None = None
        """Policy version (e.g. the trainer's step) recorded with every answer; the trainer sets it."""
        self.weights_lock = WeightsLock()
        """Held (shared) while batches decode. A trainer that writes the weights in place while batches decode
        (GRPO's overlapped rollouts) acquires it during the write, so every batch decodes with one version of the
        weights."""
        self._render_lock = threading.Lock()  # one tokenizer call at a time (HF tokenizers are not re-entrant)
        self._guides: Any = None  # GuideCache, built on the first constrained request
        self._guided: OrderedDict[int, Any] = OrderedDict()  # key of (prompt, completion) -> its guide
        self._guided_lock = threading.Lock()
        self.rows_cut = 0
        """Rows stopped before their end because their stream's client left."""
        self._small = sum(p.numel() for p in model.parameters()) < 10_000_000  # counted once, not per batch
        self._arriving = 0  # requests rendering their prompt: the batcher waits for them (and only them)
        self._batcher: Batcher[Any, Any] = Batcher(self._generate, window_s=self.config.batch_window_s,
                                                   max_rows=self.config.max_batch_rows,
                                                   expecting=lambda: self._arriving,
                                                   wait_fraction=self.config.batch_wait_fraction,
                                                   whole_batch_errors=(EngineUnavailable,))
        self.engine: Any = self._start_engine()
        """Where batches decode: a :class:`~.._engine.core.ThreadEngine` or a :class:`~.._engine.process.ProcessEngine`
        (its ``pid``, ``starts`` and ``decoding`` say how the engine process is doing)."""
        weakref.finalize(self, self.engine.close)  # a backend dropped without aclose() stops its engine

    def _start_engine(self) -> Any:
        config, model = self.config, self.model
        end = self.tokenizer.eos_token_id
        settings = CoreSettings(int(self.pad_id), int(end) if end is not None else min(self.eos_ids),
                                config.fast_decode, int(config.prefix_cache_mb * 2**20), self.decode_threads,
                                config.decode_switch_s or 0.0, config.continuous and config.engines == 1)
        kind = config.engine
        if kind == "auto":
            kind = "process" if _device_type(model) == "cpu" else "thread"
        if kind == "thread":
            return ThreadEngine(EngineCore(model, self.tokenizer, settings))
        from .._engine.process import ProcessEngine

        engine: Any = ProcessEngine(model, self.tokenizer, settings)
        if config.engines > 1:
            from .._engine.shards import ShardedEngine

            engine = ShardedEngine([engine, *(ProcessEngine(model, self.tokenizer, settings)
                                              for _ in range(config.engines - 1))], config.shard_rows)
        try:
            engine.start()
        except Exception as exc:
            if config.engine == "process":
                raise
            log.warning("serving %s from this process: %s", self._model_id, exc)
            return ThreadEngine(EngineCore(model, self.tokenizer, settings))
        if settings.continuous:
            self._batcher.in_flight, self._batcher.early = _JOINING_FLIGHTS, True
        return engine

    @property
    def model_id(self) -> str:
        """The name answers carry."""
        return self._model_id

    @property
    def prefix_cache(self) -> PrefixCache | PrefixStats | None:
        """The prefix cache (in the thread engine) or its counters as the engine process last reported them; its
        ``hits`` and ``reused_tokens`` count reuse. None when it is off."""
        return self.engine.prefix_cache  # type: ignore[no-any-return]

    def sync_weights(self) -> None:
        """Make the next batch decode with the model's weights as they are now, even if tensors were replaced in a
        way this backend cannot see (the process engine restarts over them; in-place writes need no call)."""
        self.engine.sync_weights()

    @property
    def decode_threads(self) -> int:
        """torch threads a batch decodes with (0: torch's setting), from ``config.decode_threads``."""
        if self.config.decode_threads is not None:
            return self.config.decode_threads
        return 1 if self._small and _device_type(self.model) == "cpu" else 0

    def _generate(self, rows: list[Any], on_rows: Any = None) -> list[Any]:
        with self.weights_lock.shared():
            version = self.version  # what this batch decodes with; a trainer may set the next one meanwhile
            if on_rows is None:
                outputs = self.engine.run(rows, version)
            else:
                def early(indices: list[int], outputs: list[Any]) -> None:
                    for out in outputs:
                        out.version = version
                    on_rows(indices, outputs)

                outputs = self.engine.run(rows, version, early)
        for out in outputs:
            out.version = version
        self.rows_cut += sum(out.cut for out in outputs)
        return outputs

    async def chat(self, request: ChatRequest) -> ChatResult:
        """Render, queue, generate, and parse tool calls.

        Raises:
            InvalidRequest: an option this backend cannot honour, a template error, or a prompt too long.
            BackendFailed: the model failed on this request.
        """
        prepared = await self._prepare(request)
        outputs, batch = await self._batcher.submit(prepared.rows)
        return self._result(request, prepared, outputs, batch)

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """:meth:`chat`, as events: tokens are sent as they are sampled and decoded (see :mod:`.token_feed`);
        closing the stream early stops its rows at the next step.

        Raises:
            InvalidRequest: as :meth:`chat` (before the first event).
            BackendFailed: the model failed on this request.
        """
        if request.sampling.use_beam_search:
            raise InvalidRequest(_BEAM_STREAM, param="stream")
        prepared = await self._prepare(request)
        feed = TokenFeed(len(prepared.rows))
        rows = [dataclasses.replace(row, stream=feed.row(i)) for i, row in enumerate(prepared.rows)]
        entries = self._entries_of_sampled(request) if request.sampling.logprobs else None
        texts = [RowText(i, self._decode, entries, stop=request.sampling.stop, stop_ids=prepared.stop_ids,
                         tools=_parses_tools(request)) for i in range(len(rows))]
        job = asyncio.ensure_future(self._batcher.submit(rows))  # queued before the first event: batched as chat is
        job.add_done_callback(lambda _: feed.wake())
        try:
            yield StreamStart(self.model_id, prepared.prompt, exact=True)
            while not job.done():
                await feed.ready.wait()
                for text, sampled in zip(texts, feed.take(), strict=True):
                    delta = text.add(sampled) if sampled else None
                    if delta is not None:
                        yield delta
            outputs, batch = job.result()
            result = self._result(request, prepared, outputs, batch)
            for text, choice in zip(texts, result.choices, strict=True):
                rest = text.finish(choice)
                if rest.content or rest.tool_calls or rest.token_ids:
                    yield rest
            yield result
        finally:
            if not job.done():  # the client left: free its rows (running ones stop at the next step)
                feed.cancel()
                job.cancel()

    def _decode(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))

    async def _prepare(self, request: ChatRequest) -> _Prepared:
        """Check, render and guide a request into its rows.

        Raises:
            InvalidRequest: an option this backend cannot honour, a template error, or a prompt too long.
        """
        from .._engine.generation import Row

        start = time.perf_counter()
        _check_supported(request)
        self._arriving += 1
        try:
            prompt, continued = await asyncio.to_thread(self._render_locked, request)
            guide = await asyncio.to_thread(self._guide_locked, request) if request.constraint is not None else None
            if len(prompt) >= self.context:
                raise ContextLengthExceeded(len(prompt), self.context)
        finally:
            self._arriving -= 1
            self._batcher.notify()
        params = request.sampling
        max_new = min(params.max_tokens or self.config.default_max_tokens, self.context - len(prompt))
        seed = params.seed if params.seed is not None else secrets.randbits(63)
        stop_ids = self.eos_ids | frozenset(params.stop_token_ids)
        rows = [Row(prompt, params, max_new, (seed + i) % 2**63, stop_ids, guide, constraint=request.constraint)
                for i in range(1 if params.use_beam_search else params.n)]  # one beam row holds all n beams
        return _Prepared(rows, prompt, continued, time.perf_counter() - start, max_new, seed, stop_ids, guide)

    def _result(self, request: ChatRequest, prepared: _Prepared, outputs: list[Any], batch: Any) -> ChatResult:
        """The answer from the rows' outputs (a row's error is raised)."""
        params, parse_tools = request.sampling, _parses_tools(request)
        version = outputs[0].version if outputs else self.version
        if params.use_beam_search:
            for out in outputs:
                if out.error is not None:
                    raise out.error
            outputs = [beam for out in outputs for beam in out.beams or [out]]
        choices = [self._choice(out, request, parse_tools) for out in outputs]
        if prepared.guide is not None and not params.use_beam_search:  # beams are never trained on
            self._remember_guide(prepared.prompt, outputs, prepared.guide)
        used = {**params.to_json(), "max_tokens": prepared.max_new, "seed": prepared.seed,
                "stop_token_ids": sorted(prepared.stop_ids)}
        info: dict[str, Any] = {"backend": "local", "policy_version": version,
                                "continued_from": prepared.continued, "batch_rows": batch.batch_rows,
                                "timings": {"render_s": prepared.render_s, "queue_s": batch.queue_s,
                                            "generate_s": batch.generate_s}}
        if request.constraint is not None:  # sampled: logprobs of the masked distribution (see _engine.generation)
            info["constraint"] = {**request.constraint.describe(),
                                  "logprobs": "model" if params.use_beam_search else "masked"}
        if params.use_beam_search:  # the beams are the model's most likely sequences, not samples of it
            info["decoding"] = {"method": "beam_search", "width": params.n, "length_penalty": params.length_penalty,
                                "scores": [c.beam_score for c in choices]}
        return ChatResult(self.model_id, choices, prepared.prompt, exact=True, sampling_used=used, info=info)

    def _remember_guide(self, prompt: list[int], outputs: list[Any], guide: Any) -> None:
        with self._guided_lock:  # read by a trainer's thread
            for out in outputs:
                key = _turn_key(prompt, out.token_ids)
                self._guided[key] = guide
                self._guided.move_to_end(key)
            while len(self._guided) > GUIDED_TURNS_KEPT:
                self._guided.popitem(last=False)

    def allowed_tokens(self, prompt_ids: Sequence[int], completion_ids: Sequence[int]) -> list[torch.Tensor] | None:
        """The token ids the decoding constraint allowed at each completion token of a turn this backend answered,
        or None when the turn was unconstrained (or is older than the last :data:`GUIDED_TURNS_KEPT` constrained
        turns).

        A trainer uses them to compute the policy's logprobs under the same mask the turn was sampled from (the
        captured logprobs are of that masked distribution, see :mod:`.._engine.generation`).
        """
        with self._guided_lock:
            guide = self._guided.get(_turn_key(prompt_ids, completion_ids))
        if guide is None:
            return None
        from .._engine.guide import DONE

        allowed, state = [], guide.start()
        for token in completion_ids:
            if state == DONE:
                break
            allowed.append(guide.allowed(state))
            state = guide.advance(state, int(token))
        return allowed

    def _render_locked(self, request: ChatRequest) -> tuple[list[int], str | None]:
        with self._render_lock:
            return self.render(request)

    def _guide_locked(self, request: ChatRequest) -> Any:
        from .._engine.guide import GuideCache

        assert request.constraint is not None
        with self._render_lock:
            if self._guides is None:
                end = self.tokenizer.eos_token_id
                self._guides = GuideCache(self.tokenizer, int(end) if end is not None else min(self.eos_ids))
            return self._guides.get(request.constraint)

    def render(self, request: ChatRequest) -> tuple[list[int], str | None]:
        """The prompt ids for a request, and the node id of the earlier turn whose exact ids it reuses.

        Without a usable continuation this is ``apply_chat_template(messages, tools=..., add_generation_prompt=True)``.

        Raises:
            InvalidRequest: the chat template rejects the messages.
        """
        cont = request.continuation
        if cont is None:
            return self._apply(request.messages, request, generation=True), None
        # Text first, then only what follows the earlier turn's last end token is tokenised: the tokeniser splits
        # text at special tokens, so that part gets the ids it has in the whole prompt (checked: it starts with
        # the end token), at a fraction of the cost of tokenising the whole conversation twice.
        full = self._apply(request.messages, request, generation=True, tokenize=False)
        head = self._apply(request.messages[: cont.messages], request, generation=False, tokenize=False)
        end = max((head.rfind(text) for text in self._eos_texts), default=-1)
        tail = self._encode(full[end:]) if full.startswith(head) and end >= 0 else []
        if not tail or tail[0] not in self.eos_ids:
            # the template rewrites earlier turns, or ends them with no end token: render everything
            return self._apply(request.messages, request, generation=True), None
        ids = list(cont.token_ids)
        return ids + tail[1 if ids and ids[-1] in self.eos_ids else 0:], cont.node_id

    def _apply(self, messages: list[dict[str, Any]], request: ChatRequest, *, generation: bool,
               tokenize: bool = True) -> Any:
        """The chat template's ids for ``messages`` (its text with ``tokenize=False``)."""
        try:
            out = self.tokenizer.apply_chat_template(
                messages, tools=request.tools, add_generation_prompt=generation, tokenize=tokenize,
                return_dict=False, **request.chat_template_kwargs,
            )
        except Exception as exc:  # jinja errors (roles must alternate, ...), bad template kwargs
            raise InvalidRequest(f"the chat template rejected the messages: {exc}", param="messages") from None
        return list(out) if tokenize else out

    def _encode(self, text: str) -> list[int]:
        """``text``'s ids as ``apply_chat_template(tokenize=True)`` tokenises a rendered prompt."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _choice(self, out: Any, request: ChatRequest, parse_tools: bool) -> ChatChoice:
        if out.error is not None:
            raise out.error
        message = reply_message(out.text, parse_tools=parse_tools)
        finish: FinishReason = "tool_calls" if "tool_calls" in message and out.finish_reason == "stop" \
            else out.finish_reason
        choice = ChatChoice(message, finish, out.token_ids, out.logprobs, stop_sequence=out.stop_sequence,
                            beam_score=out.score)
        if request.sampling.logprobs:
            choice.openai_logprobs = self._openai_logprobs(out, request)
        return choice

    def _openai_logprobs(self, out: Any, request: ChatRequest) -> dict[str, Any]:
        tops = out.top_logprobs or [[] for _ in out.token_ids]
        sampled = list(zip(out.token_ids, out.logprobs, tops, strict=True))
        return {"content": self._entries_of_sampled(request)(sampled)}

    def _entries_of_sampled(self, request: ChatRequest) -> Any:
        """``sampled -> OpenAI logprobs.content entries`` for this request (token text, or ``token_id:<id>``)."""
        as_ids = request.return_tokens_as_token_ids

        def entry(token: int, logprob: float) -> dict[str, Any]:
            raw = _token_bytes(self.tokenizer, token)
            text = f"token_id:{token}" if as_ids else raw.decode("utf-8", errors="replace")
            return {"token": text, "logprob": logprob, "bytes": list(raw)}

        def entries(sampled: list[Sampled]) -> list[dict[str, Any]]:
            return [{**entry(token, logprob), "top_logprobs": [entry(t, lp) for t, lp in top]}
                    for token, logprob, top in sampled]

        return entries

    async def aclose(self) -> None:
        """Stop the batching task, its thread and the engine process (the model stays loaded; a later request
        starts them again)."""
        await self._batcher.aclose()
        await asyncio.to_thread(self.engine.close)



#: Constrained turns whose guides a :class:`LocalBackend` keeps for :meth:`LocalBackend.allowed_tokens` (a GRPO step
#: of 64 ten-turn games holds 640).
GUIDED_TURNS_KEPT = 16384


def _device_type(model: Any) -> str:
    device = getattr(model, "device", None)
    return str(getattr(device, "type", "cpu"))


def _turn_key(prompt: Sequence[int], completion: Sequence[int]) -> int:
    return hash((tuple(prompt), tuple(completion)))


def _parses_tools(request: ChatRequest) -> bool:
    return bool(request.tools) and request.tool_choice != "none"


def _check_supported(request: ChatRequest) -> None:
    body = request.body
    for key, neutral in _NEUTRAL.items():
        if body.get(key) not in (None, neutral):
            raise InvalidRequest(f"'{key}' is not supported by the local backend; leave it unset", param=key)
    if body.get("logit_bias"):
        raise InvalidRequest("'logit_bias' is not supported by the local backend", param="logit_bias")
    response_format = body.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type", "text") != "text":
        raise InvalidRequest("structured output ('response_format') is not supported by the local backend",
                             param="response_format")
    unsupported = unsupported_locally(body)
    if unsupported is not None:
        raise InvalidRequest(f"'{unsupported}' is not supported by the local backend (it enforces a list of choices "
                             "or a regex: guided_choice, guided_regex, structured_outputs.choice/regex)",
                             param=unsupported.partition(".")[0])
    if request.sampling.use_beam_search:
        _check_beam(request)
    if request.tool_choice not in (None, "auto", "none"):
        raise InvalidRequest(
            f"tool_choice={request.tool_choice!r} needs constrained decoding, which the local backend does not do; "
            "use 'auto' or 'none'", param="tool_choice",
        )


_BEAM_STREAM = ("'use_beam_search' cannot be streamed: the best beams are known only once every beam has ended; "
                "drop 'stream'")


def _check_beam(request: ChatRequest) -> None:
    """Options that cannot go with beam search get a 400 that says why."""
    params = request.sampling
    if request.stream:
        raise InvalidRequest(_BEAM_STREAM, param="stream")
    why = {"top_p": (params.top_p < 1.0, "it samples from the most likely tokens; beams keep the most likely "
                                         "sequences"),
           "top_k": (params.top_k > 0, "it samples from the k most likely tokens; beams keep the most likely "
                                       "sequences"),
           "stop": (bool(params.stop), "a stop string can end a beam in the middle of a token; use "
                                       "'stop_token_ids'"),
           "top_logprobs": (params.top_logprobs > 0, "beams report each token's own logprob only")}
    for name, (bad, reason) in why.items():
        if bad:
            raise InvalidRequest(f"'{name}' cannot be used with 'use_beam_search': {reason}", param=name)


def _eos_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    """End-of-turn ids: the tokenizer's eos and the generation config's."""
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if configured is not None:
        ids.update([configured] if isinstance(configured, int) else configured)
    if not ids:
        raise ValueError("the model has no end-of-turn token: set tokenizer.eos_token")
    return frozenset(ids)


_BYTE_DECODER: dict[str, int] = {}


def _token_bytes(tokenizer: Any, token: int) -> bytes:
    """The bytes a token stands for (byte-level BPE tokens map back exactly; others via decode)."""
    if not _BYTE_DECODER:
        printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
        extra = [b for b in range(256) if b not in printable]
        _BYTE_DECODER.update({chr(b): b for b in printable})
        _BYTE_DECODER.update({chr(256 + i): b for i, b in enumerate(extra)})
    piece = tokenizer.convert_ids_to_tokens(token)
    if token in tokenizer.added_tokens_decoder:
        return str(piece).encode()
    if isinstance(piece, str) and all(c in _BYTE_DECODER for c in piece):
        return bytes(_BYTE_DECODER[c] for c in piece)
    return str(tokenizer.decode([token])).encode()
