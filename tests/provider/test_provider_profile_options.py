"""Strict profiles (errors name the field and the file) and the Ollama-style option mapping."""
from __future__ import annotations

import json

import pytest

from ovgenai_c.config import GenerationConfig
from ovgenai_c.provider import (OptionError, Profile, ProfileError, Provider, load_profile, profile_for,
                                profile_path_for, to_generation_kwargs)
from ovgenai_c.provider.options import FALLBACK_MAX_NEW_TOKENS
from provider_helpers import make_ir


def _write(tmp_path, text):
    p = tmp_path / "ovgenai_c.profile.json"
    p.write_text(text)
    return p


# --- profiles ---------------------------------------------------------------------------------------
def test_full_profile_decodes(tmp_path):
    p = _write(tmp_path, json.dumps({
        "context_length": 8192, "max_output_tokens": 256, "device": "GPU", "properties": {"CACHE_DIR": "/x"},
        "options": {"temperature": 0, "stop": "END"}, "capabilities": {"think": True, "tools": False},
        "tool_call_format": "hermes", "name": "m", "description": "d"}))
    prof = load_profile(p)
    assert prof.context_length == 8192 and prof.max_output_tokens == 256 and prof.device == "GPU"
    assert prof.properties == {"CACHE_DIR": "/x"}
    assert prof.options == {"temperature": 0.0, "stop": ["END"]}
    assert prof.capabilities == {"think": True, "tools": False}
    assert prof.path == str(p)


def test_misspelt_field_names_field_file_and_suggestion(tmp_path):
    p = _write(tmp_path, '{"max_ouput_tokens": 10}')
    with pytest.raises(ProfileError) as ei:
        load_profile(p)
    msg = str(ei.value)
    assert "'max_ouput_tokens'" in msg and str(p) in msg and "did you mean 'max_output_tokens'" in msg
    assert ei.value.field == "max_ouput_tokens" and ei.value.path == str(p)


def test_wrong_type_names_field_and_file(tmp_path):
    p = _write(tmp_path, '{"context_length": "4k"}')
    with pytest.raises(ProfileError, match=r"context_length.*must be a positive integer.*str") as ei:
        load_profile(p)
    assert str(p) in str(ei.value) and ei.value.field == "context_length"
    p = _write(tmp_path, '{"max_output_tokens": true}')
    with pytest.raises(ProfileError, match="max_output_tokens"):
        load_profile(p)
    p = _write(tmp_path, '{"device": 3}')
    with pytest.raises(ProfileError, match="'device' must be a string"):
        load_profile(p)


def test_negative_and_zero_sizes_rejected(tmp_path):
    p = _write(tmp_path, '{"max_output_tokens": -5}')
    with pytest.raises(ProfileError, match=r"'max_output_tokens' must not be negative, got -5") as ei:
        load_profile(p)
    assert str(p) in str(ei.value)
    p = _write(tmp_path, '{"context_length": 0}')
    with pytest.raises(ProfileError, match="'context_length' must be at least 1"):
        load_profile(p)


def test_nested_fields_are_strict_too(tmp_path):
    p = _write(tmp_path, '{"capabilities": {"tols": true}}')
    with pytest.raises(ProfileError, match=r"capabilities\.tols.*did you mean 'tools'"):
        load_profile(p)
    p = _write(tmp_path, '{"capabilities": {"chat": "yes"}}')
    with pytest.raises(ProfileError, match=r"capabilities\.chat.*true or false"):
        load_profile(p)
    p = _write(tmp_path, '{"capabilities": {"embed": true}}')
    with pytest.raises(ProfileError, match="no embedding pipeline"):
        load_profile(p)
    p = _write(tmp_path, '{"options": {"temprature": 0.5}}')
    with pytest.raises(ProfileError, match=r"options\.temprature.*did you mean 'temperature'") as ei:
        load_profile(p)
    assert str(p) in str(ei.value)
    p = _write(tmp_path, '{"tool_call_format": "hermès"}')
    with pytest.raises(ProfileError, match="tool_call_format"):
        load_profile(p)


