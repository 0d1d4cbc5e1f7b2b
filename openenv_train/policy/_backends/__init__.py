"""The policy backends: a model in this process (``local``, its streamed tokens in ``token_feed``), any
OpenAI-compatible server (``upstream``), a scripted expert and fixed sampling (``scripted``)."""
