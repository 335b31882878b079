"""One small client for OpenAI-compatible model servers (OpenAI, vLLM, llama.cpp, Ollama, LiteLLM ...).

Embeddings, fact extraction, consolidation verdicts and chat answers all speak to their model through
these four calls, so retries, timeouts, error typing and key hygiene live in one place. Only the
standard library does HTTP: the protocol is a handful of JSON POSTs and one SSE stream, and a vendor
SDK would pin us to one vendor's quirks.

Retry policy: connection errors, timeouts, HTTP 429 and 5xx are retried up to
`ModelEndpoint.max_attempts` times with a short random exponential wait; every other 4xx is raised at
once, because sending the same request again cannot fix it. A `Retry-After` header is deliberately not
honoured: a server asking for minutes would stall a web request or a Celery task past its time limit,
and the caller's own task retry is the right place for long back-off.
"""

from .chat import chat_complete, chat_complete_json
from .embeddings import embeddings_create
from .streaming import _sse_data, chat_stream
from .transport import ChatResult, ModelEndpoint, ModelError, ModelOutputInvalid, StreamEvent, ToolCall

__all__ = [
    "ChatResult", "ModelEndpoint", "ModelError", "ModelOutputInvalid", "StreamEvent", "ToolCall",
    "_sse_data", "chat_complete", "chat_complete_json", "chat_stream", "embeddings_create",
]
