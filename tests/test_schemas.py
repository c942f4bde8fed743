"""Tests of the benchsmith.schemas models, references and JSON Schema export."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from pydantic import TypeAdapter, ValidationError

import benchsmith.schemas as schemas
from benchsmith.schemas import (
    AnswerSpec,
    CheckResult,
    ExactAnswer,
    Message,
    NoAnswer,
    Provenance,
    Reference,
    ReferenceAnswer,
    Sample,
    SplitManifest,
    Step,
    Tool,
    ToolCall,
    ToolParameters,
    UnresolvedReference,
    UserError,
    Verification,
    WhitelistAnswer,
    content_id,
    export_json_schemas,
    file_sha256,
    find_references,
    json_schemas,
    parse_reference,
    resolve_references,
    samples_content_hash,
)

CREATED = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


def provenance(**overrides) -> Provenance:
    data = {"source": "unit-test", "method": "manual", "created_at": CREATED}
    return Provenance(**{**data, **overrides})


def weather_tool(**overrides) -> Tool:
    data = {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"enum": ["C", "F"], "default": None},
            },
            "required": ["city"],
        },
    }
    return Tool(**{**data, **overrides})


def full_sample(**overrides) -> Sample:
    data = {
        "query": "Is it warmer in Paris than in Rome?",
        "context": "Temperatures are in Celsius.",
        "tools": [weather_tool(), Tool(name="compare", description="Compare two numbers.")],
        "setup": [ToolCall(name="seed_db", arguments={"rows": 3}, label="seed")],
        "gold": [
            Step(
                thought="Check Paris.",
                call=ToolCall(name="get_weather", arguments={"city": "Paris"}, label="p"),
                observation={"temp": 21.5},
                verdict="success",
            ),
            Step(call=ToolCall(name="get_weather", arguments={"city": "Rome"}, label="r"), observation={"temp": 25}),
            Step(call=ToolCall(name="compare", arguments={"a": "$p.temp$", "b": "$r.temp$"})),
        ],
        "answer": {"kind": "whitelist", "whitelist": [["no", "Rome is warmer"]], "blacklist": [["yes"]]},
        "categories": ["weather"],
        "difficulty": "easy",
        "provenance": provenance(seed=7, versions={"benchsmith": "0.1.0"}),
        "verification": Verification(
            status="verified",
            method="replay",
            checks=[CheckResult(name="replay", ok=True, code="ok")],
            verified_at=CREATED,
        ),
        "metadata": {"origin": "hand-written"},
    }
    data.update(overrides)
    return Sample(**data)


# ----------------------------------------------------------------------------- strictness


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (Tool, {"name": "t", "description": "d", "surprise": 1}),
        (ToolParameters, {"properties": {}, "extra_key": True}),
        (ToolCall, {"name": "t", "args": {}}),
        (Step, {"thought": "x", "action": "y"}),
        (Message, {"role": "user", "content": "hi", "tool_call_id": "1"}),
        (ExactAnswer, {"value": 1, "tolerance": 0.1}),
        (CheckResult, {"name": "c", "ok": True, "why": "x"}),
        (Provenance, {"source": "s", "method": "m", "created_at": CREATED, "author": "me"}),
    ],
)
def test_unknown_fields_are_rejected(model, data):
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        model.model_validate(data)


def test_sample_rejects_unknown_field_and_nested_unknown_field():
    with pytest.raises(ValidationError):
        Sample(query="q", provenance=provenance(), notes="x")
    with pytest.raises(ValidationError):
        Sample.model_validate(
            {
                "query": "q",
                "provenance": {"source": "s", "method": "m", "created_at": CREATED.isoformat()},
                "gold": [{"call": {"name": "t", "arguments": {}, "extra": 1}}],
            }
        )


def test_every_public_model_forbids_extra():
    for name in schemas.__all__:
        obj = getattr(schemas, name)
        if isinstance(obj, type) and issubclass(obj, schemas.StrictModel):
            assert obj.model_config.get("extra") == "forbid", name


# ----------------------------------------------------------------------------- tools


def test_tool_name_pattern():
    Tool(name="ns.tool-name_2", description="d")
    for bad in ["", "1abc", "has space", "a" * 129]:
        with pytest.raises(ValidationError):
            Tool(name=bad, description="d")


def test_tool_description_must_not_be_blank():
    for bad in ["", "   "]:
        with pytest.raises(ValidationError):
            Tool(name="t", description=bad)


def test_required_not_in_properties_is_rejected():
    with pytest.raises(ValidationError, match=r"required names \['missing'\] are not in properties"):
        ToolParameters(properties={"a": {"type": "string"}}, required=["a", "missing"])


def test_property_without_type_is_rejected():
    with pytest.raises(ValidationError, match="need at least one of"):
        ToolParameters(properties={"a": {"description": "no type"}})
    for ok in [{"type": "string"}, {"enum": [1]}, {"anyOf": []}, {"oneOf": []}, {"$ref": "#/x"}, {"const": 1}]:
        ToolParameters(properties={"a": ok})


def test_additional_properties_is_allowed_and_exported():
    params = ToolParameters(properties={"a": {"type": "string"}}, additionalProperties=False)
    tool = Tool(name="t", description="d", parameters=params)
    assert tool.to_openai()["function"]["parameters"]["additionalProperties"] is False
    assert "additionalProperties" not in weather_tool().to_openai()["function"]["parameters"]


def test_rest_binding_path_must_start_with_slash():
    Tool(name="t", description="d", rest={"method": "POST", "path": "/items"})
    with pytest.raises(ValidationError):
        Tool(name="t", description="d", rest={"path": "items"})
    with pytest.raises(ValidationError):
        Tool(name="t", description="d", rest={"method": "HEAD", "path": "/x"})


def test_to_openai_from_openai_round_trip():
    tool = weather_tool()
    entry = tool.to_openai()
    assert entry["type"] == "function"
    assert set(entry["function"]) == {"name", "description", "parameters"}
    # a None inside a property schema is data, not an unset field: it must survive
    assert entry["function"]["parameters"]["properties"]["unit"] == {"enum": ["C", "F"], "default": None}
    assert Tool.from_openai(entry) == tool
    assert Tool.from_openai(entry["function"]) == tool
    flat = {"type": "function", **entry["function"], "strict": True}
    assert Tool.from_openai(flat) == tool
    assert json.loads(json.dumps(entry)) == entry


def test_from_openai_rejects_bad_shapes():
    with pytest.raises(UserError):
        Tool.from_openai(["not", "a", "dict"])
    with pytest.raises(UserError):
        Tool.from_openai({"type": "retrieval", "function": {"name": "x", "description": "d"}})
    with pytest.raises(UserError):
        Tool.from_openai({"type": "function", "function": "x"})
    with pytest.raises(ValidationError):
        Tool.from_openai({"name": "x", "description": "d", "unknown": 1})


# ----------------------------------------------------------------------------- references


def test_parse_reference():
    assert parse_reference("$out$") == Reference("out", None)
    assert parse_reference("$out.items.0$") == Reference("out", "items.0")
    assert parse_reference("$_a1.b-c.2$") == Reference("_a1", "b-c.2")
    for not_ref in ["out", "$out", "out$", "x $out$", "$out$ ", "$1x$", "$out.$", "$out..a$", "$$", 42, None]:
        assert parse_reference(not_ref) is None, not_ref
    assert Reference("out", "items.0").text == "$out.items.0$"
    assert Reference("out").text == "$out$"


def test_find_references_nested_and_tool_call_references():
    args = {"a": "$x$", "b": [{"c": "$y.rows.0$"}, ["$z$", "text $x$"]], "d": 5, "e": "$x$"}
    expected = [Reference("x", None), Reference("y", "rows.0"), Reference("z", None)]
    assert find_references(args) == expected
    assert ToolCall(name="t", arguments=args).references() == expected
    assert ToolCall(name="t").references() == []


def test_resolve_references_nested_key_path():
    outputs = {"search": {"items": [{"id": 7, "tags": ["a", "b"]}, {"id": 9}]}, "n": 3}
    value = {"id": "$search.items.1.id$", "tag": ["$search.items.0.tags.1$"], "n": "$n$", "keep": "$n is 3"}
    assert resolve_references(value, outputs) == {"id": 9, "tag": ["b"], "n": 3, "keep": "$n is 3"}


def test_resolve_references_returns_deep_copy():
    outputs = {"o": {"rows": [1, 2]}}
    value = {"x": "$o$", "plain": {"k": [1]}}
    resolved = resolve_references(value, outputs)
    resolved["x"]["rows"].append(3)
    resolved["plain"]["k"].append(2)
    assert outputs == {"o": {"rows": [1, 2]}}
    assert value == {"x": "$o$", "plain": {"k": [1]}}


@pytest.mark.parametrize(
    ("ref", "needle"),
    [
        ("$missing$", "no output labelled 'missing'"),
        ("$o.nokey$", "no key 'nokey'"),
        ("$o.rows.5$", "index 5 out of range"),
        ("$o.rows.x$", "'x' is not a list index"),
        ("$o.rows.0.deeper$", "cannot look up 'deeper' in a int"),
    ],
)
def test_resolve_references_missing(ref, needle):
    with pytest.raises(UnresolvedReference) as info:
        resolve_references({"arg": [ref]}, {"o": {"rows": [1, 2]}})
    assert needle in str(info.value)
    assert ref in str(info.value)
    assert isinstance(info.value, UserError)
    assert info.value.reference == parse_reference(ref)


# ----------------------------------------------------------------------------- messages, answers


def test_only_assistant_messages_carry_tool_calls():
    Message(role="assistant", tool_calls=[ToolCall(name="t")])
    with pytest.raises(ValidationError, match="cannot have tool_calls"):
        Message(role="user", content="hi", tool_calls=[ToolCall(name="t")])


def test_tool_call_label_pattern():
    ToolCall(name="t", label="out_1")
    with pytest.raises(ValidationError):
        ToolCall(name="t", label="out.1")


def test_answer_spec_discriminated_union():
    adapter = TypeAdapter(AnswerSpec)
    assert isinstance(adapter.validate_python({"kind": "exact", "value": [1, 2]}), ExactAnswer)
    assert isinstance(adapter.validate_python({"kind": "whitelist", "whitelist": [["a", "b"]]}), WhitelistAnswer)
    assert isinstance(adapter.validate_python({"kind": "reference", "references": ["r"]}), ReferenceAnswer)
    assert isinstance(adapter.validate_python({"kind": "none"}), NoAnswer)
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        adapter.validate_python({"kind": "fuzzy", "value": 1})
    with pytest.raises(ValidationError):
        adapter.validate_python({"value": 1})  # no discriminator
    with pytest.raises(ValidationError):
        adapter.validate_python({"kind": "reference", "references": []})
    with pytest.raises(ValidationError):
        adapter.validate_python({"kind": "whitelist", "whitelist": [[]]})
    with pytest.raises(ValidationError):
        adapter.validate_python({"kind": "exact", "value": 1, "float_tolerance": -1})


def test_sample_answer_defaults_to_none_and_parses_kind():
    assert Sample(query="q", provenance=provenance()).answer == NoAnswer()
    s = Sample(query="q", provenance=provenance(), answer={"kind": "exact", "value": 4, "ordered": True})
    assert s.answer == ExactAnswer(value=4, ordered=True)


# ----------------------------------------------------------------------------- samples


def test_sample_round_trip_through_json():
    sample = full_sample()
    text = sample.model_dump_json()
    again = Sample.model_validate_json(text)
    assert again == sample
    assert again.id == sample.id
    via_dict = Sample.model_validate(json.loads(json.dumps(sample.model_dump(mode="json"))))
    assert via_dict == sample


def test_sample_dialogue_round_trip():
    dialogue = [
        Message(role="system", content="Be brief."),
        Message(role="user", content="Weather in Oslo?"),
        Message(role="assistant", tool_calls=[ToolCall(name="get_weather", arguments={"city": "Oslo"})]),
        Message(role="tool", name="get_weather", content='{"temp": 3}'),
    ]
    sample = Sample(dialogue=dialogue, tools=[weather_tool()], provenance=provenance())
    assert Sample.model_validate_json(sample.model_dump_json()) == sample


def test_sample_exactly_one_of_query_and_dialogue():
    with pytest.raises(ValidationError, match="exactly one of query and dialogue"):
        Sample(provenance=provenance())
    with pytest.raises(ValidationError, match="exactly one of query and dialogue"):
        Sample(query="q", dialogue=[Message(role="user", content="q")], provenance=provenance())
    with pytest.raises(ValidationError):
        Sample(dialogue=[], provenance=provenance())
    with pytest.raises(ValidationError):
        Sample(query="  ", provenance=provenance())


def test_sample_id_is_stable_content_hash():
    a, b = full_sample(), full_sample()
    assert a.id == b.id == content_id(a)
    assert a.id.startswith("bs-") and len(a.id) == 3 + 16
    int(a.id[3:], 16)


def test_sample_id_ignores_non_content_fields():
    base = full_sample()
    changed = full_sample(
        provenance=provenance(source="elsewhere", seed=99),
        verification=Verification(status="rejected", method="judge"),
        metadata={"other": True},
        categories=["x", "y"],
        difficulty="hard",
    )
    assert changed.id == base.id


@pytest.mark.parametrize(
    "overrides",
    [
        {"gold": [Step(call=ToolCall(name="get_weather", arguments={"city": "Oslo"}))]},
        {"query": "A different question?"},
        {"context": None},
        {"setup": []},
        {"answer": {"kind": "exact", "value": "no"}},
        {"tools": [weather_tool()]},
    ],
)
def test_sample_id_changes_with_content(overrides):
    assert full_sample(**overrides).id != full_sample().id


def test_given_id_is_kept_and_survives_round_trip():
    sample = full_sample(id="bfcl-simple-17")
    assert sample.id == "bfcl-simple-17"
    assert Sample.model_validate_json(sample.model_dump_json()).id == "bfcl-simple-17"
    assert content_id(sample) == full_sample().id


def test_content_id_matches_canonical_json_definition():
    import hashlib

    sample = full_sample()
    content = {
        k: v
        for k, v in sample.model_dump(mode="json").items()
        if k in {"query", "dialogue", "context", "tools", "setup", "gold", "answer"}
    }
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert sample.id == "bs-" + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def test_sample_rejects_duplicate_tool_names():
    with pytest.raises(ValidationError, match=r"tool names must be unique.*get_weather"):
        full_sample(tools=[weather_tool(), weather_tool()])


def test_sample_rejects_duplicate_labels_across_setup_and_gold():
    with pytest.raises(ValidationError, match=r"labels must be unique.*'p'"):
        full_sample(setup=[ToolCall(name="seed_db", label="p")])
    with pytest.raises(ValidationError, match="labels must be unique"):
        full_sample(gold=[Step(call=ToolCall(name="a", label="x")), Step(call=ToolCall(name="b", label="x"))])


def test_step_verdict_values():
    Step(verdict="unable_to_accomplish", hidden=True)
    with pytest.raises(ValidationError):
        Step(verdict="great")


# ----------------------------------------------------------------------------- splits


def manifest(**overrides) -> SplitManifest:
    data = {
        "name": "weather-dev",
        "version": "1.2.0",
        "created_at": CREATED,
        "sample_count": 2,
        "files": {"samples.jsonl": "sha256:" + "0" * 64},
        "content_hash": samples_content_hash(["bs-1", "bs-2"]),
        "provenance": provenance(),
    }
    return SplitManifest(**{**data, **overrides})


def test_split_manifest_round_trip_and_validation():
    m = manifest()
    assert SplitManifest.model_validate_json(m.model_dump_json()) == m
    manifest(version="2.0.0-rc.1")
    manifest(version="2.0.0+build5")
    for bad in [
        {"version": "1.2"},
        {"sample_count": -1},
        {"content_hash": "md5:abc"},
        {"files": {"samples.jsonl": "sha256:XYZ"}},
        {"files": {"/abs/samples.jsonl": "sha256:" + "0" * 64}},
        {"files": {"../up.jsonl": "sha256:" + "0" * 64}},
        {"unknown": 1},
    ]:
        with pytest.raises(ValidationError):
            manifest(**bad)


def test_samples_content_hash_is_order_independent(tmp_path):
    import hashlib

    assert samples_content_hash(["b", "a", "c"]) == samples_content_hash(["c", "b", "a"])
    assert samples_content_hash(["a", "b"]) == "sha256:" + hashlib.sha256(b"a\nb").hexdigest()
    path = tmp_path / "f.bin"
    path.write_bytes(b"hello")
    assert file_sha256(path) == "sha256:" + hashlib.sha256(b"hello").hexdigest()
    with pytest.raises(UserError, match="no such file"):
        file_sha256(tmp_path / "missing.bin")
    with pytest.raises(UserError, match="is a directory"):
        file_sha256(tmp_path)


# ----------------------------------------------------------------------------- JSON Schema


def test_json_schemas_cover_public_models():
    found = json_schemas()
    for name in [
        "Tool",
        "ToolCall",
        "Step",
        "Message",
        "Sample",
        "SplitManifest",
        "AnswerSpec",
        "Provenance",
        "Verification",
        "CheckResult",
    ]:
        assert name in found
    for name, schema in found.items():
        json.dumps(schema)
        if name != "AnswerSpec":
            assert schema["additionalProperties"] is False, name
    assert set(found["Sample"]["properties"]) >= {"id", "query", "dialogue", "tools", "gold", "answer"}


def test_export_json_schemas(tmp_path):
    paths = export_json_schemas(tmp_path / "out")
    names = {p.name for p in paths}
    assert "Sample.schema.json" in names and "AnswerSpec.schema.json" in names
    assert len(paths) == len(json_schemas())
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["$schema"].startswith("https://json-schema.org/")
        if path.name != "AnswerSpec.schema.json":
            assert "properties" in data, path.name
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(names)


def test_all_names_are_importable():
    for name in schemas.__all__:
        assert hasattr(schemas, name), name


def test_progress_bars_draw_nothing_off_a_terminal(capsys) -> None:
    """Logs and pipes get only the summaries: off a terminal (and when disabled) the bars are no-ops."""
    from benchsmith.schemas import Bars

    for enabled in (True, False):
        with Bars(enabled=enabled) as bars:
            bar = bars.add("items", total=3)
            bar.advance()
            bar.update(3, 3)
            bars.add("more").advance(2)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_nested_jobs_add_their_bars_to_the_one_display(monkeypatch) -> None:
    """rich allows one live display: a job inside a command's display (a nested Bars, or a bar taken
    with progress_bar by code that does not know who runs it) adds bars to it and takes them off when
    done; without a display progress_bar draws nothing."""
    from benchsmith.schemas import Bars, progress_bar

    with progress_bar("alone") as bar:  # no display open: a bar that draws nothing
        bar.advance()
        assert bar._progress is None
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich: treat stderr as a terminal
    with Bars() as outer:
        shown = outer._progress
        assert shown is not None
        outer.add("command", total=2)
        with Bars() as inner:  # a second live display would raise in rich
            assert inner._progress is shown
            inner.add("job").advance()
            with progress_bar("scoring") as scoring:
                scoring.advance()
                assert len(shown.tasks) == 3
            assert len(shown.tasks) == 2
        assert len(shown.tasks) == 1 and shown.live.is_started
        with Bars(enabled=False) as off, progress_bar("hidden") as hidden:  # progress=False inside a display
            assert off._progress is None and hidden._progress is None
    assert not shown.live.is_started


def test_a_failure_streak_stops_at_its_limit_and_resets_on_an_answer() -> None:
    from benchsmith.schemas import FailureStreak, failure_limit

    streak = FailureStreak(3)
    assert [streak.record(f) for f in (True, True, False, True, True)] == [False] * 5
    assert streak.record(True) and streak.count == 3
    assert [failure_limit(c) for c in (1, 3, 4, 8)] == [8, 8, 10, 18]


def test_run_items_keeps_to_its_concurrency_and_stops_after_a_streak_of_endpoint_failures() -> None:
    import asyncio

    from benchsmith.schemas import run_items

    running, peak, started, finished = 0, 0, [], []

    async def work(item: int) -> bool:
        nonlocal running, peak
        started.append(item)
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return item >= 4  # the endpoint stops answering from item 4 on

    stopped = asyncio.run(
        run_items(range(20), work, concurrency=2, stop_after=3, done=lambda item, _: finished.append(item))
    )
    assert peak == 2 and started[:4] == [0, 1, 2, 3]
    # 4, 5, 6 fail in a row: the streak stops the job; the item already running (7) finishes, none after
    assert stopped == 3 and max(started) <= 7 and sorted(finished) == started


def test_run_items_raises_a_fault_once_the_running_items_finished() -> None:
    import time

    from benchsmith.schemas import run_items_in_threads

    finished: list[int] = []

    def work(item: int) -> bool:
        if item == 1:
            raise ValueError("item 1 is broken")
        time.sleep(0.05)
        return False

    with pytest.raises(ValueError, match="item 1"):
        run_items_in_threads(range(10), work, concurrency=3, stop_after=8, done=lambda item, _: finished.append(item))
    assert 0 in finished and 2 in finished and max(finished) <= 3  # no item started after the fault


def test_run_items_reads_its_input_as_it_goes_and_can_hand_results_on_in_input_order() -> None:
    import asyncio
    import itertools

    from benchsmith.schemas import run_items

    drawn: list[int] = []

    def endless():
        for n in itertools.count():
            drawn.append(n)
            if n == 12:
                return
            yield n

    async def work(item: int) -> int:
        await asyncio.sleep(0.001 * ((7 * item) % 5))  # later items often finish first
        assert len(drawn) <= item + 3  # never more than concurrency items drawn ahead
        return item * item

    order: list[int] = []
    assert (
        asyncio.run(run_items(endless(), work, concurrency=3, done=lambda i, r: order.append(r), in_order=True)) is None
    )
    assert order == [n * n for n in range(12)]
