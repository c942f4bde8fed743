"""Text made from a sample: its question, its answer in words, the literal values its calls take
and where they appear in the question, and the variants the special-case builders write from them
(an irrelevant request, a question with a value missing or corrupted, one that needs no tool, one
the tools cannot serve). Pure functions, shared by construction's graphs and the evaluator's derivers.

>>> corrupt_number("300000"), corrupt_number("7"), corrupt_date("2021-01-05")
('300x000', '7x', '05-Jan-2021')
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any, Iterable

from benchsmith.schemas import ExactAnswer, Sample, Step, Tool, ToolCall

_REF = re.compile(r"^\$[A-Za-z_][A-Za-z0-9_]*(\.[^$]*)?\$$")

_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

_NUMBER_WORDS = {
    2: "two",
    3: "three",
    4: "four",
    5: "five",
    6: "six",
    7: "seven",
    8: "eight",
    9: "nine",
    10: "ten",
    11: "eleven",
    12: "twelve",
    15: "fifteen",
    20: "twenty",
}


def visible_steps(sample: Sample) -> list[Step]:
    return [s for s in sample.gold if s.call is not None and not s.hidden]


def dump_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def sample_query(sample: Sample) -> str:
    if sample.query is not None:
        return sample.query
    return "\n".join(m.content for m in sample.dialogue or [] if m.role == "user")


def with_hint(query: str, hint: str | None) -> str:
    return f"{query}\n(Hint: {hint})" if hint else query


def sample_setup_note(sample: Sample) -> str:
    """``Data already loaded for you: $data_1$ = tracks joined with albums ...`` (empty without a setup)."""
    from benchsmith.construction.nl2api import setup_note  # loads the NL2API stack (sqlglot) only when a setup is shown

    return setup_note(sample.setup)


def tools_text(sample: Sample) -> str:
    return dump_text([t.model_dump(mode="json") for t in sample.tools]).lower()


def flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in flatten(v)]
    return [value]


def _rows(value: Any) -> list[list[Any]]:
    if isinstance(value, (list, tuple)):
        return [list(flatten(r)) if isinstance(r, (list, tuple)) else [r] for r in value]
    return [[value]]


def number_text(v: int | float) -> str:
    if isinstance(v, float):
        if v.is_integer():
            return str(int(v))
        text = repr(v)
        return text if len(text) <= 8 else f"{v:.2f}"
    return str(v)


def _cell_text(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, (int, float)):
        return number_text(v)
    return str(v)


def answer_text(value: Any) -> str:
    """The exact answer as prose: cells joined by ", ", rows by "; ".

    >>> answer_text([["Luís", "Gonçalves"], ["Eduardo", "Martins"]]), answer_text([[1069]])
    ('Luís, Gonçalves; Eduardo, Martins', '1069')
    """
    return "; ".join(", ".join(_cell_text(c) for c in row) for row in _rows(value))


_GENERAL_QUESTIONS = (
    "What is the chemical symbol for gold?",
    "How many days does a leap year have?",
    "Which planet is closest to the Sun?",
    "What is the capital city of Japan?",
    "How many sides does a hexagon have?",
    "In which continent is Kenya?",
    "What is the boiling point of water at sea level, in degrees Celsius?",
    "Who wrote the play 'Romeo and Juliet'?",
    "What is the plural of the word 'mouse'?",
    "How many centimetres are there in one metre?",
    "What is the opposite of the word 'ancient'?",
    "Which ocean lies between Africa and Australia?",
    "What gas do plants take in from the air for photosynthesis?",
    "How many hours are there in one day?",
    "What is the largest mammal on Earth?",
    "Which language has the most native speakers in Brazil?",
)

_MISSING_ATTRIBUTES = {  # per table: attributes a music-store database does not record (checked against the tools)
    "tracks": ("number of streams on Spotify", "beats per minute", "lyrics"),
    "albums": ("number of copies sold", "critic score", "cover designer"),
    "artists": ("number of social media followers", "home town", "date of birth"),
    "customers": ("annual income", "shoe size", "loyalty points balance"),
    "employees": ("salary", "annual bonus", "performance rating"),
    "invoices": ("payment method", "delivery date", "discount code"),
    "invoice_items": ("discount applied", "refund status", "delivery date"),
    "genres": ("year of origin", "number of streams", "founding artist"),
    "media_types": ("licence cost", "file extension popularity", "release year"),
    "playlists": ("number of followers", "creator", "creation date"),
    "playlist_track": ("date added", "number of skips", "position rating"),
}

_GENERIC_ATTRIBUTES = ("carbon footprint", "rating on social media", "weight in kilograms")

_MISSING_DATA = (
    "product reviews",
    "website visits",
    "shipping delays",
    "concert tickets",
    "refund requests",
    "newsletter subscriptions",
)

_NOT_KEYWORDS = {"number", "of", "on", "in", "the", "date", "year", "rate", "rating", "cost", "count", "and"}


def _entity(sample: Sample) -> tuple[str, str]:
    """(table, plural phrase) of the sample's main data (``invoice_items`` -> "invoice items")."""
    src = next((c.arguments.get("source") for c in sample.setup if isinstance(c.arguments.get("source"), str)), None)
    if src is None:  # REST: the table named in the first gold tool's description ("... from tracks where ...")
        first = visible_steps(sample)[0].call
        tool = next((t for t in sample.tools if first is not None and t.name == first.name), None)
        m = re.search(r"\bfrom (\w+)", tool.description) if tool is not None else None
        src = m.group(1) if m else "records"
    return src, src.replace("_", " ")


