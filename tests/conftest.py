"""Fixtures every test module may name."""

from ls_fixture import label_studio  # noqa: F401 - the session's real Label Studio server
