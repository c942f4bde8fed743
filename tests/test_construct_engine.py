"""The construction engine with a scripted chat model (reply = pure function of the messages):
queries and chains graphs on a real SLOT split, review routing, provenance, resume, role models;
and ``benchsmith construct chains`` killed with -9 midway against a real HTTP endpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from helpers import build_slot_split, pair_lines
from scripted_chat import ScriptedChat, by_task

from benchsmith.construction import ChatModelRole, EnvContext, RoleModels, run_graph
from benchsmith.schemas import Sample, UserError, read_jsonl

QUERY = '{"query": "How many tracks last longer than ten minutes?"}'
REFINED = '{"solvable": true, "query": "How many tracks last longer than ten minutes in total?"}'
COUNT = (
    '{"action": "aggregate_data", "arguments": {"data_source": "$data_1$", "aggregation": "count"}, "thought": "count"}'
)


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("construct"), pair_lines()[:12])


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()] if path.exists() else []


def plan_once(last: str, messages: list[dict]) -> str:
    """Plan one step, then finish once a step result is shown."""
    if last.startswith("Step "):
        return '{"done": true, "thought": "That count is the answer."}'
    return '{"done": false, "thought": "Count the rows."}'


def models(**replies) -> RoleModels:
    base = dict(
        generate=QUERY,
        refine=REFINED,
        plan=plan_once,
        act=COUNT,
        review='{"verdict": "success", "decision": "continue"}',
    )
    base.update(replies)
    return RoleModels(default=ScriptedChat(script=by_task(**base)))


class Counting:
    """A role model that counts its calls."""

    def __init__(self, inner: RoleModels, name: str = "counted") -> None:
        self.inner = ChatModelRole(inner.default.chat, name=name)
        self.name = name
        self.calls = 0

    def complete(self, messages, **kw):
        self.calls += 1
        return self.inner.complete(messages, **kw)


def test_queries_graph_accepts_a_clean_query_with_provenance(split: Path, tmp_path: Path) -> None:
    s = run_graph("queries", split, tmp_path / "q", models=models(), options={"n": 3}, seed=7)
    assert s.items == 3 and s.model_calls == 6
    samples = read_jsonl(tmp_path / "q" / "samples.jsonl", Sample)
    # identical samples (same query on the same loaded table) collapse into one; the others are
    # rejected as duplicates, with the reason
    pool = _lines(tmp_path / "q" / "error_pool.jsonl")
    assert len(samples) + len(pool) == 3 and len(samples) == len({json.dumps(x.setup[0].arguments) for x in samples})
    assert s.rejected_by == ({"sample:duplicate": len(pool)} if pool else {})
    q = samples[0]
    assert q.query == "How many tracks last longer than ten minutes in total?"
    prov = q.provenance
    assert prov.method == "construct.queries" and prov.seed == 7 and prov.source_id.startswith("q")
    assert prov.versions["graph"] == "queries@v1"
    assert prov.versions["prompt.generate"].startswith("construction/query_generate@v1-")
    assert prov.versions["model.refine"] == "ScriptedChat"
    assert q.metadata["environment"]["kind"] == "nl2api" and q.setup
    summary = json.loads((tmp_path / "q" / "summary.json").read_text())
    assert summary["calls_per_accepted"] == round(6 / len(samples), 2)


@pytest.mark.parametrize(
    "refined, code",
    [
        ('{"solvable": true, "query": "Use aggregate_data to count the tracks please"}', "names_tool"),
        ('{"solvable": true, "query": "What will the weather be like in Lisbon this weekend?"}', "copied_fewshot"),
        ('{"solvable": true, "query": "Recommend a good pizza place in Naples for tonight"}', "off_topic"),
        ('{"solvable": false, "query": "How many tracks last longer than ten minutes?"}', "unsolvable"),
    ],
)
def test_queries_graph_rejects_with_the_reason(split: Path, tmp_path: Path, refined: str, code: str) -> None:
    s = run_graph("queries", split, tmp_path / "q", models=models(refine=refined), options={"n": 1})
    assert s.samples == 0 and s.rejected == 1
    pool = _lines(tmp_path / "q" / "error_pool.jsonl")
    assert pool[0]["rejected_by"]["code"] == code and pool[0]["rejected_by"]["where"] == "finalize"
    assert pool[0]["candidate"]["query"]  # what was made is kept with the reason


def test_unreadable_reply_goes_to_review_with_the_raw_text(split: Path, tmp_path: Path) -> None:
    s = run_graph(
        "queries", split, tmp_path / "q", models=models(generate="Sure! Here is a query: tracks?"), options={"n": 1}
    )
    assert s.review == 1 and s.samples == 0 and s.model_calls == 1  # the refiner is never asked
    row = _lines(tmp_path / "q" / "review.jsonl")[0]
    assert row["raw"] == {"generate": "Sure! Here is a query: tracks?"}
    assert row["reasons"][0]["code"] == "not_json"


@pytest.mark.parametrize(
    "reply",
    ["[" * 100_000, '{"query": ' + "9" * 5000 + "}", 'Sure: {"query": ' + "[" * 50_000 + "}"],
    ids=["deep", "5000 digits", "deep inside text"],
)
def test_a_reply_json_cannot_read_goes_to_review_not_a_crash(split: Path, tmp_path: Path, reply: str) -> None:
    # before: RecursionError out of the node (the run stopped with a traceback)
    s = run_graph("queries", split, tmp_path / "q", models=models(generate=reply), options={"n": 1})
    assert s.review == 1 and s.samples == 0
    assert _lines(tmp_path / "q" / "review.jsonl")[0]["reasons"][0]["code"] == "not_json"


def _queries(split: Path, tmp_path: Path) -> Path:
    run_graph("queries", split, tmp_path / "q", models=models(), options={"n": 1})
    return tmp_path / "q" / "samples.jsonl"


def test_chains_graph_executes_real_tools_and_keeps_the_observation(split: Path, tmp_path: Path) -> None:
    s = run_graph(
        "chains", _queries(split, tmp_path), tmp_path / "c", models=models(), env_context=EnvContext(split=split)
    )
    assert s.samples == 1 and s.calls_by_node == {"plan": 2, "act": 1, "review": 1}
    (chain,) = read_jsonl(tmp_path / "c" / "samples.jsonl", Sample)
    (step,) = chain.gold
    assert step.call.name == "aggregate_data" and step.verdict == "success"
    import sqlite3

    con = sqlite3.connect(split / "database.sqlite")
    source = chain.setup[0].arguments["source"]
    (count,) = con.execute(f'SELECT COUNT(*) FROM "{source}"').fetchone()  # noqa: S608 - a table name from our split
    assert step.observation == count  # the real database answered, not a model
    assert chain.answer.kind == "exact" and chain.answer.value == [[count]]
    from benchsmith.construction.checks import run_checks

    assert run_checks(chain).accepted, run_checks(chain).results


def test_reviewer_cannot_call_a_failed_step_a_success(split: Path, tmp_path: Path) -> None:
    bad = '{"action": "aggregate_data", "arguments": {"data_source": "$data_1$", "aggregation": "median"}, "thought": "x"}'
    s = run_graph(
        "chains",
        _queries(split, tmp_path),
        tmp_path / "c",
        models=models(act=bad),
        env_context=EnvContext(split=split),
        options={"step_budget": 3},
    )
    # every step fails for real; the reviewer says success, the override records input_error; no gold step survives
    assert s.samples == 0 and s.rejected == 1
    row = _lines(tmp_path / "c" / "error_pool.jsonl")[0]
    assert row["rejected_by"]["code"] == "step_budget"
    attempts = row["candidate"]["attempts"]
    assert len(attempts) == 3 and all(a["verdict"] == "input_error" and a["error"] for a in attempts)
    assert row["candidate"]["overrides"]


def test_retries_are_bounded(split: Path, tmp_path: Path) -> None:
    s = run_graph(
        "chains",
        _queries(split, tmp_path),
        tmp_path / "c",
        models=models(review='{"verdict": "irrelevant_response", "decision": "retry"}'),
        env_context=EnvContext(split=split),
        options={"max_retries": 1, "step_budget": 10},
    )
    assert s.rejected_by == {"review:retries_exhausted": 1} and s.calls_by_node["act"] == 2


def test_tools_without_an_environment_are_simulated(tmp_path: Path) -> None:
    tools = [
        {
            "name": "get_weather",
            "description": "The weather forecast for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City name"}},
                "required": ["city"],
            },
        }
    ]
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps(tools))
    m = models(
        generate='{"query": "Is it going to be sunny in Oslo city?"}',
        refine='{"solvable": true, "query": "Will the weather in Oslo city be sunny tomorrow?"}',
        act='{"action": "get_weather", "arguments": {"city": "Oslo"}, "thought": "forecast"}',
        simulate='{"ok": true, "observation": "sunny, 21 C"}',
    )
    run_graph("queries", catalog, tmp_path / "q", models=m, options={"n": 1, "k": 1})
    s = run_graph("chains", tmp_path / "q" / "samples.jsonl", tmp_path / "c", models=m)
    assert s.samples == 1 and s.calls_by_node["simulate"] == 1
    (chain,) = read_jsonl(tmp_path / "c" / "samples.jsonl", Sample)
    assert chain.gold[0].observation == "sunny, 21 C" and chain.metadata["simulated_steps"] == 1
    assert chain.answer.kind == "reference"


def test_rerun_resumes_without_new_model_calls_and_the_same_outputs(split: Path, tmp_path: Path) -> None:
    counted = Counting(models())
    m = RoleModels(default=counted)
    first = run_graph("queries", split, tmp_path / "q", models=m, options={"n": 4})
    calls = counted.calls
    out1 = [(s.id, s.query) for s in read_jsonl(tmp_path / "q" / "samples.jsonl", Sample)]
    second = run_graph("queries", split, tmp_path / "q", models=m, options={"n": 4})
    assert counted.calls == calls == first.model_calls and second.skipped_done == 4
    assert [(s.id, s.query) for s in read_jsonl(tmp_path / "q" / "samples.jsonl", Sample)] == out1
    with pytest.raises(UserError, match="different construction run"):
        run_graph("queries", split, tmp_path / "q", models=m, options={"n": 5})


def test_each_role_uses_its_own_model(split: Path, tmp_path: Path) -> None:
    base = models()
    gen, ref = Counting(base, "gen-model"), Counting(base, "ref-model")
    m = RoleModels(default=base.default, roles={"generator": gen, "refiner": ref})
    run_graph("queries", split, tmp_path / "q", models=m, options={"n": 1})
    assert gen.calls == 1 and ref.calls == 1
    (q,) = read_jsonl(tmp_path / "q" / "samples.jsonl", Sample)
    assert (
        q.provenance.versions["model.generate"] == "gen-model" and q.provenance.versions["model.refine"] == "ref-model"
    )
    with pytest.raises(UserError, match="unknown model role"):
        RoleModels(default=base.default, roles={"poet": gen})


def test_a_local_models_weights_file_is_named_in_provenance(split: Path, tmp_path: Path) -> None:
    base = models()
    gen, ref = Counting(base, "gen-model"), Counting(base, "local-model")
    ref.file_sha256 = "ab" * 32  # what a ModelClient of a local model carries (ModelConfig.file_sha256)
    m = RoleModels(default=base.default, roles={"generator": gen, "refiner": ref})
    run_graph("queries", split, tmp_path / "q", models=m, options={"n": 1})
    (q,) = read_jsonl(tmp_path / "q" / "samples.jsonl", Sample)
    assert (
        q.provenance.versions["model_file.refine"] == "ab" * 32 and "model_file.generate" not in q.provenance.versions
    )
    assert m.describe()["files"] == {"local-model": "ab" * 32}
    run = json.loads((tmp_path / "q" / "run.json").read_text())
    assert run["models"]["files"] == {"local-model": "ab" * 32}


def _fake_reply(body: dict) -> str:
    system = body["messages"][0]["content"]
    last = body["messages"][-1]["content"]
    if system.startswith("You plan how to solve"):
        return plan_once(last, body["messages"])
    if system.startswith("You turn one planned step"):
        return COUNT
    if system.startswith("You review one step"):
        return '{"verdict": "success", "decision": "continue"}'
    raise AssertionError(system[:60])


def test_kill_9_during_construct_chains_then_rerun_yields_every_item_once(split: Path, tmp_path: Path) -> None:
    items = read_jsonl(split / "samples.jsonl", Sample)  # the split's own questions, re-annotated
    out = tmp_path / "chains"
    args = [
        sys.executable,
        "-m",
        "benchsmith.cli",
        "construct",
        "chains",
        str(split / "samples.jsonl"),
        "--out",
        str(out),
        "--split",
        str(split),
        "--model",
        "fake",
        "--concurrency",
        "2",
        "--timeout",
        "20",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHSMITH_", "OPENAI_"))}
    with FakeOpenAI(_fake_reply, delay=0.1) as ep:
        env["BENCHSMITH_BASE_URL"] = ep.base_url
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120
        while sum(ep.prompts.values()) < 14:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        asked_before = sum(ep.prompts.values())
        assert asked_before < 4 * len(items), "the kill must land midway"
        assert not (out / "samples.jsonl").exists()  # outputs are only written at the end
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        asked = sum(ep.prompts.values())
    made = read_jsonl(out / "samples.jsonl", Sample)
    ids = Counter(
        [s.provenance.source_id for s in made]
        + [r["item_id"] for r in _lines(out / "error_pool.jsonl")]
        + [r["item_id"] for r in _lines(out / "review.jsonl")]
    )
    assert set(ids) == {s.id for s in items} and set(ids.values()) == {1}, "every item exactly once"
    # the scripted chain only counts rows: questions that state a value the count never uses are rejected
    pool = _lines(out / "error_pool.jsonl")
    assert len(made) + len(pool) == len(items) and made and pool
    assert {r["rejected_by"]["code"] for r in pool} == {"query_value_unused"}
    # 4 calls per item; only nodes in flight at the kill (at most 2, concurrency 2) may repeat
    assert 4 * len(items) <= asked <= 4 * len(items) + 2
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unfinished"] == 0 and summary["skipped_done"] + summary["resumed"] >= 1
    assert "samples accepted" in done.stdout


def test_k_voters_each_vote_once_and_an_unreadable_vote_abstains(split: Path, tmp_path: Path) -> None:
    def voter(reply: str, name: str) -> ChatModelRole:
        return ChatModelRole(ScriptedChat(script=lambda msgs: reply), name=name)

    voters = [
        voter('{"vote": "accept", "reason": "fine"}', "v1"),
        voter('{"vote": "reject", "reason": "vague"}', "v2"),
        voter("I think it is good", "v3"),
    ]
    m = RoleModels(default=models().default, voters=voters)
    s = run_graph("vote", split / "samples.jsonl", tmp_path / "v", models=m, limit=2)
    assert s.samples == 2 and s.calls_by_node == {"vote": 6}
    voted = read_jsonl(tmp_path / "v" / "samples.jsonl", Sample)
    originals = {x.id: x for x in read_jsonl(split / "samples.jsonl", Sample)}
    for x in voted:
        assert [v["vote"] for v in x.metadata["votes"]] == ["accept", "reject", "abstain"]
        assert x.metadata["votes"][2]["raw"] == "I think it is good"
        assert x.provenance == originals[x.id].provenance and x.gold == originals[x.id].gold  # only votes added


def test_a_chain_that_ignores_a_value_of_the_request_is_rejected(split: Path, tmp_path: Path) -> None:
    base = read_jsonl(split / "samples.jsonl", Sample)[0]
    asked = base.model_copy(
        update={"query": "How many rows mention the album Let There Be Rock by AC/DC?", "gold": [], "id": None}
    )
    (tmp_path / "in.jsonl").write_text(asked.model_dump_json() + "\n")
    s = run_graph("chains", tmp_path / "in.jsonl", tmp_path / "c", models=models(), env_context=EnvContext(split=split))
    assert s.rejected_by == {"finalize:query_value_unused": 1}
    reason = _lines(tmp_path / "c" / "error_pool.jsonl")[0]["rejected_by"]["reason"]
    assert "'Let There Be Rock'" in reason and "'AC/DC'" in reason


class Metered:
    """A role model whose replies report usage: 10 + the message count prompt tokens (4 cached),
    7 completion tokens (2 of them reasoning)."""

    name = "metered"

    def __init__(self, inner: RoleModels) -> None:
        self.inner = ChatModelRole(inner.default.chat, name=self.name)

    def complete(self, messages, **kw):
        from benchsmith.models import Reply

        reply = self.inner.complete(messages, **kw)
        usage = {"prompt_tokens": 10 + len(messages), "cached_tokens": 4, "completion_tokens": 7, "reasoning_tokens": 2}
        return Reply(text=reply.text, usage=usage, latency_s=0.25, finish_reason="stop")


def test_summary_counts_usage_per_role_and_prices_it(split: Path, tmp_path: Path) -> None:
    from benchsmith.schemas import PriceTable

    prices = PriceTable(
        currency="EUR", per_million_tokens={"metered": {"prompt": 3.0, "cached_prompt": 1.0, "completion": 5.0}}
    )
    s = run_graph(
        "queries", split, tmp_path / "q", models=RoleModels(default=Metered(models())), options={"n": 3}, prices=prices
    )
    assert s.samples >= 1
    summary = json.loads((tmp_path / "q" / "summary.json").read_text())
    usage = summary["usage"]
    assert set(usage) == {"generator", "refiner"} and all(u["calls"] == 3 for u in usage.values())
    assert all(u["cached_prompt_tokens"] == 12 and u["reasoning_tokens"] == 6 for u in usage.values())
    assert all(u["latency_p50_s"] == u["latency_p99_s"] == 0.25 and u["model"] == "metered" for u in usage.values())
    # every prompt is 10 tokens + its message count; priced exactly
    prompt = sum(u["prompt_tokens"] for u in usage.values())
    assert prompt > 60
    total = ((prompt - 24) * 3.0 + 24 * 1.0 + 42 * 5.0) / 1e6
    assert summary["cost"]["total"] == pytest.approx(total, rel=1e-12) and summary["cost"]["currency"] == "EUR"
    assert summary["cost"]["per_success"] == pytest.approx(total / s.samples, rel=1e-12)
    assert f"{total:.4g} EUR" in s.describe()[1]


class CutShort(Metered):
    """Every reply cut at its output budget halfway through its JSON."""

    def complete(self, messages, **kw):
        reply = super().complete(messages, **kw)
        return type(reply)(text=reply.text[: len(reply.text) // 2], usage=reply.usage, finish_reason="length")


def test_a_reply_cut_at_its_budget_is_reviewed_as_such(split: Path, tmp_path: Path) -> None:
    s = run_graph("queries", split, tmp_path / "q", models=RoleModels(default=CutShort(models())), options={"n": 1})
    assert s.review == 1 and s.usage["generator"]["output_budget_exhausted"] == 1
    why = _lines(tmp_path / "q" / "review.jsonl")[0]["reasons"][0]
    assert why["code"] == "output_budget_exhausted" and "(7 tokens)" in why["reason"]
