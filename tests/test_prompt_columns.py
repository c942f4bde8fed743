"""The column list of a split's tools is said once per prompt, after the tools, so the tool text is
the same for every case of a split (a prefix the local server reuses from case to case), and no
column name or description is lost on the way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import build_slot_split, pair_lines

from benchsmith.construction.nl2api import hoist_columns
from benchsmith.eval import DERIVERS, TaskOptions, get_task
from benchsmith.eval._private.episode import assistant_messages
from benchsmith.schemas import Sample, read_jsonl

N_PAIRS = 12


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("columns"), pair_lines()[:N_PAIRS])


@pytest.fixture(scope="module")
def derived(split: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("derived")
    for name in ("acebench_special", "gta", "teval"):
        DERIVERS[name](split, out / name, seed=0)
    return out


def _samples(split: Path) -> list[Sample]:
    return read_jsonl(split / "samples.jsonl", Sample)


def _column_params(value):
    if isinstance(value, dict):
        if " Columns: " in str(value.get("description", "")):
            yield value
        for v in value.values():
            yield from _column_params(v)
    elif isinstance(value, list):
        for v in value:
            yield from _column_params(v)


def test_every_sample_gives_the_same_tools_and_keeps_its_columns(split: Path) -> None:
    bare_texts, seen_multi = set(), False
    for s in _samples(split):
        tools = [t.model_dump(mode="json", exclude_none=True) for t in s.tools]
        columns, bare = hoist_columns(tools)
        assert columns, s.id
        bare_texts.add(json.dumps(bare, sort_keys=True))
        assert " Columns: " not in json.dumps(bare), s.id
        names = set()
        for node in _column_params(tools):
            names |= set(node.get("enum") or [])
        seen_multi |= len(names) > 1
        for name in names:  # every column a parameter could take is named in the list said once
            assert f"{name}: " in columns, (s.id, name)
    assert len(bare_texts) == 1  # the tool text no longer depends on the sample
    assert seen_multi


def test_a_list_said_twice_counts_once_and_other_lists_stay() -> None:
    g = "t.a: id; t.b: name"
    twice = {"description": f"A column. Columns: {g}. Columns: {g}", "enum": ["t.a", "t.b"]}
    other = {"description": "A column. Columns: u.x: other", "enum": ["u.x"]}
    once = {"description": f"Group by. Columns: {g}", "enum": ["t.a", "t.b"]}
    columns, bare = hoist_columns({"p": twice, "q": other, "r": once})
    assert columns == g
    assert bare["p"] == {"description": "A column. (a column name, see Columns)"}
    assert bare["r"] == {"description": "Group by. (a column name, see Columns)"}
    assert bare["q"] == other  # another list than the one said once keeps its own


def _system(messages: list[dict]) -> str:
    return messages[0]["content"]


def _prefix_before_columns(text: str) -> str:
    return text.split("\nColumns (", 1)[0]


@pytest.mark.parametrize("task_name, folder", [("acebench_special", "acebench_special"), ("gta", "gta")])
def test_prompts_share_the_tool_text_and_state_the_columns_after_it(derived: Path, task_name: str, folder: str) -> None:
    task = get_task(task_name)(derived / folder, TaskOptions(calling="prompt"))
    cases = [c for c in task.load() if c.category != "e2e"][:6]
    assert len(cases) >= 2
    prefixes = set()
    for case in cases:
        req = task.request(case)
        system = _system(req.messages)
        assert "\nColumns (" in system and " Columns: " not in system.split("\nColumns (", 1)[0]
        prefixes.add(_prefix_before_columns(system))
        # the decoding schema still limits column parameters to the sample's columns
        assert '"enum"' in json.dumps(req.json_schema)
    assert len(prefixes) == 1


def test_teval_records_share_the_api_text(derived: Path) -> None:
    blocks = set()
    for path in sorted((derived / "teval").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            continue
        for rec in data.values():
            prompt = rec.get("origin_prompt") if isinstance(rec, dict) else None
            if not prompt or not prompt[0]["content"].startswith("You have access to the following APIs:"):
                continue
            system = prompt[0]["content"]
            assert "\nColumns (what a column parameter takes): " in system
            blocks.add(_prefix_before_columns(system))
    assert len(blocks) == 1


def test_episode_prompt_states_the_columns_once(derived: Path) -> None:
    task = get_task("gta")(derived / "gta", TaskOptions(calling="prompt"))
    case = next(c for c in task.load() if c.category == "e2e")
    spec = task.episode_spec(case)
    system = _system(assistant_messages(spec, [], native=False))
    assert system.count("Columns (what a column parameter takes): ") == 1
    assert " Columns: " not in system
    assert system.index("Tools (one parameter per line)") < system.index("Columns (")
