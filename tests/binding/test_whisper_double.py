"""WhisperPipeline over the ABI double: names as openvino_genai's (the installed pybind module is the oracle for
names, defaults and validation), audio input rules, every config field reaching C, the owner thread, errors and
handle accounting, and the honest no-cancellation model (timeouts abandon the wait, C runs to its end)."""
from __future__ import annotations

import dataclasses
import gc
import inspect
import json
import os
import subprocess
import sys
import threading
import time
import wave
from pathlib import Path

import numpy as np
import pytest

import ovgenai_c
from ovgenai_c import _ffi, _interpreter, audio, errors
from ovgenai_c._capi import whisper_pipeline as capi_whisper
from ovgenai_c.whisper_config import C_FIELDS, WhisperGenerationConfig
from ovgenai_c.whisper_pipeline import WhisperPipeline

from abi_double.controls import WHISPER_GENERATION_CONFIG as GENERATION_CONFIG, make_whisper_dir

ROOT = Path(__file__).resolve().parents[2]
TONE = (0.5 * np.sin(np.arange(16000 * 2) / 7.0)).astype(np.float32)


@pytest.fixture
def whisper_dir(tmp_path) -> Path:
    return make_whisper_dir(tmp_path / "whisper")


@pytest.fixture
def make_whisper(double, whisper_dir):
    made = []

    def _make(**kw):
        p = WhisperPipeline(whisper_dir, "CPU", library=double.library, **kw)
        made.append(p)
        return p

    yield _make
    for p in made:
        p.close()


def echo(samples: np.ndarray, task: str = "transcribe", lang: str = "auto", extra: str = "") -> str:
    """The double's fake transcription of ``samples`` (see abi_double.c, the Whisper section)."""
    x = samples.astype(np.float32)
    total = float(np.sum(x.astype(np.float64)))
    peak = float(np.max(np.abs(x)))
    return f" {task} {lang} {x.size} samples sum {total:.4f} peak {peak:.4f}{extra}"


def _ops(double):
    return [op for op, _, _ in double.thread_log()]


def _write_wav(path: Path, frames: bytes, width: int, channels: int = 1, rate: int = 16000) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(frames)
    return path


# ------------------------------------------------------------------ names, defaults, validation (the oracle)
def test_the_whisper_functions_are_optional_and_resolve_on_the_double(double):
    assert len(_ffi.whisper_functions()) == 57
    assert not set(_ffi.whisper_functions()) & set(_ffi.required_functions())
    assert len(_ffi.required_functions()) == 83
    assert all(double.library.has_extra(n) for n in _ffi.whisper_functions())
    assert ovgenai_c.WhisperPipeline is WhisperPipeline
    assert ovgenai_c.WhisperGenerationConfig is WhisperGenerationConfig


def test_names_are_openvino_genais():
    og = pytest.importorskip("openvino_genai")
    theirs = {n for n in dir(og.WhisperGenerationConfig()) if not n.startswith("_")}
    ours = WhisperGenerationConfig()
    assert sorted(n for n in theirs if not hasattr(ours, n)) == []
    pipe_names = {n for n in dir(og.WhisperPipeline) if not n.startswith("_")}
    assert sorted(n for n in pipe_names if not hasattr(WhisperPipeline, n)) == []
    params = list(inspect.signature(WhisperPipeline.generate).parameters)
    assert params[1:4] == ["raw_speech_input", "generation_config", "streamer"]
    results_cls = getattr(og, "WhisperDecodedResults", None) or og.ASRDecodedResults
    res = ovgenai_c.WhisperDecodedResults([" a"], [1.0])
    not_in_the_abi = {"languages", "language"}  # the detected language: whisper_pipeline.h does not return it
    missing = sorted(n for n in dir(results_cls) if not n.startswith("_") and not hasattr(res, n))
    assert set(missing) <= not_in_the_abi
    chunk_cls = getattr(og, "WhisperDecodedResultChunk", None) or og.ASRDecodedResultChunk
    chunk = ovgenai_c.WhisperDecodedResultChunk()
    assert sorted(n for n in dir(chunk_cls) if not n.startswith("_") and not hasattr(chunk, n)) in ([], ["token_ids"])


