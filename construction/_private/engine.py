"""The graph engine: model steps (build messages, pure -> model call -> parse reply, pure), the
state every graph shares, and the registry of construction graphs.

A graph's state is a plain JSON-able dict (it is checkpointed after every node). Every graph
keeps its own ``status``: ``running`` while it works, then ``accepted``, ``rejected`` (with
``reasons``) or ``review`` (a reply that could not be parsed; the raw reply is kept in ``raw``).
"""

from __future__ import annotations

import json
import operator
import random
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, ClassVar, Mapping, TypedDict

from pydantic import BaseModel, ConfigDict, ValidationError

from benchsmith.construction._private.envs import KeptEnvironments
from benchsmith.construction._private.roles import role_file_sha256
from benchsmith.models import ParseError, read_json_reply  # noqa: F401  (re-exported by the package)
from benchsmith.schemas import Registry, UserError

RUNNING, ACCEPTED, REJECTED, REVIEW = "running", "accepted", "rejected", "review"
FINAL = (ACCEPTED, REJECTED, REVIEW)


def _merge(a: dict | None, b: dict | None) -> dict:
    return {**(a or {}), **(b or {})}


class BaseState(TypedDict, total=False):
    """Keys every graph state has; graphs add their own."""

    item_id: str
    item: dict[str, Any]
    seed: int
    status: str
    reasons: Annotated[list[dict[str, Any]], operator.add]
    calls: Annotated[list[dict[str, Any]], operator.add]
    raw: Annotated[dict[str, str], _merge]
    outputs: list[dict[str, Any]]


class GraphOptions(BaseModel):
    """A graph's options (``--set KEY=VALUE``): each graph declares its own subclass as ``Options``,
    with defaults and descriptions; an unknown key is refused (a typo must not run with defaults), and
    values are strict (``true`` is no number, ``"8"`` no integer: ``--set`` values are JSON)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    def given(self) -> dict[str, Any]:
        """The options set explicitly (what run.json records, so a resume compares like with like)."""
        return self.model_dump(mode="json", exclude_unset=True)


def options_help(options: type[GraphOptions]) -> str:
    """One line per option: ``name (default): description``."""
    lines = []
    for name, f in options.model_fields.items():
        default = "none" if f.default is None else json.dumps(f.default)
        lines.append(f"{name} ({default}): {f.description}")
    return "\n".join(lines) or "(none)"


def _option_error(graph: str, options: type[GraphOptions], err: ValidationError) -> UserError:
    first = err.errors()[0]
    key = ".".join(str(x) for x in first["loc"][:1]) or "?"
    if first["type"] == "extra_forbidden":
        return UserError(
            f"--set {key}: the {graph} graph has no option {key!r}",
            fix=f"choose from {', '.join(options.model_fields) or '(none)'}",
        )
    value = first.get("input")
    shown = json.dumps(value, ensure_ascii=False)[:80] if isinstance(value, (str, int, float, bool, list)) else "?"
    return UserError(
        f"--set {key}={shown}: {first['msg'][:1].lower()}{first['msg'][1:]}",
        fix=f"{key}: {options.model_fields[key].description}" if key in options.model_fields else "see --help",
    )


@dataclass
class BuildContext:
    """What nodes may use besides the state (never checkpointed): role models, tool environments,
    graph options."""

    models: Any
    options: GraphOptions = field(default_factory=GraphOptions)
    env_context: Any = None
    resources: dict[str, Any] = field(default_factory=dict)
    kept: KeptEnvironments = field(default_factory=KeptEnvironments)  # live environments between nodes


def reason(where: str, code: str, text: str) -> dict[str, Any]:
    return {"where": where, "code": code, "reason": text[:500]}


def reject(where: str, code: str, text: str) -> dict[str, Any]:
    """A state update that rejects the item."""
    return {"status": REJECTED, "reasons": [reason(where, code, text)]}


def item_rng(state: dict[str, Any], salt: str = "") -> random.Random:
    """A deterministic RNG for this item (seed, item id and a salt)."""
    return random.Random(f"{state.get('seed', 0)}:{state.get('item_id', '')}:{salt}")


@dataclass(frozen=True)
class ModelStep:
    """One model call of a graph: ``variables(state)`` (pure) fill prompt template ``prompt``;
    the model of ``role`` answers, constrained by ``schema(state)`` when given; ``parse(state,
    text)`` (pure) turns the reply into a state update or raises :class:`ParseError`."""

    name: str
    role: str
    prompt: str
    variables: Callable[[dict[str, Any]], dict[str, Any]]
    parse: Callable[[dict[str, Any], str], dict[str, Any]]
    schema: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
    max_tokens: int = 256

    def messages(self, state: dict[str, Any]) -> list[dict[str, str]]:
        from benchsmith.prompts import get_prompt

        return get_prompt(self.prompt).render(**self.variables(state))

    def prompt_version(self) -> str:
        from benchsmith.prompts import get_prompt

        return get_prompt(self.prompt).version


def call_model(
    step: ModelStep, state: dict[str, Any], ctx: BuildContext, model: Any = None
) -> tuple[str, dict[str, Any]]:
    """Run the model call of ``step``: (reply text, call record). Transport errors propagate."""
    messages = step.messages(state)
    schema = step.schema(state) if step.schema else None
    if schema is not None:
        from benchsmith.models import bounded_strings, closed_schema

        schema = bounded_strings(closed_schema(schema))
    model = model or ctx.models.for_role(step.role)
    reply = model.complete(messages, json_schema=schema, max_tokens=step.max_tokens)
    record = {
        "node": step.name,
        "role": step.role,
        "model": model.name,
        "prompt": step.prompt_version(),
        "latency_s": round(getattr(reply, "latency_s", 0.0), 4),
        "tokens": dict(getattr(reply, "usage", {}) or {}),
        "finish": getattr(reply, "finish_reason", None),
    }
    sha = role_file_sha256(model)
    if sha:
        record["model_file_sha256"] = sha
    return reply.text or "", record


def apply_step(step: ModelStep, state: dict[str, Any], ctx: BuildContext) -> dict[str, Any]:
    """``call_model`` then ``parse``; a parse failure routes the item to review with the raw reply."""
    text, record = call_model(step, state, ctx)
    try:
        update = step.parse(state, text)
    except ParseError as exc:
        record["parsed"] = False
        code, why = exc.code, exc.reason
        if record.get("finish") == "length":  # cut at its output budget: the reply never got to an answer
            spent = record["tokens"].get("completion_tokens")
            code, why = "output_budget_exhausted", f"the reply used its whole output budget ({spent} tokens): {why}"
        return {
            "calls": [record],
            "status": REVIEW,
            "raw": {step.name: text},
            "reasons": [reason(step.name, code, why)],
        }
    record["parsed"] = True
    update = dict(update)
    update["calls"] = [record, *update.get("calls", [])]
    return update


def model_node(step: ModelStep) -> Callable[..., dict[str, Any]]:
    """A LangGraph node running ``step`` (the runtime context is a :class:`BuildContext`)."""

    def node(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
        return apply_step(step, state, runtime.context)

    node.__name__ = step.name
    return node


def go_on(next_node: str) -> Callable[[dict[str, Any]], str]:
    """A router: ``next_node`` while the item is running, else the end."""
    from langgraph.graph import END

    def route(state: dict[str, Any]) -> str:
        return next_node if state.get("status") == RUNNING else END

    return route


def pipeline(state: type, nodes: list[tuple[str, Any]]) -> Any:
    """An uncompiled StateGraph running ``nodes`` (``(name, function)``) one after another, ending
    early as soon as an item is no longer running (:func:`go_on` between every two nodes)."""
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(state)
    for name, fn in nodes:
        g.add_node(name, fn)
    g.add_edge(START, nodes[0][0])
    for (name, _), (following, _) in zip(nodes, nodes[1:]):
        g.add_conditional_edges(name, go_on(following), [following, END])
    g.add_edge(nodes[-1][0], END)
    return g


def json_object(text: str, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A JSON object reply with ``required`` keys, else :class:`ParseError`."""
    value = read_json_reply(text, want=dict)
    if not isinstance(value, dict):
        raise ParseError("bad_shape", f"expected a JSON object, got {type(value).__name__}")
    missing = [k for k in required if k not in value]
    if missing:
        raise ParseError("missing_field", f"the reply has no {', '.join(missing)}")
    return value


