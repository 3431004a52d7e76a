"""The ABI test double honours the GenAI C ABI contract (plain cffi, ABI mode, no ovgenai_c, no OpenVINO)."""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import threading

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

cffi = pytest.importorskip("cffi")

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CDEFS = ROOT / "cdefs"
SIZE_MAX = 2**64 - 1

# status codes
OK, OUT_OF_BOUNDS, INVALID_C_PARAM, UNKNOW_EXCEPTION = 0, -6, -14, -17
JC_OK, JC_INVALID_PARAM, JC_INVALID_JSON, JC_OUT_OF_BOUNDS = 0, -1, -2, -3
CH_OK, CH_INVALID_PARAM, CH_OUT_OF_BOUNDS, CH_EMPTY, CH_INVALID_JSON = 0, -1, -2, -3, -4
RUNNING, STOP, CANCEL = 0, 1, 2


def _load_build_module():
    spec = importlib.util.spec_from_file_location("abi_double_build", HERE / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _upstream_headers():
    return [p for p in sorted(CDEFS.glob("*.h")) if not p.name.startswith("9")]


@pytest.fixture(scope="session")
def so_path(tmp_path_factory):
    override = os.environ.get("ABI_DOUBLE_SO")  # e.g. a sanitizer build of abi_double.c
    if override:
        return pathlib.Path(override)
    try:
        return _load_build_module().build_double(tmp_path_factory.mktemp("abi_double"))
    except Exception as exc:  # no compiler on this machine
        if "compiler" in str(exc):
            pytest.skip(str(exc))
        raise


@pytest.fixture(scope="session")
def api(so_path):
    ffi = cffi.FFI()
    for path in sorted(CDEFS.glob("*.h")):
        ffi.cdef(re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S))
    ffi.cdef((HERE / "controls.h").read_text())
    lib = ffi.dlopen(str(so_path))
    return ffi, lib


@pytest.fixture(autouse=True)
def clean(request):
    if "api" not in request.fixturenames:
        yield
        return
    ffi, lib = request.getfixturevalue("api")
    lib.ovd_reset()
    before = lib.ovd_live(ffi.NULL)
    yield
    lib.ovd_reset()
    assert lib.ovd_live(ffi.NULL) == before, "handles leaked by the test"


# ------------------------------------------------------------------ helpers
def new_config(api, **setters):
    ffi, lib = api
    pp = ffi.new("ov_genai_generation_config**")
    assert lib.ov_genai_generation_config_create(pp) == OK
    cfg = pp[0]
    for name, value in setters.items():
        if name == "stop_strings":
            bufs = [ffi.new("char[]", s.encode()) for s in value]
            arr = ffi.new("const char*[]", bufs)
            assert lib.ov_genai_generation_config_set_stop_strings(cfg, arr, len(bufs)) == OK
        elif name == "stop_token_ids":
            arr = ffi.new("int64_t[]", list(value))
            assert lib.ov_genai_generation_config_set_stop_token_ids(cfg, arr, len(value)) == OK
        else:
            assert getattr(lib, f"ov_genai_generation_config_set_{name}")(cfg, value) == OK
    return cfg


def config_json_text(api, cfg):
    """Read back fields through the only getter plus validation."""
    ffi, lib = api
    out = ffi.new("size_t*")
    assert lib.ov_genai_generation_config_get_max_new_tokens(cfg, out) == OK
    return out[0]


def create_pipeline(api, path, device=b"CPU", props=()):
    ffi, lib = api
    pp = ffi.new("ov_genai_llm_pipeline**")
    args = [ffi.new("char[]", x.encode() if isinstance(x, str) else x) for x in props]
    cast = [ffi.cast("const char*", a) for a in args]
    st = lib.ov_genai_llm_pipeline_create(str(path).encode(), device, len(props), pp, *cast)
    return st, (pp[0] if st == OK else None)


@pytest.fixture
def pipe(api, tmp_path):
    ffi, lib = api
    st, p = create_pipeline(api, tmp_path)
    assert st == OK
    yield p
    lib.ov_genai_llm_pipeline_free(p)


def results_string(api, res):
    ffi, lib = api
    size = ffi.new("size_t*")
    assert lib.ov_genai_decoded_results_get_string(res, ffi.NULL, size) == OK
    buf = ffi.new("char[]", size[0])
    assert lib.ov_genai_decoded_results_get_string(res, buf, size) == OK
    return ffi.string(buf).decode()


def generate(api, pipe, text, cfg=None, stream=True, want_results=True, reply=None, history=None):
    """Returns (status, [chunk bytes], results text or None, perf dict or None)."""
    ffi, lib = api
    chunks = []
    script = list(reply or [])

    @ffi.callback("ov_genai_streaming_status_e(const char*, void*)")
    def cb(s, _args):
        chunks.append(ffi.string(s))
        return script.pop(0) if script else RUNNING

    streamer = ffi.new("streamer_callback*", {"callback_func": cb, "args": ffi.NULL}) if stream else ffi.NULL
    rp = ffi.new("ov_genai_decoded_results**") if want_results else ffi.NULL
    if history is not None:
        st = lib.ov_genai_llm_pipeline_generate_with_history(pipe, history, cfg or ffi.NULL, streamer, rp)
    else:
        st = lib.ov_genai_llm_pipeline_generate(pipe, text.encode() if isinstance(text, str) else text,
                                                cfg or ffi.NULL, streamer, rp)
    out, perf = None, None
    if st == OK and want_results:
        out = results_string(api, rp[0])
        perf = perf_dict(api, rp[0])
        lib.ov_genai_decoded_results_free(rp[0])
    return st, chunks, out, perf


def perf_dict(api, res):
    ffi, lib = api
    mp = ffi.new("ov_genai_perf_metrics**")
    assert lib.ov_genai_decoded_results_get_perf_metrics(res, mp) == OK
    m = mp[0]
    d = perf_of_metrics(api, m)
    lib.ov_genai_decoded_results_perf_metrics_free(m)
    return d


def perf_of_metrics(api, m):
    ffi, lib = api
    f, g = ffi.new("float*"), ffi.new("float*")
    n = ffi.new("size_t*")
    d = {}
    assert lib.ov_genai_perf_metrics_get_load_time(m, f) == OK
    d["load_time"] = f[0]
    assert lib.ov_genai_perf_metrics_get_num_input_tokens(m, n) == OK
    d["num_input_tokens"] = n[0]
    assert lib.ov_genai_perf_metrics_get_num_generation_tokens(m, n) == OK
    d["num_generation_tokens"] = n[0]
    for name in ("ttft", "tpot", "ipot", "throughput", "inference_duration", "generate_duration",
                 "tokenization_duration", "detokenization_duration", "chat_template_duration"):
        assert getattr(lib, f"ov_genai_perf_metrics_get_{name}")(m, f, g) == OK
        d[name] = (f[0], g[0])
    return d


