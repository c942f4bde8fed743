"""``benchsmith serve mcp SPLIT`` (issue 29): a split's tools served over MCP, driven by the official
SDK's client through gold chains, over stdio (a SLOT split, one sample's setup applied, later
calls referring to earlier outputs by label) and over streamable HTTP on 127.0.0.1 (a REST split,
every sample); the observations are the gold ones."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest
from helpers import clean_env, console_script

from benchsmith.construction.mcp import LABEL_META, split_environment
from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db, default_pairs_path
from benchsmith.models.procs import free_port, terminate, wait_until_up
from benchsmith.schemas import Sample, UserError, read_jsonl


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    out = {}
    for style in ("slot", "rest"):
        out[style] = root / style
        report = build_split(chinook_db(), default_pairs_path(), out[style], BuildOptions(style=style, name=style))
        assert report["verified"] == report["total"] >= 10
    return out


def _samples(split: Path) -> list[Sample]:
    return list(read_jsonl(split / "samples.jsonl", Sample))


async def _play(session, samples: list[Sample]) -> list[tuple[str, int, object, object]]:
    """Every gold step of ``samples`` called through ``session``: (sample, step, got, gold)."""
    out = []
    for sample in samples:
        for i, step in enumerate(sample.gold):
            call = step.call
            result = await session.call_tool(call.name, dict(call.arguments), meta={LABEL_META: call.label})
            assert not result.is_error, (sample.id, result.content)
            assert (result.meta or {}).get(LABEL_META) == call.label
            got = json.loads(result.content[0].text)
            out.append((sample.id, i, got, json.loads(json.dumps(step.observation))))
    return out


def test_a_gold_chain_over_stdio_with_a_samples_setup(splits):
    from mcp import ClientSession, StdioServerParameters, stdio_client

    split = splits["slot"]
    chained = [s for s in _samples(split) if s.setup and len(s.gold) >= 2][:3]
    assert chained, "the SLOT split has samples whose gold refers to setup outputs"
    played = []
    listed = []

    async def main():
        for sample in chained:
            params = StdioServerParameters(
                command=console_script(), args=["serve", "mcp", str(split), "--sample", sample.id], env=clean_env()
            )
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                listed.append(sorted(t.name for t in (await session.list_tools()).tools))
                played.extend(await _play(session, [sample]))
                bad = await session.call_tool("filter_data", {"data_source": "$nope$"})
                assert bad.is_error and bad.content[0].text  # the caller's mistake, as an error result

    anyio.run(main)
    tools = sorted(t["name"] for t in json.loads((split / "tools.json").read_text("utf-8")))
    assert listed[0] == tools
    assert len(played) >= 2 * len(chained)
    for sid, step, got, gold in played:
        assert got == gold, (sid, step)


def test_every_gold_chain_over_http(splits, tmp_path):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    split = splits["rest"]
    samples = _samples(split)
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [console_script(), "serve", "mcp", str(split), "--http", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=clean_env(),
        )
    url = f"http://127.0.0.1:{port}/mcp"

    def up() -> bool:
        import socket

        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_until_up(proc.pid, up, what="serve mcp", wait=60, log_path=log)
        played = []

        async def main():
            async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                assert all(t.annotations.open_world_hint is False for t in tools)
                played.extend(await _play(session, samples))

        anyio.run(main)
    finally:
        terminate(proc.pid, 5, "serve mcp")
        proc.wait(timeout=10)
    assert len(played) >= len(samples) >= 10
    # a REST sample keeps its observation's rows (the endpoint's whole answer); the environment shows a model
    # the first rows of a long answer, and says so
    truncated = 0
    for sid, step, got, gold in played:
        rows = gold["rows"][: len(got["rows"])] if got["truncated"] else gold["rows"]
        assert got["rows"] == rows, (sid, step)
        truncated += got["truncated"]
    assert truncated < len(played)
    assert "127.0.0.1" in log.read_text("utf-8", errors="replace")


def test_which_environment_is_served(splits, tmp_path):
    slot = splits["slot"]
    assert split_environment(slot) == {"kind": "nl2api", "style": "slot"}
    sample = next(s for s in _samples(slot) if s.setup)
    own = split_environment(slot, sample.id)
    assert own["setup"] == [c.model_dump(mode="json") for c in sample.setup]
    with pytest.raises(UserError, match="has no sample 'nope'"):
        split_environment(slot, "nope")
    with pytest.raises(UserError, match="not a split folder"):
        split_environment(tmp_path)
