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
from typing import Any

import orjson

from benchsmith.schemas._private.jsonl import dumps_line, json_default
from benchsmith.schemas._private.sample import CONTENT_FIELDS, Sample
from benchsmith.schemas._private.tool import Tool

_CONTENT = set(CONTENT_FIELDS)
# orjson writes every finite float as float.__repr__ does except those with a decimal exponent
# of -5 to -9 (``0.00001234`` for ``1.234e-05``, ``1e-7`` for ``1e-07``). Bytes that may be such
# a float send the value through json.dumps, unless each is an object member's ``1e-6`` (every
# exact answer's default float tolerance): an unescaped ``"`` then ``:`` only ever ends a key, and
# ``,`` ends the number, so that text is a float, and it gets its exponent's leading zero.
_MEMBER_1E_6, _PYTHON_1E_6 = b'":1e-6,', b'":1e-06,'


def _json_canonical(content: Any) -> bytes:
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def canonical_json(content: Any) -> bytes:
    """``json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` as UTF-8
    (what :func:`content_id` hashes) for a value whose floats are finite; orjson writes it when
    the bytes are sure to be the same (big ints, lone surrogates and floats whose text may differ
    go through json.dumps).

    >>> canonical_json({"b": [1.5, 2e-07, None], "a": "é", "t": 1e-06}).decode()
    '{"a":"é","b":[1.5,2e-07,null],"t":1e-06}'
    """
    try:
        data = orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return _json_canonical(content)
    short, tiny = data.count(b"e-"), data.count(b"0.0000")
    if short or tiny:
        if tiny or data.count(_MEMBER_1E_6) != short or data.count(b"\\" + _MEMBER_1E_6):
            return _json_canonical(content)
        data = data.replace(_MEMBER_1E_6, _PYTHON_1E_6)
    return data


class SampleEncoder:
    """Encode samples whose tool lists come from a few shared :class:`Tool` objects.

    ``encode(sample, tools)`` takes the sample without its tools (``tools=[]``, any id) and the
    tool list it should carry; it returns ``(line, id)``: the JSONL line of the sample with those
    tools and with its id set to its content id (unless the sample already has an id other than
    ``""``), byte for byte what ``write_jsonl`` writes for the full sample. Tools are recognised by
    identity: pass the same objects again (the encoder keeps them, so their ids stay unique).
    ``encode_bytes`` gives the line as UTF-8 bytes (each tool's text is encoded once, not once
    per sample).

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
        self._quoted = json.dumps(self._marker).encode("ascii")
        # id(tool) -> (tool, line text as UTF-8 or None if it cannot be, canonical text)
        self._tools: dict[int, tuple[Tool, bytes | None, bytes | str]] = {}
        # the ids of a tool list -> its line text and canonical text (a few recent lists: a
        # split's samples share a few tool lists, or each has its own when its universe is cut)
        self._lists: dict[tuple[int, ...], tuple[bytes | None, bytes | None]] = {}

    def _texts(self, tool: Tool) -> tuple[bytes | None, bytes | str]:
        got = self._tools.get(id(tool))
        if got is None:
            plain = tool.model_dump(mode="json")
            line = json.dumps(plain, ensure_ascii=False, allow_nan=False, default=json_default)
            canonical = json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            got = self._tools[id(tool)] = (tool, _utf8(line), _utf8(canonical) or canonical)
        return got[1], got[2]

    def _list_texts(self, tools: Sequence[Tool]) -> tuple[bytes | None, bytes | None]:
        """``[tool, ...]`` as the line and the canonical text write it (None where UTF-8 cannot
        encode a tool's text)."""
        key = tuple(map(id, tools))
        got = self._lists.get(key)
        if got is None:
            texts = [self._texts(t) for t in tools]
            lines = [t for t, _ in texts if t is not None]
            canonicals = [c for _, c in texts if isinstance(c, bytes)]
            got = (
                b"[" + b", ".join(lines) + b"]" if len(lines) == len(texts) else None,
                b"[" + b",".join(canonicals) + b"]" if len(canonicals) == len(texts) else None,
            )
            if len(self._lists) >= 64:
                self._lists.clear()
            self._lists[key] = got
        return got

    def encode(self, sample: Sample, tools: Sequence[Tool]) -> tuple[str, str]:
        line, sid = self.encode_bytes(sample, tools)
        return line.decode("utf-8"), sid

    def encode_bytes(self, sample: Sample, tools: Sequence[Tool]) -> tuple[bytes, str]:
        if sample.tools:
            raise ValueError("pass the sample without tools (tools=[]) and its tools separately")
        tools_line, tools_canonical = self._list_texts(tools)
        names = [t.name for t in tools]
        if len(set(names)) != len(names):
            full = sample.model_copy(update={"tools": list(tools)})
            Sample.model_validate(full.model_dump())  # raises the validator's own message
        plain = sample.model_dump(mode="json")
        plain["tools"] = self._marker
        sid = sample.id
        if not sid:
            content = {k: v for k, v in plain.items() if k in _CONTENT}  # what model_dump(include=...) gives
            # (a NaN or infinity reads as null here, but the line below refuses it, as write_jsonl does)
            before, after = canonical_json(content).split(self._quoted, 1)
            digest = hashlib.sha256(before)
            if tools_canonical is None:  # a tool text UTF-8 cannot encode: raise, as content_id does
                for t in tools:
                    text = self._texts(t)[1]
                    if isinstance(text, str):
                        text.encode("utf-8")
            assert tools_canonical is not None  # else the loop above raised
            digest.update(tools_canonical)
            digest.update(after)
            sid = "bs-" + digest.hexdigest()[:16]
            plain["id"] = sid
        text = json.dumps(plain, ensure_ascii=False, allow_nan=False, default=json_default)
        head, tail = text.split(self._quoted.decode("ascii"), 1)
        head_b, tail_b = _utf8(head), _utf8(tail)
        if head_b is None or tail_b is None or tools_line is None:
            # lone surrogates: the general writer escapes the whole line
            return dumps_line(sample.model_copy(update={"tools": list(tools), "id": sid})).encode("utf-8"), sid
        return b"".join((head_b, tools_line, tail_b, b"\n")), sid


def _utf8(text: str) -> bytes | None:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return None
