"""Writing a run task (``benchsmith.eval.Task``): what its ``solve`` gets and returns.

* :class:`CallContext`: the model (and, for episodes, the user simulator and the journal) a task
  talks to; each :class:`Request` it sends comes back as a :class:`Turn`
* :class:`Outcome`: how a case ended (a prediction, a format error, a refused request)
* reading replies: :func:`shallow_reply` (refuses a value nested too deep); ``read_json_reply`` and
  ``ParseError`` (a reply that cannot be read; the runner records it as ``format_error``) are
  :mod:`benchsmith.models`'
* :func:`select_cases`: the seeded, category-spread subset ``eval run --limit`` takes
* :data:`DONE`: the reply statuses that are final (a transport error is retried next run)

>>> from benchsmith.eval.tasks import shallow_reply
>>> shallow_reply({"answer": 1})
{'answer': 1}
"""

from benchsmith.eval._private.runner import (
    DONE,
    CallContext,
    Outcome,
    Request,
    Turn,
    select_cases,
    shallow_reply,
)

__all__ = [
    "DONE",
    "CallContext",
    "Outcome",
    "Request",
    "Turn",
    "select_cases",
    "shallow_reply",
]
