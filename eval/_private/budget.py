"""Per-record budgets against hostile model output: a record is scored within a :class:`Budget`
(time, prediction length, string length, nesting, calls), and a record over it fails with the
error type ``over_budget`` instead of stalling or exhausting the run. Scorers check as they go
(:func:`check_time`, :func:`check_limit`, :func:`check_value`); a :class:`ScoringBudget` keeps the
current record's limits and deadline, and stops pure-Python work at the deadline with SIGALRM
where it can."""

from __future__ import annotations

import contextlib
import contextvars
import re
import signal
import threading
import time
import warnings
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Callable, Iterator, TypeVar

from .depth import MAX_DEPTH, brackets_bound, check_depth

T = TypeVar("T")


@dataclass(frozen=True)
class Budget:
    """What scoring one record may cost (docs/eval/runs.md). Model output past any limit is not
    scored: the record fails with error type ``over_budget`` and a reason naming the limit."""

    seconds: float = 10.0  # wall time to score the record (loading an embedding model not counted)
    prediction_chars: int = 100_000  # length of the prediction text
    calls: int = 1_000  # calls, plan steps, messages, turns or answers read from it
    depth: int = MAX_DEPTH  # nesting depth of a JSON or Python value read from it (MAX_DEPTH holds above it)
    string_chars: int = 100_000  # one string inside such a value
    plan_steps: int = 50  # T-Eval plan steps (each is embedded)
    embed_chars: int = 20_000  # T-Eval plan step names and arguments to embed


DEFAULT_BUDGET = Budget()

_LIMITS = {
    "seconds": "seconds of scoring",
    "prediction_chars": "characters of prediction",
    "calls": "calls, steps or messages",
    "depth": "levels of nesting",
    "string_chars": "characters in one string",
    "plan_steps": "plan steps",
    "embed_chars": "characters of text to embed",
}


class OverBudget(BaseException):
    """Raised while scoring a record that exceeds a limit of its :class:`Budget`. A
    ``BaseException``, so that no scorer's ``except Exception`` can take it for a parse error;
    :func:`score_record` turns it into an ``over_budget`` record."""

    def __init__(self, limit: str, figure: float, allowed: float) -> None:
        self.limit, self.figure, self.allowed = limit, figure, allowed
        fig = f"{figure:.1f}" if isinstance(figure, float) else f"{figure:,}"
        super().__init__(f"{limit}: {fig} {_LIMITS.get(limit, '')} (limit {allowed:,})")


class _Record:
    """The record being scored: its budget, deadline and whether its scorer is running (one
    object per scoring run, reset for each record)."""

    __slots__ = ("budget", "start", "deadline", "paused", "paused_for", "scoring")

    def __init__(self, budget: Budget) -> None:
        self.budget, self.scoring = budget, False
        self.start = self.deadline = self.paused_for = 0.0
        self.paused = 0


_CURRENT: contextvars.ContextVar[_Record | None] = contextvars.ContextVar("benchsmith_record", default=None)


def current_budget() -> Budget | None:
    """The budget of the record being scored (None outside :func:`score_record`: no limit applies)."""
    rec = _CURRENT.get()
    return rec.budget if rec is not None and rec.scoring else None


def check_time() -> None:
    """Raise :class:`OverBudget` when the record being scored is past its time limit (for long loops)."""
    rec = _CURRENT.get()
    if rec is not None and rec.scoring and not rec.paused and time.monotonic() > rec.deadline:
        raise OverBudget("seconds", rec.budget.seconds + time.monotonic() - rec.deadline, rec.budget.seconds)


def check_limit(limit: str, figure: int) -> None:
    """Raise :class:`OverBudget` when ``figure`` exceeds the record's limit ``limit`` (a field of
    :class:`Budget`, e.g. ``check_limit("calls", len(calls))``); nothing outside a record."""
    rec = _CURRENT.get()
    if rec is not None and rec.scoring and figure > getattr(rec.budget, limit):
        raise OverBudget(limit, figure, getattr(rec.budget, limit))


def check_value(value: Any, text: str | None = None) -> None:
    """Check a value read from a prediction before anything walks it. In a record: raise
    :class:`OverBudget` when it nests deeper than the record's ``depth`` or holds a string longer
    than ``string_chars`` (level by level: any depth). In a record or not: raise :class:`TooDeep`
    when it nests deeper than :data:`MAX_DEPTH`, which no scorer walks whatever the budget.
    ``text``: the text the value was parsed from (JSON, a Python literal or call; folded strings
    are bounded by the decoder's :class:`FoldBudget`): a text no longer than the string limit
    whose brackets cannot open more levels than the depth limit (:func:`brackets_bound`) cannot
    exceed either, so the value is not walked."""
    rec = _CURRENT.get()
    if rec is not None and rec.scoring:
        _check_budget_value(rec.budget, value, text)
        if rec.budget.depth <= MAX_DEPTH:
            return  # measured above, against a lower limit
    check_depth(value, MAX_DEPTH, "the prediction", text)


