"""Small helpers over the raw cffi API used by several backend test modules."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path


def tiny_gguf_generator():
    """scripts/make_tiny_gguf.py as a module (make_gguf, VARIANTS, garbage_gguf, ...); needs the gguf package."""
    import importlib.util

    script = Path(__file__).resolve().parents[2] / "scripts" / "make_tiny_gguf.py"
    spec = importlib.util.spec_from_file_location("make_tiny_gguf", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def openvino_wheel_paths():
    """(include folder, libopenvino, openvino_tokenizers extension) of the openvino / openvino_tokenizers wheels, for
    native test programs; skips the test without them. Found, not imported: this process may have another OpenVINO
    mapped already (the bundled backend's)."""
    import importlib.util

    import pytest

    specs = [importlib.util.find_spec(name) for name in ("openvino", "openvino_tokenizers")]
    if None in specs:
        pytest.skip("the openvino / openvino_tokenizers wheels are not installed")
    root, tokenizers = (Path(s.submodule_search_locations[0]) for s in specs)
    libs = sorted((root / "libs").glob("libopenvino.so*"), key=lambda p: len(p.name))
    ext = tokenizers / "lib" / "libopenvino_tokenizers.so"
    if not (root / "include").is_dir() or not libs or not ext.is_file():
        pytest.skip("the openvino wheel's headers / library or the tokenizers extension are missing")
    return root / "include", libs[-1], ext


def default_backend() -> str:
    """The attention backend a pipeline created without ATTENTION_BACKEND gets: the environment override
    OVGENAI_C_BUNDLED_ATTENTION_BACKEND, else the build default (PA, like the official library)."""
    return os.environ.get("OVGENAI_C_BUNDLED_ATTENTION_BACKEND") or "PA"


class Config:
    """Owns an ov_genai_generation_config*; set(name=value) calls the matching setter."""

    def __init__(self, api, **fields):
        self.api = api
        p = api.ffi.new("ov_genai_generation_config**")
        assert api.lib.ov_genai_generation_config_create(p) == 0
        self.ptr = p[0]
        self._keep = []
        self.set(**fields)

    def set(self, **fields):
        ffi, lib = self.api.ffi, self.api.lib
        for k, v in fields.items():
            if k == "stop_strings":
                arr = [ffi.new("char[]", s.encode()) for s in v]
                self._keep.append(arr)
                carr = ffi.new("const char*[]", arr) if arr else ffi.new("const char*[1]")
                self._keep.append(carr)
                st = lib.ov_genai_generation_config_set_stop_strings(self.ptr, carr, len(arr))
            elif k == "stop_token_ids":
                carr = ffi.new("int64_t[]", list(v)) if v else ffi.NULL
                self._keep.append(carr)
                st = lib.ov_genai_generation_config_set_stop_token_ids(self.ptr, carr, len(v))
            else:
                st = getattr(lib, f"ov_genai_generation_config_set_{k}")(self.ptr, v)
            assert st == 0, (k, st)
        return self

    def validate(self) -> int:
        return self.api.lib.ov_genai_generation_config_validate(self.ptr)

    def __del__(self):
        try:
            self.api.lib.ov_genai_generation_config_free(self.ptr)
        except Exception:
            pass


class Result:
    def __init__(self, status, text=None, perf=None):
        self.status, self.text, self.perf = status, text, perf


def perf_dict(api, res):
    ffi, lib = api.ffi, api.lib
    pm = ffi.new("ov_genai_perf_metrics**")
    assert lib.ov_genai_decoded_results_get_perf_metrics(res, pm) == 0
    m = pm[0]
    out = {}
    n = ffi.new("size_t*")
    assert lib.ov_genai_perf_metrics_get_num_generation_tokens(m, n) == 0
    out["num_generated"] = n[0]
    assert lib.ov_genai_perf_metrics_get_num_input_tokens(m, n) == 0
    out["num_input"] = n[0]
    f = ffi.new("float*")
    assert lib.ov_genai_perf_metrics_get_load_time(m, f) == 0
    out["load_time"] = f[0]
    mean, std = ffi.new("float*"), ffi.new("float*")
    for name in ("ttft", "tpot", "ipot", "throughput", "inference_duration", "generate_duration",
                 "tokenization_duration", "detokenization_duration", "chat_template_duration"):
        assert getattr(lib, f"ov_genai_perf_metrics_get_{name}")(m, mean, std) == 0
        out[name] = (mean[0], std[0])
    lib.ov_genai_decoded_results_perf_metrics_free(m)
    return out


def generate(api, pipe, prompt, cfg=None, streamer=None, want_perf=False):
    """Runs ov_genai_llm_pipeline_generate; returns Result(status, text, perf)."""
    ffi, lib = api.ffi, api.lib
    res = ffi.new("ov_genai_decoded_results**")
    data = prompt if isinstance(prompt, bytes) else prompt.encode()
    st = lib.ov_genai_llm_pipeline_generate(pipe, data, cfg.ptr if cfg else ffi.NULL,
                                            streamer if streamer is not None else ffi.NULL, res)
    if st != 0:
        return Result(st)
    text = api.results_text(res[0])
    perf = perf_dict(api, res[0]) if want_perf else None
    lib.ov_genai_decoded_results_free(res[0])
    return Result(st, text, perf)


def make_streamer(api, handler):
    """handler(str) -> status int. Returns (streamer_callback*, keepalive)."""
    ffi = api.ffi

    @ffi.callback("ov_genai_streaming_status_e(const char*, void*)")
    def cb(s, args):
        return handler(ffi.string(s).decode("utf-8"))

    sc = ffi.new("streamer_callback*")
    sc.callback_func = cb
    sc.args = ffi.NULL
    return sc, cb


def json_container(api, text):
    p = api.ffi.new("ov_genai_json_container**")
    st = api.lib.ov_genai_json_container_create_from_json_string(p, text.encode())
    assert st == 0, st
    return p[0]


def chat_history(api, messages_json, tools_json=None, extra_json=None):
    ffi, lib = api.ffi, api.lib
    msgs = json_container(api, messages_json)
    h = ffi.new("ov_genai_chat_history**")
    assert lib.ov_genai_chat_history_create_from_json_container(h, msgs) == 0
    lib.ov_genai_json_container_free(msgs)
    if tools_json is not None:
        t = json_container(api, tools_json)
        assert lib.ov_genai_chat_history_set_tools(h[0], t) == 0
        lib.ov_genai_json_container_free(t)
    if extra_json is not None:
        e = json_container(api, extra_json)
        assert lib.ov_genai_chat_history_set_extra_context(h[0], e) == 0
        lib.ov_genai_json_container_free(e)
    return h[0]


def generate_with_history(api, pipe, hist, cfg=None, want_perf=False):
    ffi, lib = api.ffi, api.lib
    res = ffi.new("ov_genai_decoded_results**")
    st = lib.ov_genai_llm_pipeline_generate_with_history(pipe, hist, cfg.ptr if cfg else ffi.NULL, ffi.NULL, res)
    if st != 0:
        return Result(st)
    text = api.results_text(res[0])
    perf = perf_dict(api, res[0]) if want_perf else None
    lib.ov_genai_decoded_results_free(res[0])
    return Result(st, text, perf)


@contextlib.contextmanager
def chat_with_oracle(api, pipe, oracle):
    """start_chat on the bundled pipeline and on the GenAI oracle; finish_chat on both afterwards (also when the
    body fails), and the bundled finish_chat must succeed."""
    assert api.lib.ov_genai_llm_pipeline_start_chat(pipe) == 0
    oracle.start_chat()
    try:
        yield
    finally:
        status = api.lib.ov_genai_llm_pipeline_finish_chat(pipe)
        oracle.finish_chat()
    assert status == 0


def owned_pipe(api, create, path, *props):
    """For a yield-fixture: the pipeline create(path, *props) makes, freed afterwards."""
    st, pipe = create(path, *props)
    assert st == 0, api.last_error()
    yield pipe
    api.lib.ov_genai_llm_pipeline_free(pipe)


def oracle_pair(api, create, path, engine):
    """For a yield-fixture: (bundled pipeline, openvino_genai oracle) on `path` with the same ATTENTION_BACKEND,
    both under the f32 precision hint (create adds it); the bundled pipeline is freed afterwards."""
    import openvino_genai as og

    from testsupport import PRECISION_HINT

    gen = owned_pipe(api, create, path, "ATTENTION_BACKEND", engine)
    pipe = next(gen)
    yield pipe, og.LLMPipeline(str(path), "CPU", **PRECISION_HINT, ATTENTION_BACKEND=engine)
    next(gen, None)


def run_in_child(body: str, timeout: float = 600):
    """Runs `body` (Python source) in a child interpreter, for calls known to crash inside OpenVINO on some CPUs.
    The child has `api` (the bundled library over cffi), `create(path, *props)` (as the create_pipe fixture: the
    f32 precision hint unless the props set one), `Config`, `generate` and `TINY` (the tiny IR folder). Hand the
    result to testsupport.child_outcome."""
    import pathlib
    import subprocess
    import sys
    import textwrap

    here = pathlib.Path(__file__).resolve().parent
    prelude = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(here)!r}, {str(here.parent)!r}]
        import conftest as _c
        from helpers import Config, generate
        api = _c.load_api(_c._lib_path())
        create = lambda path, *props, **kw: _c._create(api, path, *props, **kw)
        TINY = _c.REPO / "tests" / "fixtures" / "tiny" / "ir"
        """)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(body)], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