def test_defaults_are_openvino_genais():
    og = pytest.importorskip("openvino_genai")
    theirs, ours = og.WhisperGenerationConfig(), WhisperGenerationConfig()
    for name in (*C_FIELDS, "lang_to_id", "word_timestamps", "alignment_heads", "max_new_tokens", "max_length",
                 "eos_token_id", "apply_chat_template", "num_return_sequences", "do_sample"):
        assert getattr(ours, name) == getattr(theirs, name), name


def test_from_json_path_reads_what_openvino_genai_reads(tmp_path):
    og = pytest.importorskip("openvino_genai")
    path = tmp_path / "generation_config.json"
    path.write_text(json.dumps({**GENERATION_CONFIG, "is_multilingual": True, "no_timestamps_token_id": 50999,
                                "task_to_id": {"transcribe": 1, "translate": 2}}))
    theirs, ours = og.WhisperGenerationConfig(str(path)), WhisperGenerationConfig(path)
    for name in (*C_FIELDS, "lang_to_id", "max_length", "eos_token_id", "stop_token_ids"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert [tuple(p) for p in theirs.alignment_heads] == [tuple(p) for p in ours.alignment_heads]
    assert (ours.transcribe_token_id, ours.translate_token_id) == (1, 2)


def test_from_json_path_errors_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError):
        WhisperGenerationConfig(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"pad_token_id": "x"}))
    with pytest.raises(errors.ConfigError, match="pad_token_id"):
        WhisperGenerationConfig(bad)


WALK = [
    dict(max_new_tokens=5, lang_to_id={"<|en|>": 1}),
    dict(max_new_tokens=5, lang_to_id={"<|en|>": 1}, language="en"),
    dict(max_new_tokens=5, lang_to_id={"<|en|>": 1}, language="<|en|>"),
    dict(max_new_tokens=5, lang_to_id={"<|en|>": 1}, language="de"),
    dict(max_new_tokens=5, lang_to_id={}),
    dict(max_new_tokens=5, lang_to_id={"<|en|>": 1}, task="translate"),
    dict(max_new_tokens=5, lang_to_id={"<|en|>": 1}, task="transcribe"),
    dict(max_new_tokens=5, lang_to_id={"<|en|>": 1}, task="summarise"),
    dict(max_new_tokens=5, is_multilingual=False),
    dict(max_new_tokens=5, is_multilingual=False, language="en"),
    dict(max_new_tokens=5, is_multilingual=False, task="transcribe"),
    dict(max_new_tokens=5, is_multilingual=False, num_return_sequences=2, do_sample=True),
    dict(max_new_tokens=5, is_multilingual=False, num_assistant_tokens=3),
    dict(max_new_tokens=5, is_multilingual=False, word_timestamps=True),
    dict(max_new_tokens=5, is_multilingual=False, word_timestamps=True, alignment_heads=[(1, 2)]),
    dict(is_multilingual=False),
    dict(is_multilingual=False, eos_token_id=3, stop_token_ids={3}),
    dict(max_new_tokens=0, is_multilingual=False),
]


@pytest.mark.parametrize("fields", WALK, ids=range(len(WALK)))
def test_validation_agrees_with_openvino_genai(fields):
    og = pytest.importorskip("openvino_genai")
    theirs, ours = og.WhisperGenerationConfig(), WhisperGenerationConfig()
    for name, value in fields.items():  # (pybind's kwargs cannot take alignment_heads; attributes can)
        setattr(theirs, name, value)
        setattr(ours, name, value)
    try:
        theirs.validate()
        their_error = None
    except RuntimeError as exc:
        their_error = str(exc)
    problems = ours.problems()
    assert bool(problems) == (their_error is not None), (problems, their_error)
    if their_error is not None:
        with pytest.raises(errors.ConfigError):
            ours.validate()
        if "whisper/" in their_error:  # upstream failed on a Whisper rule: ours states it with upstream's words
            heads = [p.split(" (")[0] for p in problems]
            assert any(h in their_error for h in heads), (problems, their_error)


def test_field_types_are_checked_on_assignment():
    cfg = WhisperGenerationConfig()
    for name, value in [("language", 3), ("task", b"x"), ("return_timestamps", 1), ("pad_token_id", 1.5),
                        ("max_initial_timestamp_index", -1), ("suppress_tokens", "12"), ("begin_suppress_tokens", [1.0]),
                        ("lang_to_id", [("en", 1)]), ("alignment_heads", [(1,)]), ("hotwords", "a\0b")]:
        with pytest.raises(errors.InvalidParameterError, match=name):
            setattr(cfg, name, value)
    with pytest.raises(AttributeError):
        cfg.no_such_field = 1
    with pytest.raises(TypeError, match="bogus"):
        WhisperGenerationConfig(bogus=1)