def _check_budget_value(budget: Budget, value: Any, text: str | None) -> None:
    depth_limit, chars = budget.depth, budget.string_chars
    if text is not None and len(text) <= chars and brackets_bound(text) <= depth_limit:
        return
    level, depth = [value], 0
    while level:
        inner: list[Any] = []
        containers = False
        for v in level:
            t = type(v)
            if t is str or (t is not list and t is not dict and isinstance(v, str)):
                if len(v) > chars:
                    raise OverBudget("string_chars", len(v), chars)
            elif t is list or t is tuple or isinstance(v, (list, tuple)):
                containers = True
                inner += v
            elif t is dict or isinstance(v, dict):
                containers = True
                inner += v
                inner += v.values()
        if containers:
            depth += 1
            if depth > depth_limit:
                raise OverBudget("depth", depth, depth_limit)
        level = inner


class FoldLimit(ValueError):
    """A value folded from a Python literal (``"x" * 99999 + ...``) exceeds a :class:`FoldBudget`."""


class FoldBudget:
    """Limits on the values a decoder folds from constant arithmetic in one model output (BFCL's
    and ACEBench's Python-syntax decoders): a few bytes of ``"x"*99999 + "x"*99999 + ...`` or
    ``[[1]*10000]*10000`` would otherwise build gigabytes, copy ever longer strings (quadratic
    time) or nest lists a checker walks element by element. A value's weight is its length for a
    string, its elements counted through every nesting level for a list or tuple (shared
    elements counted each time), 1 otherwise. No folded value may weigh more than
    ``max_value`` or hold an integer of more than ``max_int_bits`` bits, and all values folded
    in one output weigh at most ``max_total``."""

    def __init__(self, max_value: int = 100_000, max_total: int = 1_000_000, max_int_bits: int = 14_000) -> None:
        self.max_value, self.max_total, self.max_int_bits = max_value, max_total, max_int_bits
        self.total = 0
        self._weights: dict[int, tuple[Any, int]] = {}  # id -> (the value, kept alive; its weight)

    def weight(self, v: Any) -> int:
        if isinstance(v, (str, bytes)):
            return len(v)
        if isinstance(v, (list, tuple)):
            hit = self._weights.get(id(v))
            if hit is not None and hit[0] is v:
                return hit[1]
            w = 1 + sum(self.weight(e) for e in v)
            self._weights[id(v)] = (v, w)
            return w
        return 1

    def check(self, weight: int) -> None:
        """Refuse (:class:`FoldLimit`) to build a value of this weight."""
        if weight > self.max_value:
            raise FoldLimit(f"a folded value would hold {weight:,} elements or characters (limit {self.max_value:,})")

    def keep(self, v: Any) -> Any:
        """Count a folded value against the budget and return it."""
        if isinstance(v, int) and v.bit_length() > self.max_int_bits:
            raise FoldLimit(f"a folded integer has {v.bit_length():,} bits (limit {self.max_int_bits:,})")
        w = self.weight(v)
        self.check(w)
        self.total += w
        if self.total > self.max_total:
            raise FoldLimit(f"the folded values of the output weigh more than {self.max_total:,}")
        return v


# the file name model output is parsed under: "<unknown>", ast.parse's default, so that reasons
# quoting a SyntaxError stay as they were. The parser's warnings about odd literals in parsed text
# ("1if", "\\d") are not shown: they would be stray lines on the CLI's stderr.
MODEL_OUTPUT = "<unknown>"
warnings.filterwarnings("ignore", category=SyntaxWarning, module=re.escape(MODEL_OUTPUT))
warnings.filterwarnings("ignore", category=DeprecationWarning, module=re.escape(MODEL_OUTPUT))

EMBED_PREFIX_CHARS = 20_000


