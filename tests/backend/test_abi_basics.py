"""C ABI contract of the bundled backend that needs no model: exports, statuses, two-call strings,
generation-config validation, JSON containers, chat histories, perf metrics, bad model paths."""
from __future__ import annotations

import json
import pathlib
import re

import pytest

from helpers import Config

SIZE_MAX = 2**64 - 1
OK, NOT_IMPLEMENTED, OUT_OF_BOUNDS, INVALID_C_PARAM, UNKNOW_EXCEPTION = 0, -2, -6, -14, -17
JC_OK, JC_INVALID_PARAM, JC_INVALID_JSON, JC_OUT_OF_BOUNDS = 0, -1, -2, -3
CH_OK, CH_INVALID_PARAM, CH_OUT_OF_BOUNDS, CH_EMPTY, CH_INVALID_JSON = 0, -1, -2, -3, -4


def test_exports_every_declared_function(api):
    # (not `from conftest import CDEFS`: with tests/binding collected too, "conftest" may name that one)
    CDEFS = pathlib.Path(__file__).resolve().parents[2] / "cdefs"
    names = set()
    for h in CDEFS.glob("0*.h"):
        names |= set(re.findall(r"\b(ov_genai_\w+)\(", h.read_text()))
    # 83 of the LLM side + the 13 of vlm_pipeline.h (NOT_IMPLEMENTED: test_vlm_bundled) + the 57 of
    # whisper_generation_config.h and whisper_pipeline.h (tests/whisper/test_whisper_bundled.py)
    assert len(names) == 153
    missing = [n for n in sorted(names) if not hasattr(api.lib, n)]
    assert missing == []


def test_exports_every_declared_extra(api):
    """Every ovgenai_c_bundled_* function the binding declares (cdefs/9*.h; 94 is the relay's own library) is
    exported, and cdefs/95's Whisper extras are declared as the library's own header declares them."""
    CDEFS = pathlib.Path(__file__).resolve().parents[2] / "cdefs"
    names = set()
    for h in CDEFS.glob("9*.h"):
        if not h.name.startswith("94"):
            names |= set(re.findall(r"\b(ovgenai_c_bundled_\w+)\(", h.read_text()))
    assert "ovgenai_c_bundled_whisper_decoded_results_get_language" in names
    assert [n for n in sorted(names) if not hasattr(api.lib, n)] == []

    def declaration(text: str, name: str) -> str:
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        m = re.search(r"(?:ov_status_e|void)\s+" + name + r"\([^;]*\);", text)
        assert m, name
        return " ".join(m.group(0).split())

    native = (CDEFS.parent / "native" / "src" / "c_api" / "whisper_extras.h").read_text()
    ours = (CDEFS / "95_ovgenai_c_whisper.h").read_text()
    declared = re.findall(r"\b(ovgenai_c_bundled_\w+)\(", ours)
    # the language, the durations, the cancel switch's three, the streaming generate, the word timestamps' config
    # field (set, get) and results (count, word, token ids), the config's base fields
    assert len(declared) == 12
    assert "typedef struct ovgenai_c_whisper_cancel_opaque ovgenai_c_whisper_cancel;" in native and \
        "typedef struct ovgenai_c_whisper_cancel_opaque ovgenai_c_whisper_cancel;" in ours
    for name in declared:
        assert declaration(ours, name) == declaration(native, name)


def test_version_and_live_handles(api):
    assert api.ffi.string(api.lib.ovgenai_c_bundled_version()).startswith(b"ovgenai_c_bundled")
    assert api.live("no-such-kind") == -1
    before = api.live("config")
    c = Config(api)
    assert api.live("config") == before + 1
    assert api.live() >= 1
    del c
    assert api.live("config") == before


# ------------------------------------------------------------------ generation config

def test_config_defaults_and_getter(api):
    c = Config(api)
    out = api.ffi.new("size_t*")
    assert api.lib.ov_genai_generation_config_get_max_new_tokens(c.ptr, out) == OK
    assert out[0] == SIZE_MAX
    c.set(max_new_tokens=7)
    assert api.lib.ov_genai_generation_config_get_max_new_tokens(c.ptr, out) == OK
    assert out[0] == 7


