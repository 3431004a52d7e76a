"""GenerationConfig rules (Python precheck vs the library's validate), status table, import cost."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from ovgenai_c import _capi, errors
from ovgenai_c._capi import generation_config as native_config
from ovgenai_c.config import SIZE_MAX, GenerationConfig


def native_validate(lib, cfg: GenerationConfig) -> int:
    native = native_config.materialise(_capi.bind(lib), cfg)
    try:
        return int(lib.lib.ov_genai_generation_config_validate(native))
    finally:
        lib.ffi.release(native)


def _conforms(value, hint) -> bool:
    import typing

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is typing.Any:
        return True
    if origin is typing.Union:
        return any(_conforms(value, a) for a in args)
    if origin in (set, list):
        return isinstance(value, origin) and all(_conforms(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(_conforms(k, args[0]) and _conforms(v, args[1])
                                               for k, v in value.items())
    if origin is tuple:
        return isinstance(value, tuple) and len(value) == len(args) and all(map(_conforms, value, args))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def test_field_annotations_are_the_fields_and_their_types():
    """The class's annotations (what type checkers and editors see) name every field, and no other, with the type
    each reads back: on a default config and on one with every kind of value set."""
    import typing

    from ovgenai_c.config import FIELDS, PYTHON_FIELDS

    hints = typing.get_type_hints(GenerationConfig)
    assert set(hints) == set(FIELDS) | set(PYTHON_FIELDS)
    busy = GenerationConfig(max_new_tokens=5, stop_strings={"a", "b"}, stop_token_ids={1, 2}, num_assistant_tokens=3,
                            temperature=2, do_sample=True, eos_token_id=2, relevance_weight=1, parsers=[])
    for cfg in (GenerationConfig(), busy):
        for name, hint in hints.items():
            assert _conforms(getattr(cfg, name), hint), (name, getattr(cfg, name), hint)


def test_whisper_and_asr_field_annotations_too():
    import typing

    from ovgenai_c import ASRGenerationConfig, WhisperGenerationConfig
    from ovgenai_c.config import FIELDS, PYTHON_FIELDS
    from ovgenai_c.whisper_config import WHISPER_FIELDS

    for cls, extra in ((WhisperGenerationConfig, set()), (ASRGenerationConfig, {"context"})):
        hints = {k: v for k, v in typing.get_type_hints(cls).items() if not k.startswith("_")}
        assert set(hints) == set(FIELDS) | set(PYTHON_FIELDS) | set(WHISPER_FIELDS) | extra, cls
        busy = cls(language="en", task="transcribe", suppress_tokens=[1, 2], lang_to_id={"<|en|>": 50259},
                   alignment_heads=[(1, 2)], initial_prompt="x", max_new_tokens=3)
        for cfg in (cls(), busy):
            for name, hint in hints.items():
                assert _conforms(getattr(cfg, name), hint), (cls.__name__, name, getattr(cfg, name), hint)


def test_defaults_match_the_c_side(double):
    lib = double.library
    out = lib.ffi.new("ov_genai_generation_config**")
    lib.check(lib.lib.ov_genai_generation_config_create(out), "create")
    n = lib.ffi.new("size_t*")
    lib.lib.ov_genai_generation_config_get_max_new_tokens(out[0], n)
    assert n[0] == GenerationConfig().max_new_tokens == SIZE_MAX
    lib.lib.ov_genai_generation_config_free(out[0])
    g = GenerationConfig()
    assert (g.temperature, g.top_p, g.top_k, g.num_beams, g.eos_token_id, g.do_sample) == (1.0, 1.0, SIZE_MAX, 1, -1, False)
    # unset, as openvino_genai 2026.4 shows it (std::optional there); an explicit 0 is kept and sent
    assert g.num_assistant_tokens is None and not g.is_assisting_generation()
    assert "num_assistant_tokens" not in dict(g.non_default_items())
    g.num_assistant_tokens = 0
    assert dict(g.non_default_items())["num_assistant_tokens"] == 0 and not g.is_assisting_generation()
    g.num_assistant_tokens = None
    assert g.num_assistant_tokens is None and g == GenerationConfig()
    with pytest.raises(errors.InvalidParameterError, match="num_assistant_tokens must be an int or None"):
        g.num_assistant_tokens = 1.5


RULE_CASES = [
    dict(max_new_tokens=5, num_return_sequences=0),
    dict(max_new_tokens=5, stop_token_ids={-3}),
    dict(ignore_eos=True),
    dict(),
    dict(max_new_tokens=0),
    dict(max_new_tokens=3, min_new_tokens=4),
    dict(max_new_tokens=5, num_return_sequences=2),
    dict(max_new_tokens=5, frequency_penalty=2.5),
    dict(max_new_tokens=5, presence_penalty=-2.5),
    dict(max_new_tokens=5, repetition_penalty=0.0),
    dict(max_new_tokens=5, do_sample=True, top_p=0.0),
    dict(max_new_tokens=5, do_sample=True, temperature=0.0),
    dict(max_new_tokens=5, do_sample=True, min_p=1.0),
    dict(max_new_tokens=5, num_beams=3, num_beam_groups=2),
    dict(max_new_tokens=5, num_beams=2, num_return_sequences=3),
    dict(max_new_tokens=5, num_beams=2, do_sample=True),
    dict(max_new_tokens=5, num_beams=2, no_repeat_ngram_size=0),
    dict(max_new_tokens=5, num_beams=2, repetition_penalty=1.5),
]


@pytest.mark.parametrize("fields", RULE_CASES, ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()) or "empty")
def test_each_rule_is_caught_in_python_with_a_message_and_by_the_library(double, fields):
    cfg = GenerationConfig(**fields)
    with pytest.raises(errors.ConfigError) as info:
        cfg.validate()
    assert "invalid generation config" in str(info.value)
    assert native_validate(double.library, cfg) == -17


def test_eos_missing_from_stop_ids_is_reported():
    cfg = GenerationConfig(max_new_tokens=4, eos_token_id=7)
    cfg.stop_token_ids = {1}
    assert any("eos_token_id" in p for p in cfg.problems())


_cfg_strategy = st.fixed_dictionaries({}, optional={
    "max_new_tokens": st.sampled_from([0, 1, 5, SIZE_MAX]),
    "max_length": st.sampled_from([10, SIZE_MAX]),
    "min_new_tokens": st.sampled_from([0, 3, 10]),
    "ignore_eos": st.booleans(),
    "echo": st.booleans(),
    "do_sample": st.booleans(),
    "num_beams": st.sampled_from([1, 2, 4]),
    "num_beam_groups": st.sampled_from([1, 2, 3]),
    "num_return_sequences": st.sampled_from([0, 1, 2, 5]),
    "temperature": st.sampled_from([0.0, 0.5, 1.0]),
    "top_p": st.sampled_from([0.0, 0.5, 1.0]),
    "min_p": st.sampled_from([0.0, 0.5, 1.0]),
    "repetition_penalty": st.sampled_from([0.0, 1.0, 1.3]),
    "presence_penalty": st.sampled_from([-3.0, 0.0, 1.0]),
    "frequency_penalty": st.sampled_from([0.0, 2.5]),
    "no_repeat_ngram_size": st.sampled_from([0, 3, SIZE_MAX]),
    "stop_strings": st.sampled_from([set(), {"x"}]),
    "eos_token_id": st.sampled_from([-1, 2]),
    "diversity_penalty": st.sampled_from([0.0, 1.0]),
    "num_assistant_tokens": st.sampled_from([None, 0, 3]),
    "assistant_confidence_threshold": st.sampled_from([0.0, 0.4]),
    "max_ngram_size": st.sampled_from([0, 2]),
    "top_k": st.sampled_from([0, 5, SIZE_MAX]),
})


@settings(max_examples=300, deadline=None)
@given(fields=_cfg_strategy)
def test_python_rules_agree_with_the_librarys_validate(double_session, fields):
    cfg = GenerationConfig(**fields)
    python_ok = not cfg.problems()
    assert (native_validate(double_session.library, cfg) == 0) == python_ok, (fields, cfg.problems())


@pytest.mark.parametrize("field,value,exc", [
    ("max_new_tokens", -1, errors.InvalidParameterError), ("max_new_tokens", 2**64, errors.InvalidParameterError),
    ("max_new_tokens", "5", errors.InvalidParameterError), ("max_new_tokens", 1.5, errors.InvalidParameterError),
    ("temperature", float("nan"), errors.InvalidParameterError), ("temperature", float("inf"), errors.InvalidParameterError),
    ("temperature", "hot", errors.InvalidParameterError), ("do_sample", 1, errors.InvalidParameterError),
    ("stop_strings", "abc", errors.InvalidParameterError), ("stop_strings", {"a\0b"}, errors.InvalidParameterError),
    ("stop_strings", {"\ud800"}, errors.InvalidParameterError), ("stop_token_ids", {1.5}, errors.InvalidParameterError),
    ("eos_token_id", -5, errors.InvalidParameterError), ("stop_criteria", 9, errors.InvalidParameterError),
])
def test_field_type_and_range_errors_name_the_field(field, value, exc):
    with pytest.raises(exc) as info:
        GenerationConfig(**{field: value})
    assert field in str(info.value)
    assert isinstance(info.value, ValueError)


def test_unknown_field_is_a_type_error():
    with pytest.raises(TypeError, match="max_tokens"):
        GenerationConfig(max_tokens=3)
    with pytest.raises(AttributeError):
        GenerationConfig().not_a_field = 1


def test_generation_config_json(tmp_path):
    p = tmp_path / "generation_config.json"
    p.write_text(json.dumps({"max_new_tokens": 7, "eos_token_id": [2, 5], "do_sample": True, "temperature": 1,
                             "top_k": 20, "unknown_key": 1}))
    g = GenerationConfig(p)
    assert (g.max_new_tokens, g.eos_token_id, g.stop_token_ids, g.do_sample, g.top_k) == (7, 2, {2, 5}, True, 20)
    with pytest.raises(FileNotFoundError):
        GenerationConfig(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(errors.ConfigError, match="bad.json"):
        GenerationConfig(bad)


def test_status_tables_cover_every_status_and_inherit_builtins():
    for enum in ("ov_status_e", "ov_genai_chat_history_status_e", "ov_genai_json_container_status_e"):
        assert set(errors.status_names(enum)) - {0} == set(errors.exception_types(enum)), enum
    assert errors.status_names()[-17] == "UNKNOW_EXCEPTION"  # read from cdefs/00_ov_common.h
    for status, cls in errors.exception_types().items():
        e = errors.error_for(status, "f")
        assert isinstance(e, cls) and isinstance(e, errors.GenAIError) and e.status == status
    assert isinstance(errors.error_for(-5, "f"), LookupError)
    assert isinstance(errors.error_for(-6, "f"), IndexError)
    assert isinstance(errors.error_for(-10, "f"), MemoryError)
    assert isinstance(errors.error_for(-2, "f"), NotImplementedError)
    assert isinstance(errors.error_for(-14, "f"), ValueError)
    unknown = errors.error_for(-999, "f")
    assert isinstance(unknown, errors.GeneralError) and "UNKNOWN_STATUS_-999" in str(unknown)
    assert isinstance(errors.error_for(-3, "f", "ov_genai_chat_history_status_e"), errors.EmptyError)
    assert isinstance(errors.error_for(-2, "f", "ov_genai_json_container_status_e"), errors.InvalidJSONError)
    assert "does not report its text" in str(errors.error_for(-17, "f"))


def test_a_functions_status_family_comes_from_its_return_type(double):
    capi = _capi.bind(double.library)
    assert capi.status_enum("ov_genai_chat_history_set_tools") == "ov_genai_chat_history_status_e"
    assert capi.status_enum("ov_genai_json_container_create") == "ov_genai_json_container_status_e"
    assert capi.status_enum("ov_genai_llm_pipeline_generate") == "ov_status_e"
    with pytest.raises(TypeError, match="not a status"):
        capi.status_enum("ov_genai_llm_pipeline_free")  # void: nothing to check
    empty = capi.error(-3, "ov_genai_chat_history_size")
    assert isinstance(empty, errors.EmptyError) and empty.status_name == "OV_GENAI_CHAT_HISTORY_EMPTY"
    assert isinstance(capi.error(-3, "ov_genai_llm_pipeline_generate"), errors.NetworkNotLoadedError)
    assert isinstance(capi.error(-2, "ov_genai_json_container_copy"), errors.InvalidJSONError)


# (.wrapped: the cffi FFI inside _ffi.SerialisedTypesFFI)
_FFI_PROBE = ("from ovgenai_c import _ffi; f = _ffi.get_ffi(); "
              "print(type(f.wrapped).__module__, len(_ffi.required_functions()), len(_ffi.optional_functions()), "
              "len(_ffi.openvino_functions()), f.typeof('ov_status_e').relements['UNKNOW_EXCEPTION'])")


def test_the_ffi_is_precompiled_once_into_the_cache(tmp_path):
    """Out-of-line ABI mode: the first process writes the precompiled FFI module, later ones load it; both see the
    same declarations. Where the cache cannot be written, the declarations are parsed in-line instead."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OVGENAI_C_CACHE": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", _FFI_PROBE], capture_output=True, text=True, env=env, timeout=120,
                           check=True).stdout.split() for _ in range(2)]
    assert runs[0] == runs[1] == ["_cffi_backend", "83", "48", "38", "-17"]
    written = list((tmp_path / "cache" / "ffi").glob("ovgenai_c_ffi_*.py"))
    assert len(written) == 1 and written[0].read_text().startswith("# ovgenai_c precompiled FFI ")
    (tmp_path / "blocked").write_text("")  # a file where the cache folder should be: nothing can be written
    env["OVGENAI_C_CACHE"] = str(tmp_path / "blocked")
    inline = subprocess.run([sys.executable, "-c", _FFI_PROBE], capture_output=True, text=True, env=env, timeout=120,
                            check=True).stdout.split()
    assert inline == ["cffi.api", "83", "48", "38", "-17"]


