"""Policy backends and the OpenAI-compatible endpoint that captures every call (guide: docs/guides/traces.md).

- :class:`PolicyServer`: ``/v1/chat/completions`` (``"stream": true`` too), ``/v1/models``, ``/health``; records
  calls made with a capture session into a :class:`~openenv_train.trace.CaptureStore`.
- :class:`StreamingBackend`: a backend that also answers piece by piece (:class:`StreamStart`, :class:`ChoiceDelta`,
  then the :class:`ChatResult`); any other backend's answer is streamed whole.
- :class:`LocalBackend`: a transformers model in this process (a path, or a trainer's live model), batched,
  with exact token ids and logprobs.
- :class:`UpstreamBackend`: any OpenAI-compatible server (vLLM, a hosted API, another PolicyServer).
- :class:`ScriptedBackend`, :class:`FixedSampling`: a scripted expert served like a model; fixed sampling.
- :class:`ChatClient`: the OpenAI-style chat client the pool, Harbor's model agent, the judge and
  :class:`UpstreamBackend` share; :func:`api_key_for` names a capture session in its key.
- :func:`captured_policy`: a capturing endpoint on loopback (sync or async block) yielding its URL and store.
- :func:`build_tiny_model`: a tiny random-weight chat model with Qwen2.5's template, built offline.
- :func:`generate_rows`, :class:`DecodeRow`: the decode engine's batch step on a transformers model, for
  measurements of the decode alone (what :class:`LocalBackend` runs for each batch).

Importing this package does not import torch or transformers; the backends load them when built.
"""

from ._backends.local import LocalBackend, LocalConfig, WeightsLock
from ._backends.scripted import FixedSampling, ScriptedBackend
from ._backends.upstream import UpstreamBackend, UpstreamConfig
from ._chat_client import ChatClient, ChatResponse, ChatStream, ChatTransportError, api_key_for
from ._endpoint.server import EndpointConfig, PolicyServer
from ._engine.generation import Row as DecodeRow
from ._engine.generation import generate_rows
from ._engine.guide import read_in_order, spell_in_order
from ._errors import (
    AuthenticationFailed,
    BackendFailed,
    ContextLengthExceeded,
    InvalidRequest,
    NotFound,
    PolicyError,
    TokenLimitExceeded,
    UpstreamFailed,
)
from ._serve import CapturedPolicy, captured_policy, policy_endpoint
from ._tiny.char_tokenizer import build_char_tokenizer, encode_char_chat, is_char_tokenizer
from ._tiny.model import TinyModelConfig, build_tiny_model, build_tiny_tokenizer, teach_tiny_model
from ._types import (
    ChatChoice,
    ChatRequest,
    ChatResult,
    ChoiceDelta,
    Constraint,
    Continuation,
    PolicyBackend,
    SamplingParams,
    StreamEvent,
    StreamingBackend,
    StreamStart,
)
from ._wire.messages import normalise_messages, parse_tool_calls
from ._wire.openai_chat import completion_json, parse_chat_request, v1_url

__all__ = [
    "DecodeRow",
    "AuthenticationFailed",
    "BackendFailed",
    "CapturedPolicy",
    "ChatChoice",
    "ChatClient",
    "ChatRequest",
    "ChatResponse",
    "ChatResult",
    "ChatStream",
    "ChatTransportError",
    "ChoiceDelta",
    "Constraint",
    "ContextLengthExceeded",
    "Continuation",
    "EndpointConfig",
    "FixedSampling",
    "InvalidRequest",
    "LocalBackend",
    "LocalConfig",
    "NotFound",
    "PolicyBackend",
    "PolicyError",
    "PolicyServer",
    "SamplingParams",
    "ScriptedBackend",
    "StreamEvent",
    "StreamStart",
    "StreamingBackend",
    "TinyModelConfig",
    "TokenLimitExceeded",
    "UpstreamBackend",
    "UpstreamConfig",
    "UpstreamFailed",
    "WeightsLock",
    "api_key_for",
    "build_char_tokenizer",
    "build_tiny_model",
    "generate_rows",
    "build_tiny_tokenizer",
    "captured_policy",
    "completion_json",
    "encode_char_chat",
    "is_char_tokenizer",
    "normalise_messages",
    "parse_chat_request",
    "parse_tool_calls",
    "policy_endpoint",
    "read_in_order",
    "spell_in_order",
    "teach_tiny_model",
    "v1_url",
]
