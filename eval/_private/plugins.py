"""Imports the built-in benchmark plug-ins so that they register themselves."""
# Each import registers a benchmark; keep this list in sync with the subpackages of eval.
