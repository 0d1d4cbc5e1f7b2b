"""From answered calls to TrainingTurns, and back: which recorded turn a new request continues."""

from __future__ import annotations

from typing import Any

from ...trace import BEAM_DECODED, CaptureStore, TrainingTurn, UnknownCaptureSession, build_turn
from .._types import ChatRequest, ChatResult, Continuation
from .._wire.messages import messages_extend, normalise_messages

__all__ = ["SAMPLING_KEYS", "find_continuation", "turns_for"]

#: Request keys recorded as ``sampling_requested``.
SAMPLING_KEYS = ("temperature", "top_p", "top_k", "max_tokens", "max_completion_tokens", "stop", "stop_token_ids",
                 "seed", "n", "logprobs", "top_logprobs")


def find_continuation(store: CaptureStore, session: str, request: ChatRequest) -> Continuation | None:
    """The latest exact turn of the session whose messages and reply the request's messages start with."""
    try:
        turns = store.get(session).turns
    except UnknownCaptureSession:
        return None
    tools = request.tools or []
    for turn in reversed(turns):
        old = turn.request.get("messages") or []
        if (turn.metadata.get("rollout_type") != "train" or not turn.completion_token_ids
                or len(old) >= len(request.messages) or (turn.request.get("tools") or []) != tools
                or (turn.request.get("chat_template_kwargs") or {}) != request.chat_template_kwargs):
            continue
        reply = (turn.response.get("choices") or [{}])[0].get("message")
        if reply and messages_extend(request.messages, normalise_messages(old), reply):
            ids = tuple(turn.prompt_token_ids) + tuple(turn.completion_token_ids)
            return Continuation(ids, len(old) + 1, turn.node_id)
    return None


def turns_for(request: ChatRequest, result: ChatResult, response: dict[str, Any], *,
              timings: dict[str, float]) -> list[TrainingTurn]:
    """One TrainingTurn per choice of an answered call.

    Token ids and logprobs are kept only when the backend says they are exact (``rollout_type="train"``);
    otherwise the turn keeps the messages and is marked ``rollout_type="eval"`` in its metadata. A beam-search
    answer is never a sample of the policy: its turns keep no token data of their own and are marked
    ``beam_decoded`` with every beam and its score (``openenv_train.trace.beam_decoded``).
    """
    body = request.body
    requested = {k: body[k] for k in SAMPLING_KEYS if k in body}
    beams = _beams(request, result)
    turns = []
    for i, choice in enumerate(result.choices):
        exact = bool(result.exact and result.prompt_token_ids is not None and choice.token_ids is not None
                     and choice.logprobs is not None and len(choice.logprobs) == len(choice.token_ids)
                     and beams is None)
        node_id = response["id"] if len(result.choices) == 1 else f"{response['id']}-{i}"
        common: dict[str, Any] = {
            "messages": body.get("messages") or request.messages, "tools": request.tools,
            "choices": [{k: response["choices"][i][k] for k in ("index", "message", "finish_reason")}],
            "sampling_requested": requested,
            "sampling_used": result.sampling_used, "timings": timings, "model": result.model, "node_id": node_id,
        }
        reason = None
        if exact:
            try:
                turn = build_turn(prompt_token_ids=result.prompt_token_ids or [], completion_token_ids=choice.token_ids
                                  or [], logprobs=choice.logprobs, **common)
            except ValueError as exc:  # e.g. a non-finite logprob from a broken upstream
                exact, reason = False, str(exc)
        if not exact:
            turn = build_turn(**common)
        metadata = {
            **turn.metadata, **{k: v for k, v in result.info.items() if k != "timings"},
            "rollout_type": "train" if exact else "eval", "request_id": response["id"], "choice_index": i,
            "n": len(result.choices), "usage": response.get("usage"),
        }
        if reason:
            metadata["token_data_dropped"] = reason
        if beams is not None:
            metadata[BEAM_DECODED] = {**beams, "rank": i}
        extra = {k: v for k, v in (("tool_choice", request.tool_choice),
                                   ("chat_template_kwargs", request.chat_template_kwargs)) if v}
        turns.append(turn.model_copy(update={"metadata": metadata, "request": {**turn.request, **extra}}))
    return turns


def _beams(request: ChatRequest, result: ChatResult) -> dict[str, Any] | None:
    """What a beam-search answer's turns record of the search (None: the answer was sampled). The backend's
    ``decoding`` says so even when a wrapper (``FixedSampling``) asked for the beams, not the caller."""
    decoding = result.info.get("decoding") or {}
    params = request.sampling
    if decoding.get("method") != "beam_search" and not params.use_beam_search:
        return None
    return {"width": decoding.get("width", params.n),
            "length_penalty": decoding.get("length_penalty", params.length_penalty),
            "prompt_token_ids": result.prompt_token_ids,
            "beams": [{"text": c.message.get("content"), "token_ids": c.token_ids, "score": c.beam_score,
                       "cumulative_logprob": sum(c.logprobs) if c.logprobs is not None else None,
                       "finish_reason": c.finish_reason} for c in result.choices]}
