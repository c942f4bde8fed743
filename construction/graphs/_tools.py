"""Prompt views of tools shared by the graphs (pure)."""

from __future__ import annotations

import random
import re
from typing import Any

from benchsmith.schemas import ToolCall


def tool_view(tools: list[dict[str, Any]], rng: random.Random | None = None) -> tuple[str, list[dict[str, Any]]]:
    """(column list, compact tool docs), the tools shuffled by ``rng`` when given (T-Eval shuffles
    the docs so that position carries no hint)."""
    from benchsmith.construction.nl2api import compact_tools

    tools = [t for t in tools if not t.get("hidden")]
    if rng is not None:
        tools = list(tools)
        rng.shuffle(tools)
    return compact_tools(tools)


def setup_text(setup: list[dict[str, Any]]) -> str:
    from benchsmith.construction.nl2api import setup_note

    return setup_note([ToolCall.model_validate(c) for c in setup or []])


def names_tool(text: str, tools: list[dict[str, Any]]) -> str | None:
    """The first tool name written in ``text`` (case-insensitive, whole words; names of three
    characters or fewer are ignored), else None."""
    low = text.lower()
    for t in tools:
        name = str(t.get("name", ""))
        if len(name) > 3 and re.search(rf"(?<![a-z0-9_]){re.escape(name.lower())}(?![a-z0-9_])", low):
            return name
    return None


STOPWORDS = frozenset(
    """
about above after again against also among another anything around back because been before being below between
both could does doing done down during each either else ever every from further give have having here into just
know like list look make many more most much must need only other over please same show should since some such
tell than that their them then there these they thing this those through under until upon very want were what
when where which while with within without would your yours will shall week weekend today tomorrow
""".split()
)


def content_words(text: str) -> set[str]:
    """Lower-case words of four letters or more, stop words removed, a plural ``s`` stripped."""
    words = set()
    for w in re.findall(r"[a-zA-Z]{4,}", text.lower()):
        if w in STOPWORDS:
            continue
        words.add(w[:-1] if w.endswith("s") and not w.endswith("ss") else w)
    return words


def tool_vocabulary(tools: list[dict[str, Any]], extra: list[str] = ()) -> set[str]:
    """Every content word of the tools' names, descriptions and parameter docs (and ``extra`` texts)."""
    import json

    parts = [json.dumps(t, ensure_ascii=False) for t in tools] + list(extra)
    return content_words(" ".join(p.replace("_", " ").replace(".", " ") for p in parts))


def fewshot_texts(messages: list[dict[str, str]]) -> set[str]:
    """The string values of the few-shot assistant replies in a prompt (normalised), so a reply
    that only copies an example can be caught."""
    import json

    out = set()
    for m in messages:
        if m["role"] != "assistant":
            continue
        try:
            value = json.loads(m["content"])
        except ValueError:
            continue
        if isinstance(value, dict):
            out |= {normal(v) for v in value.values() if isinstance(v, str) and v.strip()}
    return out


def normal(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def query_values(query: str) -> list[str]:
    """Values a request states that its calls must use: numbers and capitalised names that do not
    start a sentence (``"Iron Maiden"``, ``"250"``), in order of appearance.

    >>> query_values("How many Iron Maiden songs cost more than 0.99? I wonder.")
    ['Iron Maiden', '0.99']
    """
    out: list[str] = []
    for m in re.finditer(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])|(?:[A-Z][\w'&/-]*)(?:\s+[A-Z][\w'&/-]*)*", query):
        text = m.group(0)
        before = query[: m.start()].rstrip()
        if text[0].isupper() and (not before or before[-1] in ".?!:" or text in ("I", "I'm")):
            words = text.split()
            if len(words) == 1:
                continue
            text = " ".join(words[1:])  # a sentence's first word is capitalised anyway
        out.append(text)
    return out


def query_sample_items(source: Any, fix: str) -> list[tuple[str, dict[str, Any]]]:
    """``(sample id, sample dict)`` of every sample with a query in a samples JSONL file (or a folder
    holding ``samples.jsonl``), without provenance and verification (the graph makes new ones)."""
    from benchsmith.schemas import Sample, Split, read_jsonl

    path = Split.samples_file(source, fix=fix)
    return [
        (s.id, s.model_dump(mode="json", exclude_none=True, exclude={"provenance", "verification"}))
        for s in read_jsonl(path, Sample)
        if s.query is not None
    ]


def environment_of(sample: dict[str, Any], default: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The tool environment of a sample dict: its ``metadata.environment``, else ``default``, else for an
    NL2API split's own samples the split's tools with the sample's set-up."""
    env = (sample.get("metadata") or {}).get("environment") or default
    if env is None and "nl2api" in (sample.get("categories") or []):
        style = next((c for c in ("slot", "sel", "rest") if c in sample["categories"]), "slot")
        env = {"kind": "nl2api", "style": style, "setup": sample.get("setup") or []}
    return env
