"""Integration: every construction graph runs a few items against the real local default model
(Qwen2.5-Coder 0.5B Instruct on xllamacpp, 127.0.0.1). Quality is low; what must hold is valid structure and honest
outcomes: every item ends exactly once as an accepted sample, a rejection with its reason, or a
review row with the raw reply, with no transport errors, and accepted samples are well-formed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import build_slot_split, pair_lines

from benchsmith.construction import EnvContext, RoleModels, run_graph
from benchsmith.models import DEFAULT_LOCAL_MODEL, ModelClient, resolve_model
from benchsmith.schemas import Sample, read_jsonl


@pytest.fixture(scope="module")
def models(local) -> RoleModels:
    cfg = resolve_model(DEFAULT_LOCAL_MODEL, None, timeout=240.0, max_tokens=200, temperature=0.7, seed=3)
    assert cfg.local and cfg.base_url == local.base_url
    return RoleModels(default=ModelClient(cfg))


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("localconstruct"), pair_lines()[:8])


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def honest(out: Path, summary, n_items: int, made_by: str | None = None) -> list[Sample]:
    """Every item exactly once in samples / error pool / review; reasons and raw replies present."""
    samples = read_jsonl(out / "samples.jsonl", Sample)
    pool, review = _lines(out / "error_pool.jsonl"), _lines(out / "review.jsonl")
    assert summary.errors == [] and summary.unfinished == 0, summary.errors
    assert summary.accepted_items + len(pool) + len(review) == n_items == summary.items
    for row in pool:
        r = row["rejected_by"]
        assert r["where"] and r["code"] and r["reason"], row
    for row in review:
        assert row["raw"] and all(isinstance(v, str) for v in row["raw"].values()), row
    for s in samples:
        assert s.provenance.versions["graph"].startswith(made_by or summary.graph)
        assert any(k.startswith("model.") and v == DEFAULT_LOCAL_MODEL for k, v in s.provenance.versions.items())
    assert summary.model_calls > 0
    return samples


def test_queries_then_chains_then_votes_with_the_local_model(models: RoleModels, split: Path, tmp_path: Path) -> None:
    q = run_graph("queries", split, tmp_path / "q", models=models, options={"n": 3}, concurrency=2)
    honest(tmp_path / "q", q, 3)
    # chains for the accepted queries plus two of the split's own questions (so chains always has work)
    rows = (tmp_path / "q" / "samples.jsonl").read_text().splitlines()
    own = (split / "samples.jsonl").read_text().splitlines()[:2]
    (tmp_path / "chain_in.jsonl").write_text("\n".join([*rows, *own]) + "\n")
    n = len(rows) + 2
    c = run_graph(
        "chains",
        tmp_path / "chain_in.jsonl",
        tmp_path / "c",
        models=models,
        concurrency=2,
        env_context=EnvContext(split=split),
        options={"step_budget": 3, "max_retries": 1},
    )
    chains = honest(tmp_path / "c", c, n)
    from benchsmith.construction import open_environment

    for s in chains:  # gold observations came from the real database: re-running gives the same
        env = open_environment(s.metadata["environment"], EnvContext(split=split))
        for step in s.gold:
            assert env.call(step.call.name, step.call.arguments, step.call.label) == step.observation
            assert step.verdict == "success"
    if chains:
        (tmp_path / "v_in.jsonl").write_text(chains[0].model_dump_json() + "\n")
        v = run_graph("vote", tmp_path / "v_in.jsonl", tmp_path / "v", models=models)
        (voted,) = honest(tmp_path / "v", v, 1, made_by="chains")
        assert [x["vote"] in ("accept", "reject", "abstain") for x in voted.metadata["votes"]] == [True]


def test_dialogues_on_a_sandbox_scenario_with_the_local_model(models: RoleModels, tmp_path: Path) -> None:
    d = run_graph(
        "dialogues",
        "sandbox",
        tmp_path / "d",
        models=models,
        limit=2,
        concurrency=2,
        options={"max_turns": 2, "max_steps": 3},
    )
    for s in honest(tmp_path / "d", d, 2):
        assert s.dialogue and s.dialogue[0].role == "user" and s.dialogue[-1].role == "assistant"
        assert s.metadata["environment"]["kind"] == "sandbox"


def test_special_cases_from_a_split_with_the_local_model(models: RoleModels, split: Path, tmp_path: Path) -> None:
    sp = run_graph(
        "special",
        split / "samples.jsonl",
        tmp_path / "s",
        models=models,
        limit=3,
        concurrency=2,
        options={"kinds": ["incomplete", "no_tool", "irrelevant"]},
    )
    for s in honest(tmp_path / "s", sp, sp.items):
        assert "special" in s.categories and not s.gold


def test_expand_exemplars_with_the_local_model(models: RoleModels, split: Path, tmp_path: Path) -> None:
    e = run_graph("expand", split / "samples.jsonl", tmp_path / "e", models=models, limit=2, concurrency=2)
    for s in honest(tmp_path / "e", e, 2):
        assert s.metadata["exemplar"] and s.tools


def test_api_synthesis_from_seed_documents_with_the_local_model(models: RoleModels, tmp_path: Path) -> None:
    seeds = Path(__file__).parent / "fixtures" / "construct" / "seed_tools.json"
    a = run_graph("apis", seeds, tmp_path / "a", models=models, limit=2, concurrency=2, options={"per_leaf": 1})
    from benchsmith.schemas import Tool

    for s in honest(tmp_path / "a", a, 2):
        Tool.model_validate(s.metadata["api"])


def test_backtranslation_of_sql_with_the_local_model(models: RoleModels, tmp_path: Path) -> None:
    rows = [json.loads(x) for x in pair_lines()[:2]]
    (tmp_path / "sql.jsonl").write_text("".join(json.dumps({"id": r["id"], "sql": r["sql"]}) + "\n" for r in rows))
    b = run_graph("backtranslate", tmp_path / "sql.jsonl", tmp_path / "b", models=models, concurrency=2)
    for s in honest(tmp_path / "b", b, 2):
        assert s.metadata["sql"] and s.query
