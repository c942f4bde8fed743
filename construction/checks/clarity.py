"""``query_clarity``: the task text a model sees is a clean, complete request that does not give
the tools away.

The text is the query, or the user turns of a dialogue joined. It is rejected when it is empty
(``empty_query``), shorter than ``context.query_min_words`` words (``too_short``) or longer than
``context.query_max_chars`` characters (``too_long``), looks cut off (``truncated``), carries
template leftovers (``template_leftover``) or names one of the sample's tools (``names_tool``).

>>> from datetime import datetime, timezone
>>> from benchsmith.schemas import Sample
>>> prov = {"source": "doc", "method": "manual", "created_at": datetime(2024, 1, 1, tzinfo=timezone.utc)}
>>> tool = {"name": "get_weather", "description": "Weather of a city today."}
>>> query_clarity(Sample(query="What is the weather in Paris today?", tools=[tool], provenance=prov)).ok
True
>>> query_clarity(Sample(query="Use get_weather for Paris, please.", tools=[tool], provenance=prov)).code
'names_tool'
"""

from __future__ import annotations

import re

from benchsmith.schemas import CheckResult, Sample

from ._engine import CheckContext, check, failed, passed

# A text that ends with one of these words has been cut off (or was never finished).
DANGLING_WORDS = frozenset("a an the of to and or but with for in on at by from into than that whose".split())
_CUT_END = re.compile(r"(\.\.\.|…|[-–—,:;/\\(\[{])\s*$")
_LEFTOVERS = [
    (re.compile(r"[{}]"), "a brace"),
    (re.compile(r"<\|[^|>]*\|>"), "a special token"),
    (re.compile(r"</?[A-Za-z_][\w\-]*\s*/?>"), "a markup tag"),
    (re.compile(r"\b(?:TODO|FIXME|TBD|XXX)\b"), "a TODO marker"),
    (re.compile(r"\[(?:INST|/INST|PLACEHOLDER|QUERY|QUESTION)\]", re.I), "a template slot"),
]
_CAMEL = re.compile(r"[a-z0-9][A-Z]")


def task_text(sample: Sample) -> str:
    """The text the task is stated in: the query, or the dialogue's user turns joined by newlines."""
    if sample.query is not None:
        return sample.query
    return "\n".join(m.content for m in sample.dialogue or [] if m.role == "user" and m.content.strip())


def _name_parts(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [p for p in re.split(r"[_.\-\s]+", spaced) if p]


def _identifier_like(name: str) -> bool:
    """A name no plain sentence contains by chance: it has a separator, a digit or an inner capital."""
    return bool(re.search(r"[_.\-0-9]", name) or _CAMEL.search(name))


def named_tool(text: str, tool_names: list[str]) -> str | None:
    """The first tool named in ``text``, or None.

    A name counts when it appears whole (case-insensitively, not inside a longer word) and is
    identifier-like (``get_weather``, ``getWeather``, ``v2``); single plain words such as
    ``calculate`` or ``search`` are ordinary English and never count. A name of three or more
    parts also counts when its parts appear as consecutive words (``get unique values``).

    >>> named_tool("Get the unique values of genre", ["get_unique_values", "calculate"])
    >>> named_tool("Please get unique values of genre", ["get_unique_values"])
    'get_unique_values'
    >>> named_tool("Calculate the total.", ["calculate"])
    """
    for name in tool_names:
        if not _identifier_like(name):
            continue
        if re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", text, re.I):
            return name
        parts = _name_parts(name)
        if len(parts) >= 3 and re.search(r"(?<![\w])" + r"\s+".join(map(re.escape, parts)) + r"(?![\w])", text, re.I):
            return name
    return None


def truncation(text: str) -> str | None:
    """Why ``text`` looks cut off, or None.

    >>> truncation("List the names of the")
    "ends with the dangling word 'the'"
    >>> truncation("Which artists have more than")
    "ends with the dangling word 'than'"
    >>> truncation("Show the customers (from Brazil.")
    'an unclosed bracket'
    >>> truncation("How many tracks are longer than 5 minutes?")
    """
    stripped = text.rstrip()
    cut = _CUT_END.search(stripped)
    if cut:
        return f"ends with {cut.group(1)!r}"
    last = re.findall(r"[\w']+", stripped[-40:])
    if last and not re.search(r"[.?!\"')\]]$", stripped):
        word = last[-1].lower()
        if word in DANGLING_WORDS:
            return f"ends with the dangling word {last[-1]!r}"
    for open_, close in ("()", "[]"):
        if stripped.count(open_) > stripped.count(close):
            return "an unclosed bracket"
    if stripped.count('"') % 2:
        return "an unclosed double quote"
    return None


def leftover(text: str) -> str | None:
    """What template leftover ``text`` carries, or None."""
    for pattern, what in _LEFTOVERS:
        m = pattern.search(text)
        if m:
            return f"{what} ({m.group(0)!r})"
    return None


@check("query_clarity")
def query_clarity(sample: Sample, context: CheckContext | None = None) -> CheckResult:
    ctx = context or CheckContext()
    name = "query_clarity"
    text = task_text(sample)
    if not text.strip():
        return failed(
            name,
            "empty_query",
            "the dialogue has no user message with text" if sample.dialogue is not None else "the query is blank",
        )
    n_words = len(text.split())
    if n_words < ctx.query_min_words:
        return failed(
            name, "too_short", f"the task text has {n_words} word(s), fewer than {ctx.query_min_words}: {text!r}"
        )
    if len(text) > ctx.query_max_chars:
        return failed(name, "too_long", f"the task text has {len(text)} characters, more than {ctx.query_max_chars}")
    turns = (
        [sample.query]
        if sample.query is not None
        else [m.content for m in sample.dialogue or [] if m.role == "user" and m.content.strip()]
    )
    for turn in turns[-1:] if sample.query is None else turns:  # earlier user turns may end on anything
        why = truncation(turn or "")
        if why:
            return failed(name, "truncated", f"the task text looks cut off: {why}: {(turn or '')[-80:]!r}")
    for part in (text, sample.context or ""):
        found = leftover(part)
        if found:
            return failed(
                name, "template_leftover", f"the {'task text' if part is text else 'context'} contains {found}"
            )
    tool = named_tool(text, [t.name for t in sample.tools])
    if tool:
        return failed(
            name, "names_tool", f"the task text names the tool {tool!r}; a user states the need, not the tool"
        )
    return passed(name)
