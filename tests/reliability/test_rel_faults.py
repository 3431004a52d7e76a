"""Faults injected into every C function the binding calls (the double's ovd_fail): each failing status becomes
the typed exception of the status table, its message names the C function, nothing native leaks, and the
pipeline works again once the fault is gone."""
from __future__ import annotations

import itertools
import random

import pytest

import ovgenai_c
from ovgenai_c import errors
from ovgenai_c.config import FIELDS, StopCriteria

from relsupport import STATS

# a valid non-default value per field (with the companions it needs), so that its setter is called
FIELD_CONFIGS = {
    "max_new_tokens": dict(max_new_tokens=6),
    "max_length": dict(max_length=100),
    "ignore_eos": dict(ignore_eos=True),
    "min_new_tokens": dict(min_new_tokens=1),
    "echo": dict(echo=True),
    "logprobs": dict(logprobs=1),
    "stop_strings": dict(stop_strings={"zz"}),
    "include_stop_str_in_output": dict(include_stop_str_in_output=True),
    "stop_token_ids": dict(stop_token_ids={7}),
    "num_beam_groups": dict(num_beams=2, num_beam_groups=2, diversity_penalty=1.0),
    "num_beams": dict(num_beams=2),
    "diversity_penalty": dict(num_beams=2, num_beam_groups=2, diversity_penalty=1.0),
    "length_penalty": dict(length_penalty=0.5),
    "num_return_sequences": dict(do_sample=True, num_return_sequences=2),
    "no_repeat_ngram_size": dict(no_repeat_ngram_size=3),
    "stop_criteria": dict(stop_criteria=StopCriteria.EARLY),
    "temperature": dict(temperature=0.5),
    "top_p": dict(top_p=0.5),
    "top_k": dict(top_k=5),
    "min_p": dict(min_p=0.1),
    "do_sample": dict(do_sample=True),
    "repetition_penalty": dict(repetition_penalty=1.1),
    "presence_penalty": dict(presence_penalty=0.1),
    "frequency_penalty": dict(frequency_penalty=0.1),
    "rng_seed": dict(rng_seed=3),
    "assistant_confidence_threshold": dict(assistant_confidence_threshold=0.5),
    "num_assistant_tokens": dict(num_assistant_tokens=2),
    "max_ngram_size": dict(num_assistant_tokens=2, max_ngram_size=2),
    "eos_token_id": dict(eos_token_id=5),
}
assert set(FIELD_CONFIGS) == set(FIELDS), set(FIELDS) ^ set(FIELD_CONFIGS)

OV = "ov"
PERF_FUNCS = ["ov_genai_perf_metrics_get_load_time", "ov_genai_perf_metrics_get_num_generation_tokens",
              "ov_genai_perf_metrics_get_num_input_tokens"] + [
    f"ov_genai_perf_metrics_get_{n}" for n in ("ttft", "tpot", "ipot", "throughput", "inference_duration",
                                               "generate_duration", "tokenization_duration",
                                               "detokenization_duration", "chat_template_duration")]

_HIST = [{"role": "system", "content": "s"}, {"role": "user", "content": "hello there"}]
_LONGER = itertools.count(1500)


def _longer_than_before(p):
    """A call whose answer is longer than any before it on the shared pipeline: it never fits the text buffer, which
    grows to the longest answer read (so the size query and the second call of the two-call protocol run)."""
    n = next(_LONGER) * 2
    return p.generate(" ".join(f"word{i}" for i in range(n)), max_new_tokens=n + 10)


def _history_call(p):
    h = ovgenai_c.ChatHistory(_HIST)
    h.set_tools([{"type": "function", "function": {"name": "f"}}])
    h.set_extra_context({"enable_thinking": False})
    return p.generate(h, max_new_tokens=5)


