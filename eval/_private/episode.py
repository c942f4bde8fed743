"""Episodes: the model under test as an agent, talking with a simulated user, its tool calls
executing in the case's own stateful environment (the sandbox, an NL2API split's read-only
database, ...), within budgets; every finished turn is journaled so a killed episode resumes
from its last completed turn. See ``docs/eval/episodes.md``.

An episode is a list of events, each one turn: ``user`` (the simulator's message),
``assistant`` (text and/or calls, or an unreadable reply), ``tool`` (the calls' observations and
the state diff they caused) and a final ``end`` (why it stopped). Who speaks next and when a
budget is spent are the turn rules of :mod:`benchsmith.construction.turns`, the ones the dialogues
graph builds conversations by; the messages each side sees are pure functions
of the events (:func:`assistant_messages`, :func:`user_messages`); replies are read by pure
functions (:func:`read_assistant`, :func:`read_user`). Only :func:`run_episode` talks to models
and environments.

End reasons: ``user_stop`` (the user said the stop phrase), ``assistant_done`` (solo episodes:
the assistant answered without a call), ``user_failure`` (the simulator broke its role, sent
nothing, or stopped before asking anything), ``user_turn_budget`` (asked once more after
``max_turns`` messages, the simulator still did not stop), ``step_budget`` (too many assistant
replies after one user message), ``call_budget``,
``token_budget``, ``wall_budget``. The first two are normal ends. A ``user_failure`` is never
charged to the model (:data:`USER_FAILURES`). A user who never stops is cut by the turn budget:
if the goal was reached the episode passes (and is counted as a simulator that never stopped);
if not, it is ``budget_exhausted`` for the model, because a user who keeps asking while the task
is undone is doing its job (excluding those episodes would reward an assistant that never finishes).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
import json
import time
from abc import abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Protocol

from benchsmith.construction.turns import next_speaker, step_budget_spent, turn_budget_spent, user_message
from benchsmith.models import ParseError, call_schema, read_json_reply
from benchsmith.schemas import ToolError, append_journal, episode_event, iter_journal, loads_json

from .core import EvalCase
from .episode_ends import (
    STOP_PHRASE,
)
from .runner import CallContext, Outcome, Request, Task, shallow_reply

MAX_OBSERVATION = 1500
MAX_MESSAGE = 600
OPENER = "Hello! What can I do for you today?"


class EpisodeEnv(Protocol):
    """Where an episode's calls run: ``call`` returns a JSON-able observation or raises
    ``ToolError`` (with ``.code``); ``state`` is a JSON-able snapshot (or ``None``). An environment
    that keeps outputs under labels sets ``last_label`` after a call (the assistant is told, so a
    later call can pass the output on as ``$label$``)."""

    def call(self, name: str, arguments: dict[str, Any]) -> Any: ...

    def state(self) -> Any: ...


class LabelledEnv:
    """A construction tool environment (``call(name, arguments, label)``) as an episode
    environment: the N-th call's output is kept as ``out_N`` and reported in ``last_label``;
    ``state`` is the environment's snapshot, or None when it has none (NL2API tools)."""

    def __init__(self, env: Any) -> None:
        self._env = env
        self._n = 0
        self.last_label: str | None = None

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        self._n += 1
        self.last_label = None
        result = self._env.call(name, arguments, f"out_{self._n}")
        self.last_label = f"out_{self._n}"
        return result

    def state(self) -> Any:
        snap = getattr(self._env, "state", None)
        return snap() if callable(snap) else None

    def close(self) -> None:
        """Stop what the environment started (a live MCP server and its work folder)."""
        from benchsmith.construction import close_environment

        close_environment(self._env)


@dataclass(frozen=True)
class Budgets:
    """Per-episode limits (see :class:`~benchsmith.eval.TaskOptions`)."""

    max_turns: int = 12
    max_steps: int = 8
    max_tool_calls: int = 40
    max_tokens: int = 250_000
    wall_s: float = 1800.0

    @classmethod
    def from_options(cls, options: Any) -> Budgets:
        return cls(
            max_turns=options.max_turns,
            max_steps=options.max_steps,
            max_tool_calls=options.max_tool_calls,
            max_tokens=options.max_episode_tokens,
            wall_s=options.episode_wall_s,
        )