def test_config_null_arguments(api):
    ffi, lib = api.ffi, api.lib
    assert lib.ov_genai_generation_config_create(ffi.NULL) == INVALID_C_PARAM
    assert lib.ov_genai_generation_config_set_max_new_tokens(ffi.NULL, 1) == INVALID_C_PARAM
    assert "NULL" in api.last_error()
    assert lib.ov_genai_generation_config_validate(ffi.NULL) == INVALID_C_PARAM
    c = Config(api)
    assert lib.ov_genai_generation_config_get_max_new_tokens(c.ptr, ffi.NULL) == INVALID_C_PARAM
    assert lib.ov_genai_generation_config_set_stop_strings(c.ptr, ffi.NULL, 0) == INVALID_C_PARAM
    lib.ov_genai_generation_config_free(ffi.NULL)  # no-op


VALID = dict(max_new_tokens=10)
INVALID_CASES = {
    "num_return_sequences_0": dict(max_new_tokens=10, num_return_sequences=0),
    "eos_not_in_stop_ids": dict(max_new_tokens=10, eos_token_id=5),
    "negative_stop_id": dict(max_new_tokens=10, stop_token_ids=[-3]),
    "ignore_eos_unlimited": dict(ignore_eos=True, stop_token_ids=[2], eos_token_id=2),
    "never_ends": dict(),
    "max_new_tokens_0": dict(max_new_tokens=0),
    "min_gt_max": dict(max_new_tokens=3, min_new_tokens=4),
    "nrs_greedy": dict(max_new_tokens=10, num_return_sequences=2),
    "freq_penalty_high": dict(max_new_tokens=10, frequency_penalty=2.5),
    "presence_penalty_low": dict(max_new_tokens=10, presence_penalty=-2.5),
    "repetition_penalty_0": dict(max_new_tokens=10, repetition_penalty=0.0),
    "top_p_0": dict(max_new_tokens=10, do_sample=True, top_p=0.0),
    "top_p_gt1": dict(max_new_tokens=10, do_sample=True, top_p=1.5),
    "temperature_0": dict(max_new_tokens=10, do_sample=True, temperature=0.0),
    "min_p_1": dict(max_new_tokens=10, do_sample=True, min_p=1.0),
    "beams_groups": dict(max_new_tokens=10, num_beams=3, num_beam_groups=2, diversity_penalty=1.0),
    "beams_lt_nrs": dict(max_new_tokens=10, num_beams=2, num_return_sequences=3),
    "beams_sample": dict(max_new_tokens=10, num_beams=2, do_sample=True),
    "beams_ngram_0": dict(max_new_tokens=10, num_beams=2, no_repeat_ngram_size=0),
    "beams_penalty": dict(max_new_tokens=10, num_beams=2, repetition_penalty=1.2),
    "beams_diversity_one_group": dict(max_new_tokens=10, num_beams=2, diversity_penalty=1.0),
}


@pytest.mark.parametrize("name", sorted(INVALID_CASES))
def test_config_validation_rejects(api, name):
    c = Config(api, **INVALID_CASES[name])
    assert c.validate() == UNKNOW_EXCEPTION
    assert api.last_error()  # our extra: the reason is kept


@pytest.mark.parametrize("fields", [
    VALID,
    dict(max_length=20),
    dict(eos_token_id=2, stop_token_ids=[2]),
    dict(stop_strings=["x"]),
    dict(max_new_tokens=10, do_sample=True, temperature=0.5, top_p=0.9, top_k=5, min_p=0.1, num_return_sequences=3),
    dict(max_new_tokens=0, echo=True),
    dict(max_new_tokens=5, min_new_tokens=5),
    dict(max_new_tokens=10, num_beams=4, num_beam_groups=2, diversity_penalty=1.0, num_return_sequences=4),
    dict(max_new_tokens=10, frequency_penalty=2.0, presence_penalty=-2.0, repetition_penalty=0.1),
])
def test_config_validation_accepts(api, fields):
    assert Config(api, **fields).validate() == OK


def test_config_setters_replace_sets(api):
    c = Config(api, max_new_tokens=5, stop_token_ids=[-1])
    assert c.validate() == UNKNOW_EXCEPTION
    c.set(stop_token_ids=[])
    assert c.validate() == OK
    # NULL entries in the string array are skipped
    ffi = api.ffi
    stop = ffi.new("char[]", b"stop")  # kept alive across the call
    arr = ffi.new("const char*[]", [ffi.NULL, stop])
    assert api.lib.ov_genai_generation_config_set_stop_strings(c.ptr, arr, 2) == OK


