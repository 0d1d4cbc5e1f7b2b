"""The wire formats, pure functions (no I/O). OpenAI chat completions: requests and responses (``openai_chat``),
streamed ``chat.completion.chunk`` bodies (``openai_chunks``), chat messages and tool calls (``messages``), and
the constrained-decoding fields of a request (``constraint_fields``). The harness dialects, each to and from a chat
request: Anthropic Messages (``anthropic_messages``) and the OpenAI Responses API (``openai_responses``)."""
