"""API synthesis helpers (pure, deterministic): a domain -> sub-domain -> functions context tree
grown from seed documents, the validation of a synthesized API spec, and near-duplicate removal.

Seed documents are JSON values (a file is read by :func:`read_seed_documents`):

* a T-Eval style tool catalog: a list of toolkits ``{"name", "tool_description", "api_list":
  [{"name", "description", "required_parameters", "optional_parameters", ...}]}`` (an optional
  ``category`` per toolkit);
* a list of benchsmith ``Tool`` objects (or OpenAI ``{"type": "function", "function": {...}}``
  entries), optionally carrying ``domain`` / ``category``.

Where a function's place in the tree comes from:

* toolkit entries: domain = the toolkit's ``category`` when present, else the toolkit name;
  sub-domain = the function's name family (its first content word: ``get_movie_details`` ->
  ``movie``);
* plain tools: domain = ``domain`` (sub-domain = ``category`` or the name family), else
  ``category`` (sub-domain = the name family), else a dotted prefix (``Toolkit.fn``), else the
  first two words of the name family (``get_weather_forecast`` -> ``weather`` / ``forecast``;
  a single word gives the sub-domain ``general``).

>>> tree = build_tree(seed_functions([{"name": "Weather", "tool_description": "Weather data.",
...     "api_list": [{"name": "get_weather_today", "description": "Weather today in a city.",
...                   "required_parameters": [{"name": "city", "type": "STRING", "description": "City."}]}]}]))
>>> [(leaf.domain, leaf.subdomain, [f["name"] for f in leaf.functions]) for leaf in tree.leaves()]
[('weather', 'general', ['get_weather_today'])]
>>> tree.functions()[0]["parameters"]["properties"]["city"]
{'type': 'string', 'description': 'City.'}
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchsmith.schemas import Tool, UserError, loads_json

GENERAL = "general"

VERBS = frozenset(
    """
get set list search find fetch retrieve check create add make update edit modify delete remove send show read write
save book reserve cancel convert compute calculate count lookup look query print aggregate forecast filter sort
upload download post put patch start stop open close run execute generate translate schedule move copy rename
""".split()
)

MODIFIERS = frozenset(
    """
