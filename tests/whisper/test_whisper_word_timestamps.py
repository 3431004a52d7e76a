"""Word-level timestamps on the bundled backend (GenAI's ``word_timestamps``: the pipeline property and the config
field, ``WhisperDecodedResults.words``; the C ABI has none, so cdefs/95's extras carry them).

- against openvino_genai (the oracle, in a child, same IR): every word (text, token ids, start, end to the last bit),
  the text, the chunks and the token count, call by call — English-only and multilingual models, one 30 s window and
  long-form audio, with and without ``return_timestamps``, initial prompts, detected, forced and no-space languages,
  translation, the random-weights models (arbitrary tokens, half UTF-8 sequences), f32 and the machine's default
  precision, streaming with a stop, and ASRPipeline (its config's own default, its result types);
- the binding's rules: the property's values, a call asking for words on a pipeline created without the property,
  a model without alignment heads;
- the C functions' contract: NULLs, NOT_FOUND without words, OUT_OF_BOUNDS, the two-call sizes, the config field.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any, Dict, List, Optional

import numpy as np
import pytest

from test_whisper_bundled import F32, INVALID_C_PARAM, api, real_ir, speech  # noqa: F401
from whisper_support import run_oracle_cases

NOT_FOUND, OUT_OF_BOUNDS, UNKNOW_EXCEPTION = -5, -6, -17

# One case run by either library (`mod`: openvino_genai or ovgenai_c): everything a call returns about its words.
RUNNER = r'''
def run_case(mod, pipe, audio, case):
    config = case["config"]
    stop_after = case.get("stop_after")
    kwargs = dict(config)
    if stop_after is not None:
        seen = []

        def streamer(text):
            seen.append(text)
            return mod.StreamingStatus.STOP if len(seen) >= stop_after else mod.StreamingStatus.RUNNING

        kwargs["streamer"] = streamer
    if case.get("asr"):
        cfg = pipe.get_generation_config()
        default_words = cfg.word_timestamps
        for k, v in config.items():
            setattr(cfg, k, v)
        r = pipe.generate(audio, cfg)
        words = None if r.words is None else [[[w.text, list(w.token_ids), w.start_ts, w.end_ts] for w in ws]
                                               for ws in r.words]
        return {"text": r.texts[0], "words": words, "default_words": default_words,
                "chunks": None if r.chunks is None else [[c.start_ts, c.end_ts, c.text] for c in r.chunks[0]]}
    r = pipe.generate(audio, **kwargs)
    return {
        "text": r.texts[0],
        "words": None if r.words is None else [[w.word, list(w.token_ids), w.start_ts, w.end_ts] for w in r.words],
        "chunks": None if r.chunks is None else [[c.start_ts, c.end_ts, c.text] for c in r.chunks],
        "tokens": len(r.perf_metrics.raw_metrics.m_new_token_times),
        "word_stage": len(r.perf_metrics.whisper_raw_metrics.word_level_timestamps_processing_durations),
    }
'''

ORACLE = RUNNER + r'''
import json, sys
import numpy as np
import openvino_genai as og
ir, cases_path, out_path, props = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
cases = json.load(open(cases_path))
pipes = {}
def pipe_for(case):
    key = "asr" if case.get("asr") else "whisper"
    if key not in pipes:
        cls = og.ASRPipeline if case.get("asr") else og.WhisperPipeline
        pipes[key] = cls(ir, "CPU", word_timestamps=True, **props)
    return pipes[key]
json.dump([run_case(og, pipe_for(c), np.load(c["audio"]).astype(np.float32), c) for c in cases],
          open(out_path, "w"))
'''


def _oracle(ir: pathlib.Path, cases: List[Dict[str, Any]], tmp: pathlib.Path,
            props: Dict[str, str]) -> List[Dict[str, Any]]:
    pytest.importorskip("openvino_genai")
    return run_oracle_cases(ORACLE, ir, cases, tmp, json.dumps(props))


def _library() -> str:
    from testsupport import bundled_library_path

    path = bundled_library_path()
    if path is None or not path.exists():
        pytest.skip("bundled backend not built; run scripts/build_backend.sh")
    return str(path)


def _ours(ir: pathlib.Path, cases: List[Dict[str, Any]], props: Dict[str, str]) -> List[Dict[str, Any]]:
    import ovgenai_c

    scope: Dict[str, Any] = {}
    exec(RUNNER, scope)
    out: List[Optional[Dict[str, Any]]] = [None] * len(cases)
    for asr in (False, True):
        mine = [i for i, c in enumerate(cases) if bool(c.get("asr")) == asr]
        if not mine:
            continue
        cls = ovgenai_c.ASRPipeline if asr else ovgenai_c.WhisperPipeline
        with cls(str(ir), "CPU", library=_library(), word_timestamps=True, **props) as pipe:
            for i in mine:
                out[i] = scope["run_case"](ovgenai_c, pipe, cases[i]["audio"], cases[i])
    return out  # type: ignore[return-value]


def _check_exact(ir: pathlib.Path, cases: List[Dict[str, Any]], tmp: pathlib.Path,
                 props: Dict[str, str] = F32) -> List[Dict[str, Any]]:
    ours = _ours(ir, cases, props)
    theirs = _oracle(ir, cases, tmp, props)
    bad = []
    for c, a, b in zip(cases, ours, theirs):
        if a != b:
            diff = [k for k in a if a.get(k) != b.get(k)]
            bad.append(f"{c['name']} ({', '.join(diff)}):\n  ours  {a}\n  genai {b}")
    assert not bad, "\n".join(bad)
    return ours


def _words(case_out: Dict[str, Any]) -> List[List[Any]]:
    assert case_out["words"] is not None
    return case_out["words"]


def _check_shape(words: List[List[Any]], text: str, duration: float) -> None:
    """What word timings are, whatever the model: in order, within the audio, joined back to the text."""
    starts = [w[2] for w in words]
    assert starts == sorted(starts)
    assert all(0.0 <= w[2] <= w[3] <= duration + 0.02 for w in words), words
    assert "".join(w[0] for w in words).strip() == text.strip()


def test_word_timestamps_exact_with_genai(api, whisper_real_ir, speech_samples, tmp_path):
    """whisper-tiny.en, f32: short and long-form audio, with and without segment timestamps, an initial prompt,
    a stop from the streamer, a call without words, ASRPipeline — identical to openvino_genai, word for word."""
    english = list(speech_samples.english)
    long_audio = np.concatenate([s.audio for s in english[:8]])
    assert long_audio.size > 30 * 16000
    cases: List[Dict[str, Any]] = []
    for i, s in enumerate(english[:6]):
        cases.append({"name": f"words[{i}]", "audio": s.audio, "config": {}})
    for i, s in enumerate(english[6:9]):
        cases.append({"name": f"words+segments[{i}]", "audio": s.audio, "config": {"return_timestamps": True}})
    cases += [
        {"name": "long", "audio": long_audio, "config": {}},
        {"name": "long with segments", "audio": long_audio, "config": {"return_timestamps": True}},
        {"name": "initial prompt", "audio": english[0].audio, "config": {"initial_prompt": "Quick brown foxes."}},
        {"name": "beam search", "audio": english[4].audio, "config": {"num_beams": 3, "return_timestamps": True}},
        {"name": "no words asked", "audio": english[1].audio, "config": {"word_timestamps": False}},
        {"name": "streamer stops", "audio": english[2].audio, "config": {}, "stop_after": 3},
        {"name": "long, streamer stops at its 1st text", "audio": long_audio, "config": {}, "stop_after": 1},
        {"name": "long, streamer stops at its 2nd text", "audio": long_audio, "config": {}, "stop_after": 2},
        {"name": "asr", "audio": english[3].audio, "config": {"word_timestamps": True}, "asr": True},
        {"name": "asr default", "audio": english[3].audio, "config": {"return_timestamps": True}, "asr": True},
    ]
    out = dict(zip((c["name"] for c in cases), _check_exact(whisper_real_ir, cases, tmp_path)))
    # what the cases show (so that a change in both libraries would be seen too)
    for i, s in enumerate(english[:6]):
        _check_shape(_words(out[f"words[{i}]"]), out[f"words[{i}]"]["text"], s.audio.size / 16000)
        assert out[f"words[{i}]"]["word_stage"] == 1
    long_words = _words(out["long"])
    _check_shape(long_words, out["long"]["text"], long_audio.size / 16000)
    assert long_words[-1][2] > 30.0  # the second window's words carry its offset
    assert out["no words asked"]["words"] is None
    assert out["asr default"]["words"] is None and out["asr default"]["default_words"] is False
    assert out["asr"]["words"][0][0][0] == _words(out["words[3]"])[0][0]
    assert out["streamer stops"]["words"] is None  # GenAI skips the word pass of a stopped window


def test_word_timestamps_multilingual_exact_with_genai(api, whisper_multilingual_ir, speech_samples, tmp_path):
    """whisper-base: detected and forced languages, translation, and a no-space language (words per character)."""
    foreign = list(speech_samples.foreign)
    english = list(speech_samples.english)
    cases: List[Dict[str, Any]] = []
    for i, s in enumerate(foreign[:4]):
        cases.append({"name": f"detect[{i}]", "audio": s.audio, "config": {}})
    cases += [
        {"name": "translate", "audio": foreign[0].audio, "config": {"task": "translate"}},
        {"name": "beams, detected", "audio": foreign[2].audio, "config": {"num_beams": 3}},
        {"name": "forced de", "audio": foreign[1].audio, "config": {"language": "<|de|>", "return_timestamps": True}},
        {"name": "japanese", "audio": english[0].audio, "config": {"language": "<|ja|>"}},
        {"name": "chinese", "audio": english[1].audio, "config": {"language": "<|zh|>"}},
        {"name": "english", "audio": english[2].audio, "config": {"language": "<|en|>"}},
    ]
    out = dict(zip((c["name"] for c in cases), _check_exact(whisper_multilingual_ir, cases, tmp_path)))
    for name in ("detect[0]", "translate", "english"):
        assert len(_words(out[name])) >= 3
    # a no-space language: a word per whole character piece, not per space-separated word
    ja = out["japanese"]
    assert len(_words(ja)) > 2 * len(ja["text"].split())
    _check_shape(_words(ja), ja["text"], english[0].audio.size / 16000)


def test_word_timestamps_random_models_exact_with_genai(whisper_tiny_ir, whisper_tiny_multilingual_ir,
                                                        speech_samples, tmp_path):
    """Random weights: 448-token windows of arbitrary tokens (half UTF-8 sequences, stray timestamps)."""
    english = list(speech_samples.english)
    long_audio = np.concatenate([s.audio for s in english[:8]])
    for ir in (whisper_tiny_ir, whisper_tiny_multilingual_ir):
        cases = [{"name": "short", "audio": english[0].audio, "config": {}},
                 {"name": "segments", "audio": english[1].audio, "config": {"return_timestamps": True}},
                 {"name": "long", "audio": long_audio, "config": {}}]
        sub = tmp_path / ir.parent.name
        sub.mkdir()
        out = _check_exact(ir, cases, sub)
        assert any(len(o["words"]) > 10 for o in out)


def test_word_timestamps_default_precision_exact_with_genai(api, whisper_real_ir, speech_samples, tmp_path):
    """The machine's own inference precision (bf16 on AMX Xeons) on both sides: the same words."""
    cases = [{"name": f"default[{i}]", "audio": s.audio, "config": {}}
             for i, s in enumerate(list(speech_samples.english)[:3])]
    _check_exact(whisper_real_ir, cases, tmp_path, props={})