# ------------------------------------------------------------------ the pipeline on the double
def test_create_generate_free_run_on_the_owner_thread(double, whisper_dir):
    caller = threading.get_native_id()
    pipe = WhisperPipeline(whisper_dir, "CPU", library=double.library)
    owner = pipe.owner_thread_id
    res = pipe.generate(TONE)
    pipe.set_generation_config(pipe.get_generation_config())
    pipe.close()
    log = double.thread_log()
    assert {"whisper_create", "whisper_generate", "whisper_get_config", "whisper_set_config", "whisper_free"} <= \
        {op for op, _, _ in log}
    assert all(tid == owner for _, _, tid in log) and owner != caller
    assert res.texts == [echo(TONE)] and res.scores == [1.0] and res.chunks is None and str(res) == echo(TONE)
    assert double.live() == 0
    with pytest.raises(errors.PipelineClosedError):
        pipe.generate(TONE)


def test_the_config_starts_as_the_models(make_whisper):
    cfg = make_whisper().get_generation_config()
    assert isinstance(cfg, WhisperGenerationConfig)
    assert cfg.lang_to_id == GENERATION_CONFIG["lang_to_id"]
    assert cfg.suppress_tokens == [1, 2, 7, 8] and cfg.begin_suppress_tokens == [220, 50257]
    assert (cfg.eos_token_id, cfg.max_length, cfg.language, cfg.task) == (50257, 448, None, None)


def test_every_whisper_field_reaches_c(make_whisper):
    pipe = make_whisper()
    values = dict(decoder_start_token_id=1, pad_token_id=2, translate_token_id=3, transcribe_token_id=4,
                  prev_sot_token_id=5, no_timestamps_token_id=6, max_initial_timestamp_index=7, language="<|fr|>",
                  task="translate", return_timestamps=True, initial_prompt="Polychrome", hotwords="ovgenai",
                  begin_suppress_tokens=[9, 10], suppress_tokens=[])
    cfg = pipe.get_generation_config()
    cfg.update_generation_config(**values)
    pipe.set_generation_config(cfg)
    native = pipe._submit(lambda st: capi_whisper.read_generation_config(st.capi, st.handle)).wait()
    assert {k: native[k] for k in values} == values
    res = pipe.generate(TONE)
    assert res.texts == [echo(TONE, "translate", "fr", " prompt Polychrome hotwords ovgenai")]
    assert res.language == "fr"
    assert pipe.get_generation_config() == cfg


def test_keyword_fields_and_a_dict_config_are_per_call(make_whisper):
    pipe = make_whisper()
    assert pipe.generate(TONE, language="de").texts == [echo(TONE, lang="de")]
    assert pipe.generate(TONE, {"task": "translate"}).texts == [echo(TONE, "translate")]
    assert pipe.generate(TONE).texts == [echo(TONE)]  # the pipeline's own config is unchanged
    cfg = pipe.get_generation_config()
    cfg.initial_prompt = "x"
    assert pipe.generate(TONE, cfg, hotwords="y").texts == [echo(TONE, extra=" prompt x hotwords y")]


def test_timestamps_give_one_chunk_per_30_s_window(make_whisper):
    long = np.zeros(16000 * 65, np.float32)
    res = make_whisper().generate(long, return_timestamps=True)
    assert [(c.start_ts, c.end_ts, c.text) for c in res.chunks] == [
        (0.0, 30.0, " window 0 480000 samples"), (30.0, 60.0, " window 1 480000 samples"),
        (60.0, 65.0, " window 2 80000 samples")]


def test_perf_metrics_are_read(make_whisper):
    res = make_whisper().generate(TONE)
    pm = res.perf_metrics
    assert pm.get_load_time() == 12.5
    assert pm.get_num_generated_tokens() == len(echo(TONE).split())
    assert pm.get_generate_duration().mean == 40.0


