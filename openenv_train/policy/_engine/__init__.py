"""The decode engine of :class:`~openenv_train.policy.LocalBackend`: batched sampling with exact ids and logprobs.

- ``batcher``: concurrent requests collected into batches for a worker thread;
- ``core``: ``EngineCore`` (the model, its tokenizer, guides and prefix cache) and the in-process engine;
- ``process``, ``protocol``, ``shards``: the engine in a process of its own, the messages over its pipe, and
  several engines side by side;
- ``generation``, ``continuous``: a batch decoded token by token, and batches that join a running decode;
- ``sampling``, ``guide``, ``prefix_cache``, ``llama_decode``: one sampling step for a batch, constrained-decoding
  automata, earlier turns' KV cache, the lean Llama-family decode step.

Importing this package imports none of them (torch loads where they are used).
"""