# ---------------------------------------------------------------------------------------------------- binding rules


def test_binding_rules(api, whisper_real_ir, speech_samples, tmp_path):
    import ovgenai_c
    from ovgenai_c import errors

    lib = _library()
    audio = speech_samples.english[0].audio
    with ovgenai_c.WhisperPipeline(str(whisper_real_ir), "CPU", library=lib, **F32) as pipe:
        assert pipe.get_generation_config().word_timestamps is False
        assert pipe.generate(audio).words is None
        with pytest.raises(errors.InvalidParameterError, match="created with the property word_timestamps=True"):
            pipe.generate(audio, word_timestamps=True)
        cfg = pipe.get_generation_config()
        cfg.word_timestamps = True
        with pytest.raises(errors.InvalidParameterError, match="word_timestamps=True"):
            pipe.generate(audio, cfg)
        assert pipe.generate(audio).texts  # the pipeline goes on
    for value in ("YES", "true", True):
        with ovgenai_c.WhisperPipeline(str(whisper_real_ir), "CPU", library=lib, word_timestamps=value, **F32) as p:
            assert p.get_generation_config().word_timestamps is True
            first = p.generate(audio)
            assert first.words and first.perf_metrics.get_word_level_timestamps_processing_duration().mean > 0
            # a call may turn them off (the bundled backend's config extra), and the pipeline's own config too
            off = p.generate(audio, word_timestamps=False)
            assert off.words is None and off.texts == first.texts
            assert off.perf_metrics.whisper_raw_metrics.word_level_timestamps_processing_durations == [0.0]
            cfg = p.get_generation_config()
            cfg.word_timestamps = False
            p.set_generation_config(cfg)
            assert p.generate(audio).words is None
            assert p.generate(audio, word_timestamps=True).words == first.words
    for bad in (1, "maybe", None):
        with pytest.raises(errors.InvalidParameterError, match="word_timestamps"):
            ovgenai_c.WhisperPipeline(str(whisper_real_ir), "CPU", library=lib, word_timestamps=bad)
    # a model folder without alignment heads: upstream's rule, at creation
    folder = tmp_path / "no-heads"
    folder.mkdir()
    for f in whisper_real_ir.iterdir():
        if f.name != "generation_config.json":
            os.symlink(f, folder / f.name)
    gc = json.loads((whisper_real_ir / "generation_config.json").read_text())
    gc.pop("alignment_heads")
    (folder / "generation_config.json").write_text(json.dumps(gc))
    with pytest.raises(errors.ConfigError, match="'alignment_heads' is set and not empty"):
        ovgenai_c.WhisperPipeline(str(folder), "CPU", library=lib, word_timestamps=True)
    with ovgenai_c.WhisperPipeline(str(folder), "CPU", library=lib, **F32) as pipe:  # without: as before
        assert pipe.generate(audio).texts


