"""Fixtures for the native JSON + chat-template tests.

* ``ct_harness``: tests/chat_template/render_main.cpp compiled with g++ -std=c++17 -O1 from native/src/common,
  native/src/json and native/src/chat_template with the nlohmann-json pip package's headers (cached by a hash of
  the sources under ~/.cache/ovgenai_c/ct_build), or the binary named by $OVGENAI_C_CT_HARNESS (e.g. an
  -fsanitize=address,undefined build).
* ``real_templates``: the real chat templates shipped in the llama-cpp-python==0.3.36 sdist
  (vendor/llama.cpp/models/templates/*.jinja), fetched once with pip and cached under
  ~/.cache/ovgenai_c/templates; skips when PyPI is unreachable.
* ``hf_jinja.hf_render``: the oracle - Python jinja2 configured the way Hugging Face transformers renders chat templates.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

from testsupport import nlohmann_include  # noqa: F401  (also used by the fixtures below)

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native" / "src"
HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("OVGENAI_C_CACHE", Path.home() / ".cache" / "ovgenai_c"))
SDIST_NAME = "llama-cpp-python"
SDIST_VERSION = "0.3.36"
SDIST_FILE = "llama_cpp_python-0.3.36.tar.gz"
CXXFLAGS = ["-std=c++17", "-O1", "-pthread"]
HARNESS_DIRS = ("common", "json", "chat_template")  # the native/src folders render_main.cpp is built from


def _sources() -> list[Path]:
    srcs = [p for d in HARNESS_DIRS for p in sorted((NATIVE / d).glob("*.cpp"))]
    return srcs + [HERE / "render_main.cpp"]


def _headers() -> list[Path]:
    return [p for d in HARNESS_DIRS for p in sorted((NATIVE / d).glob("*.hpp"))]


def build_harness(out_dir: Path) -> Path:
    inc = nlohmann_include()
    h = hashlib.sha256(" ".join(CXXFLAGS).encode())
    for p in _sources() + _headers() + [inc / "nlohmann" / "json.hpp"]:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    exe = out_dir / f"render_main-{h.hexdigest()[:16]}"
    if exe.exists():
        return exe
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = exe.with_suffix(f".tmp{os.getpid()}")
    cmd = ["g++", *CXXFLAGS, "-I", str(NATIVE), "-isystem", str(inc), *map(str, _sources()), "-o", str(tmp)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"harness build failed:\n{res.stderr[-4000:]}")
    os.replace(tmp, exe)
    return exe


class Harness:
    def __init__(self, exe: Path, workdir: Path):
        self.exe = exe
        self.workdir = workdir
        self._n = 0

    def _file(self, text: str | bytes, suffix: str) -> Path:
        self._n += 1
        p = self.workdir / f"in{self._n}{suffix}"
        if isinstance(text, str):
            text = text.encode("utf-8")
        p.write_bytes(text)
        return p

    def render(self, template: str, context: dict) -> subprocess.CompletedProcess:
        t = self._file(template, ".jinja")
        c = self._file(json.dumps(context, ensure_ascii=False), ".json")
        return subprocess.run([str(self.exe), str(t), str(c)], capture_output=True, timeout=60)

    def json_roundtrip(self, text: str | bytes, *opts: str) -> subprocess.CompletedProcess:
        f = self._file(text, ".json")
        return subprocess.run([str(self.exe), "--json-roundtrip", str(f), *opts], capture_output=True, timeout=60)

    def batch(self, jobs: list[dict]) -> list[dict]:
        f = self._file(json.dumps(jobs, ensure_ascii=False), ".json")
        res = subprocess.run([str(self.exe), "--batch", str(f)], capture_output=True, timeout=300)
        assert res.returncode == 0, res.stderr.decode(errors="replace")
        return json.loads(res.stdout)

    def bench(self, template: str, context: dict, n: int) -> float:
        t = self._file(template, ".jinja")
        c = self._file(json.dumps(context), ".json")
        res = subprocess.run([str(self.exe), "--bench", str(t), str(c), str(n)], capture_output=True, timeout=120)
        assert res.returncode == 0, res.stderr.decode(errors="replace")
        return float(res.stdout)


@pytest.fixture(scope="session")
def ct_harness(tmp_path_factory) -> Harness:
    override = os.environ.get("OVGENAI_C_CT_HARNESS")  # e.g. a sanitizer build of render_main.cpp
    if override:
        return Harness(Path(override), tmp_path_factory.mktemp("ct_io"))
    if shutil.which("g++") is None:
        pytest.skip("g++ not available")
    exe = build_harness(CACHE / "ct_build")
    return Harness(exe, tmp_path_factory.mktemp("ct_io"))


# ---------------------------------------------------------------- real templates


def _extract(sdist: Path, dest: Path) -> None:
    tmp = Path(tempfile.mkdtemp(dir=dest.parent))
    with tarfile.open(sdist) as tf:
        for m in tf.getmembers():
            parts = m.name.split("/")
            if (m.isfile() and m.name.endswith(".jinja") and len(parts) == 6
                    and parts[1:5] == ["vendor", "llama.cpp", "models", "templates"]):
                data = tf.extractfile(m).read()
                (tmp / parts[5]).write_bytes(data)
    if dest.exists():
        shutil.rmtree(dest)
    os.replace(tmp, dest)


def _fetch_sdist(cache: Path) -> Path | None:
    sdist = cache / SDIST_FILE
    if sdist.exists():
        return sdist
    dl = Path(tempfile.mkdtemp(dir=cache))
    try:
        # Only this package from source; its build requirements may come as wheels (building them from source
        # would take far too long). pip still prepares the metadata, which needs those build requirements.
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", SDIST_NAME,
               f"{SDIST_NAME}=={SDIST_VERSION}", "-d", str(dl), "--timeout", "30"]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        found = list(dl.glob("*.tar.gz"))
        if res.returncode != 0 or not found:
            return None
        os.replace(found[0], sdist)
        return sdist
    except (subprocess.TimeoutExpired, OSError):
        return None
    finally:
        shutil.rmtree(dl, ignore_errors=True)


@pytest.fixture(scope="session")
def real_templates() -> dict[str, str]:
    cache = CACHE / "templates"
    cache.mkdir(parents=True, exist_ok=True)
    dest = cache / "jinja"
    if not dest.exists() or not any(dest.glob("*.jinja")):
        sdist = _fetch_sdist(cache)
        if sdist is None:
            pytest.skip(f"could not download {SDIST_NAME}=={SDIST_VERSION} from PyPI (offline?)")
        _extract(sdist, dest)
    out = {p.stem: p.read_text(encoding="utf-8") for p in sorted(dest.glob("*.jinja"))}
    if not out:
        pytest.skip("no templates found in the sdist")
    return out


# ---------------------------------------------------------------- oracle


@pytest.fixture(scope="session")
def hf_env():
    from hf_jinja import make_hf_env

    return make_hf_env()


def pytest_terminal_summary(terminalreporter):
    try:
        from test_ct_templates import PASS_COUNTS
    except ImportError:  # pragma: no cover
        return
    if not PASS_COUNTS:
        return
    tr = terminalreporter
    tr.section("chat templates: native vs jinja2 (cases passed / total, both-error)")
    full = 0
    for name, (ok, total, both_err) in sorted(PASS_COUNTS.items()):
        full += ok == total
        tr.write_line(f"{ok:3d}/{total:<3d} ({both_err:2d} both-error)  {name}")
    tr.write_line(f"templates fully matching: {full}/{len(PASS_COUNTS)}")
