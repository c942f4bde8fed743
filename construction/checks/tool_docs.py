"""``tool_docs``: every tool is described in words and every parameter says what it takes."""

from __future__ import annotations

from benchsmith.schemas import CheckResult, Sample

from ._engine import check, failed, passed

MIN_WORDS = 3


@check("tool_docs")
def tool_docs(sample: Sample) -> CheckResult:
    for tool in sample.tools:
        if len(tool.description.split()) < MIN_WORDS:
            return failed(
                "tool_docs",
                "vague_tool",
                f"tool {tool.name}: description {tool.description!r} is under {MIN_WORDS} words",
            )
        props = tool.parameters.properties
        missing = [r for r in tool.parameters.required if r not in props]
        if missing:
            return failed(
                "tool_docs", "undefined_required", f"tool {tool.name}: required {missing[0]!r} is not a parameter"
            )
        for name, prop in props.items():
            if not str(prop.get("description", "")).strip() and "enum" not in prop:
                return failed(
                    "tool_docs",
                    "undocumented_parameter",
                    f"tool {tool.name}: parameter {name!r} has neither a description nor an enum",
                )
    return passed("tool_docs")