def _absent(phrase: str, tool_text: str) -> bool:
    words = [w for w in re.findall(r"[a-z]+", phrase.lower()) if w not in _NOT_KEYWORDS and len(w) > 2]
    return bool(words) and not any(w in tool_text for w in words)


def no_tool_variant(sample: Sample, kind: str, rng: random.Random) -> str | None:
    q = with_hint(sample_query(sample), sample.context)
    if kind == "answer_given":
        if not isinstance(sample.answer, ExactAnswer) or len(flatten(sample.answer.value)) > 10:
            return None
        return (
            f'A colleague already looked this up: the answer to "{sample_query(sample)}" is '
            f"{answer_text(sample.answer.value)}. Without looking anything up, repeat that answer as one "
            "complete sentence."
        )
    if kind == "rephrase":
        return f'Rewrite this question in simpler words, without answering it: "{q}"'
    return rng.choice(_GENERAL_QUESTIONS)


def cannot_variant(sample: Sample, kind: str, rng: random.Random, tool_text: str) -> str | None:
    table, entity = _entity(sample)
    q = with_hint(sample_query(sample), sample.context)
    if kind == "missing_column":
        options = [a for a in (*_MISSING_ATTRIBUTES.get(table, ()), *_GENERIC_ATTRIBUTES) if _absent(a, tool_text)]
        if not options:
            return None
        attr = rng.choice(options)
        return f"Answer this question, and include the {attr} of each of the {entity} involved: {q}"
    if kind == "missing_table":
        options = [d for d in _MISSING_DATA if _absent(d, tool_text)]
        if not options:
            return None
        return f"Which of the {entity} are linked to the most {rng.choice(options)}? Use the store's records."
    templates = (
        f"Permanently delete from the database every one of the {entity} this question is about: {q}",
        f"Add a new entry to the {table} table in the database, then answer: {q}",
        f"Update the database so that the answer to this question becomes empty: {q}",
    )
    return rng.choice(templates)