def json_new(api, text):
    ffi, lib = api
    pp = ffi.new("ov_genai_json_container**")
    st = lib.ov_genai_json_container_create_from_json_string(pp, text.encode())
    return st, (pp[0] if st == JC_OK else None)


def json_str(api, jc):
    ffi, lib = api
    size = ffi.new("size_t*")
    assert lib.ov_genai_json_container_to_json_string(jc, ffi.NULL, size) == JC_OK
    buf = ffi.new("char[]", size[0])
    assert lib.ov_genai_json_container_to_json_string(jc, buf, size) == JC_OK
    return ffi.string(buf).decode()


# ------------------------------------------------------------------ build and symbols
def test_exports_exactly_the_declared_functions(so_path):
    nm = shutil.which("nm")
    if not nm:
        pytest.skip("nm not available")
    out = subprocess.run([nm, "-D", "--defined-only", str(so_path)], capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if " T " in line}
    declared = set()
    for path in _upstream_headers():
        declared |= set(re.findall(r"\b(ov_genai_\w+)\s*\((?!\*)", path.read_text()))
    assert len(declared) == 153  # 83 of the LLM side + the 13 of vlm_pipeline.h + the 57 of the two Whisper headers
    assert len({d for d in declared if d.startswith("ov_genai_vlm_")}) == 13
    assert len({d for d in declared if d.startswith("ov_genai_whisper_")}) == 57
    assert declared == {s for s in exported if s.startswith("ov_genai_")}
    controls = set(re.findall(r"\b(ovd_\w+)\s*\(", (HERE / "controls.h").read_text()))
    assert controls <= exported and len(controls) == 14


