"""Label Studio labeling configs per sample kind, and the annotation results they produce.

Four kinds (see :func:`benchsmith.annotation._private.payloads.sample_kind`): ``chain`` (a gold
chain with a verdict and a correction per step), ``dialogue``, ``special`` (a special case) and
``query`` (a request with its final answer). Two stages: ``review`` and ``adjudicate`` (the same
controls, plus both reviewers' results shown read-only as ``$review_1`` / ``$review_2``).

The configs are generated as strings (every attribute value XML-escaped) and every control has a
fixed name, so the pull side reads the results back with :func:`parse_result`;
:func:`result_for` is its inverse (simulated reviewers, pre-annotations). The result schema is in
``docs/annotation/configs.md``.

>>> import xml.etree.ElementTree as ET
>>> root = ET.fromstring(label_config("chain"))
>>> [e.get("name") for e in root.iter("Choices")]
['verdict_{{idx}}', 'decision', 'reasons']
>>> r = Review(decision="reject", reasons=["wrong_call"], step_verdicts={0: "input_error"})
>>> [(x["from_name"], x["value"]) for x in result_for("chain", r)]
[('decision', {'choices': ['reject']}), ('reasons', {'choices': ['wrong_call']}), ('verdict_0', {'choices': ['input_error']})]
>>> parse_result("chain", result_for("chain", r)) == r
True
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import ValidationError, field_validator

from benchsmith.schemas import StrictModel, UserError

KINDS = ("chain", "dialogue", "special", "query")
STAGES = ("review", "adjudicate")
DECISIONS = ("accept", "fix", "reject")
REASONS = ("unclear_query", "wrong_call", "wrong_answer", "not_executable", "duplicate", "other")
VERDICTS = ("success", "internal_error", "input_error", "irrelevant_response", "unable_to_accomplish")
INDEX_FLAG = "{{idx}}"

Decision = Literal["accept", "fix", "reject"]
Reason = Literal["unclear_query", "wrong_call", "wrong_answer", "not_executable", "duplicate", "other"]
Verdict = Literal["success", "internal_error", "input_error", "irrelevant_response", "unable_to_accomplish"]

# The object every whole-sample control (decision, reasons, correction, comment) points at.
ANCHOR = {"chain": "query", "dialogue": "dialogue", "special": "query", "query": "query"}
# Per-step controls (chain only) point at the step's call text.
STEP_ANCHOR = "call_{}"
_STEP_NAME = re.compile(r"^(verdict|correction)_(\d+)$")

_HINTS = {
    "accept": "correct as it is",
    "fix": "wrong but fixable: give the corrected version below",
    "reject": "drop it: pick the reasons",
    "unclear_query": "the request is ambiguous, incomplete or unnatural",
    "wrong_call": "a gold call (tool, arguments, order) is wrong or missing",
    "wrong_answer": "the final answer is wrong",
    "not_executable": "a call fails or cannot be run",
    "duplicate": "the same task as another sample",
    "other": "say why in the comment",
}
_CORRECTION_HINT = {
    "chain": 'JSON {"query"?, "gold": [{"name", "arguments"}], "answer"?} or plain text: the corrected request',
    "dialogue": 'JSON {"gold": [{"name", "arguments"}], "answer"?}: the corrected gold calls',
    "special": 'JSON {"query"?, "answer"?} or plain text: the corrected request',
    "query": 'JSON {"query"?, "answer"?, "gold"?} or plain text: the corrected request',
}


class Review(StrictModel):
    """One reviewer's (or the pre-annotation's) judgement of one sample.

    ``decision`` is None only when nothing was decided (a pre-annotation without checks or votes).
    Reasons are kept in the order of :data:`REASONS`, once each; empty corrections are dropped.

    >>> Review(decision="reject", reasons=["other", "wrong_call", "other"]).reasons
    ['wrong_call', 'other']
    >>> Review(decision="fix", corrections={2: "", 1: '{"name": "f"}'}).corrections
    {1: '{"name": "f"}'}
    """

    decision: Decision | None = None
    reasons: list[Reason] = []
    step_verdicts: dict[int, Verdict] = {}
    corrections: dict[int, str] = {}
    correction: str = ""
    comment: str = ""

    @field_validator("reasons")
    @classmethod
    def _canonical_reasons(cls, value: list[str]) -> list[str]:
        return [r for r in REASONS if r in value]

    @field_validator("step_verdicts", "corrections")
    @classmethod
    def _step_indices(cls, value: dict[int, str]) -> dict[int, str]:
        bad = [i for i in value if i < 0]
        if bad:
            raise ValueError(f"step indices must be >= 0, got {bad}")
        return {i: value[i] for i in sorted(value) if value[i] != ""}


# ------------------------------------------------------------------------------ XML ----


def _esc(value: str) -> str:
    """``value`` escaped for a double-quoted XML attribute (or text).

    >>> _esc('a < b & "c" \\'d\\'')
    'a &lt; b &amp; &quot;c&quot; &apos;d&apos;'
    """
    return (
        str(value)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
        .replace("\n", "&#10;")
        .replace("\t", "&#9;")
    )


def _el(tag: str, attrs: dict[str, Any] | None = None, children: list[str] | None = None) -> str:
    """One element; attributes in the given order, None values left out.

    >>> _el("Choice", {"value": "a&b", "hint": None})
    '<Choice value="a&amp;b"/>'
    """
    parts = "".join(f' {k}="{_esc(v)}"' for k, v in (attrs or {}).items() if v is not None)
    if not children:
        return f"<{tag}{parts}/>"
    return f"<{tag}{parts}>\n" + "\n".join(children) + f"\n</{tag}>"


def _text(name: str, value: str, cls: str | None = None) -> str:
    """A ``<Text>``; Label Studio ignores a Text's own style, so a class on a wrapping View (styled by
    :data:`_CSS`) formats it."""
    text = _el("Text", {"name": name, "value": value})
    return _el("View", {"className": cls}, [text]) if cls else text


def _header(value: str, size: int = 4) -> str:
    return _el("Header", {"value": value, "size": str(size)})


def _choices(
    name: str,
    to_name: str,
    values: tuple[str, ...],
    *,
    multiple: bool = False,
    required: bool = False,
    hints: bool = True,
) -> str:
    attrs = {
        "name": name,
        "toName": to_name,
        "choice": "multiple" if multiple else "single-radio",
        "showInline": "true",
        "required": "true" if required else None,
    }
    return _el(
        "Choices", attrs, [_el("Choice", {"value": v, "hint": _HINTS.get(v) if hints else None}) for v in values]
    )


def _textarea(name: str, to_name: str, placeholder: str, rows: int) -> str:
    return _el(
        "TextArea",
        {
            "name": name,
            "toName": to_name,
            "placeholder": placeholder,
            "rows": str(rows),
            "editable": "true",
            "maxSubmissions": "1",
        },
    )


_BOX = "border: 1px solid #ccc; border-radius: 4px; padding: 6px 10px; margin: 6px 0"
_SMALL = "bs-small"
_PRE = "bs-pre"
# Label Studio's own CSS sets the text container's size and font, so these rules aim at its classes
_CSS = """
.bs-small .lsf-richtext__container { font-size: 12px; line-height: 16px; color: #555; }
.bs-title .lsf-richtext__container { font-weight: bold; }
.bs-thought .lsf-richtext__container { font-style: italic; }
.bs-pre .lsf-richtext__container { font-size: 12px; line-height: 16px; }
.bs-pre .lsf-richtext__line { font-family: monospace !important; }
.bs-obs .lsf-richtext__container { color: #333; background: #f6f6f6; }
.bs-thought .lsf-richtext__container::before { content: "thought: "; font-style: normal; font-weight: bold; }
.bs-call .lsf-richtext__container::before { content: "call: "; font-weight: bold; }
.bs-obs .lsf-richtext__container::before { content: "observation: "; font-weight: bold; }
"""


def _steps_block() -> str:
    i = INDEX_FLAG
    step = [
        _text(f"step_{i}", f"$steps[{i}].title", "bs-title"),
        _text(f"thought_{i}", f"$steps[{i}].thought", "bs-thought"),
        _text(f"call_{i}", f"$steps[{i}].call", "bs-pre bs-call"),
        _text(f"observation_{i}", f"$steps[{i}].observation", "bs-pre bs-obs"),
        _choices(f"verdict_{i}", f"call_{i}", VERDICTS, hints=False),
        _textarea(f"correction_{i}", f"call_{i}", 'corrected call for this step: JSON {"name", "arguments"}', 2),
    ]
    return _el("Repeater", {"on": "$steps", "indexFlag": i}, [_el("View", {"style": _BOX}, step)])


def _body(kind: str) -> list[str]:
    """The read-only part of a kind's config."""
    ident = _text("sample_id", "$bs_id", _SMALL)
    tools = [_header("Tools"), _text("tools", "$tools_text", _SMALL)]
    setup = [_header("Set-up"), _text("setup", "$setup_text", _SMALL)]
    answer = [_header("Final answer"), _text("answer", "$answer", _PRE)]
    end_state = [_header("End state"), _text("state", "$state_text", _PRE)]
    if kind == "chain":
        return [
            ident,
            _header("Request", 3),
            _text("query", "$query"),
            *tools,
            *setup,
            _header("Gold chain", 3),
            _steps_block(),
            *end_state,
            *answer,
        ]
    if kind == "dialogue":
        return [
            ident,
            _header("Dialogue", 3),
            _el(
                "Paragraphs",
                {"name": "dialogue", "value": "$dialogue", "layout": "dialogue", "nameKey": "name", "textKey": "text"},
            ),
            *tools,
            *setup,
            *end_state,
            *answer,
        ]
    if kind == "special":
        return [
            ident,
            _header("Request", 3),
            _text("query", "$query"),
            _header("Special case"),
            _text("special_kind", "$special_kind", "bs-title"),
            _header("Expected behaviour"),
            _text("expected", "$expected"),
            *tools,
            *setup,
        ]
    return [ident, _header("Request", 3), _text("query", "$query"), *tools, *setup, *answer]


def _controls(kind: str, stage: str) -> list[str]:
    anchor = ANCHOR[kind]
    final = "Final " if stage == "adjudicate" else ""
    return [
        _header(f"{final}Decision", 3),
        _choices("decision", anchor, DECISIONS, required=True),
        _header("Rejection reasons"),
        _choices("reasons", anchor, REASONS, multiple=True),
        _header(f"{final}Corrected version"),
        _textarea("correction", anchor, _CORRECTION_HINT[kind], 6),
        _header("Comment"),
        _textarea("comment", anchor, "anything the next reviewer should know", 2),
    ]


def label_config(kind: str, stage: str = "review") -> str:
    """The Label Studio labeling config (XML) for samples of ``kind`` at ``stage``.

    >>> cfg = label_config("query", "adjudicate")
    >>> "$review_1" in cfg and "$review_2" in cfg and 'name="decision"' in cfg
    True
    >>> label_config("table")
    Traceback (most recent call last):
    ...
    benchsmith.schemas._private.errors.UserError: unknown sample kind 'table' (fix: choose from chain, dialogue, special, query)
    """
    _check_kind(kind)
    if stage not in STAGES:
        raise UserError(f"unknown annotation stage {stage!r}", fix=f"choose from {', '.join(STAGES)}")
    parts = _body(kind)
    parts.append(_header("Automated checks and pre-screen"))
    parts.append(_text("checks", "$check_summary", _SMALL))
    if stage == "adjudicate":
        parts += [
            _header("Reviews", 3),
            _el("View", {"style": _BOX}, [_header("Reviewer 1"), _text("review_1", "$review_1", _SMALL)]),
            _el("View", {"style": _BOX}, [_header("Reviewer 2"), _text("review_2", "$review_2", _SMALL)]),
        ]
    parts += _controls(kind, stage)
    return _el("View", None, ["<Style>" + _CSS + "</Style>", *parts])


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise UserError(f"unknown sample kind {kind!r}", fix=f"choose from {', '.join(KINDS)}")


# -------------------------------------------------------------------------- results ----


def _choice_result(name: str, to_name: str, values: list[str]) -> dict[str, Any]:
    return {"from_name": name, "to_name": to_name, "type": "choices", "value": {"choices": list(values)}}


def _text_result(name: str, to_name: str, text: str) -> dict[str, Any]:
    return {"from_name": name, "to_name": to_name, "type": "textarea", "value": {"text": [text]}}


def result_for(kind: str, review: Review) -> list[dict[str, Any]]:
    """The Label Studio annotation (or prediction) ``result`` list that says ``review`` in the
    config of ``kind``; ``parse_result(kind, result_for(kind, review)) == review``.

    Empty parts (no decision, no reasons, empty texts) produce no result entry."""
    _check_kind(kind)
    if kind != "chain" and (review.step_verdicts or review.corrections):
        raise UserError(
            f"a {kind} review cannot have per-step verdicts or corrections",
            fix="only chain samples have steps; put the correction in `correction`",
        )
    anchor = ANCHOR[kind]
    out: list[dict[str, Any]] = []
    if review.decision is not None:
        out.append(_choice_result("decision", anchor, [review.decision]))
    if review.reasons:
        out.append(_choice_result("reasons", anchor, list(review.reasons)))
    if review.correction:
        out.append(_text_result("correction", anchor, review.correction))
    if review.comment:
        out.append(_text_result("comment", anchor, review.comment))
    for i, verdict in review.step_verdicts.items():
        out.append(_choice_result(f"verdict_{i}", STEP_ANCHOR.format(i), [verdict]))
    for i, text in review.corrections.items():
        out.append(_text_result(f"correction_{i}", STEP_ANCHOR.format(i), text))
    return out


def _values(entry: dict[str, Any], key: str, where: str) -> list[str]:
    value = entry.get("value")
    items = value.get(key) if isinstance(value, dict) else None
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise UserError(
            f"{where}: expected value.{key} to be a list of strings, got {value!r}"[:300],
            fix="pass the result list of a Label Studio annotation made with label_config()",
        )
    return items


def parse_result(kind: str, results: list[dict[str, Any]]) -> Review:
    """The :class:`Review` in a Label Studio annotation ``result`` list (from either stage's config
    of ``kind``). Extra keys of an entry (``id``, ``origin``, ...) are ignored; a control this
    module does not make, or a value outside its choices, is a UserError.

    >>> parse_result("query", [{"from_name": "decision", "to_name": "query", "type": "choices",
    ...                         "value": {"choices": ["fix"]}, "id": "x1", "origin": "manual"},
    ...                        {"from_name": "correction", "to_name": "query", "type": "textarea",
    ...                         "value": {"text": ["How many tracks", "are there?"]}}])
    Review(decision='fix', reasons=[], step_verdicts={}, corrections={}, correction='How many tracks\\nare there?', comment='')
    """
    _check_kind(kind)
    fields: dict[str, Any] = {"step_verdicts": {}, "corrections": {}}
    reasons: list[str] = []
    texts: dict[str, list[str]] = {}
    step_texts: dict[int, list[str]] = {}
    for n, entry in enumerate(results):
        if not isinstance(entry, dict):
            raise UserError(
                f"result {n} is a {type(entry).__name__}, not an object",
                fix="pass the result list of a Label Studio annotation",
            )
        name = entry.get("from_name")
        where = f"result {n} ({name})"
        step = _STEP_NAME.match(name) if isinstance(name, str) else None
        if name == "decision":
            choices = _values(entry, "choices", where)
            fields["decision"] = choices[-1] if choices else None
        elif name == "reasons":
            reasons += _values(entry, "choices", where)
        elif name in ("correction", "comment"):
            texts.setdefault(name, []).extend(_values(entry, "text", where))
        elif step is not None and kind == "chain":
            i = int(step.group(2))
            if step.group(1) == "verdict":
                choices = _values(entry, "choices", where)
                if choices:
                    fields["step_verdicts"][i] = choices[-1]
            else:
                step_texts.setdefault(i, []).extend(_values(entry, "text", where))
        else:
            raise UserError(
                f"{where}: no control {name!r} in the {kind} config",
                fix=f"pull annotations only from projects made with label_config({kind!r})",
            )
    fields["reasons"] = reasons
    for name, parts in texts.items():
        fields[name] = "\n".join(parts)
    fields["corrections"] = {i: "\n".join(parts) for i, parts in step_texts.items()}
    try:
        return Review(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise UserError(
            f"annotation result has an unknown value at {'.'.join(map(str, first['loc']))}: {first['input']!r}"[:300],
            fix="the project's config differs from label_config(): re-create it",
        ) from None


def review_text(review: Review | None) -> str:
    """A reviewer's result as read-only text for the adjudication stage (``$review_1``/``$review_2``).

    >>> print(review_text(Review(decision="reject", reasons=["wrong_call"], step_verdicts={1: "input_error"})))
    decision: reject
    reasons: wrong_call
    step 2: input_error
    >>> review_text(None)
    '(no review)'
    """
    if review is None:
        return "(no review)"
    lines = [f"decision: {review.decision or '(none)'}"]
    if review.reasons:
        lines.append("reasons: " + ", ".join(review.reasons))
    for i in sorted({*review.step_verdicts, *review.corrections}):
        line = f"step {i + 1}: {review.step_verdicts.get(i, '(no verdict)')}"
        if i in review.corrections:
            line += f"; corrected call: {review.corrections[i]}"
        lines.append(line)
    if review.correction:
        lines.append("corrected version:\n" + review.correction)
    if review.comment:
        lines.append("comment: " + review.comment)
    return "\n".join(lines)