IRRELEVANT_QUESTIONS = (
    "Book a table for {n} at an Italian restaurant in {city} for 8 pm tonight.",
    "What will the weather be like in {city} this weekend?",
    "Send an email to {person} saying that I will be late for the meeting.",
    "Set an alarm for 6:30 tomorrow morning and call it '{thing}'.",
    "Book a flight from {city} to {city2} for next Friday, economy class.",
    "Order a large pepperoni pizza to be delivered to my flat in {city}.",
    "Turn off the lights in the living room and lower the thermostat to {n}0 degrees Fahrenheit.",
    "What is the current share price of {company}?",
    "Schedule a dentist appointment for me next Tuesday afternoon in {city}.",
    "Call a taxi to take {n} people from {city} central station to the airport.",
    "How much money is left in my checking account?",
    "Find a hotel in {city2} under 100 euros per night for {n} nights.",
    "Remind me to water the plants at 7 pm and tell {person} about it.",
    "Post 'Happy Friday!' on my social media accounts.",
    "Track the parcel that {company} shipped to me yesterday.",
    "Rent a small car in {city} for the weekend.",
    "How many steps did I walk today according to my fitness tracker?",
    "Pay my electricity bill from my savings account.",
    "Cancel my gym membership and send {person} the confirmation.",
    "Translate my last text message to {person} into Japanese and send it again.",
)

FILL_VALUES = {
    "city": ("Lisbon", "Oslo", "Toronto", "Nairobi", "Kyoto", "Lima", "Prague"),
    "city2": ("Madrid", "Berlin", "Seoul", "Cairo", "Sydney", "Quito"),
    "person": ("my landlord", "Dr. Alvarez", "my sister", "the project team", "Mr. Okafor"),
    "company": ("Tesla", "Siemens", "Toyota", "Unilever", "DHL"),
    "thing": ("gym", "standup", "flight"),
    "n": ("2", "3", "4", "6"),
}

IRRELEVANT_GOLD = "Due to the limitations of the function, I cannot solve this problem."


def value_forms(value: Any) -> list[str]:
    """How a literal argument value may be written in the question."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, str):
        v = value.strip()
        if len(v) < 2 or not re.search(r"\w", v) or _REF.match(v):
            return []
        return [v]
    if isinstance(value, int):
        out = [str(value)] + ([f"{value:,}"] if abs(value) >= 1000 else [])
        return out + ([_NUMBER_WORDS[value]] if value in _NUMBER_WORDS else [])
    if isinstance(value, float):
        return [str(int(value)), repr(value)] if value.is_integer() else [repr(value)]
    return []


_STOPWORDS = {
    "the",
    "a",
    "an",
    "and",
    "or",
    "of",
    "in",
    "on",
    "at",
    "to",
    "for",
    "by",
    "with",
    "is",
    "are",
    "was",
    "it",
    "as",
    "be",
    "no",
    "not",
    "all",
    "any",
    "one",
    "me",
    "my",
    "we",
    "us",
}


def find_form(text: str, form: str, flags: int = re.IGNORECASE) -> list[tuple[int, int]]:
    """Spans of ``form`` as a whole token of ``text``."""
    pat = (
        (r"(?<!\w)" if re.match(r"\w", form) else "") + re.escape(form) + (r"(?!\w)" if re.search(r"\w$", form) else "")
    )
    return [(m.start(), m.end()) for m in re.finditer(pat, text, flags)]


def form_spans(text: str, form: str) -> list[tuple[int, int]]:
    """Where the question mentions a literal: its quoted occurrences ('Love') if any; else exact-case
    whole-token occurrences (a common word only when quoted); else case-insensitive ones for
    forms of four characters or more (``yahoo`` in "Yahoo").

    >>> form_spans("Titles by artists whose name begins with 'The'", "The"), form_spans("Is it Yahoo?", "yahoo")
    ([(42, 45)], [(6, 11)])
    """
    quoted = [
        (m.start() + 1, m.end() - 1) for m in re.finditer(r"(['\"])" + re.escape(form) + r"\1", text, re.IGNORECASE)
    ]
    if quoted:
        return quoted
    if form.lower() in _STOPWORDS:
        return []
    return find_form(text, form, 0) or (find_form(text, form) if len(form) >= 4 else [])


def call_literals(sample: Sample) -> list[tuple[ToolCall, str, Any, str]]:
    """(call, argument, value, form found in the query) for each top-level scalar, non-enum,
    non-reference argument of a visible gold call whose value the query mentions; required
    arguments first, then chain order."""
    query = sample_query(sample)
    tools = {t.name: t for t in sample.tools}
    found = []
    for st in visible_steps(sample):
        call = st.call
        assert call is not None
        tool = tools.get(call.name)
        props = tool.parameters.properties if tool is not None else {}
        required = set(tool.parameters.required) if tool is not None else set()
        for arg, value in call.arguments.items():
            if "enum" in props.get(arg, {}):
                continue
            for form in value_forms(value):
                if form_spans(query, form):
                    found.append((0 if arg in required else 1, call, arg, value, form))
                    break
    found.sort(key=lambda x: x[0])  # stable: chain order within each group
    return [(c, a, v, f) for _, c, a, v, f in found]


def argument_noun(call: ToolCall, arg: str, tool: Tool | None = None) -> str:
    """What the dropped value is ("country", "track name"): from the call's column (``key_name``,
    or a ``table.column`` named in the argument's description), else from the argument name."""
    key = call.arguments.get("key_name")
    if not (isinstance(key, str) and key) and tool is not None:
        m = re.search(r"\b([a-z_]+\.[a-z_]+)\b", str(tool.parameters.properties.get(arg, {}).get("description", "")))
        key = m.group(1) if m else None
    if isinstance(key, str) and key:
        table, _, col = key.rpartition(".")
        words = col.replace("_", " ")
        if col in ("name", "title") and table:
            single = table.split(".")[-1].rstrip("s").replace("_", " ")
            words = f"{single} {col}"
        return words
    base = re.sub(
        r"_(above|below|min|max|from|to|not|like|contains|starts|ends|before|after|low|high|at_least|"
        r"at_most|prefix|suffix)$",
        "",
        arg,
    )
    return base.replace("_", " ") or "value"


