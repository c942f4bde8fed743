"""Internals of benchsmith.annotation (the Label Studio server lifecycle, its own virtual environment)."""