@dataclass
class EpisodeSpec:
    """One case as an episode: what the user wants, what the assistant may call, where calls run.

    ``instruction`` is the simulated user's (the assistant never sees it, except in ``solo``
    episodes, where it is the one user message and nobody else speaks). ``context`` is shown to
    the assistant (date, profile, ...). ``open_env`` returns a fresh environment: each episode
    gets its own, so no episode sees another's state.
    """

    instruction: str
    tools: list[dict[str, Any]]
    open_env: Callable[[], EpisodeEnv]
    persona: str | None = None
    context: str = ""
    solo: bool = False
    stop_phrase: str = STOP_PHRASE
    max_calls_per_reply: int = 4
    #: the outside service the environment shares with other openings (an HTTP service it resets):
    #: episodes of one service are played one at a time, whatever the run's concurrency
    shared: str | None = None


@dataclass
class Episode:
    """A finished (or budget-cut) episode."""

    events: list[dict[str, Any]]
    end: str
    final_state: Any
    resumed_at: int = 0  # events read back from the journal when it started
    model_turns: list[Any] = field(default_factory=list)

    @property
    def calls(self) -> list[dict[str, Any]]:
        """Every executed call: ``{name, arguments, ok, code}`` in order."""
        out = []
        for ev in self.events:
            if ev["who"] == "tool":
                for ob in ev["observations"]:
                    if ob.get("status") != "not_run":
                        out.append(
                            {
                                "name": ob["name"],
                                "arguments": ob["arguments"],
                                "ok": ob["status"] == "ok",
                                "code": ob.get("code"),
                            }
                        )
        return out

    def summary(self) -> dict[str, Any]:
        return summarize(self.events, self.end)


# ---- pure parts: who speaks, what each side sees, reading replies ----------------------------------
def summarize(events: list[dict[str, Any]], end: str) -> dict[str, Any]:
    """Counts of an episode (JSON-able): turns, replies, calls, failed calls by code, format errors, usage."""
    codes: dict[str, int] = {}
    calls = failed = fmt = 0
    tokens = 0
    wall = 0.0
    for ev in events:
        wall += float(ev.get("elapsed_s") or 0.0)
        if ev["who"] == "assistant":
            tokens += int((ev.get("usage") or {}).get("prompt_tokens") or 0) + int(
                (ev.get("usage") or {}).get("completion_tokens") or 0
            )
            fmt += 1 if ev.get("error") else 0
        if ev["who"] == "tool":
            for ob in ev["observations"]:
                if ob["status"] == "not_run":
                    continue
                calls += 1
                if ob["status"] != "ok":
                    failed += 1
                    codes[ob.get("code") or "tool_error"] = codes.get(ob.get("code") or "tool_error", 0) + 1
    return {
        "end": end,
        "user_turns": sum(1 for e in events if e["who"] == "user"),
        "assistant_replies": sum(1 for e in events if e["who"] == "assistant"),
        "tool_calls": calls,
        "failed_calls": failed,
        "error_codes": dict(sorted(codes.items())),
        "format_errors": fmt,
        "assistant_tokens": tokens,
        "wall_s": round(wall, 3),
    }


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _cut(text: str, limit: int = MAX_OBSERVATION) -> str:
    return text if len(text) <= limit else text[:limit] + " …(cut)"


def observation_text(ob: dict[str, Any]) -> str:
    """What the assistant reads for one call."""
    if ob["status"] == "ok":
        kept = f"(kept as ${ob['label']}$) " if ob.get("label") else ""
        return kept + _cut(_dumps(ob.get("observation")))
    if ob["status"] == "not_run":
        return _dumps({"error": "not_run", "message": "not run: an earlier call of the same reply failed"})
    return _cut(_dumps({"error": ob.get("code") or "tool_error", "message": ob.get("message", "")}))