# ---------------------------------------------------------------------------------------------------- the C functions


def test_c_contract(api, real_ir, speech):
    ffi, lib = api.ffi, api.lib
    plain = api.pipeline(real_ir)
    pipe = api.pipeline(real_ir, word_timestamps="true")
    audio = np.ascontiguousarray(speech[0], dtype=np.float32)

    def run(p, cfg):
        r = ffi.new("ov_genai_whisper_decoded_results**")
        st = lib.ov_genai_whisper_pipeline_generate(p, ffi.cast("float*", audio.ctypes.data), audio.size,
                                                    cfg if cfg is not None else ffi.NULL, r)
        return st, (ffi.gc(r[0], lib.ov_genai_whisper_decoded_results_free) if st == 0 else None)

    # the config field: the property made it the pipeline's default; a copy can turn it off
    flag = ffi.new("bool*")
    cfg = api.config(pipe)
    assert lib.ovgenai_c_bundled_whisper_generation_config_get_word_timestamps(cfg, flag) == 0 and flag[0]
    assert lib.ovgenai_c_bundled_whisper_generation_config_get_word_timestamps(api.config(plain), flag) == 0
    assert not flag[0]
    assert lib.ovgenai_c_bundled_whisper_generation_config_set_word_timestamps(ffi.NULL, True) == INVALID_C_PARAM
    assert lib.ovgenai_c_bundled_whisper_generation_config_get_word_timestamps(cfg, ffi.NULL) == INVALID_C_PARAM
    assert "word_timestamps" in api.last_error()

    st, res = run(pipe, None)
    assert st == 0, api.last_error()
    count = ffi.new("size_t*")
    assert lib.ovgenai_c_bundled_whisper_decoded_results_get_words_count(res, count) == 0 and count[0] > 3
    n = count[0]
    size, start, end = ffi.new("size_t*"), ffi.new("float*"), ffi.new("float*")
    get_word = lib.ovgenai_c_bundled_whisper_decoded_results_get_word
    get_ids = lib.ovgenai_c_bundled_whisper_decoded_results_get_word_token_ids
    words = []
    for i in range(n):
        assert get_word(res, i, ffi.NULL, ffi.NULL, ffi.NULL, size) == 0
        need = size[0]
        buf = ffi.new("char[]", need)
        small = ffi.new("size_t*", need - 1)
        assert get_word(res, i, start, end, buf, small) == OUT_OF_BOUNDS and "too small" in api.last_error()
        assert get_word(res, i, start, end, buf, size) == 0
        assert get_ids(res, i, ffi.NULL, count) == 0 and count[0] >= 1
        ids = ffi.new("int64_t[]", count[0])
        room = ffi.new("size_t*", count[0] - 1)
        assert get_ids(res, i, ids, room) == OUT_OF_BOUNDS
        assert get_ids(res, i, ids, count) == 0
        words.append((ffi.string(buf).decode(), [ids[j] for j in range(count[0])], start[0], end[0]))
    assert all(w[1] and w[2] <= w[3] for w in words)
    assert get_word(res, n, start, end, ffi.NULL, size) == OUT_OF_BOUNDS and str(n) in api.last_error()
    assert get_ids(res, n, ffi.NULL, count) == OUT_OF_BOUNDS
    for bad in ((ffi.NULL, 0, start, end, ffi.NULL, size), (res, 0, start, end, ffi.NULL, ffi.NULL)):
        assert get_word(*bad) == INVALID_C_PARAM
    assert get_ids(ffi.NULL, 0, ffi.NULL, count) == INVALID_C_PARAM
    assert get_ids(res, 0, ffi.NULL, ffi.NULL) == INVALID_C_PARAM
    assert lib.ovgenai_c_bundled_whisper_decoded_results_get_words_count(ffi.NULL, count) == INVALID_C_PARAM
    assert lib.ovgenai_c_bundled_whisper_decoded_results_get_words_count(res, ffi.NULL) == INVALID_C_PARAM
    # the stage: one sum over the call
    assert lib.ovgenai_c_bundled_whisper_decoded_results_get_durations(
        res, b"word_level_timestamps_processing", ffi.NULL, count) == 0 and count[0] == 1

    # without words: NOT_FOUND (GenAI's words None)
    off = api.config(pipe)
    assert lib.ovgenai_c_bundled_whisper_generation_config_set_word_timestamps(off, False) == 0
    st, res = run(pipe, off)
    assert st == 0
    assert lib.ovgenai_c_bundled_whisper_decoded_results_get_words_count(res, count) == NOT_FOUND
    assert "no words" in api.last_error()
    assert get_word(res, 0, start, end, ffi.NULL, size) == NOT_FOUND

    # asking for words on a pipeline created without the property: an error saying why, and the pipeline goes on
    on = api.config(plain)
    assert lib.ovgenai_c_bundled_whisper_generation_config_set_word_timestamps(on, True) == 0
    st, _ = run(plain, on)
    assert st == UNKNOW_EXCEPTION and "property word_timestamps=true" in api.last_error()
    assert api.generate(plain, speech[0])["text"].strip()

    # a property value that is no boolean
    p = ffi.new("ov_genai_whisper_pipeline**")
    args = [ffi.new("char[]", s) for s in (b"word_timestamps", b"sometimes")]
    assert lib.ov_genai_whisper_pipeline_create(str(real_ir).encode(), b"CPU", 2, p, *args) != 0
    assert "sometimes" in api.last_error()