def test_refused_config_changes_name_the_field(make_whisper):
    pipe = make_whisper()
    for fields, words in [({"max_new_tokens": 3}, "max_new_tokens"), ({"temperature": 0.5}, "temperature"),
                          ({"lang_to_id": {"<|xx|>": 1}, "language": "xx"}, "lang_to_id"),
                          ({"word_timestamps": True}, "word-level timestamps")]:
        with pytest.raises(errors.NotSupportedError, match=words):
            pipe.generate(TONE, **fields)
    with pytest.raises(errors.NotSupportedError, match=r"max_length.*start from pipeline.get_generation_config"):
        pipe.generate(TONE, WhisperGenerationConfig())  # a fresh config's base fields are not the model's
    with pytest.raises(errors.ConfigError, match="'language' xx must be provided in 'lang_to_id' map"):
        pipe.generate(TONE, language="xx")
    with pytest.raises(errors.ConfigError, match="mast be 'transcribe' or 'translate'"):
        pipe.generate(TONE, task="summarise")
    with pytest.raises(errors.InvalidParameterError, match="bogus"):
        pipe.generate(TONE, bogus=1)
    with pytest.raises(errors.InvalidParameterError):
        pipe.generate(TONE, generation_config=ovgenai_c.GenerationConfig())
    with pytest.raises(errors.InvalidParameterError):
        pipe.set_generation_config({"language": "en"})


def test_refusals_make_no_c_call(make_whisper, double):
    pipe = make_whisper()
    double.reset()
    for kw in ({"max_new_tokens": 3}, {"language": "xx"}, {"bogus": 1}, {"streamer": print}):
        with pytest.raises(errors.GenAIError):
            pipe.generate(TONE, **kw)
    assert _ops(double) == []


def test_a_streamer_is_refused_with_the_reason(make_whisper):
    with pytest.raises(errors.NotSupportedError, match="streams no text.*bundled backend"):
        make_whisper().generate(TONE, None, lambda text: None)
    with pytest.raises(errors.NotSupportedError, match=r"stream\(\): .*streams no text"):
        make_whisper().stream(TONE)

    async def first_piece():
        return await make_whisper().astream(TONE).__anext__()

    import asyncio

    with pytest.raises(errors.NotSupportedError, match=r"astream\(\): .*streams no text"):
        asyncio.run(first_piece())


# ------------------------------------------------------------------ audio input
def test_array_rules(make_whisper):
    pipe = make_whisper()
    i16 = np.tile(np.array([0, 16384, -32768, 32767], np.int16), 100)
    u8 = np.tile(np.array([0, 128, 255], np.uint8), 100)
    i32 = np.tile(np.array([2**31 - 1, -2**31], np.int32), 200)
    cases = [
        (TONE.astype(np.float64), TONE.astype(np.float64).astype(np.float32)),
        (TONE.astype(np.float16), TONE.astype(np.float16).astype(np.float32)),
        (list(map(float, TONE[:300])), TONE[:300]),
        (tuple([0, 1, -1] * 100), np.array([0, 1, -1] * 100, np.float32)),
        (i16, i16.astype(np.float32) / 32768),
        (u8, (u8.astype(np.float32) - 128) / 128),
        (i32, i32.astype(np.float64) / 2**31),
        (TONE[::2], TONE[::2]),  # strided: copied
    ]
    for given, expected in cases:
        assert pipe.generate(given).texts == [echo(np.asarray(expected, np.float32))]


@pytest.mark.parametrize("bad, words", [
    (np.zeros((10, 2), np.float32), "x.mean\\(axis=1\\)"),
    (np.zeros(0, np.float32), "empty"),
    (np.array([0.0, np.nan], np.float32), "sample 1 is nan"),
    (np.array([0.0, np.inf]), "finite"),
    (np.zeros(4, np.int64), "int64"),
    (np.zeros(4, np.complex64), "complex64"),
    (np.zeros(4, bool), "bool"),
    (["a", "b"], "must hold numbers"),
    ([0.1, None], "NoneType"),
    (b"\0\0", "bytes"),
    (object(), "object"),
])
def test_bad_audio_is_refused_before_c(make_whisper, double, bad, words):
    pipe = make_whisper()
    double.reset()
    with pytest.raises(errors.InvalidParameterError, match=words):
        pipe.generate(bad)
    assert _ops(double) == []