@pytest.mark.parametrize("mode", ["precompiled", "in-line"])
def test_generate_stream_and_a_missing_extra_in_either_ffi_mode(double_lib_path, tmp_path, mode):
    """The same calls, callbacks and missing-symbol handling whether the FFI is the precompiled module or was
    parsed in this process (the cache could not be written)."""
    from abi_double.controls import make_model_dir

    model = make_model_dir(tmp_path / "m")
    (tmp_path / "blocked").write_text("")
    cache = tmp_path / ("cache" if mode == "precompiled" else "blocked")
    code = ("import ovgenai_c\nfrom ovgenai_c import _ffi, _loader\n"
            f"with ovgenai_c.LLMPipeline({str(model)!r}) as p:\n"
            "    r = p.generate('hi', max_new_tokens=4, streamer=lambda t: None)\n"
            "    s = ''.join(p.stream('hi', max_new_tokens=4))\n"
            "lib = _loader.get_library()\n"
            "f = _ffi.get_ffi()\n"
            "print(type(f.wrapped).__module__, r == s == 'Echo: hi', lib.has_extra('ovgenai_c_bundled_version'),"
            " _ffi.has_symbol(lib.lib, 'ovgenai_c_bundled_version'))\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OVGENAI_C_LIBRARY": str(double_lib_path),
           "OVGENAI_C_CACHE": str(cache)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    module = "_cffi_backend" if mode == "precompiled" else "cffi.api"
    assert out.stdout.split() == [module, "True", "False", "False"]


def test_import_loads_nothing_native():
    """``import ovgenai_c`` loads no native module (cffi, openvino), nor asyncio (~30 ms, imported by the code
    that streams asynchronously when it runs); its time is measured by the benchmark."""
    code = ("import sys; import ovgenai_c; "
            "print([m for m in sys.modules if m.startswith(('openvino', '_cffi', 'cffi', 'asyncio'))])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_library_anywhere_lists_every_place_tried(tmp_path):
    code = ("import ovgenai_c, ovgenai_c._loader as L\n"
            "L.bundled_candidates = lambda: [L.Path('/nonexistent/libovgenai_c_bundled.so')]\n"
            "try:\n    ovgenai_c.library_info()\nexcept ovgenai_c.LibraryNotFoundError as e:\n    print(e)\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # (a failing OPENVINO_GENAI_DIR stops discovery)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60).stdout
    assert "fetched archive" in out and "bundled backend" in out


def test_explicit_library_that_fails_does_not_fall_back(tmp_path):
    code = "import ovgenai_c\ntry:\n    ovgenai_c.library_info()\nexcept ovgenai_c.LibraryNotFoundError as e:\n    print(e)\n"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OVGENAI_C_LIBRARY": str(tmp_path / "missing.so")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60).stdout
    assert "OVGENAI_C_LIBRARY" in out and "missing.so" in out and "- bundled backend" not in out


def test_library_info_via_env(double_lib_path, tmp_path):
    code = ("import ovgenai_c, json, sys; i = ovgenai_c.library_info(); print(json.dumps(i)); "
            "print('openvino_genai' in sys.modules)")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OVGENAI_C_LIBRARY": str(double_lib_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60,
                         check=True).stdout.splitlines()
    info = json.loads(out[0])
    assert info["path"] == str(double_lib_path) and info["source"] == "OVGENAI_C_LIBRARY"
    assert info["missing_symbols"] == [] and info["declared_functions"] == 83
    assert out[1] == "False"


def _oracle_config(fields):
    ov_genai = pytest.importorskip("openvino_genai", reason="openvino_genai (the test oracle) is not installed")
    o = ov_genai.GenerationConfig()
    for k, v in fields.items():
        if k == "eos_token_id":
            o.set_eos_token_id(v) if v != -1 else None
        else:
            setattr(o, k, v)
    return o


@settings(max_examples=1000, deadline=None)
@given(fields=_cfg_strategy)
def test_python_rules_agree_with_upstream_validate(fields):
    """openvino_genai's own GenerationConfig.validate() is the oracle for the rules (test-only import)."""
    o = _oracle_config(fields)
    try:
        o.validate()
        upstream_ok = True
    except Exception:
        upstream_ok = False
    cfg = GenerationConfig(**fields)
    assert (not cfg.problems()) == upstream_ok, (fields, cfg.problems())


def test_a_generate_never_imports_openvino_genai(double_lib_path, tmp_path):
    from abi_double.controls import make_model_dir

    model = make_model_dir(tmp_path / "m")
    code = ("import sys, ovgenai_c\n"
            f"with ovgenai_c.LLMPipeline({str(model)!r}) as p:\n"
            "    r = p.generate('hi', max_new_tokens=4); s = ''.join(p.stream('hi', max_new_tokens=4))\n"
            "print(r == s, 'openvino_genai' in sys.modules, any(m.startswith('openvino') for m in sys.modules))\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OVGENAI_C_LIBRARY": str(double_lib_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60,
                         check=True).stdout.split()
    assert out == ["True", "False", "False"]
