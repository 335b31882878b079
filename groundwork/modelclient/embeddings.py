"""`/embeddings`."""

from __future__ import annotations

from .transport import ModelEndpoint, ModelOutputInvalid, _post_json


def embeddings_create(endpoint: ModelEndpoint, *, model: str, inputs: list[str]) -> list[list[float]]:
    """Embed `inputs` in one request; the vectors come back in the order of `inputs`. Batching is the
    caller's choice (servers limit the inputs per request differently)."""
    if not inputs:
        return []
    payload = _post_json(endpoint, "embeddings", {"model": model, "input": list(inputs)})
    data = payload.get("data")
    if not isinstance(data, list) or len(data) != len(inputs):
        got = len(data) if isinstance(data, list) else type(data).__name__
        raise ModelOutputInvalid(f"embeddings: expected {len(inputs)} vectors, got {got}")
    try:
        # Servers may answer out of order; `index` is the contract, not the list position.
        ordered = sorted(data, key=lambda item: int(item["index"]))
        vectors = [[float(x) for x in item["embedding"]] for item in ordered]
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelOutputInvalid(f"embeddings: malformed item ({type(exc).__name__}: {exc})") from None
    if [int(item["index"]) for item in ordered] != list(range(len(inputs))):
        raise ModelOutputInvalid("embeddings: indexes do not cover the inputs exactly once")
    return vectors


# --- chat ----------------------------------------------------------------------------------------------