def test_too_short_audio_is_refused_as_upstream_does(make_whisper, double, whisper_dir):
    pipe = make_whisper()
    double.reset()
    with pytest.raises(errors.InvalidParameterError, match="200 samples, more than n_fft / 2 = 200 needed"):
        pipe.generate(TONE[:200])
    assert pipe.generate(TONE[:201]).texts == [echo(TONE[:201])]
    (whisper_dir / "preprocessor_config.json").write_text(json.dumps({"n_fft": 100}))
    with WhisperPipeline(whisper_dir, library=double.library) as small:
        assert small.generate(TONE[:51]).texts == [echo(TONE[:51])]
        with pytest.raises(errors.InvalidParameterError, match="n_fft / 2 = 50"):
            small.generate(TONE[:50])


def test_the_callers_array_is_copied(make_whisper):
    pipe = make_whisper()
    x = TONE.copy()
    expected = echo(x)
    samples = audio.as_samples(x)
    x[:] = 0
    assert samples is not x and np.array_equal(samples, TONE)
    assert pipe.generate(TONE).texts == [expected]


def test_wav_files_of_every_width_and_channel_count(make_whisper, tmp_path):
    pipe = make_whisper()
    ints = np.array([0, 1000, -1000, 32767, -32768] * 400, np.int16)
    expected16 = ints.astype(np.float32) / 32768
    assert pipe.generate(_write_wav(tmp_path / "a16.wav", ints.tobytes(), 2)).texts == [echo(expected16)]
    u8 = np.array([0, 64, 128, 255] * 400, np.uint8)
    assert pipe.generate(str(_write_wav(tmp_path / "a8.wav", u8.tobytes(), 1))).texts == \
        [echo((u8.astype(np.float32) - 128) / 128)]
    i24 = np.array([0, 1, -1, 2**23 - 1, -2**23] * 400, np.int64)
    raw24 = b"".join(int(v & 0xFFFFFF).to_bytes(3, "little") for v in i24)
    assert pipe.generate(_write_wav(tmp_path / "a24.wav", raw24, 3)).texts == [echo(i24.astype(np.float64) / 2**23)]
    i32 = np.array([0, 2**30, -2**31] * 400, np.int32)
    assert pipe.generate(_write_wav(tmp_path / "a32.wav", i32.tobytes(), 4)).texts == \
        [echo(i32.astype(np.float64) / 2**31)]
    stereo = np.stack([ints, np.zeros_like(ints)], axis=1)
    assert pipe.generate(_write_wav(tmp_path / "st.wav", stereo.tobytes(), 2, channels=2)).texts == \
        [echo(((ints.astype(np.float64) / 32768 + 0.0) / 2).astype(np.float32))]


def test_other_rates_are_resampled_with_a_dsp_library(make_whisper, tmp_path):
    signal = pytest.importorskip("scipy.signal")
    pipe = make_whisper()
    ints = (np.sin(np.arange(8000) / 5.0) * 10000).astype(np.int16)
    path = _write_wav(tmp_path / "8k.wav", ints.tobytes(), 2, rate=8000)
    got = audio.read_wav(path)
    assert got.dtype == np.float32 and got.size == 16000
    try:
        import soxr  # noqa: F401  (preferred when installed)
    except ImportError:
        expected = signal.resample_poly(ints.astype(np.float64) / 32768, 2, 1).astype(np.float32)
        assert np.array_equal(got, expected)
    assert pipe.generate(path).texts == [echo(got)]


def test_resampling_without_the_extra_names_it(make_whisper, tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_dsp(name, *args, **kwargs):
        if name in ("soxr", "scipy.signal") or name.startswith("scipy"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dsp)
    monkeypatch.setattr(_interpreter, "REFCOUNTED", True)  # CPython: the extra can be installed there
    monkeypatch.setattr(_interpreter, "NAME", "CPython")
    path = _write_wav(tmp_path / "44k.wav", np.zeros(441, np.int16).tobytes(), 2, rate=44100)
    with pytest.raises(errors.NotSupportedError, match=r"pip install 'ovgenai_c\[audio\]'"):
        make_whisper().generate(path)
    # on PyPy (no soxr or scipy wheels there) the message says so and what to do instead
    monkeypatch.setattr(_interpreter, "REFCOUNTED", False)
    monkeypatch.setattr(_interpreter, "NAME", "PyPy")
    with pytest.raises(errors.NotSupportedError, match=r"which PyPy cannot install: resample it to 16000 Hz first"):
        make_whisper().generate(path)


def test_bad_wav_files(make_whisper, tmp_path):
    pipe = make_whisper()
    with pytest.raises(errors.InvalidParameterError, match="no such audio file"):
        pipe.generate(tmp_path / "missing.wav")
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"not a wav file at all")
    with pytest.raises(errors.InvalidParameterError, match="not a WAV file"):
        pipe.generate(junk)
    empty = _write_wav(tmp_path / "empty.wav", b"", 2)
    with pytest.raises(errors.InvalidParameterError, match="no samples"):
        pipe.generate(empty)


