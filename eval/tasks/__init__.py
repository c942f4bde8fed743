"""The built-in evaluation tasks, registered by name with :func:`benchsmith.eval.task`:
``nl2api`` (end-to-end ReAct with executing tools), ``teval``, ``gta`` (step by step),
``toolassess``, ``acebench`` / ``acebench_special`` and ``bfcl`` (single-turn function calling)."""
from . import acebench, bfcl, gta, nl2api, teval, toolassess  # noqa: F401 - registration

__all__: list[str] = []
