"""A Whisper call's base GenerationConfig fields on the bundled backend (max_new_tokens, max_length, sampling,
penalties...: pybind's ``pipe.generate(audio, max_new_tokens=30)``, as upstream's own Whisper tests call it). The C
ABI sets only the Whisper fields; cdefs/95's ``ovgenai_c_bundled_whisper_generation_config_set_generation_config``
sets the rest from a base config.

- against openvino_genai (the oracle, in a child, same IR, f32): texts, chunks and token counts, call by call —
  length limits on one window, with timestamps and on long-form audio, sampling (temperature, top_k, top_p, seeds;
  several windows, each sampled from a fresh generator as GenAI does), penalties, a pipeline config set with them,
  ASRPipeline;
- beam search (GenAI's group beam search, diverse groups, length penalty, n-gram bans; one window, timestamps,
  long-form; ASR);
- the binding's rules: a streamer with beam search gets the chosen beam's text, the pipeline goes on; the official
  C ABI's refusal of base fields is in tests/binding/test_whisper_double.py;
- the C function's contract.
"""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np
import pytest

from test_whisper_bundled import F32, INVALID_C_PARAM, api, real_ir, speech  # noqa: F401
from whisper_support import run_oracle_cases

RUNNER = r'''
def run_case(mod, pipe, audio, case):
    if case.get("set"):  # the pipeline's own config, then a call without one
        cfg = pipe.get_generation_config()
        for k, v in case["set"].items():
            setattr(cfg, k, v)
        pipe.set_generation_config(cfg)
        r = pipe.generate(audio)
    else:
        r = pipe.generate(audio, **case["config"])
    chunks = r.chunks[0] if case.get("asr") and r.chunks is not None else r.chunks
    return {"text": r.texts[0], "chunks": None if chunks is None else [[c.start_ts, c.end_ts, c.text] for c in chunks],
            "tokens": len(r.perf_metrics.raw_metrics.m_new_token_times)}
'''

ORACLE = RUNNER + r'''
import json, sys
import numpy as np
import openvino_genai as og
ir, cases_path, out_path = sys.argv[1:4]
cases = json.load(open(cases_path))
shared, out = {}, []
for c in cases:  # one pipeline per kind, a fresh one for a case that sets the pipeline's own config
    cls = og.ASRPipeline if c.get("asr") else og.WhisperPipeline
    if c.get("set") or cls not in shared:
        pipe = cls(ir, "CPU", INFERENCE_PRECISION_HINT="f32")
        if not c.get("set"):
            shared[cls] = pipe
    out.append(run_case(og, shared.get(cls) if not c.get("set") else pipe, np.load(c["audio"]).astype(np.float32), c))
json.dump(out, open(out_path, "w"))
'''


def _library() -> str:
    from testsupport import bundled_library_path

    path = bundled_library_path()
    if path is None or not path.exists():
        pytest.skip("bundled backend not built; run scripts/build_backend.sh")
    return str(path)


