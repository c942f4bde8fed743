"""Re-execute and re-check a revised item before it goes back to review."""

from __future__ import annotations

from typing import Any

from benchsmith.schemas import Sample


def reexecute(sample: dict[str, Any], context: Any) -> tuple[dict[str, Any] | None, list[str]]:
    """Run the revised gold calls again in the sample's environment (fresh observations, verdicts,
    and for NL2API the exact answer), then the rule checks. Returns ``(sample, [])`` or
    ``(None, reasons)``."""
    from benchsmith.construction import close_environment, open_environment
    from benchsmith.construction.checks import DEFAULT_CHECKS, run_checks
    from benchsmith.construction.checks.execution import environment_descriptor
    from benchsmith.construction.nl2api import ToolError

    try:
        parsed = Sample.model_validate({**sample, "id": None})
    except ValueError as exc:
        return None, [f"invalid_revision: {str(exc).splitlines()[0]}"]
    descriptor, _why = environment_descriptor(parsed, context)
    out = parsed.model_dump(mode="json")
    if descriptor is not None and parsed.gold:
        env = open_environment(descriptor, context.env)
        try:
            if "setup" not in descriptor:
                for call in parsed.setup:
                    env.call(call.name, call.arguments, call.label)
            last = None
            for i, step in enumerate(out["gold"]):
                call = step.get("call")
                if not call:
                    continue
                try:
                    step["observation"] = env.call(call["name"], call.get("arguments") or {}, call.get("label"))
                except ToolError as exc:
                    return None, [f"not_executable: step {i + 1} ({call['name']}): {exc.code}: {exc}"]
                step["verdict"] = "success"
                last = call.get("label")
            answer = getattr(env, "answer", None)
            if answer is not None and last is not None and (out.get("answer") or {}).get("kind") in ("exact", None):
                out["answer"] = {"kind": "exact", "value": answer(last)}
        finally:
            close_environment(env)
    revised = Sample.model_validate({**out, "id": None})
    report = run_checks(revised, [c for c in DEFAULT_CHECKS if c != "model_vote"], context)
    if not report.accepted:
        return None, [f"{r.name}:{r.code}: {r.reason}" for r in report.failures]
    return revised.model_dump(mode="json"), []