def tool_lines(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tools for a prompt: name, description and one line per parameter (``name (type, required): text``)."""
    out = []
    for t in tools:
        given = t.get("parameters")
        params = given if isinstance(given, dict) else {}
        required = set(params.get("required") or [])
        lines = []
        for name, p in (params.get("properties") or {}).items():
            p = p if isinstance(p, dict) else {}
            kind = p.get("type") or "any"
            if p.get("enum"):
                kind = f"{kind}, one of {', '.join(map(str, p['enum'][:12]))}"
            lines.append(
                f"{name} ({kind}{', required' if name in required else ''}): {p.get('description') or ''}".strip()
            )
        out.append({"name": t.get("name", ""), "description": t.get("description") or "", "params": lines})
    return out


def assistant_schema(spec: EpisodeSpec) -> dict[str, Any]:
    """Prompt mode: one JSON object, either ``{"tool_calls": [...]}`` (each call under its tool's own
    parameter schema) or ``{"message": text}``."""
    message = {
        "type": "object",
        "properties": {"message": {"type": "string", "maxLength": MAX_MESSAGE}},
        "required": ["message"],
    }
    calls = call_schema(spec.tools) if spec.tools else None
    if not calls or not calls.get("anyOf"):
        return message
    act = {
        "type": "object",
        "properties": {
            "tool_calls": {"type": "array", "minItems": 1, "maxItems": spec.max_calls_per_reply, "items": calls}
        },
        "required": ["tool_calls"],
    }
    return {"anyOf": [act, message]}


def _native_call(call: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call["id"],
        "type": "function",
        "function": {"name": call["name"], "arguments": _dumps(call["arguments"])},
    }


def history(events: list[dict[str, Any]], native: bool) -> list[dict[str, Any]]:
    """The conversation as the assistant model sees it after its system prompt (pure)."""
    out: list[dict[str, Any]] = []
    for ev in events:
        who = ev["who"]
        if who == "user":
            out.append({"role": "user", "content": ev["text"] if native else f"User: {ev['text']}"})
        elif who == "assistant":
            if ev.get("error"):
                out.append({"role": "assistant", "content": _cut(ev.get("raw") or "", 1000)})
                out.append(
                    {
                        "role": "user",
                        "content": f"Error: your reply could not be used ({ev['error']['message']}). "
                        + ("Call a tool or write a message." if native else "Reply with one JSON object as described."),
                    }
                )
            elif native:
                msg: dict[str, Any] = {"role": "assistant", "content": ev.get("text") or ""}
                if ev.get("calls"):
                    msg["tool_calls"] = [_native_call(c) for c in ev["calls"]]
                out.append(msg)
            elif ev.get("calls"):
                out.append(
                    {
                        "role": "assistant",
                        "content": _dumps(
                            {"tool_calls": [{"name": c["name"], "arguments": c["arguments"]} for c in ev["calls"]]}
                        ),
                    }
                )
            else:
                out.append({"role": "assistant", "content": _dumps({"message": ev.get("text") or ""})})
        elif who == "tool":
            if native:
                out += [
                    {"role": "tool", "tool_call_id": ob["id"], "content": observation_text(ob)}
                    for ob in ev["observations"]
                ]
            else:
                out.append(
                    {
                        "role": "user",
                        "content": "Results:\n"
                        + "\n".join(f"{ob['name']}: {observation_text(ob)}" for ob in ev["observations"]),
                    }
                )
    return out


def assistant_messages(spec: EpisodeSpec, events: list[dict[str, Any]], native: bool) -> list[dict[str, Any]]:
    """The assistant's full request messages: the template's system part (and, in prompt mode, its
    worked example), then :func:`history`."""
    from benchsmith.construction.nl2api import hoist_columns
    from benchsmith.prompts import get_prompt

    # a split's column list once, after the tools: the tool text is then the same for every case
    columns, tools = ("", spec.tools) if native else hoist_columns(spec.tools)
    head = get_prompt("agent/assistant").render(
        native_tools=native, tools=tool_lines(tools), columns=columns, context=spec.context, solo=spec.solo
    )
    return head + history(events, native)


USER_SCHEMA = {
    "type": "object",
    "properties": {"message": {"type": "string", "maxLength": 300}, "done": {"type": "boolean"}},
    "required": ["message", "done"],
}


def seen_by_user(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(who, text)`` of the turns the user simulator sees: its own messages and the assistant's
    text replies (never calls, results or failed turns)."""
    return [
        (ev["who"], ev["text"])
        for ev in events
        if ev["who"] == "user"
        or (ev["who"] == "assistant" and not ev.get("error") and not ev.get("calls") and ev.get("text"))
    ]


def user_messages(spec: EpisodeSpec, events: list[dict[str, Any]], json_mode: bool = False) -> list[dict[str, Any]]:
    """The user simulator's request. By default its instruction, then the conversation with roles
    swapped (the assistant's words arrive as ``user`` messages, its own as ``assistant``).
    ``json_mode`` (a local model as the user): the chat so far as one transcript to continue, after a
    worked example, one JSON object per reply, ``{"message", "done"}`` (:data:`USER_SCHEMA`). Calls
    and results are never shown to it (:func:`seen_by_user`)."""
    from benchsmith.prompts import get_prompt

    turns = seen_by_user(events)
    if json_mode:  # a small model handed the assistant's words as `user` messages answers them as
        # the assistant (docs/eval/episodes.md)
        lines = [{"who": "Assistant", "text": OPENER}]
        lines += [
            {"who": "Customer", "text": _dumps({"message": text, "done": False})}
            if who == "user"
            else {"who": "Assistant", "text": " ".join(text.split())}
            for who, text in turns
        ]
        return get_prompt("agent/user_json").render(
            instruction=spec.instruction, persona=spec.persona, conversation=lines
        )
    msgs = get_prompt("agent/user").render(
        instruction=spec.instruction, persona=spec.persona, stop_phrase=spec.stop_phrase
    )
    msgs.append({"role": "user", "content": OPENER})
    msgs += [{"role": "assistant" if who == "user" else "user", "content": text} for who, text in turns]
    return msgs


def read_user_json(text: str, stop_phrase: str, tool_names: Iterable[str] = ()) -> tuple[str, bool]:
    """:func:`read_user` for a ``{"message", "done"}`` reply (pure).

    >>> read_user_json('{"message": "Thanks, bye.", "done": true}', "finish conversation")
    ('Thanks, bye.', True)
    """
    value = read_json_reply(text)
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("message"), str)
        or not isinstance(value.get("done"), bool)
    ):
        raise ParseError("user_bad_reply", "the user simulator's reply is not {message, done}")
    if value["done"]:
        return " ".join(value["message"].split())[: MAX_MESSAGE * 2], True
    return read_user(value["message"], stop_phrase, tool_names)