def _ours(ir, cases: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    import ovgenai_c

    scope: Dict[str, Any] = {}
    exec(RUNNER, scope)
    shared: Dict[Any, Any] = {}
    out = []
    try:
        for c in cases:  # one pipeline per kind, a fresh one for a case that sets the pipeline's own config
            cls = ovgenai_c.ASRPipeline if c.get("asr") else ovgenai_c.WhisperPipeline
            if c.get("set"):
                with cls(str(ir), "CPU", library=_library(), **F32) as pipe:
                    out.append(scope["run_case"](ovgenai_c, pipe, c["audio"], c))
                continue
            if cls not in shared:
                shared[cls] = cls(str(ir), "CPU", library=_library(), **F32)
            out.append(scope["run_case"](ovgenai_c, shared[cls], c["audio"], c))
    finally:
        for pipe in shared.values():
            pipe.close()
    return out


def test_base_fields_exact_with_genai(api, whisper_real_ir, speech_samples, tmp_path):
    pytest.importorskip("openvino_genai")
    english = list(speech_samples.english)
    one, two = english[0].audio, english[1].audio
    long_audio = np.concatenate([s.audio for s in english[:8]])
    cases: List[Dict[str, Any]] = [
        {"name": "max_new_tokens 5", "audio": one, "config": {"max_new_tokens": 5}},
        {"name": "max_new_tokens 5, timestamps", "audio": one, "config": {"max_new_tokens": 5,
                                                                          "return_timestamps": True}},
        {"name": "max_new_tokens 10, long", "audio": long_audio, "config": {"max_new_tokens": 10}},
        {"name": "max_new_tokens 12, long, timestamps", "audio": long_audio,
         "config": {"max_new_tokens": 12, "return_timestamps": True}},
        {"name": "max_length 20", "audio": one, "config": {"max_length": 20}},
        {"name": "repetition_penalty", "audio": two, "config": {"repetition_penalty": 2.0}},
        {"name": "no_repeat_ngram_size", "audio": two, "config": {"no_repeat_ngram_size": 1}},
        {"name": "pipeline config max_new_tokens 7", "audio": two, "config": {}, "set": {"max_new_tokens": 7}},
        {"name": "asr max_new_tokens 6", "audio": two, "config": {"max_new_tokens": 6, "return_timestamps": True},
         "asr": True},
        # beam search: GenAI's group beam search over log-probabilities normalised before Whisper's masks
        {"name": "beams 4", "audio": one, "config": {"num_beams": 4}},
        {"name": "beams 3, timestamps", "audio": two, "config": {"num_beams": 3, "return_timestamps": True}},
        {"name": "beams 2, long", "audio": long_audio, "config": {"num_beams": 2}},
        {"name": "beams 3, long, timestamps", "audio": long_audio, "config": {"num_beams": 3,
                                                                             "return_timestamps": True}},
        {"name": "beam groups", "audio": one, "config": {"num_beams": 4, "num_beam_groups": 2,
                                                         "diversity_penalty": 1.0}},
        {"name": "beams, length penalty, max_new_tokens", "audio": two,
         "config": {"num_beams": 5, "length_penalty": 0.5, "max_new_tokens": 8}},
        {"name": "beams, no_repeat_ngram_size", "audio": one, "config": {"num_beams": 3, "no_repeat_ngram_size": 2}},
        {"name": "asr beams", "audio": one, "config": {"num_beams": 2, "return_timestamps": True}, "asr": True},
    ]
    for seed in (5, 9):  # (before windows were seeded afresh, seed 9 parted at the 2nd window, top_p seed 5 too)
        cases += [
            {"name": f"temperature 2 [{seed}]", "audio": one,
             "config": {"do_sample": True, "temperature": 2.0, "rng_seed": seed}},
            {"name": f"temperature 2, timestamps [{seed}]", "audio": one,
             "config": {"do_sample": True, "temperature": 2.0, "rng_seed": seed, "return_timestamps": True}},
            {"name": f"top_p [{seed}]", "audio": one,
             "config": {"do_sample": True, "top_p": 0.5, "temperature": 2.0, "rng_seed": seed,
                        "return_timestamps": True}},
            {"name": f"top_k [{seed}]", "audio": two,
             "config": {"do_sample": True, "top_k": 20, "temperature": 1.5, "rng_seed": seed}},
        ]
    # sampling across 30 s windows (each window sampled from a generator seeded afresh, as GenAI starts a request
    # per window): long audio has several windows whatever the sampled timestamps are (the short clip's sampled
    # timestamps ran past 30 s on one CPU and not on another)
    cases.append({"name": "temperature 1, long, timestamps [5]", "audio": long_audio,
                  "config": {"do_sample": True, "temperature": 1.0, "rng_seed": 5, "return_timestamps": True}})
    ours = _ours(whisper_real_ir, cases)
    theirs = run_oracle_cases(ORACLE, whisper_real_ir, cases, tmp_path)
    bad = [f"{c['name']}:\n  ours  {a}\n  genai {b}" for c, a, b in zip(cases, ours, theirs) if a != b]
    assert not bad, "\n".join(bad)
    by = {c["name"]: o for c, o in zip(cases, ours)}
    # what the cases show (so that a change in both libraries would be seen too)
    assert by["max_new_tokens 5"]["tokens"] == 5
    assert by["beams, length penalty, max_new_tokens"]["tokens"] <= 8
    assert by["pipeline config max_new_tokens 7"]["tokens"] == 7
    assert by["temperature 2 [5]"]["text"] != by["temperature 2 [9]"]["text"]  # the seeds count
    # a timestamp past 30 s comes from a later window (a window's own run to 30.00 at most)
    assert any(max(ch[0], ch[1]) > 30.0 for ch in by["temperature 1, long, timestamps [5]"]["chunks"])


def test_binding_rules(api, whisper_real_ir, speech_samples):
    import ovgenai_c
    from ovgenai_c import errors

    audio = speech_samples.english[0].audio
    with ovgenai_c.WhisperPipeline(str(whisper_real_ir), "CPU", library=_library(), **F32) as pipe:
        full = pipe.generate(audio)
        assert pipe.generate(audio, max_new_tokens=3).perf_metrics.get_num_generated_tokens() == 3
        beams = pipe.generate(audio, num_beams=3)
        assert beams.texts[0].strip()
        chunks: list = []  # a streamer with beam search: the chosen beam's text (test_whisper_streaming.py)
        two = pipe.generate(audio, streamer=chunks.append, num_beams=2)
        assert "".join(chunks) == two.texts[0] == pipe.generate(audio, num_beams=2).texts[0]
        assert "".join(pipe.stream(audio, num_beams=2)) == two.texts[0]
        with pytest.raises(errors.ConfigError):  # upstream's rule: one sequence
            pipe.generate(audio, num_beams=3, num_return_sequences=2)
        cfg = pipe.get_generation_config()
        cfg.max_new_tokens = 4
        pipe.set_generation_config(cfg)
        assert pipe.get_generation_config().max_new_tokens == 4
        assert pipe.generate(audio).perf_metrics.get_num_generated_tokens() == 4
        cfg.max_new_tokens = full.perf_metrics.get_num_generated_tokens() + 100
        pipe.set_generation_config(cfg)
        assert pipe.generate(audio).texts == full.texts
        with pytest.raises(errors.ConfigError):  # upstream's rules, in Python first
            pipe.generate(audio, do_sample=True, top_p=0.0)


def test_c_contract(api, real_ir, speech):
    ffi, lib = api.ffi, api.lib
    pipe = api.pipeline(real_ir)
    fn = lib.ovgenai_c_bundled_whisper_generation_config_set_generation_config
    cfg = api.config(pipe)
    base = ffi.new("ov_genai_generation_config**")
    assert lib.ov_genai_generation_config_create(base) == 0
    base = ffi.gc(base[0], lib.ov_genai_generation_config_free)
    assert lib.ov_genai_generation_config_set_max_new_tokens(base, 3) == 0
    assert lib.ov_genai_generation_config_set_eos_token_id(base, 50256) == 0
    assert fn(ffi.NULL, base) == INVALID_C_PARAM and "config" in api.last_error()
    assert fn(cfg, ffi.NULL) == INVALID_C_PARAM and "base" in api.last_error()
    assert fn(cfg, base) == 0
    copy = ffi.new("ov_genai_generation_config**")
    assert lib.ov_genai_whisper_generation_config_get_generation_config(cfg, copy) == 0
    n = ffi.new("size_t*")
    assert lib.ov_genai_generation_config_get_max_new_tokens(copy[0], n) == 0 and n[0] == 3
    lib.ov_genai_generation_config_free(copy[0])
    lang = ffi.new("bool*")
    assert lib.ov_genai_whisper_generation_config_get_is_multilingual(cfg, lang) == 0 and not lang[0]  # kept
    a = np.ascontiguousarray(speech[0], dtype=np.float32)
    r = ffi.new("ov_genai_whisper_decoded_results**")
    assert lib.ov_genai_whisper_pipeline_generate(pipe, ffi.cast("float*", a.ctypes.data), a.size, cfg, r) == 0
    pm = ffi.new("ov_genai_perf_metrics**")
    assert lib.ov_genai_whisper_decoded_results_get_perf_metrics(r[0], pm) == 0
    assert lib.ov_genai_perf_metrics_get_num_generation_tokens(pm[0], n) == 0 and n[0] == 3
    lib.ov_genai_decoded_results_perf_metrics_free(pm[0])
    lib.ov_genai_whisper_decoded_results_free(r[0])
