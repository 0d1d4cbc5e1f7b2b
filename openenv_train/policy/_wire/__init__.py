"""The OpenAI chat-completions wire format, pure functions (no I/O): requests and responses (``openai_chat``),
streamed ``chat.completion.chunk`` bodies (``openai_chunks``), chat messages and tool calls (``messages``), and
the constrained-decoding fields of a request (``constraint_fields``)."""