def read_user(text: str, stop_phrase: str, tool_names: Iterable[str] = ()) -> tuple[str, bool]:
    """``(message, stopped)`` from the simulator's reply (pure); raises ``ParseError`` when it broke
    its role (:func:`benchsmith.construction.turns.user_message`). A reply with the stop phrase in
    it stops, whatever else it says.

    >>> read_user("Please text Ana. ", "finish conversation")
    ('Please text Ana.', False)
    >>> read_user("Thanks! finish conversation", "finish conversation")
    ('Thanks! finish conversation', True)
    """
    message = " ".join((text or "").split())
    if message and stop_phrase.lower() in message.lower():
        return message[: MAX_MESSAGE * 2], True
    return user_message(message, tool_names)[: MAX_MESSAGE * 2], False


def read_assistant(
    spec: EpisodeSpec, text: str, tool_calls: list[dict[str, Any]], native: bool, n_calls: int
) -> tuple[str, list[dict[str, Any]]]:
    """``(text, calls)`` from one assistant reply (pure); raises ``ParseError`` for a reply that
    cannot be used. Calls get ids ``c<N>`` numbered over the episode (``n_calls`` so far)."""
    names = {t.get("name") for t in spec.tools}
    raw_calls: list[dict[str, Any]]
    if native:
        said = text or ""
        raw_calls = []
        for tc in tool_calls or []:
            args = tc.get("arguments")
            if isinstance(args, str):
                try:
                    args = loads_json(args) if args.strip() else {}
                except ValueError:
                    raise ParseError("bad_arguments", f"the arguments of {tc.get('name')!r} are not JSON") from None
            raw_calls.append({"name": tc.get("name"), "arguments": args, "id": tc.get("id")})
        if not raw_calls and not said.strip():
            raise ParseError("empty_reply", "no tool call and no text")
    else:
        value = read_json_reply(text)
        if not isinstance(value, dict):
            raise ParseError("bad_shape", "expected a JSON object")
        message = value.get("message")
        said = message if isinstance(message, str) else ""
        got = value.get("tool_calls")
        if got is not None and not isinstance(got, list):
            raise ParseError("bad_shape", "tool_calls must be a list")
        raw_calls = [c if isinstance(c, dict) else {"name": c} for c in (got or [])]
        if not raw_calls and not said.strip():
            raise ParseError("empty_reply", "neither tool_calls nor a message")
    calls = []
    for c in raw_calls[: spec.max_calls_per_reply]:
        name = c.get("name")
        if not isinstance(name, str) or not name:
            raise ParseError("bad_shape", "a call needs a name")
        args = c.get("arguments") if c.get("arguments") is not None else {}
        if not isinstance(args, dict):
            raise ParseError("bad_arguments", f"the arguments of {name!r} must be a JSON object")
        shallow_reply(args, f"the arguments of {name!r}")  # they run, are diffed and journaled: too_deep
        n_calls += 1
        calls.append({"id": str(c.get("id") or f"c{n_calls}"), "name": name, "arguments": args, "known": name in names})
    return said.strip()[: MAX_MESSAGE * 4], calls


