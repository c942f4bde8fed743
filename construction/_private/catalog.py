"""Tool catalogs for query generation: what tools (and environment) a generated query may use.

A catalog is read from
* a split folder (``samples.jsonl``; NL2API splits): one entry per set-up (the loaded table),
  with that sample's tools, set-up calls, an executable environment and example queries;
* a tool catalog folder (``tools.json``, as ``benchsmith tools import`` writes it): one entry per
  tool, drawn k at a time; with an ``environment.json`` beside it, every draw runs in that
  environment (``{"kind": ..., "file": <its path>}``: the tools' own server); with an
  ``examples.json`` (a JSON array of requests a user would send), the generator sees a few of them
  as examples (a copy of one is rejected);
* a JSON/JSONL file of tools (benchsmith ``Tool`` objects, or OpenAI ``{"type": "function",
  "function": {...}}`` entries): one entry per tool, drawn k at a time;
* a JSONL file of samples: one entry per sample (its tools, set-up, environment, query as example).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchsmith.schemas import Sample, Split, Tool, UserError, loads_json, read_json, read_jsonl


@dataclass
class CatalogEntry:
    id: str
    tools: list[dict[str, Any]]
    setup: list[dict[str, Any]] = field(default_factory=list)
    environment: dict[str, Any] | None = None
    examples: list[str] = field(default_factory=list)
    context: str | None = None
    group: str | None = None
    bundle: bool = False  # taken whole by a draw (a sample's tools and set-up), never mixed with others


def raw_rows(path: Path) -> list[tuple[int, Any]]:
    """``[(line number, JSON value)]`` of a JSONL file; a bad line is a UserError naming file:line."""
    rows = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {path}: {exc}", fix="pass a readable UTF-8 JSONL file") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((n, loads_json(line)))
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}:{n}: not JSON ({exc})", fix="one JSON object per line") from None
    return rows


def _split_style(samples: list[Sample]) -> str:
    cats = set(samples[0].categories) if samples else set()
    return next((s for s in ("slot", "sel", "rest") if s in cats), "slot")


def _from_samples(samples: list[Sample], *, group_by_setup: bool, split: Path | None) -> list[CatalogEntry]:
    entries: dict[str, CatalogEntry] = {}
    style = _split_style(samples)
    for s in samples:
        setup = [c.model_dump(mode="json", exclude_none=True) for c in s.setup]
        env = s.metadata.get("environment")
        if env is None and "nl2api" in s.categories:
            env = {"kind": "nl2api", "style": style, "setup": setup}
        key = json.dumps(setup, sort_keys=True) if group_by_setup else s.id
        if key not in entries:
            entries[key] = CatalogEntry(
                id=s.id if not group_by_setup else f"setup-{len(entries) + 1:03d}",
                tools=[t.model_dump(mode="json", exclude_none=True) for t in s.tools],
                setup=setup,
                environment=env,
                group=(setup[0]["arguments"].get("source") if setup else None),
                bundle=True,
            )
        if s.query and len(entries[key].examples) < 3:
            entries[key].examples.append(s.query)
    return list(entries.values())


def tool_dict(
    raw: Any, where: str, fix: str = "each entry needs name, description and JSON-schema parameters"
) -> dict[str, Any]:
    """A benchsmith ``Tool`` (or an OpenAI ``{"type": "function", "function": ...}`` entry) as a plain
    dict, validated; a UserError naming ``where`` otherwise."""
    if isinstance(raw, dict) and raw.get("type") == "function" and isinstance(raw.get("function"), dict):
        raw = raw["function"]
    try:
        return Tool.model_validate(raw).model_dump(mode="json", exclude_none=True)
    except ValueError as exc:
        lines = str(exc).splitlines()
        raise UserError(
            f"{where}: not a valid tool ({lines[1].strip() if len(lines) > 1 else lines[0]})", fix=fix
        ) from None


def load_catalog(path: str | Path) -> list[CatalogEntry]:
    """The catalog entries in ``path`` (see the module docs for the accepted forms)."""
    path = Path(path)
    if path.is_dir():
        if not Split(path).has(Split.SAMPLES):
            if (path / TOOLS_FILE).is_file():
                return _from_tool_folder(path)
            raise UserError(
                f"{path} is a folder without samples.jsonl or tools.json",
                fix="pass a split folder, a tool catalog folder (benchsmith tools import) or a tools file",
            )
        return _from_samples(Split(path).samples(), group_by_setup=True, split=path)
    if not path.is_file():
        raise UserError(f"{path} does not exist", fix="pass a split folder, a tools JSON/JSONL file or a samples JSONL")
    if path.suffix == ".jsonl":
        rows = raw_rows(path)
        if rows and isinstance(rows[0][1], dict) and ("query" in rows[0][1] or "dialogue" in rows[0][1]):
            return _from_samples(read_jsonl(path, Sample), group_by_setup=False, split=None)
        tools = [tool_dict(row, f"{path}:{n}") for n, row in rows]
    else:
        data = read_json(path)
        if isinstance(data, dict) and isinstance(data.get("tools"), list):
            data = data["tools"]
        if not isinstance(data, list):
            raise UserError(f"{path}: expected a list of tools", fix="write a JSON array of tool objects")
        tools = [tool_dict(row, f"{path}: tool {i + 1}") for i, row in enumerate(data)]
    return [CatalogEntry(id=t["name"], tools=[t], group=_family(t["name"])) for t in tools]


TOOLS_FILE = "tools.json"
ENVIRONMENT_FILE = "environment.json"
EXAMPLES_FILE = "examples.json"


def _from_tool_folder(path: Path) -> list[CatalogEntry]:
    data = read_json(path / TOOLS_FILE)
    if not isinstance(data, list):
        raise UserError(f"{path / TOOLS_FILE}: expected a list of tools", fix="write a JSON array of tool objects")
    tools = [tool_dict(row, f"{path / TOOLS_FILE}: tool {i + 1}") for i, row in enumerate(data)]
    env = None
    if (path / ENVIRONMENT_FILE).is_file():
        kind = read_json(path / ENVIRONMENT_FILE)
        kind = kind.get("kind") if isinstance(kind, dict) else None
        if not isinstance(kind, str):
            raise UserError(f"{path / ENVIRONMENT_FILE} names no kind", fix='write {"kind": "mcp", ...}')
        env = {"kind": kind, "file": str((path / ENVIRONMENT_FILE).resolve())}
    examples = _examples(path / EXAMPLES_FILE)
    return [
        CatalogEntry(
            id=t["name"],
            tools=[t],
            environment=env,
            group=_family(t["name"]),
            # each tool starts the list somewhere else, so draws show different examples
            examples=examples[i % len(examples) :] + examples[: i % len(examples)] if examples else [],
        )
        for i, t in enumerate(tools)
    ]


def _examples(path: Path) -> list[str]:
    """The example requests of a tool catalog folder (a JSON array of strings), or none."""
    if not path.is_file():
        return []
    data = read_json(path)
    if not isinstance(data, list) or not all(isinstance(x, str) and x.strip() for x in data):
        raise UserError(f"{path}: expected a JSON array of example requests", fix='write ["How many ...?", ...]')
    return [x.strip() for x in data]


def _family(name: str) -> str:
    parts = re.split(r"[_.\-]|(?<=[a-z])(?=[A-Z])", name)
    return parts[0].lower() if parts else name


def _params(tool: dict[str, Any]) -> set[str]:
    return set(((tool.get("parameters") or {}).get("properties") or {}).keys())


def draw_tools(catalog: list[CatalogEntry], k: int, rng: random.Random, strategy: str = "random") -> CatalogEntry:
    """One draw: an entry that already bundles its tools (a split set-up) is taken whole; single
    tools are drawn ``k`` at a time, at random or ``related`` (same family, or sharing a parameter
    name with a tool already drawn)."""
    if not catalog:
        raise UserError("the tool catalog is empty", fix="pass a catalog with at least one tool")
    first = rng.choice(catalog)
    if len(first.tools) > 1 or first.bundle:
        return first
    chosen = [first]
    pool = [e for e in catalog if e is not first]
    while len(chosen) < k and pool:
        if strategy == "related":
            params = set().union(*(_params(e.tools[0]) for e in chosen)) - {"query", "id", "name"}
            related = [e for e in pool if e.group == first.group or (_params(e.tools[0]) & params)]
            pick = rng.choice(related or pool)
        else:
            pick = rng.choice(pool)
        chosen.append(pick)
        pool.remove(pick)
    return CatalogEntry(
        id="+".join(e.id for e in chosen),
        tools=[e.tools[0] for e in chosen],
        examples=[x for e in chosen for x in e.examples][:3],
        group=first.group,
        environment=first.environment,  # the tools of one catalog folder share its server
    )