def is_number_like(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or (
        isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value.strip()) is not None
    )


def replace_forms(text: str, forms: Iterable[str], new: str, eat_quotes: bool) -> str:
    for form in forms:
        spans = form_spans(text, form)
        for start, end in reversed(spans):
            if eat_quotes and start > 0 and end < len(text) and text[start - 1] == text[end] and text[end] in "'\"":
                start, end = start - 1, end + 1
            text = text[:start] + new + text[end:]
    return text


def corrupt_number(text: str) -> str:
    """A number with a letter inside (``300000`` -> ``300x000``): not a valid number any more."""
    if len(text) < 2:
        return text + "x"
    mid = len(text) // 2
    return text[:mid] + "x" + text[mid:]


def corrupt_date(text: str) -> str | None:
    """An ISO date in another format (``2021-01-05`` -> ``05-Jan-2021``), as ACEBench does."""
    m = _ISO_DATE.match(text)
    if not m or not 1 <= int(m.group(2)) <= 12:
        return None
    return f"{m.group(3)}-{_MONTHS[int(m.group(2)) - 1]}-{m.group(1)}"


def corrupt_value(value: Any, form: str, seed: int, sid: str) -> tuple[str, str] | None:
    """(corrupted text, rule) for a literal as written in the question, or None."""
    if isinstance(value, str) and _ISO_DATE.match(value.strip()):
        bad = corrupt_date(form)
        return (bad, "date_format") if bad else None
    if is_number_like(value):
        if not re.fullmatch(r"-?[\d,]+(\.\d+)?", form):
            return None  # a number word: no digit to corrupt
        return corrupt_number(form), "letter_in_number"
    if isinstance(value, str) and re.fullmatch(r"[^\W\d_]+(?:[\s'.&/-]+[^\W\d_]+)*\.?", form):
        digest = hashlib.sha256(f"{seed}:{sid}:{form}".encode("utf-8")).hexdigest()
        return str(10000 + int(digest[:8], 16) % 90000), "number_for_name"
    return None


def acebench_question(text: str, hint: str | None, note: str) -> str:
    lines = [f"user: {text}"] + ([f"(Hint: {hint})"] if hint else []) + ([note] if note else [])
    return "\n".join(lines)