def test_config_from_json(api, tmp_path):
    p = tmp_path / "generation_config.json"
    p.write_text(json.dumps({"max_new_tokens": 33, "eos_token_id": 2, "do_sample": False}))
    out = api.ffi.new("ov_genai_generation_config**")
    assert api.lib.ov_genai_generation_config_create_from_json(str(p).encode(), out) == OK
    n = api.ffi.new("size_t*")
    assert api.lib.ov_genai_generation_config_get_max_new_tokens(out[0], n) == OK
    assert n[0] == 33
    assert api.lib.ov_genai_generation_config_validate(out[0]) == OK  # eos joined stop_token_ids
    api.lib.ov_genai_generation_config_free(out[0])
    assert api.lib.ov_genai_generation_config_create_from_json(str(tmp_path / "nope.json").encode(), out) == UNKNOW_EXCEPTION
    assert "nope.json" in api.last_error()
    (tmp_path / "bad.json").write_text("{not json")
    assert api.lib.ov_genai_generation_config_create_from_json(str(tmp_path / "bad.json").encode(), out) == UNKNOW_EXCEPTION


# ------------------------------------------------------------------ JSON container

def _jc(api, fn, *args):
    p = api.ffi.new("ov_genai_json_container**")
    st = getattr(api.lib, fn)(p, *args)
    return st, (p[0] if st == 0 else None)


def test_json_container_kinds_and_two_call(api):
    ffi, lib = api.ffi, api.lib
    for fn, text in (("ov_genai_json_container_create", "{}"), ("ov_genai_json_container_create_object", "{}"),
                     ("ov_genai_json_container_create_array", "[]")):
        st, c = _jc(api, fn)
        assert st == JC_OK and api.json_text(c) == text
        lib.ov_genai_json_container_free(c)
    st, c = _jc(api, "ov_genai_json_container_create_from_json_string", '{"b": [1, 2.5, "é"], "a": null}'.encode())
    assert st == JC_OK
    assert api.json_text(c) == '{"b":[1,2.5,"é"],"a":null}'
    size = ffi.new("size_t*")
    assert lib.ov_genai_json_container_to_json_string(c, ffi.NULL, size) == JC_OK
    need = size[0]
    assert need == len('{"b":[1,2.5,"é"],"a":null}'.encode()) + 1
    size[0] = need - 1
    buf = ffi.new("char[]", need)
    assert lib.ov_genai_json_container_to_json_string(c, buf, size) == JC_OUT_OF_BOUNDS
    size[0] = need
    assert lib.ov_genai_json_container_to_json_string(c, buf, size) == JC_OK and size[0] == need
    tgt = ffi.new("ov_genai_json_container**")
    assert lib.ov_genai_json_container_copy(c, tgt) == JC_OK
    assert api.json_text(tgt[0]) == api.json_text(c)
    lib.ov_genai_json_container_free(tgt[0])
    lib.ov_genai_json_container_free(c)


def test_json_container_errors(api):
    ffi, lib = api.ffi, api.lib
    st, _ = _jc(api, "ov_genai_json_container_create_from_json_string", b"{bad")
    assert st == JC_INVALID_JSON
    st, _ = _jc(api, "ov_genai_json_container_create_from_json_string", ffi.NULL)
    assert st == JC_INVALID_PARAM
    assert lib.ov_genai_json_container_create(ffi.NULL) == JC_INVALID_PARAM
    assert lib.ov_genai_json_container_to_json_string(ffi.NULL, ffi.NULL, ffi.new("size_t*")) == JC_INVALID_PARAM
    lib.ov_genai_json_container_free(ffi.NULL)


# ------------------------------------------------------------------ chat history

def _msg(api, obj):
    st, c = _jc(api, "ov_genai_json_container_create_from_json_string", json.dumps(obj).encode())
    assert st == JC_OK
    return c


