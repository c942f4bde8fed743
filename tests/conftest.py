"""Fixtures every test module may name."""

import pytest
from ls_fixture import label_studio  # noqa: F401 - the session's real Label Studio server


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory):
    """The real local default model's server for one test module, its state in a folder of its own."""
    from benchsmith.models import start_local_server, stop_local_server

    folder = tmp_path_factory.mktemp("model-state")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHSMITH_MODEL_STATE_DIR", str(folder))
        mp.delenv("OPENAI_API_KEY", raising=False)
        info = start_local_server(threads=1, parallel=2, wait=120)  # one thread: see tests/test_models_local.py
        try:
            yield info
        finally:
            stop_local_server()
