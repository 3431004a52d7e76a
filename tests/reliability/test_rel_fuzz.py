"""Property-based fuzzing (hypothesis, derandomized so runs are reproducible): arbitrary text, arbitrary JSON
messages and arbitrary config values. Every example either works (and round-trips exactly on the double) or raises
a typed exception naming the problem; the pipeline stays usable; nothing native leaks."""
from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ovgenai_c
from ovgenai_c import errors
from ovgenai_c.config import FIELDS

from relsupport import STATS, TINY_IR
from testsupport import kept_native_objects, transient_native_objects

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

clean_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=80)
any_text = st.text(max_size=40)  # may hold NUL and lone surrogates
TYPED = (errors.GenAIError, TypeError, ValueError)


@FUZZ
@given(text=clean_text, chunk=st.integers(min_value=0, max_value=7))
def test_any_text_round_trips_through_the_double(shared_pipe, dbl, text, chunk):
    STATS.case("fuzz")
    dbl.ctl.ovd_set_chunk_bytes(chunk)
    try:
        pieces = []
        res = shared_pipe.generate(text, max_new_tokens=100000, streamer=pieces.append)
        assert str(res) == "Echo: " + text
        assert "".join(pieces) == "Echo: " + text
    finally:
        dbl.ctl.ovd_set_chunk_bytes(0)


@FUZZ
@given(text=any_text)
def test_text_with_nul_or_surrogates_is_refused_or_works(shared_pipe, dbl, text):
    STATS.case("fuzz")
    bad = "\0" in text or any(0xD800 <= ord(c) <= 0xDFFF for c in text)
    if bad:
        with pytest.raises(errors.InvalidParameterError, match="NUL|Unicode"):
            shared_pipe.generate(text, max_new_tokens=5)
    else:
        assert str(shared_pipe.generate(text, max_new_tokens=100000)) == "Echo: " + text


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                      st.floats(allow_nan=True, allow_infinity=True), any_text)
json_value = st.recursive(json_leaf, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                            st.dictionaries(any_text, kids, max_size=4)),
                          max_leaves=12)
message = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "assistant", "tool"]), "content": any_text}),
    st.dictionaries(st.sampled_from(["role", "content", "name", "tool_calls", "extra"]), json_value, max_size=4),
    json_value)


@FUZZ
@given(messages=st.lists(message, max_size=5))
def test_arbitrary_messages_are_refused_with_a_reason_or_work(shared_pipe, dbl, messages):
    STATS.case("fuzz")
    try:
        res = shared_pipe.generate(messages, max_new_tokens=5)
    except errors.GenAIError as exc:
        assert str(exc), "an error without a message"
        assert isinstance(exc, (errors.InvalidParameterError, errors.NotSupportedError)), repr(exc)
    else:  # a list of strings is a batch of prompts (str() then gives "score: text" lines): check every text
        assert res.texts and all(t.startswith("Echo:") for t in res.texts), res
    assert str(shared_pipe.generate("fine", max_new_tokens=5)) == "Echo: fine"


field_value = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**65), max_value=2**65),
                        st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5),
                        st.lists(st.one_of(st.integers(min_value=-5, max_value=2**64), st.text(max_size=3)),
                                 max_size=3),
                        st.frozensets(st.integers(min_value=-3, max_value=50), max_size=3))
config_kwargs = st.dictionaries(st.sampled_from(sorted(FIELDS)), field_value, min_size=1, max_size=4)


@FUZZ
@given(kwargs=config_kwargs)
def test_arbitrary_config_values_are_refused_with_a_reason_or_work(shared_pipe, dbl, kwargs):
    STATS.case("fuzz")
    kwargs.setdefault("max_new_tokens", 5)
    try:
        res = shared_pipe.generate("a b", **kwargs)
    except TYPED as exc:
        msg = str(exc)
        assert msg
        if isinstance(exc, errors.InvalidParameterError):
            assert any(name in msg for name in kwargs), (kwargs, msg)
    else:
        assert str(res).startswith("Echo:") or "\n" in str(res) or str(res).startswith("a b")
    assert str(shared_pipe.generate("fine", max_new_tokens=5)) == "Echo: fine"


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=clean_text, as_history=st.booleans())
def test_any_text_through_the_bundled_tokenizer(bundled_pipe, bundled_lib, text, as_history):
    STATS.case("fuzz")
    if as_history:
        res = bundled_pipe.generate([{"role": "user", "content": text}], max_new_tokens=2)
        bundled_pipe.finish_chat()
    else:
        res = bundled_pipe.generate(text, max_new_tokens=2)
    assert isinstance(str(res), str)
    assert res.perf_metrics.get_num_generated_tokens() <= 2
    # nothing native is left but the pipelines and what they keep between calls (testsupport.kept_native_objects)
    left = transient_native_objects(bundled_lib, ("config", "results", "perf_metrics", "chat_history", "json_container"))
    assert not any(left.values()), left
    assert bundled_lib.live_handles() == bundled_lib.live_handles("pipeline") + sum(
        kept_native_objects(bundled_lib.path).values())


@pytest.fixture(scope="module")
def bundled_pipe(bundled_lib):
    p = ovgenai_c.LLMPipeline(TINY_IR, library=bundled_lib)
    yield p
    p.close()