def state_diff(before: Any, after: Any, path: str = "", limit: int = 40) -> list[str]:
    """``path: old -> new`` lines for what changed between two JSON-able states (pure).

    >>> state_diff({"a": {"x": 1, "y": [1]}}, {"a": {"x": 2, "y": [1, 2]}})
    ['a.x: 1 -> 2', 'a.y[1]: (none) -> 2']
    """
    out: list[str] = []

    def short(v: Any) -> str:
        return "(none)" if v is _MISSING else _cut(_dumps(v), 120)

    def walk(a: Any, b: Any, p: str) -> None:
        if len(out) >= limit or a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for k in list(a) + [k for k in b if k not in a]:
                walk(a.get(k, _MISSING), b.get(k, _MISSING), f"{p}.{k}" if p else str(k))
            return
        if isinstance(a, list) and isinstance(b, list):
            for i in range(max(len(a), len(b))):
                walk(a[i] if i < len(a) else _MISSING, b[i] if i < len(b) else _MISSING, f"{p}[{i}]")
            return
        out.append(f"{p or '(state)'}: {short(a)} -> {short(b)}")

    walk(before, after, path)
    return out


_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "(none)"})()


def execute(env: EpisodeEnv, calls: list[dict[str, Any]], budget_left: int) -> tuple[list[dict[str, Any]], int]:
    """Run ``calls`` in order (at most ``budget_left``); a failed call stops the rest of the reply.
    Returns the observations (``status`` ok / error / not_run) and how many calls ran."""
    observations: list[dict[str, Any]] = []
    ran = 0
    stopped = False
    for c in calls:
        ob: dict[str, Any] = {"id": c["id"], "name": c["name"], "arguments": c["arguments"]}
        if stopped or ran >= budget_left:
            ob["status"] = "not_run"
            observations.append(ob)
            continue
        ran += 1
        try:
            ob["observation"] = env.call(c["name"], copy.deepcopy(c["arguments"]))
            ob["status"] = "ok"
            label = getattr(env, "last_label", None)
            if isinstance(label, str) and label:
                ob["label"] = label  # later calls may pass this output on as "$label$"
        except ToolError as exc:
            ob.update(status="error", code=getattr(exc, "code", None) or "tool_error", message=str(exc)[:500])
            stopped = True
        except (TypeError, ValueError, KeyError, AttributeError) as exc:  # an environment's own bug on odd input
            ob.update(status="error", code="tool_failed", message=f"{type(exc).__name__}: {exc}"[:500])
            stopped = True
        observations.append(ob)
    return observations, ran