def embedding_text(text: str) -> str:
    """The text to give a sentence-embedding model for ``text``.

    Lone surrogates (a JSON-escaped ``"\\ud800"`` in model output), which its tokenizer refuses,
    become U+FFFD. A model keeps only its first 256 or 512 tokens (a token covers one character
    or more), but its tokenizer reads the whole text first: 5 MB of text costs gigabytes. Text
    longer than :data:`EMBED_PREFIX_CHARS` is cut at the last whitespace before that length,
    which leaves the tokens the model keeps, hence the vector, unchanged unless those characters
    hold fewer tokens than the model keeps (text made of long runs of whitespace or control
    characters or of 100+-character words)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if len(text) <= EMBED_PREFIX_CHARS:
        return text
    cut = text[:EMBED_PREFIX_CHARS]
    space = max(cut.rfind(" "), cut.rfind("\n"), cut.rfind("\t"))
    return cut[:space] if space > EMBED_PREFIX_CHARS // 2 else cut


@contextlib.contextmanager
def budget_paused() -> Iterator[None]:
    """Time spent inside does not count against the record's time limit (loading a model once
    per process is not the record's cost)."""
    rec = _CURRENT.get()
    if rec is None or not rec.scoring:
        yield
        return
    start = time.monotonic()
    rec.paused += 1
    try:
        yield
    finally:
        rec.paused -= 1
        spent = time.monotonic() - start
        if not rec.paused:
            rec.deadline += spent
            rec.paused_for += spent


# SIGALRM stops a record's pure-Python work at its deadline (main thread only; checks between
# bytecodes, so a long C call ends first). The timer is re-armed lazily: it fires at most once per
# time limit and moves on to the current record's deadline, so a record costs no system call.
_ALARM: dict[str, Any] = {"record": None, "armed": False}


def _on_alarm(signum: int, frame: Any) -> None:
    rec = _ALARM["record"]
    if rec is None or not rec.scoring:
        _ALARM["armed"] = False
        return
    left = rec.deadline - time.monotonic()
    if rec.paused or left > 0:
        signal.setitimer(signal.ITIMER_REAL, rec.budget.seconds if rec.paused else max(left, 0.01))
        return
    rec.scoring = False  # raised once: the handler of the error must not be interrupted again
    raise OverBudget("seconds", rec.budget.seconds - left, rec.budget.seconds)


@contextlib.contextmanager
def _alarm_installed(rec: _Record) -> Iterator[bool]:
    """Install the SIGALRM handler for a scoring run (whose records ``rec`` holds in turn) when
    possible: on the main thread, with no other handler or timer in place (else only the
    cooperative checks and the final time check apply)."""
    usable = (
        hasattr(signal, "SIGALRM")
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        and _ALARM["record"] is None
    )
    if not usable:
        yield False
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    _ALARM["record"] = rec
    try:
        yield True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _ALARM["record"], _ALARM["armed"] = None, False
        signal.signal(signal.SIGALRM, previous)


class ScoringBudget:
    """The budget keeper of one scoring run (``with ScoringBudget(budget) as keeper``): while it is
    open, :func:`check_time` and the other checks read the current record's limits, and
    ``keeper.within(prediction, score)`` scores one record. With ``alarm`` (the default) SIGALRM
    stops a record's pure-Python work at its deadline when this is the main thread and no other
    timer is in place; otherwise only the cooperative checks and the final time check apply."""

    def __init__(self, budget: Budget = DEFAULT_BUDGET, *, alarm: bool = True) -> None:
        self._rec = _Record(budget)
        self._want_alarm = alarm
        self._alarm = False
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> ScoringBudget:
        token = _CURRENT.set(self._rec)

        def reset() -> None:
            with contextlib.suppress(ValueError):  # closed from another context: nothing to reset there
                _CURRENT.reset(token)

        self._stack.callback(reset)
        if self._want_alarm:
            self._alarm = self._stack.enter_context(_alarm_installed(self._rec))
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stack.__exit__(kind, exc, tb)

    def within(self, prediction: Any, score: Callable[[], T]) -> T:
        """``score()`` for one record, within the budget: :class:`OverBudget` when ``prediction``
        is longer than allowed (before anything runs) or a limit is hit while it runs. Call
        :meth:`overtime` afterwards, whatever ``score`` did."""
        rec = self._rec
        budget = rec.budget
        if isinstance(prediction, str) and len(prediction) > budget.prediction_chars:
            raise OverBudget("prediction_chars", len(prediction), budget.prediction_chars)
        rec.start = now = time.monotonic()
        rec.deadline, rec.paused_for = now + budget.seconds, 0.0
        if self._alarm and not _ALARM["armed"]:
            _ALARM["armed"] = True
            signal.setitimer(signal.ITIMER_REAL, budget.seconds)
        rec.scoring = True
        try:
            return score()
        finally:
            rec.scoring = False

    def overtime(self) -> OverBudget | None:
        """The record's time limit exceeded, as measured after it ran (paused time left out), or None."""
        rec = self._rec
        spent = time.monotonic() - rec.start - rec.paused_for
        return OverBudget("seconds", spent, rec.budget.seconds) if spent > rec.budget.seconds else None