by for with of to from in on at the a an and or all any info information detail details data status similar top rated
popular now curr current daily daliy new latest recent empty free out one many my is
""".split()
)

JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")

_TEVAL_TYPES = {
    "STRING": "string",
    "STR": "string",
    "TEXT": "string",
    "NUMBER": "number",
    "FLOAT": "number",
    "DOUBLE": "number",
    "INT": "integer",
    "INTEGER": "integer",
    "BOOL": "boolean",
    "BOOLEAN": "boolean",
    "ARRAY": "array",
    "LIST": "array",
    "OBJECT": "object",
    "DICT": "object",
    "JSON": "object",
}


# -- names ------------------------------------------------------------------------------------
def words(name: str) -> list[str]:
    """The lower-case words of an identifier (snake_case, camelCase, CamelCase, dotted, dashed).

    >>> words("getPropertyDetails"), words("BINGMap"), words("film_TMDB.search_movie")
    (['get', 'property', 'details'], ['bing', 'map'], ['film', 'tmdb', 'search', 'movie'])
    """
    parts = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+", str(name))
    return [p.lower() for p in parts]


def slug(name: str) -> str:
    """A snake_case slug of a name (``AirbnbSearch`` -> ``airbnb_search``); ``general`` if empty.

    >>> slug("AirbnbSearch"), slug("Film TMDB"), slug("  ")
    ('airbnb_search', 'film_tmdb', 'general')
    """
    return "_".join(words(name)) or GENERAL


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies") and word[-4] not in "aeiouvk":  # entries, not movies
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "news")):
        return word[:-1]
    return word


def name_family(name: str) -> list[str]:
    """The content words of a function name: leading verbs, connectives and generic modifiers dropped,
    plurals made singular (the local part of a dotted name only).

    >>> name_family("get_similar_movies"), name_family("search_property_by_place"), name_family("forecast_weather")
    (['movie'], ['property', 'place'], ['weather'])
    """
    ws = words(str(name).rsplit(".", 1)[-1])
    while ws and ws[0] in VERBS:
        ws = ws[1:]
    return [_singular(w) for w in ws if w not in MODIFIERS and not w.isdigit()]


def family(name: str) -> str:
    """The first content word of a function name, else ``general``."""
    fam = name_family(name)
    return fam[0] if fam else GENERAL


# -- seed documents -> functions ----------------------------------------------------------------
@dataclass(frozen=True)
class SeedFunction:
    """One seed function with its place in the tree (``tool`` is a benchsmith Tool dict)."""

    domain: str
    subdomain: str
    tool: dict[str, Any]
    toolkit: str | None = None


def _teval_param(p: Any, where: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(p, dict) or not p.get("name"):
        raise UserError(f"{where}: a parameter without a name", fix="give every parameter a name, type and description")
    raw_type = str(p.get("type") or "STRING").strip()
    schema: dict[str, Any] = {
        "type": _TEVAL_TYPES.get(raw_type.upper(), raw_type.lower() if raw_type.lower() in JSON_TYPES else "string")
    }
    if p.get("description"):
        schema["description"] = str(p["description"])
    return str(p["name"]), schema


def teval_tool(api: dict[str, Any], where: str = "api") -> dict[str, Any]:
    """A T-Eval ``api_list`` entry as a benchsmith Tool dict (types mapped to JSON Schema).

    >>> teval_tool({"name": "show", "description": "Show mail.", "optional_parameters": [
    ...     {"name": "only_unread", "type": "BOOLEAN", "description": "Unread only."}]})["parameters"]
    {'type': 'object', 'properties': {'only_unread': {'type': 'boolean', 'description': 'Unread only.'}}, 'required': []}
    """
    props: dict[str, Any] = {}
    required = []
    for key, is_required in (("required_parameters", True), ("optional_parameters", False)):
        for p in api.get(key) or []:
            name, schema = _teval_param(p, where)
            props.setdefault(name, schema)
            if is_required and name not in required:
                required.append(name)
    data: dict[str, Any] = {
        "name": api.get("name"),
        "description": api.get("description") or "",
        "parameters": {"type": "object", "properties": props, "required": required},
    }
    returns = [r for r in api.get("return_data") or [] if isinstance(r, dict) and r.get("name")]
    if returns:
        data["returns"] = {
            "type": "object",
            "properties": {str(r["name"]): {"description": str(r.get("description") or "")} for r in returns},
        }
    return _valid_tool(data, where)


def _valid_tool(data: Any, where: str) -> dict[str, Any]:
    from benchsmith.construction import tool_dict

    return tool_dict(data, where, fix="each function needs a name, a description and JSON-schema parameters")


def _place_tool(tool: dict[str, Any]) -> tuple[str, str, str | None]:
    name = tool["name"]
    if tool.get("domain"):
        return slug(tool["domain"]), slug(tool["category"]) if tool.get("category") else family(name), None
    if tool.get("category"):
        return slug(tool["category"]), family(name), None
    if "." in name:
        prefix = name.rsplit(".", 1)[0]
        return slug(prefix), family(name), prefix
    fam = name_family(name)
    return (fam[0] if fam else GENERAL), (fam[1] if len(fam) > 1 else GENERAL), None


def seed_functions(documents: Sequence[Any]) -> list[SeedFunction]:
    """Every seed function of ``documents`` (T-Eval toolkits and/or plain tools), in document order."""
    out: list[SeedFunction] = []
    for i, doc in enumerate(documents):
        where = f"seed document {i + 1}"
        if isinstance(doc, dict) and isinstance(doc.get("api_list"), list):
            toolkit = str(doc.get("name") or f"toolkit_{i + 1}")
            domain = slug(doc.get("category") or toolkit)
            for j, api in enumerate(doc["api_list"]):
                tool = teval_tool(api, f"{where} ({toolkit}), function {j + 1}")
                out.append(SeedFunction(domain, family(tool["name"]), tool, toolkit))
            continue
        tool = _valid_tool(doc, where)
        domain, subdomain, toolkit = _place_tool(tool)
        out.append(SeedFunction(domain, subdomain, tool, toolkit))
    return out


def _toolkit_descriptions(documents: Sequence[Any]) -> dict[str, str]:
    """Domain -> the description of its toolkit(s), joined (T-Eval ``tool_description``)."""
    out: dict[str, list[str]] = {}
    for doc in documents:
        if isinstance(doc, dict) and isinstance(doc.get("api_list"), list) and doc.get("tool_description"):
            domain = slug(doc.get("category") or doc.get("name") or "")
            text = " ".join(str(doc["tool_description"]).split())
            if text not in out.setdefault(domain, []):
                out[domain].append(text)
    return {k: " / ".join(v) for k, v in out.items()}


# -- the tree -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Leaf:
    """A (domain, sub-domain) branch with its functions (Tool dicts, seed order)."""

    domain: str
    subdomain: str
    functions: tuple[dict[str, Any], ...]
    description: str = ""

    @property
    def path(self) -> tuple[str, str]:
        return (self.domain, self.subdomain)


@dataclass
class ContextTree:
    """domain -> sub-domain -> functions. Domains and sub-domains are sorted; functions keep the
    seed order; a name repeated within one leaf is kept once (the first)."""

    domains: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)

    def leaves(self) -> list[Leaf]:
        return [
            Leaf(d, s, tuple(fns), self.descriptions.get(d, ""))
            for d, subs in self.domains.items()
            for s, fns in subs.items()
        ]

    def leaf(self, domain: str, subdomain: str) -> Leaf:
        return Leaf(domain, subdomain, tuple(self.domains[domain][subdomain]), self.descriptions.get(domain, ""))

    def functions(self) -> list[dict[str, Any]]:
        return [f for subs in self.domains.values() for fns in subs.values() for f in fns]

    def names(self) -> list[str]:
        """Every seed function name (sorted, unique)."""
        return sorted({f["name"] for f in self.functions()})

    def to_dict(self) -> dict[str, Any]:
        """``{domain: {"description", "subdomains": {sub: [function names]}}}``."""
        return {
            d: {
                "description": self.descriptions.get(d, ""),
                "subdomains": {s: [f["name"] for f in fns] for s, fns in subs.items()},
            }
            for d, subs in self.domains.items()
        }


def build_tree(
    functions: Sequence[SeedFunction], descriptions: dict[str, str] | None = None, *, min_leaf: int = 2
) -> ContextTree:
    """The context tree of ``functions`` (pure, deterministic). Within a domain, sub-domains with
    fewer than ``min_leaf`` functions are merged into the sub-domain ``general`` (1: never)."""
    grouped: dict[str, dict[str, list[tuple[int, dict[str, Any]]]]] = {}
    for i, f in enumerate(functions):
        leaf = grouped.setdefault(f.domain, {}).setdefault(f.subdomain, [])
        if all(t["name"] != f.tool["name"] for _, t in leaf):
            leaf.append((i, f.tool))
    for subs in grouped.values():
        small = [s for s, fns in subs.items() if len(fns) < min_leaf and s != GENERAL]
        for s in small:
            subs.setdefault(GENERAL, []).extend(subs.pop(s))
        if GENERAL in subs:
            subs[GENERAL].sort(key=lambda pair: pair[0])
    domains = {d: {s: [t for _, t in grouped[d][s]] for s in sorted(grouped[d])} for d in sorted(grouped)}
    return ContextTree(domains, {d: t for d, t in (descriptions or {}).items() if d in domains})


def context_tree(documents: Sequence[Any], *, min_leaf: int = 2) -> ContextTree:
    """Seed documents (JSON values) -> their context tree (see :func:`build_tree`)."""
    return build_tree(seed_functions(documents), _toolkit_descriptions(documents), min_leaf=min_leaf)


def read_seed_documents(source: str | Path | Sequence[Any]) -> list[Any]:
    """The seed documents of a JSON file (a list, or ``{"tools": [...]}``), a JSONL file (one
    document a line) or a folder (every ``*.json`` / ``*.jsonl`` in it, sorted). A list of
    documents is returned as it is."""
    from benchsmith.construction import raw_rows

    if isinstance(source, (list, tuple)):
        return list(source)
    path = Path(source)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl") and p.is_file())
        if not files:
            raise UserError(f"{path} holds no .json or .jsonl file", fix="pass a seed tools file or a folder of them")
        return [doc for p in files for doc in read_seed_documents(p)]
    if not path.is_file():
        raise UserError(f"{path} does not exist", fix="pass a T-Eval tool catalog or a JSON list of tools")
    if path.suffix == ".jsonl":
        return [row for _, row in raw_rows(path)]
    try:
        data = loads_json(path.read_bytes())
    except (OSError, ValueError) as exc:  # JSONDecodeError is a ValueError (bad JSON, not UTF-8, huge numbers)
        raise UserError(f"cannot read {path}: {exc}", fix="pass a JSON list of toolkits or tools") from None
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data = data["tools"]
    if not isinstance(data, list):
        raise UserError(f"{path}: expected a JSON list of toolkits or tools", fix="write a JSON array")
    return data


def load_context_tree(source: str | Path | Sequence[Any], *, min_leaf: int = 2) -> ContextTree:
    """:func:`read_seed_documents` then :func:`context_tree`."""
    tree = context_tree(read_seed_documents(source), min_leaf=min_leaf)
    if not tree.domains:
        raise UserError(f"{source}: no seed function found", fix="pass a catalog with at least one function")
    return tree


# -- validation of a synthesized spec ---------------------------------------------------------------
SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
BAD_PARAMETERS = "parameters must be a JSON Schema object with properties and a list of required names"


@dataclass(frozen=True)
class Limits:
    """Bounds a synthesized spec must respect."""

    min_description: int = 20
    max_description: int = 400
    max_parameters: int = 10
    max_name: int = 64


def name_problems(name: Any, reserved: Sequence[str] = (), limits: Limits = Limits()) -> list[tuple[str, str]]:
    """``[(code, reason)]`` of a proposed function name: ``bad_name`` (not snake_case or too long),
    ``name_clash`` (a seed function has it, case-insensitively).

    >>> name_problems("getWeather"), name_problems("get_weather", ["Get_Weather"])
    ([('bad_name', "the name 'getWeather' is not snake_case")], [('name_clash', "a seed function is already named 'get_weather'")])
    """
    if not isinstance(name, str) or not SNAKE.fullmatch(name):
        return [("bad_name", f"the name {name!r} is not snake_case")]
    if len(name) > limits.max_name:
        return [("bad_name", f"the name has {len(name)} characters (at most {limits.max_name})")]
    if name.casefold() in {r.casefold() for r in reserved}:
        return [("name_clash", f"a seed function is already named {name!r}")]
    return []


def spec_problems(
    spec: dict[str, Any], reserved: Sequence[str] = (), limits: Limits = Limits()
) -> list[tuple[str, str]]:
    """``[(code, reason)]`` of a synthesized spec ``{"name", "description", "parameters"}``; empty
    when it is a valid benchsmith Tool with documented, typed parameters. Codes: ``bad_name``,
    ``name_clash``, ``description_length``, ``bad_parameters``, ``too_many_parameters``,
    ``bad_parameter_name``, ``bad_parameter_schema``, ``untyped_parameter``, ``bad_parameter_type``,
    ``undocumented_parameter``, ``required_not_in_properties``, ``invalid_tool``.

    >>> spec = {"name": "get_flight_status", "description": "Live status of a flight by its number.",
    ...         "parameters": {"type": "object", "properties": {"flight": {"type": "string"}}, "required": ["flight", "day"]}}
    >>> [code for code, _ in spec_problems(spec)]
    ['undocumented_parameter', 'required_not_in_properties']
    """
    problems = name_problems(spec.get("name"), reserved, limits)
    desc = spec.get("description")
    if not isinstance(desc, str) or not limits.min_description <= len(desc.strip()) <= limits.max_description:
        n = len(desc.strip()) if isinstance(desc, str) else 0
        allowed = f"{limits.min_description}-{limits.max_description}"
        problems.append(("description_length", f"the description has {n} characters ({allowed} allowed)"))
    params = spec.get("parameters")
    props = params.get("properties") if isinstance(params, dict) else None
    required = params.get("required", []) if isinstance(params, dict) else None
    if (
        not isinstance(params, dict)
        or params.get("type", "object") != "object"
        or not isinstance(props, dict)
        or not isinstance(required, list)
        or not all(isinstance(r, str) for r in required)
    ):
        problems.append(("bad_parameters", BAD_PARAMETERS))
        return problems
    if len(props) > limits.max_parameters:
        problems.append(("too_many_parameters", f"{len(props)} parameters (at most {limits.max_parameters})"))
    for pname, prop in props.items():
        if not PARAM_NAME.fullmatch(pname):
            problems.append(("bad_parameter_name", f"the parameter name {pname!r} is not an identifier"))
        if not isinstance(prop, dict):
            problems.append(("bad_parameter_schema", f"the parameter {pname!r} is not a JSON Schema object"))
            continue
        ptype = prop.get("type")
        types = ptype if isinstance(ptype, list) else [ptype]
        if ptype is None or ptype == []:
            problems.append(("untyped_parameter", f"the parameter {pname!r} has no type"))
        elif not all(isinstance(t, str) and t in JSON_TYPES for t in types):
            expected = ", ".join(JSON_TYPES)
            problems.append(
                ("bad_parameter_type", f"the parameter {pname!r} has the type {ptype!r} (one of {expected})")
            )
        pdesc = prop.get("description")
        if not isinstance(pdesc, str) or not pdesc.strip():
            problems.append(("undocumented_parameter", f"the parameter {pname!r} has no description"))
    unknown = [r for r in required if r not in props]
    if unknown:
        problems.append(("required_not_in_properties", f"required names {unknown} are not parameters"))
    if not problems:
        try:
            Tool.model_validate({k: spec[k] for k in ("name", "description", "parameters")})
        except ValueError as exc:
            lines = str(exc).splitlines()
            problems.append(("invalid_tool", lines[1].strip() if len(lines) > 1 else lines[0]))
    return problems


# -- de-duplication ---------------------------------------------------------------------------------
@dataclass
class DedupeResult:
    """``kept`` tools (input order) and ``dropped`` ``{"name", "reason", "duplicate_of", "of_seed",
    "cosine"}`` (reason ``same_name`` or ``near_duplicate``)."""

    kept: list[dict[str, Any]]
    dropped: list[dict[str, Any]]


def api_text(tool: dict[str, Any]) -> str:
    """What is embedded to compare two APIs by meaning: the description."""
    return " ".join(str(tool.get("description") or "").split())


def dedupe_apis(
    tools: Sequence[dict[str, Any]],
    threshold: float = 0.9,
    embedder: Any = None,
    *,
    seeds: Sequence[dict[str, Any]] = (),
) -> DedupeResult:
    """Drop a tool whose name (case-insensitive) is a seed's or an earlier kept tool's
    (``same_name``), or whose description has a cosine >= ``threshold`` with a seed's or an earlier
    kept tool's (``near_duplicate``; it points at the most similar one). The first occurrence wins.

    ``embedder`` has ``encode(texts) -> vectors`` (default: the shared sentence-embedding model,
    :func:`benchsmith.models.get_embedder`).

    >>> class Letters:  # a stand-in embedder: one axis per first letter
    ...     def encode(self, texts):
    ...         import numpy as np
    ...         return np.array([[1.0 if t[:1].lower() == c else 0.0 for c in "abc"] for t in texts])
    >>> r = dedupe_apis([{"name": "x", "description": "apples"}, {"name": "y", "description": "avocado"},
    ...                  {"name": "z", "description": "cherries"}, {"name": "Z", "description": "bananas"}],
    ...                 embedder=Letters(), seeds=[{"name": "s", "description": "carrots"}])
    >>> [t["name"] for t in r.kept], [(d["name"], d["reason"], d["duplicate_of"]) for d in r.dropped]
    (['x', 'Z'], [('y', 'near_duplicate', 'x'), ('z', 'near_duplicate', 's')])
    """
    import numpy as np

    tools, seeds = list(tools), list(seeds)
    kept: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    if not tools:
        return DedupeResult(kept, dropped)
    if embedder is None:
        from benchsmith.models import get_embedder

        embedder = get_embedder()
    vecs = np.asarray(embedder.encode([api_text(s) for s in seeds] + [api_text(t) for t in tools]), dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    vecs = vecs / np.where(norms == 0, 1.0, norms)
    names = {str(s.get("name", "")).casefold(): str(s.get("name")) for s in seeds}
    seed_names = set(names)
    ref_rows = list(range(len(seeds)))  # rows of ``vecs`` compared against: seeds, then kept tools
    refs = [(str(s.get("name")), True) for s in seeds]
    for i, t in enumerate(tools):
        name = str(t.get("name", ""))
        if name.casefold() in names:
            other = names[name.casefold()]
            i_seed = name.casefold() in seed_names
            dropped.append(
                {"name": name, "reason": "same_name", "duplicate_of": other, "of_seed": i_seed, "cosine": 1.0}
            )
            continue
        v = vecs[len(seeds) + i]
        if ref_rows:
            sims = vecs[ref_rows] @ v
            best = int(np.argmax(sims))
            if float(sims[best]) >= threshold:
                other, of_seed = refs[best]
                dropped.append(
                    {
                        "name": name,
                        "reason": "near_duplicate",
                        "duplicate_of": other,
                        "of_seed": of_seed,
                        "cosine": round(float(sims[best]), 4),
                    }
                )
                continue
        kept.append(t)
        names[name.casefold()] = name
        ref_rows.append(len(seeds) + i)
        refs.append((name, False))
    return DedupeResult(kept, dropped)