def _state(env: EpisodeEnv) -> Any:
    snap = getattr(env, "state", None)
    return json.loads(_dumps(snap())) if callable(snap) else None


# ---- the journal ---------------------------------------------------------------------------------------
class Journal:
    """Append-only record of finished turns, one :class:`~benchsmith.schemas.JournalLine` per event,
    keyed by episode (``<task>/episodes.jsonl``). A torn last line (a kill mid-write) is ignored."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._events: dict[str, list[dict[str, Any]]] | None = None
        self._handed: set[str] = set()

    def _read(self, only: str | None = None) -> dict[str, list[dict[str, Any]]]:
        events: dict[str, list[dict[str, Any]]] = {}
        for line in iter_journal(self.path):
            if only is not None and line.key != only:
                continue
            seq = events.setdefault(line.key, [])
            if line.n == len(seq):  # an event already journaled is never added twice
                seq.append(line.event.model_dump(exclude_unset=True))
        return events

    def load(self, key: str) -> list[dict[str, Any]]:
        """The journaled events of episode ``key``. Read once per run (the journal keeps nothing of
        the episodes it has handed out, so memory does not grow with the run); an episode started
        again in the same run (its environment failed) is read from the file again."""
        if key in self._handed:
            return self._read(key).get(key, [])
        self._handed.add(key)
        if self._events is None:
            self._events = self._read()
        return self._events.pop(key, [])

    def append(self, key: str, n: int, event: dict[str, Any]) -> None:
        append_journal(self.path, key, n, event)


# ---- the loop -------------------------------------------------------------------------------------------
async def run_episode(
    spec: EpisodeSpec,
    ctx: Any,
    *,
    native: bool,
    budgets: Budgets,
    temperature: float | None = None,
    seed: int | None = None,
    user_json: bool = False,
    max_tokens: int = 384,
    key: str | None = None,
    user_max_tokens: int | None = None,
) -> Episode:
    """Play one episode (or finish one a journal holds); see the module docstring. Model calls go
    through ``ctx.call(request, role)`` (a :class:`~benchsmith.eval.tasks.CallContext`); transport
    failures propagate (the journal keeps every finished turn, the next run resumes). The
    environment is opened for the episode and closed after it (a live server stops with it)."""
    env = spec.open_env()
    try:
        return await _play(
            spec,
            env,
            ctx,
            native=native,
            budgets=budgets,
            temperature=temperature,
            seed=seed,
            user_json=user_json,
            max_tokens=max_tokens,
            key=key,
            user_max_tokens=user_max_tokens,
        )
    finally:
        close = getattr(env, "close", None)
        if callable(close):
            close()


async def _play(
    spec: EpisodeSpec,
    env: EpisodeEnv,
    ctx: Any,
    *,
    native: bool,
    budgets: Budgets,
    temperature: float | None,
    seed: int | None,
    user_json: bool,
    max_tokens: int,
    key: str | None,
    user_max_tokens: int | None = None,
) -> Episode:
    journal: Journal | None = getattr(ctx, "journal", None)
    key = key or getattr(ctx, "key", None)
    events = journal.load(key) if (journal is not None and key) else []
    resumed = len(events)
    for ev in events:  # environments are deterministic: replay to the journaled state
        if ev["who"] == "tool":
            execute(
                env,
                [
                    {"id": o["id"], "name": o["name"], "arguments": o["arguments"]}
                    for o in ev["observations"]
                    if o["status"] != "not_run"
                ],
                10**9,
            )
    state = _state(env)
    model_turns: list[Any] = []
    tool_names = [t.get("name", "") for t in spec.tools]

    def record(event: dict[str, Any]) -> None:
        event = episode_event(event)  # checked, and laid out as a resumed episode reads it back
        if journal is not None and key:
            journal.append(key, len(events), event)
        events.append(event)

    def finish(reason: str) -> Episode:
        if not events or events[-1]["who"] != "end":
            record({"who": "end", "reason": reason})
        return Episode(events, reason, state, resumed, model_turns)

    while True:
        if events and events[-1]["who"] == "end":
            return Episode(events, events[-1]["reason"], state, resumed, model_turns)
        s = summarize(events, "")
        if s["wall_s"] >= budgets.wall_s:
            return finish("wall_budget")
        who = next_speaker(events, spec.solo)
        if who == "end":  # the user stopped (a run killed before its end was journaled) or the solo reply
            return finish("user_stop" if events[-1]["who"] == "user" else "assistant_done")
        t0 = time.monotonic()
        if who == "user":
            if spec.solo:
                record({"who": "user", "text": spec.instruction, "elapsed_s": 0.0})
                continue
            req = Request(
                user_messages(spec, events, user_json),
                max_tokens=user_max_tokens or (120 if user_json else 160),
                json_schema=USER_SCHEMA if user_json else None,
                temperature=temperature,
                seed=seed,
            )
            _, turn = await ctx.call(req, "user", share=False)
            model_turns.append(turn)
            try:
                read = read_user_json if user_json else read_user
                text, stopped = read(turn.raw, spec.stop_phrase, tool_names)
            except ParseError as exc:
                record(
                    {
                        "who": "user",
                        "text": "",
                        "raw": turn.raw[:2000],
                        "error": {"code": exc.code, "message": str(exc)},
                        "elapsed_s": round(time.monotonic() - t0, 4),
                    }
                )
                return finish("user_failure")
            if stopped and s["user_turns"] == 0:  # it never let the assistant speak
                record(
                    {
                        "who": "user",
                        "text": text,
                        "raw": turn.raw[:2000],
                        "elapsed_s": round(time.monotonic() - t0, 4),
                        "error": {
                            "code": "user_stopped_at_once",
                            "message": "the user simulator ended before asking anything",
                        },
                    }
                )
                return finish("user_failure")
            if not stopped and turn_budget_spent(events, budgets.max_turns):
                return finish("user_turn_budget")  # asked once more, it did not stop: its message is not played
            record({"who": "user", "text": text, "stop": stopped, "elapsed_s": round(time.monotonic() - t0, 4)})
            if stopped:
                return finish("user_stop")
        elif who == "assistant":
            if step_budget_spent(events, budgets.max_steps):
                return finish("step_budget")
            if s["assistant_tokens"] >= budgets.max_tokens:
                return finish("token_budget")
            msgs = assistant_messages(spec, events, native)
            if native:
                from benchsmith.models import openai_tool

                req = Request(
                    msgs,
                    tools=[openai_tool(t["name"], t.get("description", ""), t.get("parameters")) for t in spec.tools]
                    or None,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    seed=seed,
                )
            else:
                req = Request(
                    msgs, json_schema=assistant_schema(spec), max_tokens=max_tokens, temperature=temperature, seed=seed
                )
            _, turn = await ctx.call(req, "assistant", share=False)
            model_turns.append(turn)
            n_calls = sum(len(e.get("calls") or []) for e in events if e["who"] == "assistant")
            event: dict[str, Any] = {
                "who": "assistant",
                "usage": dict(turn.usage),
                "latency_s": round(turn.latency_s, 4),
            }
            try:
                text, calls = read_assistant(spec, turn.raw, turn.tool_calls, native, n_calls)
                event.update(text=text, calls=calls)
                turn.parsed = {"text": text, "calls": calls}
            except ParseError as exc:
                event.update(
                    text="", calls=[], raw=turn.raw[:2000], error={"code": exc.code, "message": str(exc)[:300]}
                )
                turn.parsed = {"error": exc.code}
            event["elapsed_s"] = round(time.monotonic() - t0, 4)
            record(event)
        else:  # tool
            calls = events[-1]["calls"]
            left = budgets.max_tool_calls - s["tool_calls"]
            if left <= 0:
                return finish("call_budget")
            before = state
            observations, ran = execute(env, calls, left)
            state = _state(env)
            record(
                {
                    "who": "tool",
                    "observations": observations,
                    "state_diff": state_diff(before, state),
                    "elapsed_s": round(time.monotonic() - t0, 4),
                }
            )
            if ran < len(calls) and not any(o["status"] == "error" for o in observations):
                return finish("call_budget")


# ---- the task base -------------------------------------------------------------------------------------
class EpisodeTask(Task):
    """A task whose cases are episodes: ``episode_spec(case)`` (pure) says what to play,
    ``prediction(case, episode)`` (pure) turns the finished episode into the benchmark's prediction.
    Trials (``TaskOptions.trials`` > 1) run each case several times as ``<id>~t<N>`` with seed N at
    ``trial_temperature``; the user simulator's own model comes from the run (``--user-model``)."""

    episodic: ClassVar[bool] = True

    @functools.cached_property
    def _service_locks(self) -> dict[str, asyncio.Lock]:
        return {}

    def is_episode(self, case: EvalCase) -> bool:
        return True

    def trials_for(self, case: EvalCase) -> int:
        return max(1, self.options.trials) if self.is_episode(case) else 1

    def prompt_version(self) -> str:
        from benchsmith.prompts import get_prompt

        o = self.options
        return (
            f"{get_prompt('agent/assistant').version}+{get_prompt('agent/user').version}"
            f"+{get_prompt('agent/user_json').version}-{o.calling}"
            f"-t{o.max_turns}s{o.max_steps}c{o.max_tool_calls}"
        )

    @abstractmethod
    def episode_spec(self, case: EvalCase) -> EpisodeSpec: ...

    @abstractmethod
    def prediction(self, case: EvalCase, episode: Episode) -> str: ...

    async def solve_single(self, case: EvalCase, ctx: CallContext) -> Outcome:
        """A case that is not an episode (``is_episode`` false): a task mixing both kinds overrides
        this (ACEBench and GTA solve theirs as single calls)."""
        raise TypeError(f"task {self.name} says case {case.id} is not an episode but defines no solve_single")

    async def solve(self, case: EvalCase, ctx: CallContext) -> Outcome:
        if not self.is_episode(case):
            return await self.solve_single(case, ctx)
        trial = case.meta.get("trial")
        temperature = seed = None
        if trial is not None:
            temperature, seed = self.options.trial_temperature, getattr(ctx, "seed", 0) * 1000 + int(trial)
        spec = self.episode_spec(case)
        if spec.shared is None:
            return await self._play_spec(case, ctx, spec, temperature, seed)
        lock = self._service_locks.setdefault(spec.shared, asyncio.Lock())
        async with lock:  # another episode's reset would undo this one's work
            return await self._play_spec(case, ctx, spec, temperature, seed)

    async def _play_spec(
        self, case: EvalCase, ctx: CallContext, spec: EpisodeSpec, temperature: float | None, seed: int | None
    ) -> Outcome:
        budgets = Budgets.from_options(self.options)
        if spec.solo:  # one request, no one to talk to: an end-to-end case's step budget (--step-budget)
            budgets = dataclasses.replace(budgets, max_steps=max(budgets.max_steps, self.options.step_budget))
        episode = await run_episode(
            spec,
            ctx,
            native=self.options.calling == "tools",
            budgets=budgets,
            temperature=temperature,
            seed=seed,
            user_json=bool(getattr(ctx, "user_local", False)),
            max_tokens=self.options.max_tokens,
            user_max_tokens=self.options.user_max_tokens,
        )
        return Outcome("ok", self.prediction(case, episode), list(episode.model_turns))


def transcript(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events without raw replies and usage: what a prediction keeps for the episode viewer."""
    keep = ("who", "text", "calls", "observations", "state_diff", "error", "reason", "stop")
    return [
        {k: v for k, v in ev.items() if k in keep and v not in (None, [], "")} | {"who": ev["who"]} for ev in events
    ]


def episode_prediction(episode: Episode, **extra: Any) -> dict[str, Any]:
    """The JSON-able prediction of an episode: the executed calls, the end state, the summary and the
    transcript (tasks add their benchmark's own fields)."""
    return {
        **extra,
        "calls": episode.calls,
        "final_state": episode.final_state,
        "episode": episode.summary(),
        "transcript": transcript(episode.events),
    }