# (case id, C function to fail, `after` calls, family, call)
FAULTS = []
# assisted-generation fields: the binding refuses them before any C call (NotSupportedError), so their setters
# are never reached; test_assisted_fields_never_reach_c checks that instead of a fault in them
ASSISTED = ("assistant_confidence_threshold", "num_assistant_tokens", "max_ngram_size")
for _f, _kw in FIELD_CONFIGS.items():
    if _f in ASSISTED:
        continue
    FAULTS.append((f"setter-{_f}", f"ov_genai_generation_config_set_{_f}", 0, OV,
                   lambda p, kw=_kw: p.generate("a b", **{"max_new_tokens": 5, **kw})))
FAULTS += [
    # a per-call config is made only when the call before did not leave the same values cached (it used 5)
    ("config_create", "ov_genai_generation_config_create", 0, OV, lambda p: p.generate("a", max_new_tokens=6)),
    ("generate", "ov_genai_llm_pipeline_generate", 0, OV, lambda p: p.generate("a", max_new_tokens=5)),
    ("generate-stream", "ov_genai_llm_pipeline_generate", 0, OV, lambda p: list(p.stream("a", max_new_tokens=5))),
    # the text is read in one call into the pipeline's buffer; an answer that does not fit it takes the size
    # query and a second call (the two-call protocol), and a failure in any of them is raised
    ("get_string", "ov_genai_decoded_results_get_string", 0, OV, lambda p: p.generate("a", max_new_tokens=5)),
    ("get_string-size", "ov_genai_decoded_results_get_string", 1, OV,
     _longer_than_before),
    ("get_string-copy", "ov_genai_decoded_results_get_string", 2, OV,
     _longer_than_before),
    # the perf metrics (and the rest but the text) are read on first use: a failure is raised there
    ("get_perf_metrics", "ov_genai_decoded_results_get_perf_metrics", 0, OV,
     lambda p: p.generate("a", max_new_tokens=5).perf_metrics),
    ("json-messages", "ov_genai_json_container_create_from_json_string", 0, "json_container", _history_call),
    ("json-tools", "ov_genai_json_container_create_from_json_string", 1, "json_container", _history_call),
    ("json-extra", "ov_genai_json_container_create_from_json_string", 2, "json_container", _history_call),
    ("chat_history_create", "ov_genai_chat_history_create_from_json_container", 0, "chat_history", _history_call),
    ("chat_history_set_tools", "ov_genai_chat_history_set_tools", 0, "chat_history", _history_call),
    ("chat_history_set_extra", "ov_genai_chat_history_set_extra_context", 0, "chat_history", _history_call),
    ("generate_with_history", "ov_genai_llm_pipeline_generate_with_history", 0, OV, _history_call),
    ("start_chat", "ov_genai_llm_pipeline_start_chat", 0, OV, lambda p: p.start_chat()),
    ("finish_chat", "ov_genai_llm_pipeline_finish_chat", 0, OV, lambda p: p.finish_chat()),
    ("set_generation_config", "ov_genai_llm_pipeline_set_generation_config", 0, OV,
     lambda p: p.set_generation_config(ovgenai_c.GenerationConfig(max_new_tokens=7))),
    ("set_generation_config-create", "ov_genai_generation_config_create", 0, OV,
     lambda p: p.set_generation_config(ovgenai_c.GenerationConfig(max_new_tokens=7))),
]
# perf metrics are read on first use (the generated-token count with the results): a failing getter raises there
FAULTS += [(f"perf-{fn[len('ov_genai_perf_metrics_get_'):]}", fn, 0, OV,
            lambda p: p.generate("a", max_new_tokens=5).perf_metrics.get_ttft()) for fn in PERF_FUNCS]

STATUSES = {OV: [-17, -1, -14, -6], "chat_history": [-5, -4, -1], "json_container": [-4, -2, -1]}
TABLES = {OV: errors.exception_types("ov_status_e"),
          "chat_history": errors.exception_types("ov_genai_chat_history_status_e"),
          "json_container": errors.exception_types("ov_genai_json_container_status_e")}