# ---------------------------------------------------------------------------------------------------- drop-in

# What upstream's automatic_speech_recognition sample does with a WAV file (its calls and its printing, written here
# with `mod` standing for openvino_genai or ovgenai_c): the word_timestamps property, the config's language, task,
# return_timestamps and word_timestamps, then the result, its segments and its words.
ASR_FLOW = r'''
import sys, wave
import numpy as np
mod = __import__(sys.argv[1])
model_dir, wav_path = sys.argv[2], sys.argv[3]
pipe = mod.ASRPipeline(model_dir, "CPU", word_timestamps=True, INFERENCE_PRECISION_HINT="f32")
config = pipe.get_generation_config()
config.language = "<|en|>"
config.task = "transcribe"
config.return_timestamps = True
config.word_timestamps = True
with wave.open(wav_path) as f:
    raw_speech = (np.frombuffer(f.readframes(f.getnframes()), np.int16).astype(np.float32) / 32768).tolist()
result = pipe.generate(raw_speech, config)
print(result)
if result.chunks:
    for chunk in result.chunks[0]:
        print(f"timestamps: [{chunk.start_ts:.2f}, {chunk.end_ts:.2f}] text: {chunk.text}")
if result.words:
    for word in result.words[0]:
        print(f"[{word.start_ts:.2f}, {word.end_ts:.2f}]: {word.text}")
'''


