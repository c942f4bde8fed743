"""Samples as JSONL lines, fast when many samples share their tools.

A built split's samples carry whole tool documents, and thousands of samples share a few tool
sets: dumping and hashing every tool again for every sample is most of what writing costs.
:class:`SampleEncoder` dumps each distinct tool once and splices its text into each sample's line
and content hash, giving exactly the bytes of ``write_jsonl([sample])`` and exactly ``content_id``.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Sequence

from benchsmith.schemas._private.jsonl import _dumps_line, json_default
from benchsmith.schemas._private.sample import CONTENT_FIELDS, Sample
from benchsmith.schemas._private.tool import Tool

_CONTENT = set(CONTENT_FIELDS)


class SampleEncoder:
    """Encode samples whose tool lists come from a few shared :class:`Tool` objects.

    ``encode(sample, tools)`` takes the sample without its tools (``tools=[]``, any id) and the
    tool list it should carry; it returns ``(line, id)``: the JSONL line of the sample with those
    tools and with its id set to its content id (unless the sample already has an id other than
    ``""``), byte for byte what ``write_jsonl`` writes for the full sample. Tools are recognised by
    identity: pass the same objects again (the encoder keeps them, so their ids stay unique).

    >>> from datetime import datetime, timezone
    >>> from benchsmith.schemas import Sample, SampleEncoder, Tool, content_id
    >>> tool = Tool(name="add", description="Add two numbers.")
    >>> prov = {"source": "demo", "method": "manual", "created_at": datetime(2024, 1, 1, tzinfo=timezone.utc)}
    >>> bare = Sample(id="", query="What is 2+2?", provenance=prov)
    >>> line, sid = SampleEncoder().encode(bare, [tool])
    >>> full = Sample(query="What is 2+2?", tools=[tool], provenance=prov)
    >>> import json
    >>> sid == full.id == content_id(full), line == json.dumps(full.model_dump(mode="json"), ensure_ascii=False) + "\\n"
    (True, True)
    """

    def __init__(self) -> None:
        self._marker = f"@tools-{secrets.token_hex(8)}@"
        self._quoted = json.dumps(self._marker)
        self._tools: dict[int, tuple[Tool, str, str]] = {}  # id(tool) -> (tool, line text, canonical text)

    def _texts(self, tool: Tool) -> tuple[str, str] | None:
        got = self._tools.get(id(tool))
        if got is None:
            plain = tool.model_dump(mode="json")
            line = json.dumps(plain, ensure_ascii=False, allow_nan=False, default=json_default)
            canonical = json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            got = self._tools[id(tool)] = (tool, line, canonical)
        return got[1], got[2]

    def encode(self, sample: Sample, tools: Sequence[Tool]) -> tuple[str, str]:
        if sample.tools:
            raise ValueError("pass the sample without tools (tools=[]) and its tools separately")
        texts = [self._texts(t) for t in tools]
        names = [t.name for t in tools]
        if len(set(names)) != len(names):
            full = sample.model_copy(update={"tools": list(tools)})
            Sample.model_validate(full.model_dump())  # raises the validator's own message
        plain = sample.model_dump(mode="json")
        content = {k: v for k, v in plain.items() if k in _CONTENT}  # what model_dump(include=...) gives
        content["tools"] = self._marker
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        tools_canonical = "[" + ",".join(c for _, c in texts) + "]"
        canonical = canonical.replace(self._quoted, tools_canonical, 1)
        sid = sample.id or "bs-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
        plain["id"] = sid
        plain["tools"] = self._marker
        text = json.dumps(plain, ensure_ascii=False, allow_nan=False, default=json_default)
        tools_text = "[" + ", ".join(t for t, _ in texts) + "]"
        line = text.replace(self._quoted, tools_text, 1) + "\n"
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: the general writer escapes the whole line
            line = _dumps_line(sample.model_copy(update={"tools": list(tools), "id": sid}))
        return line, sid
