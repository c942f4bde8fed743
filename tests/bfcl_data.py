"""Small BFCL data folders written by tests (one category each of simple, irrelevance, live relevance)."""

from __future__ import annotations

import json
from pathlib import Path


def write_lines(folder: Path, name: str, rows: list) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )


FUNCS = [
    {
        "name": "math.factorial",
        "description": "n!",
        "parameters": {"type": "dict", "properties": {"number": {"type": "integer"}}, "required": ["number"]},
    }
]


def mini_bfcl(tmp_path: Path) -> Path:
    q = [[{"role": "user", "content": "5!"}]]
    write_lines(tmp_path, "BFCL_v4_simple_python.json", [{"id": "simple_python_0", "question": q, "function": FUNCS}])
    write_lines(
        tmp_path / "possible_answer",
        "BFCL_v4_simple_python.json",
        [{"id": "simple_python_0", "ground_truth": [{"math.factorial": {"number": [5]}}]}],
    )
    write_lines(tmp_path, "BFCL_v4_irrelevance.json", [{"id": "irrelevance_0", "question": q, "function": FUNCS}])
    write_lines(
        tmp_path, "BFCL_v4_live_relevance.json", [{"id": "live_relevance_0-0-0", "question": q, "function": FUNCS}]
    )
    write_lines(tmp_path, "BFCL_v4_multi_turn_base.json", [{"id": "multi_turn_base_0"}])  # ignored category
    return tmp_path