def test_asr_sample_flow_prints_what_pybind_prints(api, whisper_multilingual_ir, speech_samples, tmp_path):
    """`import ovgenai_c as openvino_genai` runs the ASR sample's word-timestamp flow: the same printout."""
    pytest.importorskip("openvino_genai")
    lib = _library()
    wav = str(speech_samples.english[3].path)
    outputs = {}
    for mod in ("openvino_genai", "ovgenai_c"):
        env = dict(os.environ, OVGENAI_C_LIBRARY=lib, PYTHONPATH=os.pathsep.join(
            [str(pathlib.Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.run([sys.executable, "-c", ASR_FLOW, mod, str(whisper_multilingual_ir), wav],
                              capture_output=True, text=True, timeout=600, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        outputs[mod] = proc.stdout
    assert outputs["ovgenai_c"] == outputs["openvino_genai"]
    lines = outputs["ovgenai_c"].splitlines()
    assert sum(line.startswith("timestamps: [") for line in lines) >= 1
    assert sum(line.startswith("[") for line in lines) >= 5  # the words


# ---------------------------------------------------------------------------------------------------- front-ends


def test_provider_cli_and_server_words(api, whisper_real_ir, speech_samples, tmp_path):
    """Provider.transcribe(words=True) (a second pipeline, made with the property: plain calls keep GenAI's plain
    pipeline), `ovgenai-c transcribe --words` / --json, and the server's verbose_json with
    timestamp_granularities[]=word (httpx and the openai client) — the words of the pipeline itself."""
    import ovgenai_c
    from ovgenai_c import _loader, errors
    from ovgenai_c.provider import Provider, SessionPool

    from test_whisper_bundled import REPO, _wav

    lib = _loader.open_library(_library())
    sample = speech_samples.english[4]
    with ovgenai_c.WhisperPipeline(str(whisper_real_ir), "CPU", library=lib, word_timestamps=True) as pipe:
        want = [{"word": w.word.strip(), "start": w.start_ts, "end": w.end_ts} for w in pipe.generate(sample.audio).words]
    with ovgenai_c.WhisperPipeline(str(whisper_real_ir), "CPU", library=lib) as pipe:
        plain_text = pipe.generate(sample.audio).texts[0]
    assert len(want) >= 5

    with Provider(whisper_real_ir, library=lib) as p:
        assert p.capabilities.transcribe_words and p.capabilities.to_dict()["transcribe_words"] is True
        r = p.transcribe(sample.audio)
        assert r.words is None and r.text == plain_text and p._whisper_words is None
        r = p.transcribe(sample.audio, words=True, timestamps=True)
        assert r.words == want and r.segments and r.to_dict()["words"] == want
        with pytest.raises(errors.InvalidParameterError, match="words must be a bool"):
            p.transcribe(sample.audio, words="yes")

    env = dict(os.environ, OVGENAI_C_CACHE=str(tmp_path / "cache"))
    wav = tmp_path / "speech.wav"
    wav.write_bytes(_wav(sample.audio))
    base = [sys.executable, "-m", "ovgenai_c", "transcribe", str(wav), "--model", str(whisper_real_ir),
            "--library", str(lib.path)]
    proc = subprocess.run(base + ["--words"], cwd=str(REPO), capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert [line.split("] ", 1)[1] for line in lines] == [w["word"] for w in want]
    assert lines[0].startswith("[00:00.000 --> ")
    proc = subprocess.run(base + ["--words", "--json"], cwd=str(REPO), capture_output=True, text=True, timeout=300,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["words"] == want

    for module in ("starlette", "uvicorn", "httpx", "python_multipart"):
        pytest.importorskip(module)
    import httpx

    sys.path.insert(0, str(REPO / "tests" / "serve"))
    from serve_helpers import ServerThread

    from ovgenai_c.serve import ServeConfig, create_app

    def factory(folder: pathlib.Path, index: int) -> Provider:
        return Provider(folder, library=lib, pool=SessionPool(ttl=None, max_resident=1))

    config = ServeConfig(models_root=whisper_real_ir.parent, default_model=whisper_real_ir, parallel=1)
    with ServerThread(create_app(config, provider_factory=factory)) as srv:
        url = srv.url + "/v1/audio/transcriptions"
        files = {"file": ("speech.wav", _wav(sample.audio), "audio/wav")}
        r = httpx.post(url, files=files, data={"response_format": "verbose_json",
                                               "timestamp_granularities[]": "word"}, timeout=120)
        assert r.status_code == 200, r.text
        doc = r.json()
        assert doc["words"] == want and "segments" not in doc  # only words asked, as OpenAI answers
        r = httpx.post(url, files=files, data={"response_format": "verbose_json",
                                               "timestamp_granularities[]": ["word", "segment"]}, timeout=120)
        assert r.status_code == 200 and r.json()["words"] == want and r.json()["segments"]
        r = httpx.post(url, files=files, data={"timestamp_granularities[]": "word"}, timeout=120)
        assert r.status_code == 400 and "verbose_json" in r.json()["error"]["message"]

        openai = pytest.importorskip("openai")
        client = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused")
        got = client.audio.transcriptions.create(model=whisper_real_ir.name, file=("s.wav", _wav(sample.audio)),
                                                 response_format="verbose_json", timestamp_granularities=["word"])
        assert [(w.word, w.start, w.end) for w in got.words] == [(w["word"], w["start"], w["end"]) for w in want]