# ------------------------------------------------------------------ errors, faults, handles
def test_model_folder_and_device_are_checked_first(double, tmp_path, whisper_dir):
    with pytest.raises(errors.ModelNotFoundError, match="does not exist"):
        WhisperPipeline(tmp_path / "none", library=double.library)
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "openvino_encoder_model.xml").write_text("")
    with pytest.raises(errors.ModelNotFoundError, match="openvino_decoder_model.xml"):
        WhisperPipeline(partial, library=double.library)
    with pytest.raises(errors.DeviceError):
        WhisperPipeline(whisper_dir, "cpu!", library=double.library)
    with pytest.raises(errors.NotSupportedError, match="word-level"):
        WhisperPipeline(whisper_dir, library=double.library, word_timestamps=True)
    with pytest.raises(errors.NotSupportedError, match="prompt_lookup: prompt-lookup decoding is an LLMPipeline"):
        WhisperPipeline(whisper_dir, library=double.library, prompt_lookup=True)
    assert "whisper_create" not in _ops(double)


def test_properties_reach_create(make_whisper, double):
    make_whisper(CACHE_DIR="/tmp/whisper-cache", ENABLE_MMAP=False)
    assert double.properties() == {"CACHE_DIR": "/tmp/whisper-cache", "ENABLE_MMAP": "NO"}


def test_a_library_without_them_names_what_is_missing(double, whisper_dir):
    lib = dataclasses.replace(double.library, extras=frozenset(
        n for n in double.library.extras if not n.startswith("ov_genai_whisper_pipeline_")))
    with pytest.raises(errors.NotSupportedError, match="no Whisper support.*ov_genai_whisper_pipeline_create"):
        WhisperPipeline(whisper_dir, library=lib)
    assert double.live() == 0


@pytest.mark.parametrize("function, status, exc", [
    ("ov_genai_whisper_pipeline_generate", -17, errors.UnknownExceptionError),
    ("ov_genai_whisper_pipeline_generate", -1, errors.GeneralError),
    ("ov_genai_whisper_pipeline_get_generation_config", -1, errors.GeneralError),
    ("ov_genai_whisper_generation_config_set_language", -14, errors.InvalidParameterError),
    ("ov_genai_whisper_decoded_results_get_text_at", -6, errors.OutOfBoundsError),
    ("ov_genai_whisper_decoded_results_get_chunk_at", -5, errors.NotFoundError),
    ("ov_genai_whisper_decoded_result_chunk_get_text", -1, errors.GeneralError),
    ("ov_genai_whisper_decoded_results_get_perf_metrics", -10, errors.NotAllocatedError),
    ("ov_genai_perf_metrics_get_ttft", -1, errors.GeneralError),
])
def test_faults_become_typed_errors_and_leak_nothing(make_whisper, double, function, status, exc):
    pipe = make_whisper()
    double.fail(function, status)
    with pytest.raises(exc, match=function):
        pipe.generate(TONE, language="en", return_timestamps=True)
    double.reset()
    assert pipe.generate(TONE).texts == [echo(TONE)]  # the pipeline is still usable
    assert double.live() == 1 and double.live("whisper_pipeline") == 1


def test_create_failures(double, whisper_dir):
    double.fail("ov_genai_whisper_pipeline_create", -17)
    with pytest.raises(errors.UnknownExceptionError, match="Whisper model folder"):
        WhisperPipeline(whisper_dir, library=double.library)
    double.reset()
    double.fail("ov_genai_whisper_pipeline_get_generation_config", -1)
    with pytest.raises(errors.GeneralError):
        WhisperPipeline(whisper_dir, library=double.library)
    deadline = time.monotonic() + 5
    while double.live() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert double.live() == 0  # the pipeline made before the failing read was freed