def nonempty_text(value: Any, field_name: str, *, min_len: int = 1) -> str:
    if not isinstance(value, str) or len(value.strip()) < min_len:
        raise ParseError("empty_field", f"{field_name} is empty or not text")
    return value.strip()


# -- graph registry ---------------------------------------------------------------------------
class ConstructionGraph:
    """A registered construction graph. Subclasses set ``name``, ``version``, ``roles`` and implement
    ``read_items`` (input -> (item id, item) pairs), ``initial`` (item -> initial state), ``build``
    (an uncompiled StateGraph) and ``outputs`` (a finished accepted state -> sample dicts)."""

    name: ClassVar[str] = ""
    version: ClassVar[str] = "v1"
    description: ClassVar[str] = ""
    roles: ClassVar[tuple[str, ...]] = ()
    Options: ClassVar[type[GraphOptions]] = GraphOptions

    def __init__(self, options: Mapping[str, Any] | GraphOptions | None = None) -> None:
        self.options = self.check_options(options)

    @classmethod
    def check_options(cls, options: Mapping[str, Any] | GraphOptions | None) -> GraphOptions:
        """``options`` as this graph's typed options; a :class:`UserError` naming the key and the fix."""
        if isinstance(options, cls.Options):
            return options
        try:
            return cls.Options.model_validate(dict(options or {}))
        except ValidationError as err:
            raise _option_error(cls.name, cls.Options, err) from None

    def read_items(self, source: Any) -> list[tuple[str, dict[str, Any]]]:
        raise NotImplementedError

    def initial(self, item_id: str, item: dict[str, Any], seed: int) -> dict[str, Any]:
        return {
            "item_id": item_id,
            "item": item,
            "seed": seed,
            "status": RUNNING,
            "reasons": [],
            "calls": [],
            "raw": {},
            "outputs": [],
        }

    def build(self) -> Any:
        raise NotImplementedError

    def outputs(self, state: dict[str, Any]) -> list[dict[str, Any]]:
        return list(state.get("outputs") or [])

    def resources(self, ctx: BuildContext) -> dict[str, Any]:
        """Heavy shared objects for the nodes (databases, embedders), made once per run."""
        return {}


GRAPHS: Registry[type[ConstructionGraph]] = Registry(
    "construction graph",
    tuple(
        f"benchsmith.construction.graphs.{m}"
        for m in ("apis", "backtranslate", "chains", "dialogues", "expand", "queries", "special", "vote")
    ),
    set_name=True,
)


def graph(name: str) -> Callable[[type[ConstructionGraph]], type[ConstructionGraph]]:
    """Register a :class:`ConstructionGraph` subclass under ``name``."""

    return GRAPHS.register(name)


def get_graph(name: str) -> type[ConstructionGraph]:
    return GRAPHS.get_or_raise(name, fix=f"choose from {', '.join(sorted(GRAPHS))}")