def test_json_level_errors(tmp_path):
    with pytest.raises(ProfileError, match="appears twice"):
        load_profile(_write(tmp_path, '{"device": "CPU", "device": "GPU"}'))
    with pytest.raises(ProfileError, match="invalid JSON at line 1"):
        load_profile(_write(tmp_path, '{"device": '))
    with pytest.raises(ProfileError, match="must be a JSON object"):
        load_profile(_write(tmp_path, '[1, 2]'))
    with pytest.raises(ProfileError, match="NaN is not valid JSON"):
        load_profile(_write(tmp_path, '{"context_length": NaN}'))


def test_profile_location_and_absence(tmp_path):
    ir = make_ir(tmp_path / "ir")
    assert profile_path_for(ir) == ir / "ovgenai_c.profile.json"
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert profile_path_for(gguf) == tmp_path / "m.ovgenai_c.profile.json"
    assert profile_for(ir) == Profile()


def test_provider_refuses_bad_profile(tmp_path, ctl, pool):
    m = make_ir(tmp_path / "m", profile={"max_output_tokens": -1})
    with pytest.raises(ProfileError, match="max_output_tokens"):
        Provider(m, library=ctl.library, pool=pool)


def test_a_draft_model_in_the_profile_is_refused_by_name_on_another_library(tmp_path, ctl, pool):
    from ovgenai_c import NotSupportedError

    make_ir(tmp_path / "draft")
    m = make_ir(tmp_path / "m", profile={"draft_model": "../draft"})
    assert profile_for(m).draft_model_path() == tmp_path / "draft"
    with pytest.raises(NotSupportedError, match="field 'draft_model': speculative decoding runs on the bundled"):
        Provider(m, library=ctl.library, pool=pool)
    with pytest.raises(ProfileError, match="'draft_model' must not be empty"):
        Provider(make_ir(tmp_path / "e", profile={"draft_model": " "}), library=ctl.library, pool=pool)


# --- options ------------------------------------------------------------------------------------------
def test_option_mapping_onto_generation_config():
    kw = to_generation_kwargs({"num_predict": 20, "temperature": 0.7, "top_k": 40, "top_p": 0.9, "min_p": 0.05,
                               "seed": 7, "stop": ["\n\n", "END"], "repeat_penalty": 1.1, "presence_penalty": 0.5,
                               "frequency_penalty": 0.25})
    assert kw == {"max_new_tokens": 20, "do_sample": True, "temperature": 0.7, "top_k": 40, "top_p": 0.9,
                  "min_p": 0.05, "rng_seed": 7, "stop_strings": {"\n\n", "END"}, "repetition_penalty": 1.1,
                  "presence_penalty": 0.5, "frequency_penalty": 0.25}
    cfg = GenerationConfig(**kw)  # every mapped name is a real GenerationConfig field with a valid value
    cfg.validate()
    assert cfg.is_multinomial() and cfg.rng_seed == 7


def test_temperature_zero_is_greedy_and_knobs_imply_sampling():
    cap = {"max_new_tokens": FALLBACK_MAX_NEW_TOKENS}
    assert to_generation_kwargs({"temperature": 0, "top_k": 5}) == {**cap, "do_sample": False, "top_k": 5}
    assert to_generation_kwargs({"top_p": 0.5})["do_sample"] is True
    assert to_generation_kwargs({"seed": 1}) == {**cap, "rng_seed": 1}
    assert to_generation_kwargs({"top_k": 0}) == {**cap, "do_sample": True}  # 0 = no top-k filter
    assert to_generation_kwargs({"stop": "x"}) == {**cap, "stop_strings": {"x"}}