def test_many_calls_leak_no_handle(make_whisper, double):
    pipe = make_whisper()
    for i in range(30):
        pipe.generate(TONE[: 1000 + i], return_timestamps=bool(i % 2), language=("en", "de", None)[i % 3])
    assert double.live() == 1


def test_close_twice_context_manager_and_use_after_close(double, whisper_dir):
    with WhisperPipeline(whisper_dir, library=double.library) as pipe:
        pipe.generate(TONE)
    assert pipe.closed
    pipe.close()
    for call in (lambda: pipe.generate(TONE), pipe.get_generation_config,
                 lambda: pipe.set_generation_config(WhisperGenerationConfig())):
        with pytest.raises(errors.PipelineClosedError):
            call()
    assert double.live() == 0 and _ops(double).count("whisper_free") == 1


def test_forgotten_pipeline_is_freed_on_its_owner(double, whisper_dir):
    pipe = WhisperPipeline(whisper_dir, library=double.library)
    owner = pipe.owner_thread_id
    pipe.generate(TONE)
    del pipe
    gc.collect()
    deadline = time.monotonic() + 5
    while double.live("whisper_pipeline") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert double.live() == 0
    assert [tid for op, _, tid in double.thread_log() if op == "whisper_free"] == [owner]


def test_threads_share_a_pipeline_one_c_call_at_a_time(make_whisper, double):
    pipe = make_whisper()
    double.delay(2000)
    results, failures = {}, []

    def work(i: int) -> None:
        try:
            x = TONE[: 500 + i]
            results[i] = (pipe.generate(x, language=("en", "fr")[i % 2]).texts[0], echo(x, lang=("en", "fr")[i % 2]))
        except Exception as exc:  # reported below
            failures.append(repr(exc))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert failures == [] and len(results) == 8
    assert all(got == want for got, want in results.values())
    assert double.ctl.ovd_concurrent_violations() == 0
    assert {tid for _, _, tid in double.thread_log()} == {pipe.owner_thread_id}


# ------------------------------------------------------------------ no cancellation: abandoned waits
def test_a_timeout_abandons_the_wait_and_c_runs_to_its_end(make_whisper, double):
    pipe = make_whisper()
    double.delay(400_000)
    with pytest.raises(errors.GenerationTimeoutError, match="NOT stopped") as info:
        pipe.generate(TONE, timeout=0.01)
    assert isinstance(info.value, TimeoutError)
    double.delay(0)
    # the next call waits for the abandoned one, then runs: both reached C, in order, on the owner
    assert pipe.generate(TONE[:300]).texts == [echo(TONE[:300])]
    assert _ops(double).count("whisper_generate") == 2
    assert double.live() == 1  # the abandoned call's results were freed
    for bad in (0, -1, "1", True):
        with pytest.raises(errors.InvalidParameterError, match="timeout"):
            pipe.generate(TONE, timeout=bad)


def test_close_waits_for_an_abandoned_transcription(double, whisper_dir):
    pipe = WhisperPipeline(whisper_dir, library=double.library)
    double.delay(300_000)
    with pytest.raises(errors.GenerationTimeoutError):
        pipe.generate(TONE, timeout=0.01)
    pipe.close()
    assert _ops(double)[-2:] == ["whisper_generate", "whisper_free"]
    assert double.live() == 0


_EXIT_WHILE_RUNNING = r"""
import sys, numpy as np
sys.path.insert(0, {tests!r})
from pathlib import Path
from abi_double.controls import Double
from ovgenai_c.whisper_pipeline import WhisperPipeline
from ovgenai_c import errors
d = Double(Path({so!r}))
d.delay(300000)
pipe = WhisperPipeline({model!r}, library=d.library)
try:
    pipe.generate(np.zeros(1000, np.float32), timeout=0.01)
except errors.GenerationTimeoutError:
    print("abandoned")
"""


def test_interpreter_exit_with_a_transcription_running_is_clean(double_lib_path, whisper_dir):
    code = _EXIT_WHILE_RUNNING.format(tests=str(ROOT / "tests"), so=str(double_lib_path), model=str(whisper_dir))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                          cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "abandoned"
