"""Property tests: random configurations, JSON texts and prompts never crash the backend and always
produce a documented status."""
from __future__ import annotations

import json

import pytest

hyp = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from helpers import Config, generate  # noqa: E402

SIZES = st.one_of(st.integers(0, 70), st.just(2**64 - 1), st.integers(0, 2**64 - 1))
FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=32)
FIELDS = {
    "max_new_tokens": SIZES, "max_length": SIZES, "min_new_tokens": SIZES, "ignore_eos": st.booleans(),
    "num_return_sequences": st.integers(0, 5), "num_beams": st.integers(1, 3), "do_sample": st.booleans(),
    "temperature": FLOATS, "top_p": FLOATS, "top_k": SIZES, "min_p": FLOATS, "repetition_penalty": FLOATS,
    "presence_penalty": FLOATS, "frequency_penalty": FLOATS, "rng_seed": st.integers(0, 2**32),
    "stop_token_ids": st.lists(st.integers(-5, 60000), max_size=3), "eos_token_id": st.integers(-2, 60000),
    "stop_strings": st.lists(st.text(min_size=1, max_size=4), max_size=2), "echo": st.booleans(),
    "include_stop_str_in_output": st.booleans(), "no_repeat_ngram_size": st.integers(0, 4),
}


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.fixed_dictionaries({}, optional=FIELDS))
def test_validate_returns_ok_or_17(api, fields):
    assert Config(api, **fields).validate() in (0, -17)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=64))
def test_json_parse_statuses(api, data):
    ffi, lib = api.ffi, api.lib
    p = ffi.new("ov_genai_json_container**")
    st_ = lib.ov_genai_json_container_create_from_json_string(p, data.replace(b"\0", b" "))
    assert st_ in (0, -2)
    if st_ == 0:
        text = api.json_text(p[0])
        assert json.loads(text) == json.loads(data.replace(b"\0", b" ").decode("utf-8").lstrip("\ufeff"))
        lib.ov_genai_json_container_free(p[0])


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(prompt=st.binary(max_size=40),
       fields=st.fixed_dictionaries({"max_new_tokens": st.integers(1, 6)},
                                    optional={k: FIELDS[k] for k in ("do_sample", "temperature", "top_p", "top_k",
                                                                   "min_p", "repetition_penalty", "stop_strings",
                                                                   "min_new_tokens", "num_return_sequences",
                                                                   "num_beams", "no_repeat_ngram_size")}))
def test_generate_never_crashes(api, tiny_pipe, prompt, fields):
    r = generate(api, tiny_pipe, prompt.replace(b"\0", b" "), Config(api, **fields))
    assert r.status in (0, -17), (r.status, api.last_error())
    if r.status == -17:
        assert api.last_error()