def test_chat_history_lifecycle(api):
    ffi, lib = api.ffi, api.lib
    h = ffi.new("ov_genai_chat_history**")
    assert lib.ov_genai_chat_history_create(h) == CH_OK
    hist = h[0]
    empty, size = ffi.new("int*"), ffi.new("size_t*")
    assert lib.ov_genai_chat_history_empty(hist, empty) == CH_OK and empty[0] == 1
    out = ffi.new("ov_genai_json_container**")
    assert lib.ov_genai_chat_history_pop_back(hist) == CH_EMPTY
    assert lib.ov_genai_chat_history_get_first(hist, out) == CH_EMPTY
    assert lib.ov_genai_chat_history_get_last(hist, out) == CH_EMPTY
    m1, m2 = _msg(api, {"role": "user", "content": "hi"}), _msg(api, {"role": "assistant", "content": "yo"})
    assert lib.ov_genai_chat_history_push_back(hist, m1) == CH_OK
    assert lib.ov_genai_chat_history_push_back(hist, m2) == CH_OK
    arr = _msg(api, [1, 2])
    assert lib.ov_genai_chat_history_push_back(hist, arr) == CH_INVALID_JSON
    assert lib.ov_genai_chat_history_size(hist, size) == CH_OK and size[0] == 2
    assert lib.ov_genai_chat_history_get_message(hist, 5, out) == CH_OUT_OF_BOUNDS
    assert lib.ov_genai_chat_history_get_message(hist, 1, out) == CH_OK
    assert json.loads(api.json_text(out[0])) == {"role": "assistant", "content": "yo"}
    lib.ov_genai_json_container_free(out[0])
    assert lib.ov_genai_chat_history_get_first(hist, out) == CH_OK
    assert json.loads(api.json_text(out[0]))["content"] == "hi"
    lib.ov_genai_json_container_free(out[0])
    assert lib.ov_genai_chat_history_get_messages(hist, out) == CH_OK
    assert json.loads(api.json_text(out[0])) == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    lib.ov_genai_json_container_free(out[0])
    # tools / extra context
    assert lib.ov_genai_chat_history_get_tools(hist, out) == CH_OK and api.json_text(out[0]) == "[]"
    lib.ov_genai_json_container_free(out[0])
    assert lib.ov_genai_chat_history_get_extra_context(hist, out) == CH_OK and api.json_text(out[0]) == "{}"
    lib.ov_genai_json_container_free(out[0])
    obj = _msg(api, {"enable_thinking": False})
    assert lib.ov_genai_chat_history_set_tools(hist, obj) == CH_INVALID_JSON
    assert lib.ov_genai_chat_history_set_extra_context(hist, arr) == CH_INVALID_JSON
    assert lib.ov_genai_chat_history_set_extra_context(hist, obj) == CH_OK
    assert lib.ov_genai_chat_history_set_tools(hist, arr) == CH_OK
    assert lib.ov_genai_chat_history_get_extra_context(hist, out) == CH_OK
    assert json.loads(api.json_text(out[0])) == {"enable_thinking": False}
    lib.ov_genai_json_container_free(out[0])
    assert lib.ov_genai_chat_history_pop_back(hist) == CH_OK
    assert lib.ov_genai_chat_history_clear(hist) == CH_OK
    assert lib.ov_genai_chat_history_empty(hist, empty) == CH_OK and empty[0] == 1
    for c in (m1, m2, arr, obj):
        lib.ov_genai_json_container_free(c)
    lib.ov_genai_chat_history_free(hist)


def test_chat_history_from_container_and_nulls(api):
    ffi, lib = api.ffi, api.lib
    h = ffi.new("ov_genai_chat_history**")
    obj = _msg(api, {"role": "user"})
    assert lib.ov_genai_chat_history_create_from_json_container(h, obj) == CH_INVALID_JSON
    arr = _msg(api, [{"role": "user", "content": "a"}])
    assert lib.ov_genai_chat_history_create_from_json_container(h, arr) == CH_OK
    size = ffi.new("size_t*")
    assert lib.ov_genai_chat_history_size(h[0], size) == CH_OK and size[0] == 1
    assert lib.ov_genai_chat_history_create_from_json_container(h, ffi.NULL) == CH_INVALID_PARAM
    assert lib.ov_genai_chat_history_size(ffi.NULL, size) == CH_INVALID_PARAM
    assert lib.ov_genai_chat_history_push_back(h[0], ffi.NULL) == CH_INVALID_PARAM
    lib.ov_genai_chat_history_free(h[0])
    lib.ov_genai_json_container_free(obj)
    lib.ov_genai_json_container_free(arr)