PARAMS = []
for _id, _fn, _after, _fam, _call in FAULTS:
    for _st in STATUSES[_fam]:
        PARAMS.append(pytest.param(_fn, _after, _fam, _call, _st, id=f"{_id}[{_st}]"))


@pytest.mark.parametrize("function,after,family,call,status", PARAMS)
def test_fault_in_c_function(function, after, family, call, status, shared_pipe, dbl):
    STATS.case("faults")
    dbl.fail(function, status, after)
    with pytest.raises(TABLES[family][status]) as info:
        call(shared_pipe)
    assert function in str(info.value), str(info.value)
    assert info.value.status == status
    del info
    dbl.ctl.ovd_reset()
    if function.endswith("finish_chat"):
        shared_pipe.finish_chat()
    assert str(shared_pipe.generate("works again", max_new_tokens=5)) == "Echo: works again"
    shared_pipe.finish_chat()  # leave no chat mode behind for the next case


def test_faults_while_reading_the_config_at_create_do_not_fail_the_create(dbl, rel_model_dir):
    before = dbl.live("pipeline")
    for fn in ("ov_genai_llm_pipeline_get_generation_config", "ov_genai_generation_config_get_max_new_tokens"):
        STATS.case("faults")
        dbl.fail(fn, -17, 0)
        with ovgenai_c.LLMPipeline(rel_model_dir, library=dbl.library) as p:
            dbl.ctl.ovd_reset()
            assert str(p.generate("fine", max_new_tokens=3)) == "Echo: fine"
    assert dbl.live("pipeline") == before


@pytest.mark.parametrize("seed", range(20))
def test_midstream_failure_at_random_token(seed, shared_pipe, dbl):
    STATS.case("faults")
    rng = random.Random(seed)
    k = rng.randint(0, 8)
    status = rng.choice(sorted(errors.exception_types()))
    dbl.fail("generate_midstream", status, k)
    seen = []
    with pytest.raises(errors.exception_types()[status]):
        if rng.random() < 0.5:
            shared_pipe.generate("a b c d e f g h i j", max_new_tokens=50, streamer=seen.append)
        else:
            with shared_pipe.stream("a b c d e f g h i j", max_new_tokens=50) as it:
                for piece in it:
                    seen.append(piece)
    assert len(seen) == min(k, 11)
    dbl.ctl.ovd_reset()
    assert str(shared_pipe.generate("after", max_new_tokens=5)) == "Echo: after"


def test_invalid_utf8_from_the_library_never_breaks_the_binding(shared_pipe, dbl):
    """Bytes that are not UTF-8 (split or garbage) come out as text with U+FFFD, streamed pieces stay valid."""
    for raw in (b"ok \xff\xfe tail", b"\xc3", b"a\xe4\xb8", b"\xf0\x9f\x98", b"\xed\xa0\x80 surrogate",
                b"\xc0\xaf overlong", b"x" * 1000 + b"\x80"):
        STATS.case("faults")
        dbl.ctl.ovd_set_reply(raw)
        for chunk in (0, 1, 2, 3):
            dbl.ctl.ovd_set_chunk_bytes(chunk)
            pieces = []
            res = shared_pipe.generate("q", max_new_tokens=10000, streamer=pieces.append)
            text = str(res)
            assert "\ufffd" in text
            assert text == raw.decode("utf-8", "replace")
            assert "".join(pieces) == text, (raw, chunk, pieces)
            for p in pieces:
                p.encode("utf-8")
    dbl.ctl.ovd_reset()


@pytest.mark.parametrize("field", ASSISTED)
def test_assisted_fields_never_reach_c(shared_pipe, dbl, field):
    STATS.case("faults")
    dbl.fail(f"ov_genai_generation_config_set_{field}", -17)
    try:
        with pytest.raises(errors.NotSupportedError, match="assisted generation"):
            shared_pipe.generate("a b", **{"max_new_tokens": 5, **FIELD_CONFIGS[field]})
    finally:
        dbl.reset()
    assert shared_pipe.generate("a b", max_new_tokens=5)
