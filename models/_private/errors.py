"""``TransportError``: a request to a model endpoint that failed for good."""

from __future__ import annotations

from benchsmith.schemas import RuntimeFault

RETRIED_KINDS = ("connection", "timeout", "rate_limit", "server")


class TransportError(RuntimeFault):
    """A model request failed: retried kinds after ``attempts`` tries, ``"request"`` at once.

    ``kind`` is ``"connection"`` (refused / reset / DNS), ``"timeout"``, ``"rate_limit"`` (HTTP
    429), ``"server"`` (HTTP 5xx) -- each retried with backoff first -- or ``"request"`` (another
    4xx such as 400 Bad Request or 422, e.g. a prompt longer than the context; never retried).
    ``status`` is the HTTP status when there was one. The message never holds an API key.
    """

    def __init__(self, message: str, *, kind: str, status: int | None = None, attempts: int = 1) -> None:
        self.kind = kind
        self.status = status
        self.attempts = attempts
        super().__init__(message)

    def __reduce__(self):  # keep pickling (process pools) working with the keyword-only fields
        return (_rebuild, (str(self), self.kind, self.status, self.attempts))


def _rebuild(message: str, kind: str, status: int | None, attempts: int) -> TransportError:
    return TransportError(message, kind=kind, status=status, attempts=attempts)
