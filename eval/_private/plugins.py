"""Imports the built-in benchmark plug-ins so that they register themselves."""
# Each import registers a benchmark; keep this list in sync with the subpackages of eval.
import benchsmith.eval.acebench._plugin  # noqa: F401
import benchsmith.eval.bfcl._plugin  # noqa: F401
import benchsmith.eval.gta._plugin  # noqa: F401
import benchsmith.eval.nl2api._plugin  # noqa: F401
import benchsmith.eval.teval._plugin  # noqa: F401
import benchsmith.eval.toolassess._plugin  # noqa: F401
