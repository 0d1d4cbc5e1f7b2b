"""The capturing OpenAI-compatible endpoint: the HTTP server (``server``) and the capture store's side of it, which
recorded turn a request continues (``capture``)."""
