"""``gold_signature``: every gold call names one of the sample's tools and fits its parameters
(required ones present, no unknown ones, literal values of the declared type and enum);
``gold_references``: every ``$label$`` in a gold call names the set-up or an earlier call."""

from __future__ import annotations

from typing import Any

from benchsmith.schemas import CheckResult, Sample, Tool, parse_reference

from ._engine import check, failed, passed

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _type_ok(value: Any, prop: dict[str, Any]) -> bool:
    t = prop.get("type")
    if t is None:
        return True
    types = t if isinstance(t, list) else [t]
    for name in types:
        py = _TYPES.get(str(name))
        if py is None:
            return True  # a type this check does not know: not its business
        if isinstance(value, bool) and name in ("integer", "number"):
            continue
        if isinstance(value, py):
            return True
    return False


def argument_problem(tool: Tool, arguments: dict[str, Any], where: str) -> tuple[str, str] | None:
    """``(code, reason)`` of the first way ``arguments`` do not fit ``tool``'s parameters, or None:
    a required one missing, an unknown one (unless ``additionalProperties`` is true), a literal
    outside the enum or of the wrong JSON type (``$label$`` references are not judged)."""
    props = tool.parameters.properties
    missing = [r for r in tool.parameters.required if r not in arguments]
    if missing:
        return "missing_argument", f"{where} lacks required {missing[0]!r}"
    for name, value in arguments.items():
        prop = props.get(name)
        if prop is None:
            if tool.parameters.additionalProperties:
                continue
            return "unknown_argument", f"{where} has no parameter {name!r}"
        if parse_reference(value) is not None:
            continue
        if "enum" in prop and value not in prop["enum"]:
            return "not_in_enum", f"{where}: {name}={value!r} is not one of its {len(prop['enum'])} allowed values"
        if not _type_ok(value, prop):
            return "wrong_type", f"{where}: {name}={value!r} is not of type {prop.get('type')}"
    return None


@check("gold_signature")
def gold_signature(sample: Sample) -> CheckResult:
    tools = {t.name: t for t in sample.tools}
    for i, step in enumerate(sample.gold, 1):
        call = step.call
        if call is None or step.hidden:
            continue
        tool = tools.get(call.name)
        if tool is None:
            return failed(
                "gold_signature", "unknown_tool", f"gold step {i} calls {call.name!r}, not one of the sample's tools"
            )
        problem = argument_problem(tool, call.arguments, f"gold step {i} ({call.name})")
        if problem:
            return failed("gold_signature", *problem)
    return passed("gold_signature")


@check("gold_references")
def gold_references(sample: Sample) -> CheckResult:
    known = {c.label for c in sample.setup if c.label}
    for i, step in enumerate(sample.gold, 1):
        call = step.call
        if call is None:
            continue
        for ref in call.references():
            if ref.label not in known:
                return failed(
                    "gold_references",
                    "dangling_reference",
                    f"gold step {i} ({call.name}) refers to ${ref.label}$ before anything is stored under it",
                )
        if call.label:
            known.add(call.label)
    return passed("gold_references")
