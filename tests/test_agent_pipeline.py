"""Dialogues built by ``construct dialogues`` go through review in a real Label Studio (one workspace,
several sources: the NL2API split and the dialogues) and ``finalize``, then ``eval run`` with the
agent task plays them as episodes, and ``eval export --to acebench`` writes them in ACEBench's
agent layout, which benchsmith's ACEBench importer reads back with every gold passing.

The construction and the evaluated models are scripted (pure functions of the messages); the
review server, the sandbox and the database are real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dialogue_scripts import ASSISTANT, FOOD, TEXT, USER, wifi_assistant
from episode_helpers import Scripted, say
from helpers import build_slot_split, pair_lines
from scripted_chat import ScriptedChat, by_task

from benchsmith.construction import EnvContext, RoleModels, run_graph
from benchsmith.construction.sandbox import load_scenarios
from benchsmith.eval import TaskOptions, derive_all, get_benchmark, get_task, run_eval, run_selftest, score_run
from benchsmith.schemas import Sample, read_jsonl


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchsmith.cli", *args], env=env, capture_output=True, text=True, timeout=600
    )


def _scenarios(path: Path, *ids: str) -> Path:
    chosen = [s for s in load_scenarios() if s.id in ids]
    path.write_text("".join(s.model_dump_json(exclude_none=True) + "\n" for s in chosen), encoding="utf-8")
    return path


def wifi_user(last: str, messages: list[dict]) -> str:
    if last.startswith("Assistant:"):
        return '{"message": "Thanks!", "goal_met": true}'
    return '{"message": "Please send Priya \\"%s\\"", "goal_met": false}' % TEXT


def nl2api_user(last: str, messages: list[dict]) -> str:
    if last.startswith("Assistant:"):
        return '{"message": "Thanks.", "goal_met": true}'
    return '{"message": "How many tracks are there in total?", "goal_met": false}'


def nl2api_assistant(last: str, messages: list[dict]) -> str:
    if last.startswith("User:"):
        return '{"tool_calls": [{"name": "aggregate_data", "arguments": {"data_source": "$data_1$", "aggregation": "count"}}]}'
    return '{"message": "There are that many tracks."}'


def test_constructed_dialogues_are_reviewed_finalized_evaluated_and_exported(label_studio, tmp_path: Path) -> None:
    split = build_slot_split(tmp_path, pair_lines()[:3])
    # -- construction: two sandbox dialogues and one on the NL2API split's database
    food = run_graph(
        "dialogues",
        _scenarios(tmp_path / "food.jsonl", "food-order-basic"),
        tmp_path / "d_food",
        models=RoleModels(default=ScriptedChat(script=by_task(**FOOD))),
    )
    wifi = run_graph(
        "dialogues",
        _scenarios(tmp_path / "wifi.jsonl", "msg-wifi-off"),
        tmp_path / "d_wifi",
        models=RoleModels(default=ScriptedChat(script=by_task(**{USER: wifi_user, ASSISTANT: wifi_assistant}))),
    )
    db = run_graph(
        "dialogues",
        split / "samples.jsonl",
        tmp_path / "d_db",
        limit=1,
        env_context=EnvContext(split=split),
        models=RoleModels(default=ScriptedChat(script=by_task(**{USER: nl2api_user, ASSISTANT: nl2api_assistant}))),
    )
    assert (food.samples, wifi.samples, db.samples) == (1, 1, 1)
    dialogues = tmp_path / "dialogues.jsonl"
    dialogues.write_text("".join((tmp_path / d / "samples.jsonl").read_text() for d in ("d_food", "d_wifi", "d_db")))

    # -- review: one workspace, two sources, in the real Label Studio; then finalize
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHSMITH_", "LABEL_STUDIO_"))}
    env.update(label_studio.env(), BENCHSMITH_ANNOTATION_WORKSPACE=str(tmp_path / "ws"))
    for source in (split, dialogues):
        r = _cli(["annotate", "push", "--split", str(source)], env)
        assert r.returncode == 0, r.stderr
    assert _cli(["annotate", "simulate"], env).returncode == 0
    r = _cli(["annotate", "pull"], env)
    assert r.returncode == 0, r.stderr
    r = _cli(["annotate", "finalize", "--out", str(tmp_path / "final")], env)
    assert r.returncode == 0, r.stderr
    final = read_jsonl(tmp_path / "final" / "samples.jsonl", Sample)
    assert sum(1 for s in final if s.dialogue) == 3 and sum(1 for s in final if not s.dialogue) == 3
    assert (tmp_path / "final" / "database.sqlite").is_file()  # the NL2API split's database came along
    manifest = json.loads((tmp_path / "final" / "manifest.json").read_text())
    assert len(manifest["provenance"]["params"]["sources"]) == 2

    # the split's other tasks leave the dialogues alone: derivation and the nl2api task see the 3 NL2API samples
    derived = derive_all(tmp_path / "final", tmp_path / "derived")
    assert derived["derived"]
    assert len(get_task("nl2api")(tmp_path / "final", TaskOptions()).load()) == 3

    # -- the finalized dialogues as episodes: every gold replays to its end state or answer ...
    cases = get_benchmark("agent").load(tmp_path / "final")
    assert sorted(c.category for c in cases) == ["dialogue"] * 3
    assert run_selftest("agent", tmp_path / "final", tmp_path / "selftest")["gold_failing"] == 0

    # ... and a model that answers without doing anything fails each, run by `eval run` with two trials
    lazy = Scripted(lambda m, k: say("I can't do that, sorry."))
    quits = Scripted(
        lambda m, k: say("finish conversation" if any(x["role"] == "assistant" for x in m) else "Hello, I need help.")
    )
    res = run_eval(
        tmp_path / "final",
        lazy,
        {"name": "lazy"},
        tmp_path / "run",
        tasks=["agent"],
        calling="tools",
        progress=False,
        options=TaskOptions(calling="tools", trials=2),
        user_client=quits,
        user_model={"name": "quitter"},
    )
    assert res.tasks["agent"].cases == 6 and res.tasks["agent"].done == 6
    scores = score_run(tmp_path / "run")["agent"]
    assert scores["end_state_accuracy"] == 0.0 and scores["error_types"] == {"gave_up": 6}
    assert scores["reliability"]["pass^k"] == {"1": 0.0, "2": 0.0}

    # -- export to ACEBench's agent layout and read it back: every gold passes in both modes
    r = _cli(
        ["eval", "export", "--split", str(tmp_path / "final"), "--to", "acebench", "--out", str(tmp_path / "ace")],
        env,
    )
    assert r.returncode == 0, r.stderr
    rows = [json.loads(x) for x in (tmp_path / "ace" / "data_agent_multi_turn.json").read_text().splitlines()]
    assert len(rows) == 2 and {tuple(r["involved_classes"]) for r in rows} >= {("device", "messaging")}
    for mode in ("strict", "official"):
        st = run_selftest("acebench", tmp_path / "ace", tmp_path / f"ace_selftest_{mode}", mode=mode)
        assert st["gold_failing"] == 0 and st["records"] >= 5, st