def test_clamped_to_max_output_tokens():
    assert to_generation_kwargs({"num_predict": 1000}, max_output_tokens=64)["max_new_tokens"] == 64
    assert to_generation_kwargs({"num_predict": 10}, max_output_tokens=64)["max_new_tokens"] == 10
    assert to_generation_kwargs({"num_predict": -1}, max_output_tokens=64)["max_new_tokens"] == 64
    assert to_generation_kwargs({}, max_output_tokens=64)["max_new_tokens"] == 64



def test_generation_always_ends_at_the_context_window_by_default():
    # no num_predict (or Ollama's -1 "no limit" / -2 "fill the context"): the context window caps the answer
    for opts in ({}, {"num_predict": -1}, {"num_predict": -2}):
        assert to_generation_kwargs(opts, context_length=8192)["max_new_tokens"] == 8192
        assert to_generation_kwargs(opts)["max_new_tokens"] == FALLBACK_MAX_NEW_TOKENS  # context unknown
        assert to_generation_kwargs(opts, max_output_tokens=64, context_length=8192)["max_new_tokens"] == 64
    assert to_generation_kwargs({"num_predict": 10}, context_length=8192)["max_new_tokens"] == 10


def test_provider_caps_answers_at_the_models_context_window(tmp_path, ctl, pool):
    import json as _json

    m = make_ir(tmp_path / "m")
    (m / "config.json").write_text(_json.dumps({"max_position_embeddings": 3}))
    p = Provider(m, library=ctl.library, pool=pool)
    assert p.capabilities.context_length == 3
    r = p.prompt_result("one two three four five six")  # the double echoes one word per token
    assert r.usage["completion_tokens"] == 3 and r.finish_reason == "length"
    m2 = make_ir(tmp_path / "m2", profile={"context_length": 2})
    r = Provider(m2, library=ctl.library, pool=pool).prompt_result("one two three four five six")
    assert r.usage["completion_tokens"] == 2 and r.finish_reason == "length"


@pytest.mark.parametrize("opts, pattern", [
    ({"num_predikt": 3}, r"unknown option 'num_predikt' \(did you mean 'num_predict'\?\)"),
    ({"mirostat": 1}, r"'mirostat' is not supported"),
    ({"num_ctx": 4096}, r"'num_ctx' is not supported"),
    ({"temperature": -1}, r"'temperature' must be >= 0"),
    ({"temperature": "hot"}, r"'temperature' must be a number"),
    ({"top_p": 0}, r"'top_p' must be in \(0, 1\]"),
    ({"num_predict": 0}, r"'num_predict' must be >= 1"),
    ({"num_predict": 2.5}, r"'num_predict' must be an integer"),
    ({"stop": ["a", 3]}, r"'stop' must be a str or a list of str"),
    ({"seed": -3}, r"'seed' must be >= 0"),
    ({"repeat_penalty": 0}, r"'repeat_penalty' must be > 0"),
])
def test_bad_options_named(opts, pattern):
    with pytest.raises(OptionError, match=pattern) as ei:
        to_generation_kwargs(opts)
    assert ei.value.option == next(iter(opts))


def test_options_applied_end_to_end(tmp_path, ctl, pool):
    m = make_ir(tmp_path / "m", profile={"max_output_tokens": 2, "options": {"temperature": 0}})
    p = Provider(m, library=ctl.library, pool=pool)
    assert p.capabilities.max_output_tokens == 2
    r = p.chat([{"role": "user", "content": "one two three four five"}], num_predict=100)
    assert r.usage["completion_tokens"] == 2 and r.finish_reason == "length"
    assert r.text == "Echo: one "
    r = p.chat([{"role": "user", "content": "one two three four five"}], num_predict=1)
    assert r.usage["completion_tokens"] == 1 and r.text == "Echo: "
    r = p.chat([{"role": "user", "content": "alpha beta"}], stop=["cho"], num_predict=-1)
    assert r.text == "E" and r.finish_reason == "stop"
    with pytest.raises(OptionError, match="unknown option 'bogus'"):
        p.prompt("x", bogus=1)
