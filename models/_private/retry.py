"""Which failures of a model request are retried, and how long to wait before the next try."""

from __future__ import annotations

import email.utils
import random
import time
from typing import Any

RETRY_AFTER_CAP = 120.0
"""Longest wait a server's Retry-After header can impose (seconds)."""


def backoff_delay(retry: int, base: float, cap: float, rng: random.Random) -> float:
    """Full-jitter exponential backoff: uniform in [0, min(cap, base * 2**(retry-1))] for retry 1, 2, ...

    >>> backoff_delay(3, 0.5, 20.0, random.Random(0)) <= 2.0
    True
    """
    return rng.uniform(0.0, min(cap, base * (2 ** max(0, retry - 1))))


def retry_after_seconds(exc: BaseException) -> float | None:
    """Seconds from the ``retry-after-ms`` / ``Retry-After`` header of an HTTP error response, if any."""
    response = getattr(exc, "response", None)
    headers: Any = getattr(response, "headers", None)
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def classify(exc: BaseException) -> str | None:
    """The retried kind of an openai error ("connection", "timeout", "rate_limit", "server"), else None."""
    import openai

    if isinstance(exc, openai.APITimeoutError):  # before APIConnectionError: it is a subclass
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection"
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status == 429:
            return "rate_limit"
        if status == 408:
            return "timeout"
        if status >= 500:
            return "server"
    return None


#: what llama.cpp's server says (HTTP 500) when the model's own output cannot be read as the tool-call
#: format its chat template promised: the reply failed, not the server, and at temperature 0 a retry
#: writes the same output again
MODEL_OUTPUT_REJECTED = (
    "The model produced output that does not match the expected",
    "Failed to parse tool call arguments as JSON",
)


def model_output_rejected(exc: BaseException) -> bool:
    """An HTTP 500 whose message says the model's output could not be parsed (see
    :data:`MODEL_OUTPUT_REJECTED`): a bad reply, recorded as such instead of retried as a server fault."""
    if status_of(exc) != 500:
        return False
    text = f"{getattr(exc, 'message', '')} {getattr(exc, 'body', '')}"
    return any(marker in text for marker in MODEL_OUTPUT_REJECTED)