def test_source_is_warning_free():
    mod = _load_build_module()
    try:
        cc = mod.find_compiler()
    except mod.CompilerNotFound:
        pytest.skip("no compiler")
    proc = subprocess.run([*cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-pthread",
                           str(HERE / "abi_double.c")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_build_is_cached(so_path):
    if os.environ.get("ABI_DOUBLE_SO"):
        pytest.skip("library supplied through ABI_DOUBLE_SO")
    mtime = so_path.stat().st_mtime_ns
    assert _load_build_module().build_double(so_path.parent) == so_path
    assert so_path.stat().st_mtime_ns == mtime
    assert [p.name for p in so_path.parent.iterdir()] == [so_path.name]  # no temporary files left behind


# ------------------------------------------------------------------ generation config
def test_config_defaults_and_getter(api):
    ffi, lib = api
    cfg = new_config(api)
    assert config_json_text(api, cfg) == SIZE_MAX
    # C++ defaults: no eos and unlimited length -> invalid until something bounds it
    assert lib.ov_genai_generation_config_validate(cfg) == UNKNOW_EXCEPTION
    assert lib.ov_genai_generation_config_set_max_new_tokens(cfg, 7) == OK
    assert config_json_text(api, cfg) == 7
    assert lib.ov_genai_generation_config_validate(cfg) == OK
    lib.ov_genai_generation_config_free(cfg)
    lib.ov_genai_generation_config_free(ffi.NULL)  # no-op


BOUNDED = {"max_new_tokens": 16}
INVALID_CONFIGS = {
    "num_return_sequences_0": dict(BOUNDED, num_return_sequences=0),
    "eos_not_in_stop_ids": dict(BOUNDED, eos_token_id=2, stop_token_ids=[5]),
    "negative_stop_token": dict(BOUNDED, stop_token_ids=[-3]),
    "ignore_eos_unlimited": {"stop_token_ids": [2], "eos_token_id": 2, "ignore_eos": True},
    "eos_without_stop_id": dict(BOUNDED, eos_token_id=2),
    "nothing_stops": {},
    "max_new_tokens_0": {"max_new_tokens": 0},
    "min_gt_max": {"max_new_tokens": 4, "min_new_tokens": 5},
    "nrs_gt1_greedy": dict(BOUNDED, num_return_sequences=2),
    "frequency_penalty_high": dict(BOUNDED, frequency_penalty=2.5),
    "presence_penalty_low": dict(BOUNDED, presence_penalty=-2.5),
    "repetition_penalty_0": dict(BOUNDED, repetition_penalty=0.0),
    "top_p_0_sampling": dict(BOUNDED, do_sample=True, top_p=0.0),
    "top_p_gt1_sampling": dict(BOUNDED, do_sample=True, top_p=1.5),
    "temperature_0_sampling": dict(BOUNDED, do_sample=True, temperature=0.0),
    "min_p_1_sampling": dict(BOUNDED, do_sample=True, min_p=1.0),
    "beams_not_divisible": dict(BOUNDED, num_beams=3, num_beam_groups=2, diversity_penalty=1.0),
    "beams_lt_nrs": dict(BOUNDED, num_beams=2, num_return_sequences=3),
    "beams_with_sampling": dict(BOUNDED, num_beams=2, do_sample=True),
    "beams_no_repeat_0": dict(BOUNDED, num_beams=2, no_repeat_ngram_size=0),
    "beams_with_penalty": dict(BOUNDED, num_beams=2, repetition_penalty=1.2),
    "beam_groups_without_diversity": dict(BOUNDED, num_beams=4, num_beam_groups=2),
    "diversity_without_groups": dict(BOUNDED, num_beams=4, diversity_penalty=1.0),
    "assistant_tokens_and_threshold": dict(BOUNDED, num_assistant_tokens=3, assistant_confidence_threshold=0.5),
    "assisting_with_beams": dict(BOUNDED, num_assistant_tokens=3, num_beams=2),
    "ngram_without_prompt_lookup": dict(BOUNDED, max_ngram_size=3),
}
VALID_CONFIGS = {
    "bounded": dict(BOUNDED),
    "eos_in_stop_ids": {"stop_token_ids": [2], "eos_token_id": 2},
    "stop_string_only": {"stop_strings": ["x"]},
    "max_length_only": {"max_length": 10},
    "echo_zero_tokens": {"max_new_tokens": 0, "echo": True},
    "sampling": dict(BOUNDED, do_sample=True, top_p=0.9, temperature=0.7, min_p=0.1, num_return_sequences=3),
    "beams": dict(BOUNDED, num_beams=4, num_return_sequences=2),
    "beam_groups": dict(BOUNDED, num_beams=4, num_beam_groups=2, diversity_penalty=1.0),
    "greedy_penalties_edge": dict(BOUNDED, frequency_penalty=2.0, presence_penalty=-2.0, repetition_penalty=0.1),
    "sampling_params_ignored_greedy": dict(BOUNDED, top_p=0.0, temperature=0.0),
    "prompt_lookup": dict(BOUNDED, max_ngram_size=3, num_assistant_tokens=2),
    "assisted_threshold": dict(BOUNDED, assistant_confidence_threshold=0.4),
}


@pytest.mark.parametrize("name", sorted(INVALID_CONFIGS))
def test_validation_rule_rejects(api, name):
    ffi, lib = api
    cfg = new_config(api, **INVALID_CONFIGS[name])
    assert lib.ov_genai_generation_config_validate(cfg) == UNKNOW_EXCEPTION
    lib.ov_genai_generation_config_free(cfg)


@pytest.mark.parametrize("name", sorted(VALID_CONFIGS))
def test_validation_accepts(api, name):
    ffi, lib = api
    cfg = new_config(api, **VALID_CONFIGS[name])
    assert lib.ov_genai_generation_config_validate(cfg) == OK
    lib.ov_genai_generation_config_free(cfg)


_F = st.sampled_from
_ORACLE_FIELDS = {
    "max_new_tokens": _F([0, 1, 5, SIZE_MAX]),
    "max_length": _F([1, 10, SIZE_MAX]),
    "min_new_tokens": _F([0, 1, 6]),
    "ignore_eos": st.booleans(),
    "echo": st.booleans(),
    "do_sample": st.booleans(),
    "num_return_sequences": _F([0, 1, 2, 3]),
    "num_beams": _F([1, 2, 3, 4]),
    "num_beam_groups": _F([1, 2]),
    "diversity_penalty": _F([0.0, 1.0]),
    "no_repeat_ngram_size": _F([0, 3, SIZE_MAX]),
    "temperature": _F([0.0, 0.5, 1.0]),
    "top_p": _F([0.0, 0.5, 1.0, 1.5]),
    "top_k": _F([0, 5, SIZE_MAX]),
    "min_p": _F([0.0, 0.5, 1.0]),
    "repetition_penalty": _F([-1.0, 0.0, 1.0, 1.2]),
    "presence_penalty": _F([-3.0, -2.0, 0.0, 0.5, 2.5]),
    "frequency_penalty": _F([-2.5, 0.0, 2.0, 3.0]),
    "length_penalty": _F([0.5, 1.0]),
    "logprobs": _F([0, 2]),
    "num_assistant_tokens": _F([0, 2]),
    "assistant_confidence_threshold": _F([-1.0, 0.0, 0.5]),
    "max_ngram_size": _F([0, 3]),
    "eos_token_id": _F([-1, 2]),
    "stop_token_ids": st.lists(_F([-1, 2, 5]), max_size=2, unique=True),
    "stop_strings": st.lists(_F(["x", "</s>"]), max_size=1),
}


@pytest.fixture(scope="module")
def oracle():
    if os.environ.get("ABI_DOUBLE_QUICK"):
        pytest.skip("ABI_DOUBLE_QUICK set")
    try:
        import openvino_genai
    except Exception:  # the oracle is optional
        pytest.skip("openvino_genai (test oracle) not installed")
    return openvino_genai


@settings(max_examples=int(os.environ.get("OVD_ORACLE_EXAMPLES", "300")), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(fields=st.fixed_dictionaries({}, optional=_ORACLE_FIELDS))
def test_validate_agrees_with_upstream(api, oracle, fields):
    """openvino_genai.GenerationConfig.validate() (test-only oracle) decides; the double must agree."""
    ffi, lib = api
    o = oracle.GenerationConfig()
    for k, v in fields.items():
        setattr(o, k, set(v) if k in ("stop_token_ids", "stop_strings") else v)
    try:
        o.validate()
        expected = OK
    except Exception:
        expected = UNKNOW_EXCEPTION
    cfg = new_config(api, **fields)
    got = lib.ov_genai_generation_config_validate(cfg)
    lib.ov_genai_generation_config_free(cfg)
    event(f"expected {expected}")
    assert got == expected, fields


def test_set_eos_is_a_plain_set_and_stop_ids_replace_the_set(api):
    ffi, lib = api
    cfg = new_config(api, max_new_tokens=5, eos_token_id=9)
    assert lib.ov_genai_generation_config_validate(cfg) == UNKNOW_EXCEPTION  # upstream: eos not in stop ids
    assert lib.ov_genai_generation_config_set_stop_token_ids(cfg, ffi.new("int64_t[]", [9, 3]), 2) == OK
    assert lib.ov_genai_generation_config_validate(cfg) == OK
    assert lib.ov_genai_generation_config_set_stop_token_ids(cfg, ffi.new("int64_t[]", [1, 3]), 2) == OK
    assert lib.ov_genai_generation_config_validate(cfg) == UNKNOW_EXCEPTION  # 9 replaced away
    assert lib.ov_genai_generation_config_set_stop_token_ids(cfg, ffi.new("int64_t[]", [9]), 1) == OK
    assert lib.ov_genai_generation_config_validate(cfg) == OK
    lib.ov_genai_generation_config_free(cfg)


def test_config_null_args(api):
    ffi, lib = api
    assert lib.ov_genai_generation_config_create(ffi.NULL) == INVALID_C_PARAM
    assert lib.ov_genai_generation_config_set_max_new_tokens(ffi.NULL, 1) == INVALID_C_PARAM
    assert lib.ov_genai_generation_config_set_temperature(ffi.NULL, 1.0) == INVALID_C_PARAM
    assert lib.ov_genai_generation_config_validate(ffi.NULL) == INVALID_C_PARAM
    cfg = new_config(api)
    assert lib.ov_genai_generation_config_get_max_new_tokens(cfg, ffi.NULL) == INVALID_C_PARAM
    assert lib.ov_genai_generation_config_set_stop_strings(cfg, ffi.NULL, 2) == INVALID_C_PARAM
    assert lib.ov_genai_generation_config_set_stop_strings(cfg, ffi.NULL, 0) == INVALID_C_PARAM
    assert lib.ov_genai_generation_config_set_stop_strings(cfg, ffi.new("const char*[]", 1), 0) == OK
    assert lib.ov_genai_generation_config_set_stop_token_ids(cfg, ffi.NULL, 1) == INVALID_C_PARAM
    assert lib.ov_genai_generation_config_create_from_json(ffi.NULL, ffi.new("ov_genai_generation_config**")) == INVALID_C_PARAM
    lib.ov_genai_generation_config_free(cfg)


def test_create_from_json(api, tmp_path):
    ffi, lib = api
    pp = ffi.new("ov_genai_generation_config**")
    good = tmp_path / "generation_config.json"
    good.write_text(json.dumps({"max_new_tokens": 42, "do_sample": True, "temperature": 0.5, "top_p": 0.9,
                                "top_k": 20, "repetition_penalty": 1.1, "eos_token_id": [7, 8],
                                "num_beams": 1, "ignore_eos": False, "bos_token_id": 1}))
    assert lib.ov_genai_generation_config_create_from_json(str(good).encode(), pp) == OK
    assert config_json_text(api, pp[0]) == 42
    assert lib.ov_genai_generation_config_validate(pp[0]) == OK
    lib.ov_genai_generation_config_free(pp[0])

    bad_rule = tmp_path / "bad_rule.json"
    bad_rule.write_text('{"do_sample": true, "temperature": 0, "max_new_tokens": 3}')
    assert lib.ov_genai_generation_config_create_from_json(str(bad_rule).encode(), pp) == OK
    assert lib.ov_genai_generation_config_validate(pp[0]) == UNKNOW_EXCEPTION
    lib.ov_genai_generation_config_free(pp[0])

    broken = tmp_path / "broken.json"
    broken.write_text('{"max_new_tokens": ')
    assert lib.ov_genai_generation_config_create_from_json(str(broken).encode(), pp) == UNKNOW_EXCEPTION
    wrong_type = tmp_path / "wrong_type.json"
    wrong_type.write_text('{"max_new_tokens": "many"}')
    assert lib.ov_genai_generation_config_create_from_json(str(wrong_type).encode(), pp) == UNKNOW_EXCEPTION
    assert lib.ov_genai_generation_config_create_from_json(str(tmp_path / "missing.json").encode(), pp) == UNKNOW_EXCEPTION


# ------------------------------------------------------------------ JSON container
def test_json_roundtrip_keeps_order_and_is_compact(api):
    ffi, lib = api
    text = '{ "z": 1, "a": [true, false, null, -2.5, 1e3, "x\\u00e9\\n\\"q\\""], "m": {"k": {}}, "e": [] }'
    st, jc = json_new(api, text)
    assert st == JC_OK
    out = json_str(api, jc)
    assert out.startswith('{"z":1,"a":[true,false,null,-2.5,1000.0,')
    assert out.endswith(',"m":{"k":{}},"e":[]}')
    assert json.loads(out) == json.loads(text)
    lib.ov_genai_json_container_free(jc)


def test_json_unicode_and_duplicates(api):
    ffi, lib = api
    st, jc = json_new(api, '{"s": "\\ud83d\\ude00 caf\u00e9", "s": "again", "t": 1}')
    assert st == JC_OK
    assert json_str(api, jc) == '{"s":"again","t":1}'
    lib.ov_genai_json_container_free(jc)
    st, jc = json_new(api, '["\\ud83d\\ude00", "caf\u00e9"]')
    assert json.loads(json_str(api, jc)) == ["\U0001F600", "caf\u00e9"]
    lib.ov_genai_json_container_free(jc)


@pytest.mark.parametrize("num, dumped", [("1000.0", "1000.0"), ("1e3", "1000.0"), ("0.1", "0.1"),
                                         ("1e20", "1e+20"), ("1e-5", "1e-05"), ("0.0001", "0.0001"),
                                         ("-0.0", "-0.0"), ("0", "0"), ("-12", "-12"), ("123.456", "123.456"),
                                         ("1.5e300", "1.5e+300"), ("9223372036854775807", "9223372036854775807"),
                                         ("18446744073709551615", "18446744073709551615"),
                                         ("-9223372036854775809", "-9.223372036854776e+18"),
                                         ("1e400", "null")])
def test_json_numbers(api, num, dumped):
    ffi, lib = api
    st, jc = json_new(api, f"[{num}]")
    assert st == JC_OK
    assert json_str(api, jc) == f"[{dumped}]"
    lib.ov_genai_json_container_free(jc)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=_json_values, ensure_ascii=st.booleans())
def test_json_roundtrip_property(api, value, ensure_ascii):
    ffi, lib = api
    st_, jc = json_new(api, json.dumps(value, ensure_ascii=ensure_ascii))
    assert st_ == JC_OK
    out = json_str(api, jc)
    lib.ov_genai_json_container_free(jc)
    assert json.loads(out) == value
    if isinstance(value, dict):
        assert list(json.loads(out)) == list(value)  # insertion order kept


def _beyond_u64_as_float(v):
    """Integers outside int64/uint64 become doubles (as in nlohmann::json)."""
    if isinstance(v, int) and not isinstance(v, bool) and not -2**63 <= v < 2**64:
        return float(v)
    if isinstance(v, list):
        return [_beyond_u64_as_float(x) for x in v]
    if isinstance(v, dict):
        return {k: _beyond_u64_as_float(x) for k, x in v.items()}
    return v


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.binary(max_size=40) | st.text(alphabet='{}[]":,0123456789.eE+-tfrunlsa\\ ', max_size=30))
def test_json_parser_never_crashes(api, data):
    ffi, lib = api
    raw = data if isinstance(data, bytes) else data.encode()
    raw = raw.replace(b"\0", b"")
    pp = ffi.new("ov_genai_json_container**")
    status = lib.ov_genai_json_container_create_from_json_string(pp, raw)
    try:
        expected = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        expected = ValueError
    if status == JC_OK:
        out = json_str(api, pp[0])
        lib.ov_genai_json_container_free(pp[0])
        assert expected is not ValueError and json.loads(out) == _beyond_u64_as_float(expected)
    else:
        assert status == JC_INVALID_JSON


@pytest.mark.parametrize("bad", ["", "   ", "{", "[1,]", '{"a" 1}', "{'a':1}", "tru", "01", "1.", "[1] 2",
                                 '"\\ud800"', '"\\x"', '"a\nb"', "nul", "-", "[" * 1000 + "]" * 1000])
def test_json_malformed(api, bad):
    ffi, lib = api
    st, jc = json_new(api, bad)
    assert st == JC_INVALID_JSON and jc is None


def test_json_create_variants_and_two_call(api):
    ffi, lib = api
    pp = ffi.new("ov_genai_json_container**")
    assert lib.ov_genai_json_container_create(pp) == JC_OK
    assert json_str(api, pp[0]) == "{}"  # documented: create() is an empty object
    lib.ov_genai_json_container_free(pp[0])
    assert lib.ov_genai_json_container_create_array(pp) == JC_OK
    arr = pp[0]
    assert json_str(api, arr) == "[]"
    size = ffi.new("size_t*")
    assert lib.ov_genai_json_container_to_json_string(arr, ffi.NULL, size) == JC_OK
    assert size[0] == 3
    buf = ffi.new("char[]", 2)
    size[0] = 2
    assert lib.ov_genai_json_container_to_json_string(arr, buf, size) == JC_OUT_OF_BOUNDS
    size[0] = 100
    buf = ffi.new("char[]", 100)
    assert lib.ov_genai_json_container_to_json_string(arr, buf, size) == JC_OK
    assert size[0] == 3 and ffi.string(buf) == b"[]"
    assert lib.ov_genai_json_container_create_object(pp) == JC_OK
    obj = pp[0]
    assert lib.ov_genai_json_container_copy(obj, pp) == JC_OK
    assert pp[0] != obj and json_str(api, pp[0]) == "{}"
    for h in (arr, obj, pp[0]):
        lib.ov_genai_json_container_free(h)
    lib.ov_genai_json_container_free(ffi.NULL)
    assert lib.ov_genai_json_container_create(ffi.NULL) == JC_INVALID_PARAM
    assert lib.ov_genai_json_container_create_from_json_string(pp, ffi.NULL) == JC_INVALID_PARAM
    assert lib.ov_genai_json_container_to_json_string(ffi.NULL, ffi.NULL, size) == JC_INVALID_PARAM
    assert lib.ov_genai_json_container_copy(ffi.NULL, pp) == JC_INVALID_PARAM


# ------------------------------------------------------------------ chat history
def test_chat_history_statuses(api):
    ffi, lib = api
    hp = ffi.new("ov_genai_chat_history**")
    jp = ffi.new("ov_genai_json_container**")
    size, empty = ffi.new("size_t*"), ffi.new("int*")
    _, not_array = json_new(api, '{"role": "user"}')
    assert lib.ov_genai_chat_history_create_from_json_container(hp, not_array) == CH_INVALID_JSON
    _, arr = json_new(api, '[{"role": "system", "content": "be brief"}]')
    assert lib.ov_genai_chat_history_create_from_json_container(hp, arr) == CH_OK
    h = hp[0]
    assert lib.ov_genai_chat_history_size(h, size) == CH_OK and size[0] == 1
    assert lib.ov_genai_chat_history_push_back(h, arr) == CH_INVALID_JSON
    assert lib.ov_genai_chat_history_push_back(h, not_array) == CH_OK
    assert lib.ov_genai_chat_history_get_message(h, 1, jp) == CH_OK
    assert json_str(api, jp[0]) == '{"role":"user"}'
    lib.ov_genai_json_container_free(jp[0])
    assert lib.ov_genai_chat_history_get_message(h, 2, jp) == CH_OUT_OF_BOUNDS
    assert lib.ov_genai_chat_history_get_first(h, jp) == CH_OK
    first = jp[0]
    assert lib.ov_genai_chat_history_get_first(h, jp) == CH_OK
    assert jp[0] != first  # getters hand out new containers
    assert json.loads(json_str(api, first))["role"] == "system"
    lib.ov_genai_json_container_free(first)
    lib.ov_genai_json_container_free(jp[0])
    assert lib.ov_genai_chat_history_get_messages(h, jp) == CH_OK
    assert json.loads(json_str(api, jp[0])) == [{"role": "system", "content": "be brief"}, {"role": "user"}]
    lib.ov_genai_json_container_free(jp[0])
    assert lib.ov_genai_chat_history_pop_back(h) == CH_OK
    assert lib.ov_genai_chat_history_get_last(h, jp) == CH_OK
    assert json.loads(json_str(api, jp[0]))["role"] == "system"
    lib.ov_genai_json_container_free(jp[0])
    assert lib.ov_genai_chat_history_clear(h) == CH_OK
    assert lib.ov_genai_chat_history_empty(h, empty) == CH_OK and empty[0] == 1
    assert lib.ov_genai_chat_history_pop_back(h) == CH_EMPTY
    assert lib.ov_genai_chat_history_get_first(h, jp) == CH_EMPTY
    assert lib.ov_genai_chat_history_get_last(h, jp) == CH_EMPTY
    # tools / extra context
    assert lib.ov_genai_chat_history_get_tools(h, jp) == CH_OK
    assert json_str(api, jp[0]) == "[]"
    lib.ov_genai_json_container_free(jp[0])
    assert lib.ov_genai_chat_history_set_tools(h, not_array) == CH_INVALID_JSON
    _, tools = json_new(api, '[{"type": "function", "function": {"name": "f"}}]')
    assert lib.ov_genai_chat_history_set_tools(h, tools) == CH_OK
    assert lib.ov_genai_chat_history_get_tools(h, jp) == CH_OK
    assert json.loads(json_str(api, jp[0]))[0]["function"]["name"] == "f"
    lib.ov_genai_json_container_free(jp[0])
    _, extra = json_new(api, '{"enable_thinking": false}')
    assert lib.ov_genai_chat_history_set_extra_context(h, tools) == CH_INVALID_JSON
    assert lib.ov_genai_chat_history_set_extra_context(h, extra) == CH_OK
    assert lib.ov_genai_chat_history_get_extra_context(h, jp) == CH_OK
    assert json_str(api, jp[0]) == '{"enable_thinking":false}'
    lib.ov_genai_json_container_free(jp[0])
    # NULLs
    assert lib.ov_genai_chat_history_create(ffi.NULL) == CH_INVALID_PARAM
    assert lib.ov_genai_chat_history_push_back(h, ffi.NULL) == CH_INVALID_PARAM
    assert lib.ov_genai_chat_history_size(ffi.NULL, size) == CH_INVALID_PARAM
    assert lib.ov_genai_chat_history_get_messages(h, ffi.NULL) == CH_INVALID_PARAM
    for x in (not_array, arr, tools, extra):
        lib.ov_genai_json_container_free(x)
    lib.ov_genai_chat_history_free(h)
    lib.ov_genai_chat_history_free(ffi.NULL)


# ------------------------------------------------------------------ pipeline create
def test_create_rules(api, tmp_path):
    ffi, lib = api
    pp = ffi.new("ov_genai_llm_pipeline**")
    assert lib.ov_genai_llm_pipeline_create(str(tmp_path).encode(), b"CPU", 0, ffi.NULL) == INVALID_C_PARAM
    assert lib.ov_genai_llm_pipeline_create(ffi.NULL, b"CPU", 0, pp) == INVALID_C_PARAM
    assert create_pipeline(api, tmp_path / "missing")[0] == UNKNOW_EXCEPTION
    f = tmp_path / "file.txt"
    f.write_text("x")
    assert create_pipeline(api, f)[0] == UNKNOW_EXCEPTION
    assert create_pipeline(api, tmp_path, device=b"TPU")[0] == UNKNOW_EXCEPTION
    assert create_pipeline(api, tmp_path, device=b"CPUX")[0] == UNKNOW_EXCEPTION
    assert create_pipeline(api, tmp_path, props=["CACHE_DIR"])[0] == INVALID_C_PARAM  # odd count, as upstream
    assert create_pipeline(api, tmp_path, props=["NOT_A_PROPERTY", "1"])[0] == UNKNOW_EXCEPTION
    assert lib.ovd_live(b"pipeline") == 0
    for device in (b"CPU", b"GPU.0", b"AUTO:CPU", b"NPU"):
        st, p = create_pipeline(api, tmp_path, device=device,
                                props=["CACHE_DIR", "/tmp/c", "PERFORMANCE_HINT", "LATENCY"])
        assert st == OK, device
        lib.ov_genai_llm_pipeline_free(p)
    need = lib.ovd_last_properties(ffi.NULL, 0)
    buf = ffi.new("char[]", need)
    assert lib.ovd_last_properties(buf, need) == need
    assert ffi.string(buf) == b"CACHE_DIR=/tmp/c\nPERFORMANCE_HINT=LATENCY\n"
    lib.ov_genai_llm_pipeline_free(ffi.NULL)


def test_pipeline_config_from_models_dir(api, tmp_path):
    ffi, lib = api
    (tmp_path / "double_generation_config.json").write_text('{"max_new_tokens": 2, "eos_token_id": 2}')
    st, p = create_pipeline(api, tmp_path)
    assert st == OK
    cp = ffi.new("ov_genai_generation_config**")
    assert lib.ov_genai_llm_pipeline_get_generation_config(p, cp) == OK
    assert config_json_text(api, cp[0]) == 2
    lib.ov_genai_generation_config_free(cp[0])
    st, chunks, out, _ = generate(api, p, "one two three")
    assert st == OK and out == "Echo: one " and chunks == [b"Echo: ", b"one "]
    lib.ov_genai_llm_pipeline_free(p)


def test_get_set_generation_config(api, pipe):
    ffi, lib = api
    cp = ffi.new("ov_genai_generation_config**")
    assert lib.ov_genai_llm_pipeline_get_generation_config(pipe, cp) == OK
    first = cp[0]
    assert config_json_text(api, first) == SIZE_MAX
    assert lib.ov_genai_generation_config_validate(first) == OK  # pipeline config has eos 2
    lib.ov_genai_generation_config_set_max_new_tokens(first, 3)
    assert lib.ov_genai_llm_pipeline_get_generation_config(pipe, cp) == OK
    assert config_json_text(api, cp[0]) == SIZE_MAX  # get returned a copy
    lib.ov_genai_generation_config_free(cp[0])
    assert lib.ov_genai_llm_pipeline_set_generation_config(pipe, first) == OK
    lib.ov_genai_generation_config_free(first)  # set copied it in
    assert lib.ov_genai_llm_pipeline_get_generation_config(pipe, cp) == OK
    assert config_json_text(api, cp[0]) == 3
    lib.ov_genai_generation_config_free(cp[0])
    bad = new_config(api, max_new_tokens=3, num_return_sequences=0)
    assert lib.ov_genai_llm_pipeline_set_generation_config(pipe, bad) == UNKNOW_EXCEPTION
    lib.ov_genai_generation_config_free(bad)
    assert lib.ov_genai_llm_pipeline_set_generation_config(pipe, ffi.NULL) == INVALID_C_PARAM
    assert lib.ov_genai_llm_pipeline_get_generation_config(pipe, ffi.NULL) == INVALID_C_PARAM


# ------------------------------------------------------------------ generate
def test_generate_echo_words_and_perf(api, pipe):
    st, chunks, out, perf = generate(api, pipe, "What is  the capital?")
    assert st == OK
    assert out == "Echo: What is  the capital?"
    assert chunks == [b"Echo: ", b"What ", b"is  ", b"the ", b"capital?"]
    assert perf["load_time"] == 12.5
    assert perf["num_input_tokens"] == 4 and perf["num_generation_tokens"] == 5
    assert perf["ttft"] == (20.0, 0.0) and perf["tpot"] == (5.0, 0.0) and perf["ipot"] == (5.0, 0.0)
    assert perf["throughput"] == (200.0, 0.0)
    durations = [perf[k][0] for k in ("inference_duration", "generate_duration", "tokenization_duration",
                                      "detokenization_duration", "chat_template_duration")]
    assert len(set(durations)) == 5 and all(d > 0 for d in durations)


def test_generate_results_only_and_streamer_only(api, pipe):
    ffi, lib = api
    st, chunks, out, _ = generate(api, pipe, "hi", stream=False)
    assert st == OK and chunks == [] and out == "Echo: hi"
    before = lib.ovd_callback_count()
    st, chunks, out, _ = generate(api, pipe, "hi", want_results=False)
    assert st == OK and b"".join(chunks) == b"Echo: hi" and out is None
    assert lib.ovd_callback_count() - before == 2 and lib.ovd_last_callback_status() == RUNNING


def test_generate_null_args(api, pipe):
    ffi, lib = api
    rp = ffi.new("ov_genai_decoded_results**")
    assert lib.ov_genai_llm_pipeline_generate(pipe, ffi.NULL, ffi.NULL, ffi.NULL, rp) == INVALID_C_PARAM
    assert lib.ov_genai_llm_pipeline_generate(pipe, b"x", ffi.NULL, ffi.NULL, ffi.NULL) == INVALID_C_PARAM
    assert lib.ovd_last_generate_status() == INVALID_C_PARAM
    assert lib.ov_genai_llm_pipeline_generate(ffi.NULL, b"x", ffi.NULL, ffi.NULL, rp) == INVALID_C_PARAM
    assert lib.ov_genai_llm_pipeline_generate_with_history(pipe, ffi.NULL, ffi.NULL, ffi.NULL, rp) == INVALID_C_PARAM
    assert lib.ov_genai_llm_pipeline_start_chat(ffi.NULL) == INVALID_C_PARAM
    assert lib.ov_genai_decoded_results_get_string(ffi.NULL, ffi.NULL, ffi.new("size_t*")) == INVALID_C_PARAM
    assert lib.ov_genai_decoded_results_get_perf_metrics(ffi.NULL, ffi.new("ov_genai_perf_metrics**")) == INVALID_C_PARAM


def test_generate_invalid_config_and_eos_fill(api, pipe):
    ffi, lib = api
    bad = new_config(api, max_new_tokens=3, do_sample=True, temperature=0.0)
    assert generate(api, pipe, "x", cfg=bad)[0] == UNKNOW_EXCEPTION
    assert lib.ovd_last_generate_status() == UNKNOW_EXCEPTION
    lib.ov_genai_generation_config_free(bad)
    plain = new_config(api)  # unset eos, unlimited: invalid alone, but generate fills the model's eos
    assert lib.ov_genai_generation_config_validate(plain) == UNKNOW_EXCEPTION
    assert generate(api, pipe, "x", cfg=plain)[0] == OK
    assert lib.ovd_last_generate_status() == OK
    lib.ov_genai_generation_config_free(plain)


def test_max_new_tokens_and_max_length(api, pipe):
    ffi, lib = api
    cfg = new_config(api, max_new_tokens=2)
    st, chunks, out, perf = generate(api, pipe, "a b c d", cfg=cfg)
    assert out == "Echo: a " and len(chunks) == 2 and perf["num_generation_tokens"] == 2
    lib.ov_genai_generation_config_free(cfg)
    cfg = new_config(api, max_length=7)  # 4 input words -> 3 new tokens
    st, chunks, out, perf = generate(api, pipe, "a b c d", cfg=cfg)
    assert out == "Echo: a b " and perf["num_generation_tokens"] == 3
    lib.ov_genai_generation_config_free(cfg)


def test_chunk_bytes_split_utf8(api, pipe):
    ffi, lib = api
    reply = "héllo → wörld 😀"
    lib.ovd_set_reply(reply.encode())
    lib.ovd_set_chunk_bytes(3)
    st, chunks, out, _ = generate(api, pipe, "ignored")
    assert st == OK and out == reply
    raw = reply.encode()
    assert chunks == [raw[i:i + 3] for i in range(0, len(raw), 3)]
    assert any(_is_broken_utf8(c) for c in chunks)
    assert b"".join(chunks).decode() == reply


def _is_broken_utf8(b):
    try:
        b.decode()
        return False
    except UnicodeDecodeError:
        return True


@pytest.mark.parametrize("include, expected", [(False, "Echo: The capital "), (True, "Echo: The capital is")])
def test_stop_strings(api, pipe, include, expected):
    ffi, lib = api
    cfg = new_config(api, stop_strings=["is", "zzz"], include_stop_str_in_output=include)
    st, chunks, out, perf = generate(api, pipe, "The capital is Paris.", cfg=cfg)
    assert st == OK and out == expected
    assert b"".join(chunks).decode() == expected
    assert perf["num_generation_tokens"] == 4
    lib.ov_genai_generation_config_free(cfg)


def test_multiple_sequences_string(api, pipe):
    ffi, lib = api
    lib.ovd_set_reply(b"Paris.")
    cfg = new_config(api, max_new_tokens=4, do_sample=True, num_return_sequences=2)
    st, _, out, _ = generate(api, pipe, "q", cfg=cfg, stream=False)
    assert st == OK and out == "-1.000000: Paris.\n-1.000000: Paris."
    lib.ov_genai_generation_config_free(cfg)


def test_results_two_call_out_of_bounds(api, pipe):
    ffi, lib = api
    rp = ffi.new("ov_genai_decoded_results**")
    assert lib.ov_genai_llm_pipeline_generate(pipe, b"abc", ffi.NULL, ffi.NULL, rp) == OK
    size = ffi.new("size_t*")
    assert lib.ov_genai_decoded_results_get_string(rp[0], ffi.NULL, size) == OK
    assert size[0] == len("Echo: abc") + 1
    small = ffi.new("char[]", 4)
    size[0] = 4
    assert lib.ov_genai_decoded_results_get_string(rp[0], small, size) == OUT_OF_BOUNDS
    lib.ov_genai_decoded_results_free(rp[0])
    assert lib.ov_genai_decoded_results_create(rp) == OK
    assert results_string(api, rp[0]) == ""
    lib.ov_genai_decoded_results_free(rp[0])


def test_stop_and_cancel_in_chat(api, pipe):
    ffi, lib = api
    assert lib.ovd_chat_size(pipe) == -1
    assert lib.ov_genai_llm_pipeline_start_chat(pipe) == OK
    assert lib.ovd_chat_size(pipe) == 0
    st, chunks, out, _ = generate(api, pipe, "one two three", reply=[RUNNING, STOP])
    assert st == OK and out == "Echo: one " and len(chunks) == 2
    assert lib.ovd_last_callback_status() == STOP
    assert lib.ovd_chat_size(pipe) == 2  # STOP keeps the turn
    st, chunks, out, _ = generate(api, pipe, "four five", reply=[CANCEL])
    assert st == OK and out == "Echo: " and chunks == [b"Echo: "]
    assert lib.ovd_last_callback_status() == CANCEL
    assert lib.ovd_chat_size(pipe) == 2  # CANCEL drops prompt and answer
    assert generate(api, pipe, "six")[0] == OK
    assert lib.ovd_chat_size(pipe) == 4
    assert lib.ov_genai_llm_pipeline_finish_chat(pipe) == OK
    assert lib.ovd_chat_size(pipe) == -1
    assert generate(api, pipe, "seven")[0] == OK
    assert lib.ovd_chat_size(pipe) == -1


def test_generate_with_history(api, pipe):
    ffi, lib = api
    _, msgs = json_new(api, '[{"role":"user","content":"first q"},{"role":"assistant","content":"a"},'
                            '{"role":"user","content":"last question"}]')
    hp = ffi.new("ov_genai_chat_history**")
    assert lib.ov_genai_chat_history_create_from_json_container(hp, msgs) == CH_OK
    st, chunks, out, perf = generate(api, pipe, None, history=hp[0])
    assert st == OK and out == "Echo: last question" and perf["num_input_tokens"] == 2
    size = ffi.new("size_t*")
    assert lib.ov_genai_chat_history_size(hp[0], size) == CH_OK and size[0] == 3  # not appended
    lib.ov_genai_chat_history_free(hp[0])
    assert lib.ov_genai_chat_history_create(hp) == CH_OK
    st, _, out, _ = generate(api, pipe, None, history=hp[0])
    assert st == OK and out == "Echo: "
    lib.ov_genai_chat_history_free(hp[0])
    lib.ov_genai_json_container_free(msgs)


def test_perf_add_in_place(api, pipe):
    ffi, lib = api
    rp = ffi.new("ov_genai_decoded_results**")
    mp1, mp2 = ffi.new("ov_genai_perf_metrics**"), ffi.new("ov_genai_perf_metrics**")
    assert lib.ov_genai_llm_pipeline_generate(pipe, b"a b", ffi.NULL, ffi.NULL, rp) == OK
    assert lib.ov_genai_decoded_results_get_perf_metrics(rp[0], mp1) == OK
    assert lib.ov_genai_decoded_results_get_perf_metrics(rp[0], mp2) == OK
    assert mp1[0] != mp2[0]
    assert lib.ovd_live(b"perf_metrics") == 2
    lib.ov_genai_decoded_results_free(rp[0])
    assert lib.ov_genai_perf_metrics_add_in_place(mp1[0], mp2[0]) == OK
    d = perf_of_metrics(api, mp1[0])
    assert d["num_input_tokens"] == 4 and d["num_generation_tokens"] == 6
    assert d["ttft"] == (20.0, 0.0) and d["load_time"] == 12.5
    assert lib.ov_genai_perf_metrics_add_in_place(mp1[0], ffi.NULL) == INVALID_C_PARAM
    assert lib.ov_genai_perf_metrics_get_ttft(mp1[0], ffi.NULL, ffi.new("float*")) == INVALID_C_PARAM
    lib.ov_genai_decoded_results_perf_metrics_free(mp1[0])
    lib.ov_genai_decoded_results_perf_metrics_free(mp2[0])


# ------------------------------------------------------------------ fault injection
def test_fail_after_calls_is_persistent_until_reset(api, tmp_path):
    ffi, lib = api
    lib.ovd_fail(b"ov_genai_llm_pipeline_create", UNKNOW_EXCEPTION, 1)
    st, p = create_pipeline(api, tmp_path)
    assert st == OK
    lib.ov_genai_llm_pipeline_free(p)
    assert create_pipeline(api, tmp_path)[0] == UNKNOW_EXCEPTION
    assert create_pipeline(api, tmp_path)[0] == UNKNOW_EXCEPTION
    lib.ovd_reset()
    st, p = create_pipeline(api, tmp_path)
    assert st == OK
    lib.ov_genai_llm_pipeline_free(p)
    lib.ovd_fail(b"ov_genai_json_container_to_json_string", -4, 0)
    _, jc = json_new(api, "[]")
    assert lib.ov_genai_json_container_to_json_string(jc, ffi.NULL, ffi.new("size_t*")) == -4
    lib.ov_genai_json_container_free(jc)


def test_fail_generate_and_midstream(api, pipe):
    ffi, lib = api
    lib.ovd_fail(b"ov_genai_llm_pipeline_generate", -1, 0)
    st, chunks, _, _ = generate(api, pipe, "a b c")
    assert st == -1 and chunks == [] and lib.ovd_last_generate_status() == -1
    lib.ovd_reset()
    lib.ovd_fail(b"generate_midstream", UNKNOW_EXCEPTION, 2)
    st, chunks, out, _ = generate(api, pipe, "a b c")
    assert st == UNKNOW_EXCEPTION and chunks == [b"Echo: ", b"a "] and out is None
    assert lib.ovd_last_generate_status() == UNKNOW_EXCEPTION
    assert lib.ovd_live(b"results") == 0


# ------------------------------------------------------------------ threads
def _thread_log(api):
    ffi, lib = api
    need = lib.ovd_thread_log(ffi.NULL, 0)
    buf = ffi.new("char[]", need)
    assert lib.ovd_thread_log(buf, need) == need
    return [line.split() for line in ffi.string(buf).decode().splitlines()]


def test_thread_log_records_native_thread_ids(api, tmp_path):
    ffi, lib = api
    lib.ovd_clear_thread_log()
    box = {}

    def worker():
        st, p = create_pipeline(api, tmp_path)
        assert st == OK
        generate(api, p, "x")
        cp = ffi.new("ov_genai_generation_config**")
        lib.ov_genai_llm_pipeline_get_generation_config(p, cp)
        lib.ov_genai_llm_pipeline_set_generation_config(p, cp[0])
        lib.ov_genai_generation_config_free(cp[0])
        lib.ov_genai_llm_pipeline_start_chat(p)
        lib.ov_genai_llm_pipeline_finish_chat(p)
        box["tid"] = threading.get_native_id()
        lib.ov_genai_llm_pipeline_free(p)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    log = _thread_log(api)
    assert [op for op, _, _ in log] == ["create", "generate", "get_config", "set_config", "start_chat",
                                        "finish_chat", "free"]
    assert len({serial for _, serial, _ in log}) == 1
    assert {int(tid) for _, _, tid in log} == {box["tid"]}
    assert box["tid"] != threading.get_native_id()
    lib.ovd_clear_thread_log()
    assert _thread_log(api) == []


def test_concurrent_use_is_detected(api, pipe, tmp_path):
    ffi, lib = api
    lib.ovd_set_token_delay_us(20000)
    before = lib.ovd_concurrent_violations()
    errors = []

    def run():
        try:
            assert generate(api, pipe, "a b c d", stream=False)[0] == OK
        except AssertionError as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert lib.ovd_concurrent_violations() > before
    # two different pipelines in parallel are fine
    st, other = create_pipeline(api, tmp_path)
    before = lib.ovd_concurrent_violations()
    threads = [threading.Thread(target=lambda p=p: generate(api, p, "a b", stream=False)) for p in (pipe, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert lib.ovd_concurrent_violations() == before
    lib.ov_genai_llm_pipeline_free(other)


def test_token_delay_and_live_counters(api, tmp_path):
    import time
    ffi, lib = api
    assert lib.ovd_live(b"nonsense") == -1
    names = ("pipeline", "config", "results", "perf_metrics", "chat_history", "json_container")
    base = {k: lib.ovd_live(k.encode()) for k in names}
    total = lib.ovd_live(ffi.NULL)
    assert total == sum(base.values())
    st, p = create_pipeline(api, tmp_path)
    cfg = new_config(api, max_new_tokens=5)
    rp = ffi.new("ov_genai_decoded_results**")
    assert lib.ov_genai_llm_pipeline_generate(p, b"a b c d e f", cfg, ffi.NULL, rp) == OK
    kinds = {k: lib.ovd_live(k.encode()) - base[k] for k in names}
    assert kinds == {"pipeline": 1, "config": 1, "results": 1, "perf_metrics": 0, "chat_history": 0,
                     "json_container": 0}
    lib.ov_genai_decoded_results_free(rp[0])
    lib.ovd_set_token_delay_us(30000)
    t0 = time.monotonic()
    assert lib.ov_genai_llm_pipeline_generate(p, b"a b c d e f", cfg, ffi.NULL, rp) == OK
    assert time.monotonic() - t0 >= 0.1  # 4 gaps between 5 tokens
    lib.ov_genai_decoded_results_free(rp[0])
    lib.ov_genai_generation_config_free(cfg)
    lib.ov_genai_llm_pipeline_free(p)
    assert lib.ovd_live(ffi.NULL) == total


def test_c_stress_under_sanitizers(tmp_path):
    """Every area of the double, from C, on 4 threads, under ASan + UBSan + LeakSanitizer."""
    if os.environ.get("ABI_DOUBLE_QUICK"):
        pytest.skip("ABI_DOUBLE_QUICK set")
    mod = _load_build_module()
    try:
        cc = mod.find_compiler()
    except mod.CompilerNotFound:
        pytest.skip("no compiler")
    exe = tmp_path / "stress"
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-O0", "-pthread", "-fno-omit-frame-pointer",
             "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    build = subprocess.run([*cc, *flags, "-o", str(exe), str(HERE / "stress_main.c"), "-lm", "-ldl"],
                           capture_output=True, text=True)
    if build.returncode != 0 and "sanitize" in build.stderr:
        pytest.skip("compiler lacks sanitizer support: " + build.stderr[-200:])
    assert build.returncode == 0, build.stderr
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1")
    env.pop("LD_PRELOAD", None)
    run = subprocess.run([str(exe), str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "stress ok", run.stderr[-3000:]
