"""Internals of :mod:`benchsmith.construction.sandbox`: the tool machinery, the engine, one module
per domain, scenarios and metrics."""