# ------------------------------------------------------------------ decoded results / perf metrics

def test_empty_decoded_results_and_perf(api):
    ffi, lib = api.ffi, api.lib
    r = ffi.new("ov_genai_decoded_results**")
    assert lib.ov_genai_decoded_results_create(r) == OK
    assert api.results_text(r[0]) == ""
    size = ffi.new("size_t*")
    size[0] = 0
    assert lib.ov_genai_decoded_results_get_string(r[0], ffi.new("char[1]"), size) == OUT_OF_BOUNDS
    assert lib.ov_genai_decoded_results_get_string(r[0], ffi.NULL, ffi.NULL) == INVALID_C_PARAM
    pm = ffi.new("ov_genai_perf_metrics**")
    assert lib.ov_genai_decoded_results_get_perf_metrics(r[0], pm) == OK
    mean, std, n = ffi.new("float*"), ffi.new("float*"), ffi.new("size_t*")
    assert lib.ov_genai_perf_metrics_get_ttft(pm[0], mean, std) == OK and mean[0] == -1.0
    assert lib.ov_genai_perf_metrics_get_num_generation_tokens(pm[0], n) == OK and n[0] == 0
    assert lib.ov_genai_perf_metrics_get_tpot(pm[0], ffi.NULL, std) == INVALID_C_PARAM
    assert lib.ov_genai_perf_metrics_add_in_place(pm[0], pm[0]) == OK
    assert lib.ov_genai_perf_metrics_add_in_place(pm[0], ffi.NULL) == INVALID_C_PARAM
    lib.ov_genai_decoded_results_perf_metrics_free(pm[0])
    lib.ov_genai_decoded_results_free(r[0])
    lib.ov_genai_decoded_results_free(ffi.NULL)


# ------------------------------------------------------------------ pipeline create failures

def test_create_null_arguments(api):
    ffi, lib = api.ffi, api.lib
    p = ffi.new("ov_genai_llm_pipeline**")
    assert lib.ov_genai_llm_pipeline_create(ffi.NULL, b"CPU", 0, p) == INVALID_C_PARAM
    assert lib.ov_genai_llm_pipeline_create(b"/x", ffi.NULL, 0, p) == INVALID_C_PARAM
    assert lib.ov_genai_llm_pipeline_create(b"/x", b"CPU", 0, ffi.NULL) == INVALID_C_PARAM
    lib.ov_genai_llm_pipeline_free(ffi.NULL)
    assert lib.ov_genai_llm_pipeline_generate(ffi.NULL, b"x", ffi.NULL, ffi.NULL, ffi.new("ov_genai_decoded_results**")) == INVALID_C_PARAM
    assert lib.ov_genai_llm_pipeline_start_chat(ffi.NULL) == INVALID_C_PARAM


def test_create_missing_folder(api, create_pipe, tmp_path):
    st, _ = create_pipe(tmp_path / "does-not-exist")
    assert st == UNKNOW_EXCEPTION
    assert "does-not-exist" in api.last_error()


def test_create_folder_missing_files(api, create_pipe, tmp_path):
    (tmp_path / "openvino_model.xml").write_text("<net/>")
    st, _ = create_pipe(tmp_path)
    assert st == UNKNOW_EXCEPTION
    err = api.last_error()
    assert "openvino_tokenizer.xml" in err and "openvino_model.bin" in err


def test_create_gguf_path(api, create_pipe, tmp_path):
    """A .gguf path is read as a GGUF file (GenAI's rule): a file that is not one is refused saying why."""
    g = tmp_path / "model.gguf"
    g.write_bytes(b"GGUF")
    st, _ = create_pipe(g)
    assert st == UNKNOW_EXCEPTION
    assert "is not a GGUF file" in api.last_error() and str(g) in api.last_error()
    st, _ = create_pipe(tmp_path / "absent.gguf")
    assert st == UNKNOW_EXCEPTION
    assert "does not exist" in api.last_error()


def test_create_odd_property_count(api, tmp_path):
    ffi = api.ffi
    p = ffi.new("ov_genai_llm_pipeline**")
    st = api.lib.ov_genai_llm_pipeline_create(str(tmp_path).encode(), b"CPU", 1, p, ffi.new("char[]", b"CACHE_DIR"))
    assert st == UNKNOW_EXCEPTION
    assert "even" in api.last_error()
