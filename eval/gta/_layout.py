"""Writing GTA's own layout so that GTA's loader and evaluator read it (used by derive and export).

GTA's loader turns every key of ``dataset.json`` into an integer, its step-by-step executor
builds each tool from ``toolmeta.json`` (AgentLego's ``ToolMeta``: exactly ``name``,
``description``, ``inputs``, ``outputs``; each input exactly ``type``, ``name``,
``description``, ``optional``, ``default``, ``filetype`` with a type AgentLego knows), and its
end-to-end evaluator knows a category only for its own 14 tools.

>>> gta_input_type({"type": "integer"}), gta_input_type({"type": ["integer", "null"]}), gta_input_type({"enum": ["a"]})
('int', 'text', 'text')
>>> toolmeta_entry({"name": "f", "description": "d", "category": "logic", "parameters": {},
...                 "inputs": [{"type": "int", "name": "n", "optional": False, "enum": [1]}], "outputs": []})
{'name': 'f', 'description': 'd', 'inputs': [{'type': 'int', 'name': 'n', 'description': None, 'optional': False, 'default': None, 'filetype': None}], 'outputs': []}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchsmith.schemas import write_json

from ._scorers import GTA_TYPES

DATASET = "dataset.json"
TOOLMETA = "toolmeta.json"
ID_MAP = "id_map.json"
_SCALARS = {"string": "text", "integer": "int", "number": "float", "boolean": "bool"}
_PARAMETER_KEYS = ("type", "name", "description", "optional", "default", "filetype")


def gta_input_type(schema: dict[str, Any]) -> str:
    """AgentLego's type for a JSON Schema property: ``text`` for strings, ``int``, ``float``,
    ``bool``; ``text`` for anything else (arrays, objects, unions, nullable values: AgentLego
    turns any value into text, so every value the schema allows still runs)."""
    t = schema.get("type", "string" if "enum" in schema else None)
    return _SCALARS.get(t, "text") if isinstance(t, str) else "text"


def toolmeta_entry(tool: dict[str, Any]) -> dict[str, Any]:
    """A dataset.json tool entry reduced to what AgentLego's ``ToolMeta.from_json_dict`` accepts."""

    def param(p: dict[str, Any]) -> dict[str, Any]:
        out = {k: p.get(k) for k in _PARAMETER_KEYS}
        out["type"] = out["type"] if out["type"] in GTA_TYPES else "text"
        return out

    return {
        "name": tool["name"],
        "description": tool.get("description"),
        "inputs": [param(p) for p in tool.get("inputs") or []],
        "outputs": [param(p) for p in tool.get("outputs") or []],
    }


def write_gta_dataset(out: Path, samples: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Write ``dataset.json`` keyed ``"0"``, ``"1"``, ... in the given order, ``toolmeta.json``
    (every tool of every sample, by name; the first entry of a name wins) and ``id_map.json``
    (GTA id -> source sample id). Returns ``{"files", "id_map"}``."""
    dataset: dict[str, Any] = {}
    id_map: dict[str, str] = {}
    toolmeta: dict[str, Any] = {}
    for i, (sid, sample) in enumerate(samples):
        dataset[str(i)] = sample
        id_map[str(i)] = sid
        for tool in sample.get("tools") or []:
            toolmeta.setdefault(tool["name"], toolmeta_entry(tool))
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / DATASET, dataset)
    write_json(out / TOOLMETA, dict(sorted(toolmeta.items())))
    write_json(out / ID_MAP, id_map)
    return {"files": [DATASET, ID_MAP, TOOLMETA], "id_map": id_map}
