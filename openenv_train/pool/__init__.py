"""The Ray rollout pool: actors, dispatch, backpressure and failure handling (see DESIGN.md)."""
