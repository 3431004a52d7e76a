"""The bundled backend's Whisper pipeline (native/src/engine/whisper, c_api/whisper_*.cpp) through the raw C ABI
(cffi, ABI mode, over cdefs/07 + 08 and native/src/c_api/whisper_extras.h):

- log-mel features against an independent numpy reference of GenAI's algorithm (80 and 128 bins);
- token-/text-exact against openvino_genai.WhisperPipeline (the oracle, run in a child process) on the same IR and
  the same audio: plain, return_timestamps (chunks and their times), initial_prompt, hotwords, audio longer than
  30 s (with and without timestamps), silence, very short audio; language detection / translate on a multilingual
  IR when one is present;
- bad input: NULLs, empty audio, a language or task the model refuses, out-of-range indexes, unset strings.

Models: $OVGENAI_C_WHISPER_IR (else ~/.cache/ovgenai_c/models/whisper-tiny.en/ir) and, multilingual,
$OVGENAI_C_WHISPER_MULTILINGUAL_IR (else ~/.cache/ovgenai_c/models/whisper-base/ir); speech from espeak-ng. Each
is skipped with a reason when absent. Both pipelines run with INFERENCE_PRECISION_HINT=f32 (as tests/backend).
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import wave
from typing import Any, Dict, List, Optional

import numpy as np
import pytest

cffi = pytest.importorskip("cffi")

REPO = pathlib.Path(__file__).resolve().parents[2]
CDEFS = REPO / "cdefs"
WHISPER_EXTRAS = REPO / "native" / "src" / "c_api" / "whisper_extras.h"
MODELS = pathlib.Path.home() / ".cache" / "ovgenai_c" / "models"

INVALID_C_PARAM, UNKNOW_EXCEPTION, NOT_FOUND, OUT_OF_BOUNDS = -14, -17, -5, -6
F32 = {"INFERENCE_PRECISION_HINT": "f32"}

SENTENCES = [
    "The quick brown fox jumps over the lazy dog. It was a sunny day in the park.",
    "Please call Stella and ask her to bring these things with her from the store: six spoons of fresh snow peas, "
    "five thick slabs of blue cheese, and maybe a snack for her brother Bob.",
    "We also need a small plastic snake and a big toy frog for the kids.",
]


# ---------------------------------------------------------------------------------------------------- fixtures


def _ir(env: str, default: pathlib.Path) -> Optional[pathlib.Path]:
    p = pathlib.Path(os.environ.get(env) or default)
    needed = ("openvino_encoder_model.xml", "openvino_decoder_model.xml", "openvino_tokenizer.xml",
              "openvino_detokenizer.xml")
    return p if all((p / f).exists() for f in needed) else None


def _tokenizers_ext() -> Optional[str]:
    try:
        import openvino_tokenizers  # noqa: F401  (locates the extension only)
    except Exception:
        return None
    p = pathlib.Path(openvino_tokenizers.__file__).parent / "lib" / "libopenvino_tokenizers.so"
    return str(p) if p.exists() else None


class Api:
    """The bundled library over the Whisper headers, with the two-call helpers."""

    def __init__(self, path: pathlib.Path) -> None:
        self.ffi = cffi.FFI()
        for h in sorted(CDEFS.glob("0*.h")):
            self.ffi.cdef(h.read_text())
        self.ffi.cdef((CDEFS / "90_ovgenai_c_bundled.h").read_text())
        self.ffi.cdef(WHISPER_EXTRAS.read_text())
        self.lib = self.ffi.dlopen(str(path))

    def last_error(self) -> str:
        return self.ffi.string(self.lib.ovgenai_c_bundled_last_error()).decode("utf-8", "replace")

    def string(self, fn, *args) -> str:
        size = self.ffi.new("size_t*")
        assert fn(*args, self.ffi.NULL, size) == 0, self.last_error()
        buf = self.ffi.new("char[]", size[0])
        assert fn(*args, buf, size) == 0, self.last_error()
        return self.ffi.string(buf).decode("utf-8")

    def pipeline(self, ir: pathlib.Path, **properties: str):
        p = self.ffi.new("ov_genai_whisper_pipeline**")
        props = {"INFERENCE_PRECISION_HINT": "f32", **properties}
        args = [self.ffi.new("char[]", s.encode()) for kv in props.items() for s in kv]
        st = self.lib.ov_genai_whisper_pipeline_create(str(ir).encode(), b"CPU", len(args), p, *args)
        assert st == 0, self.last_error()
        return self.ffi.gc(p[0], self.lib.ov_genai_whisper_pipeline_free)

    def config(self, pipe, **fields):
        c = self.ffi.new("ov_genai_whisper_generation_config**")
        assert self.lib.ov_genai_whisper_pipeline_get_generation_config(pipe, c) == 0, self.last_error()
        cfg = self.ffi.gc(c[0], self.lib.ov_genai_whisper_generation_config_free)
        for k, v in fields.items():
            setter = getattr(self.lib, "ov_genai_whisper_generation_config_set_" + k)
            assert setter(cfg, v.encode() if isinstance(v, str) else v) == 0, self.last_error()
        return cfg

    def generate(self, pipe, audio: np.ndarray, cfg=None) -> Dict[str, Any]:
        a = np.ascontiguousarray(audio, dtype=np.float32)
        r = self.ffi.new("ov_genai_whisper_decoded_results**")
        st = self.lib.ov_genai_whisper_pipeline_generate(pipe, self.ffi.cast("float*", a.ctypes.data), a.size,
                                                         cfg if cfg is not None else self.ffi.NULL, r)
        assert st == 0, self.last_error()
        res = self.ffi.gc(r[0], self.lib.ov_genai_whisper_decoded_results_free)
        lib = self.lib
        out: Dict[str, Any] = {"text": self.string(lib.ov_genai_whisper_decoded_results_get_text_at, res, 0),
                               "language": self.string(lib.ovgenai_c_bundled_whisper_decoded_results_get_language,
                                                       res),
                               "chunks": None}
        pm = self.ffi.new("ov_genai_perf_metrics**")
        assert lib.ov_genai_whisper_decoded_results_get_perf_metrics(res, pm) == 0
        n = self.ffi.new("size_t*")
        assert lib.ov_genai_perf_metrics_get_num_generation_tokens(pm[0], n) == 0
        out["perf"] = {"generated": n[0]}
        lib.ov_genai_decoded_results_perf_metrics_free(pm[0])
        for which in ("features_extraction", "encode_inference", "decode_inference"):
            assert lib.ovgenai_c_bundled_whisper_decoded_results_get_durations(res, which.encode(), self.ffi.NULL,
                                                                               n) == 0
            out["perf"][which] = n[0]
        has = self.ffi.new("bool*")
        assert lib.ov_genai_whisper_decoded_results_has_chunks(res, has) == 0
        if has[0]:
            n = self.ffi.new("size_t*")
            assert lib.ov_genai_whisper_decoded_results_get_chunks_count(res, n) == 0
            chunks = []
            for i in range(n[0]):
                ch = self.ffi.new("ov_genai_whisper_decoded_result_chunk**")
                assert lib.ov_genai_whisper_decoded_results_get_chunk_at(res, i, ch) == 0
                s, e = self.ffi.new("float*"), self.ffi.new("float*")
                assert lib.ov_genai_whisper_decoded_result_chunk_get_start_ts(ch[0], s) == 0
                assert lib.ov_genai_whisper_decoded_result_chunk_get_end_ts(ch[0], e) == 0
                chunks.append([s[0], e[0], self.string(lib.ov_genai_whisper_decoded_result_chunk_get_text, ch[0])])
                lib.ov_genai_whisper_decoded_result_chunk_free(ch[0])
            out["chunks"] = chunks
        return out


@pytest.fixture(scope="module")
def api() -> Api:
    from testsupport import bundled_library_path

    path = bundled_library_path() or REPO / "ovgenai_c" / "_bundled" / "libovgenai_c_bundled.so"
    if not path.exists():
        pytest.skip(f"bundled backend not built ({path}); run scripts/build_backend.sh")
    ext = _tokenizers_ext()
    if ext is None:
        pytest.skip("openvino-tokenizers is not installed")
    os.environ.setdefault("OPENVINO_TOKENIZERS_PATH_GENAI", ext)
    import openvino  # noqa: F401  (maps the wheel's libopenvino first, as the binding's loader does)

    api = Api(path)
    if not hasattr(api.lib, "ov_genai_whisper_pipeline_create"):
        pytest.skip("this bundled library has no Whisper pipeline")
    return api


@pytest.fixture(scope="module")
def real_ir() -> pathlib.Path:
    ir = _ir("OVGENAI_C_WHISPER_IR", MODELS / "whisper-tiny.en" / "ir")
    if ir is None:
        pytest.skip("no Whisper IR (set OVGENAI_C_WHISPER_IR or convert whisper-tiny.en with ovgenai_c.models)")
    return ir


@pytest.fixture(scope="module")
def multilingual_ir() -> pathlib.Path:
    ir = _ir("OVGENAI_C_WHISPER_MULTILINGUAL_IR", MODELS / "whisper-base" / "ir")
    if ir is None:
        pytest.skip("no multilingual Whisper IR (set OVGENAI_C_WHISPER_MULTILINGUAL_IR)")
    return ir


def _load_wav_16k(path: pathlib.Path) -> np.ndarray:
    from scipy.signal import resample_poly

    with wave.open(str(path)) as w:
        sr, data = w.getframerate(), w.readframes(w.getnframes())
    a = np.frombuffer(data, dtype=np.int16).astype(np.float32) / 32768.0
    g = np.gcd(16000, sr)
    return resample_poly(a, 16000 // g, sr // g).astype(np.float32)


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> List[np.ndarray]:
    """SENTENCES spoken by espeak-ng, 16 kHz float32."""
    espeak = shutil.which("espeak-ng")
    if espeak is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng)")
    d = tmp_path_factory.mktemp("speech")
    out = []
    for i, s in enumerate(SENTENCES):
        wav = d / f"s{i}.wav"
        subprocess.run([espeak, "-w", str(wav), s], check=True, capture_output=True)
        out.append(_load_wav_16k(wav))
    return out


ORACLE = r"""
import json, sys
import numpy as np
import openvino_genai as og
ir, cases_path, out_path = sys.argv[1:4]
pipe = og.WhisperPipeline(ir, "CPU", INFERENCE_PRECISION_HINT="f32")
out = []
for case in json.load(open(cases_path)):
    audio = np.load(case["audio"]).astype(np.float32)
    try:
        r = pipe.generate(audio.tolist(), **case["config"])
    except Exception as exc:
        out.append({"error": str(exc)})
        continue
    chunks = None if r.chunks is None else [[c.start_ts, c.end_ts, c.text] for c in r.chunks]
    pm = r.perf_metrics
    perf = {"generated": pm.get_num_generated_tokens()}
    for which in ("features_extraction", "encode_inference", "decode_inference"):
        perf[which] = len(getattr(pm.whisper_raw_metrics, which + "_durations"))
    out.append({"text": r.texts[0], "chunks": chunks, "language": getattr(r, "language", None), "perf": perf})
json.dump(out, open(out_path, "w"))
"""


def oracle(ir: pathlib.Path, cases: List[Dict[str, Any]], tmp: pathlib.Path, script: str = ORACLE
           ) -> List[Dict[str, Any]]:
    """openvino_genai.WhisperPipeline's results for `cases` ({"audio": array, "config": dict}), in a child
    (``script``: the child's code, by default ORACLE)."""
    pytest.importorskip("openvino_genai")
    spec = []
    for i, c in enumerate(cases):
        path = tmp / f"audio{i}.npy"
        np.save(path, c["audio"])
        spec.append({"audio": str(path), "config": c["config"]})
    (tmp / "cases.json").write_text(json.dumps(spec))
    proc = subprocess.run([sys.executable, "-c", script, str(ir), str(tmp / "cases.json"), str(tmp / "out.json")],
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((tmp / "out.json").read_text())


def bundled(api: Api, ir: pathlib.Path, cases: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    pipe = api.pipeline(ir)
    return [api.generate(pipe, c["audio"], api.config(pipe, **c["config"])) for c in cases]


def assert_same(ours: List[Dict[str, Any]], theirs: List[Dict[str, Any]], names: List[str]) -> None:
    """Texts and chunks (times and texts) identical; the language and the perf counts too where both sides
    report them."""
    mismatches = []
    for name, a, b in zip(names, ours, theirs):
        assert "error" not in b, f"{name}: the oracle failed: {b['error']}"
        if a["text"] != b["text"] or a["chunks"] != b["chunks"]:
            mismatches.append(f"{name}:\n  ours  {a}\n  genai {b}")
        elif None not in (a["language"], b.get("language")) and a["language"] != b["language"]:
            mismatches.append(f"{name}: language {a['language']!r} != {b['language']!r}")
        elif None not in (a.get("perf"), b.get("perf")) and a["perf"] != b["perf"]:
            # generated tokens (those kept in segments) and the number of feature / encoder / decoder timings
            mismatches.append(f"{name}: perf counts {a['perf']} != {b['perf']}")
    assert not mismatches, "\n".join(mismatches)


# ---------------------------------------------------------------------------------------------------- features


def _hz_to_mel(f: np.ndarray) -> np.ndarray:
    f = np.asarray(f, dtype=np.float64)
    return np.where(f >= 1000.0, 15.0 + np.log(np.maximum(f, 1e-12) / 1000.0) * 27.0 / np.log(6.4), 3.0 * f / 200.0)


def _mel_to_hz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    return np.where(m >= 15.0, 1000.0 * np.exp(np.log(6.4) / 27.0 * (m - 15.0)), 200.0 * m / 3.0)


def slaney_filters(n_mels: int, n_fft: int = 400, sr: int = 16000) -> np.ndarray:
    edges = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(8000.0), n_mels + 2))
    freqs = np.linspace(0.0, sr / 2, 1 + n_fft // 2)
    lower = (freqs[None, :] - edges[:-2, None]) / (edges[1:-1] - edges[:-2])[:, None]
    upper = (edges[2:, None] - freqs[None, :]) / (edges[2:] - edges[1:-1])[:, None]
    w = np.maximum(0.0, np.minimum(lower, upper))
    return w * (2.0 / (edges[2:] - edges[:-2]))[:, None]


def reference_log_mel(x: np.ndarray, n_mels: int, n_fft: int = 400, hop: int = 160, n_samples: int = 480000):
    """GenAI's features in float64 numpy: reflect-pad n_fft/2 in front, zeros after the audio up to n_samples
    (the frames stop at the audio: nothing of the end reflection is used), periodic Hann, |rfft|^2, Slaney mel,
    log10 with a 1e-10 floor, clamp at max - 8, (x + 4) / 4."""
    x = np.asarray(x, dtype=np.float64)
    pad = n_fft // 2
    p = np.zeros(max(len(x), n_samples) + 2 * pad)
    p[pad:pad + len(x)] = x
    p[:pad] = x[1:pad + 1][::-1]
    n_frames = (len(p) - n_fft) // hop
    window = 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n_fft) / n_fft)
    frames = p[np.arange(n_fft)[None, :] + hop * np.arange(n_frames)[:, None]] * window
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    mel = slaney_filters(n_mels, n_fft) @ power.T
    log_mel = np.log10(np.maximum(mel, 1e-10))
    log_mel = np.maximum(log_mel, log_mel.max() - 8.0)
    return (log_mel + 4.0) / 4.0


def native_log_mel(api: Api, x: np.ndarray, preprocessor: pathlib.Path) -> np.ndarray:
    a = np.ascontiguousarray(x, dtype=np.float32)
    ptr = api.ffi.cast("float*", a.ctypes.data)
    fs, nf = api.ffi.new("size_t*"), api.ffi.new("size_t*")
    path = str(preprocessor).encode()
    assert api.lib.ovgenai_c_bundled_whisper_features(path, ptr, a.size, api.ffi.NULL, fs, nf) == 0, api.last_error()
    out = np.empty((fs[0], nf[0]), dtype=np.float32)
    assert api.lib.ovgenai_c_bundled_whisper_features(path, ptr, a.size, api.ffi.cast("float*", out.ctypes.data),
                                                      fs, nf) == 0, api.last_error()
    return out


def _signal(seconds: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * 16000)) / 16000.0
    chirp = np.sin(2 * np.pi * (200.0 + 900.0 * t) * t)
    return (0.3 * chirp + 0.05 * rng.standard_normal(t.size)).astype(np.float32)


@pytest.mark.parametrize("n_mels", [80, 128])
@pytest.mark.parametrize("seconds", [0.4, 7.5, 33.0])
def test_log_mel_matches_numpy_reference(api, tmp_path, n_mels, seconds):
    pre = tmp_path / "preprocessor_config.json"
    pre.write_text(json.dumps({"feature_size": n_mels, "sampling_rate": 16000, "hop_length": 160, "n_fft": 400,
                               "chunk_length": 30, "n_samples": 480000, "nb_max_frames": 3000}))
    x = _signal(seconds, seed=int(seconds * 10) + n_mels)
    ours = native_log_mel(api, x, pre)
    ref = reference_log_mel(x, n_mels)
    assert ours.shape == ref.shape == (n_mels, max(3000, len(x) // 160))
    np.testing.assert_allclose(ours, ref, rtol=0, atol=2e-4)
    # the padding frames after the audio are the clamped floor, exactly
    assert np.all(ours[:, len(x) // 160 + 3:] == ours.min())


def test_log_mel_defaults_without_preprocessor_file(api, tmp_path):
    x = _signal(1.0, seed=3)
    ours = native_log_mel(api, x, tmp_path / "absent.json")
    np.testing.assert_allclose(ours, reference_log_mel(x, 80), rtol=0, atol=2e-4)


def test_log_mel_refuses_audio_shorter_than_half_a_window(api, tmp_path):
    x = np.zeros(200, dtype=np.float32)
    fs, nf = api.ffi.new("size_t*"), api.ffi.new("size_t*")
    st = api.lib.ovgenai_c_bundled_whisper_features(str(tmp_path / "absent.json").encode(),
                                                    api.ffi.cast("float*", x.ctypes.data), x.size, api.ffi.NULL, fs,
                                                    nf)
    assert st == UNKNOW_EXCEPTION
    assert "raw_speech too short for reflect padding: size=200, required > 200" in api.last_error()


# ---------------------------------------------------------------------------------------------------- exactness


def _long_audio(speech: List[np.ndarray]) -> np.ndarray:
    gap = np.zeros(32000, dtype=np.float32)
    parts = []
    for s in speech * 3:
        parts += [s, gap]
    a = np.concatenate(parts)
    assert len(a) > 480000 * 1.5  # more than one 30 s window, with a partial one at the end
    return a


def test_transcripts_exact_with_genai(api, real_ir, speech, tmp_path):
    long = _long_audio(speech)
    cases = {
        **{f"plain[{i}]": (s, {}) for i, s in enumerate(speech)},
        **{f"timestamps[{i}]": (s, {"return_timestamps": True}) for i, s in enumerate(speech)},
        "initial_prompt": (speech[0], {"initial_prompt": "Quick brown fox, lazy dog."}),
        "hotwords": (speech[1], {"hotwords": "Stella snow peas Bob"}),
        "initial_prompt+timestamps": (speech[1], {"initial_prompt": "Stella", "return_timestamps": True}),
        "long": (long, {}),
        "long+timestamps": (long, {"return_timestamps": True}),
        "long+hotwords": (long, {"hotwords": "frog snake", "return_timestamps": True}),
        "silence": (np.zeros(48000, dtype=np.float32), {}),
        "silence+timestamps": (np.zeros(48000, dtype=np.float32), {"return_timestamps": True}),
        "very_short": (speech[0][8000:8250].copy(), {}),
        "quarter_second": (speech[0][:4000].copy(), {"return_timestamps": True}),
    }
    names = list(cases)
    spec = [{"audio": a, "config": c} for a, c in cases.values()]
    theirs = oracle(real_ir, spec, tmp_path)
    ours = bundled(api, real_ir, spec)
    assert_same(ours, theirs, names)
    # and the transcripts are speech, not noise: the plain ones hold most of their sentence's words
    for i, s in enumerate(SENTENCES):
        words = set(w.strip(".,:").lower() for w in s.split())
        got = set(w.strip(".,:").lower() for w in ours[i]["text"].split())
        assert len(words & got) >= len(words) // 2, ours[i]["text"]
    assert ours[names.index("long+timestamps")]["chunks"][-1][0] > 30.0


def test_multilingual_detection_and_translate_exact_with_genai(api, multilingual_ir, speech, tmp_path):
    cases = {
        "detect": (speech[0], {}),
        "detect+timestamps": (speech[1], {"return_timestamps": True}),
        "language=en": (speech[0], {"language": "en"}),
        "language=<|de|>": (speech[0], {"language": "<|de|>"}),
        "translate": (speech[1], {"language": "en", "task": "translate"}),
        "transcribe": (speech[2], {"task": "transcribe"}),
    }
    names = list(cases)
    spec = [{"audio": a, "config": c} for a, c in cases.values()]
    theirs = oracle(multilingual_ir, spec, tmp_path)
    ours = bundled(api, multilingual_ir, spec)
    assert_same(ours, theirs, names)
    assert ours[0]["language"] == "en"
    assert ours[names.index("language=<|de|>")]["language"] == "de"


# ---------------------------------------------------------------------------------------------------- bad input


def test_bad_input_statuses(api, real_ir, speech):
    ffi, lib = api.ffi, api.lib
    pipe = api.pipeline(real_ir)
    r = ffi.new("ov_genai_whisper_decoded_results**")
    audio = np.ascontiguousarray(speech[0])
    ptr = ffi.cast("float*", audio.ctypes.data)
    assert lib.ov_genai_whisper_pipeline_generate(ffi.NULL, ptr, audio.size, ffi.NULL, r) == INVALID_C_PARAM
    assert lib.ov_genai_whisper_pipeline_generate(pipe, ffi.NULL, audio.size, ffi.NULL, r) == INVALID_C_PARAM
    assert "raw_speech" in api.last_error()
    assert lib.ov_genai_whisper_pipeline_generate(pipe, ptr, audio.size, ffi.NULL, ffi.NULL) == INVALID_C_PARAM
    # empty and too short audio: GenAI's check, as an error status with its text
    for n in (0, 150):
        assert lib.ov_genai_whisper_pipeline_generate(pipe, ptr, n, ffi.NULL, r) == UNKNOW_EXCEPTION
        assert "raw_speech too short for reflect padding" in api.last_error()
    # an English-only model refuses a language and a task (upstream's validate messages)
    for field, value, message in (("language", "en", "Cannot specify 'language' for not multilingual model."),
                                  ("task", "translate", "Cannot specify 'task' for not multilingual model.")):
        cfg = api.config(pipe, **{field: value})
        assert lib.ov_genai_whisper_pipeline_generate(pipe, ptr, audio.size, cfg, r) == UNKNOW_EXCEPTION
        assert message in api.last_error()
        assert lib.ov_genai_whisper_pipeline_set_generation_config(pipe, cfg) == UNKNOW_EXCEPTION
    # a multilingual config with an unknown language or task
    cfg = api.config(pipe, is_multilingual=True, language="xx")
    assert lib.ov_genai_whisper_generation_config_validate(cfg) == UNKNOW_EXCEPTION
    assert lib.ov_genai_whisper_pipeline_generate(pipe, ptr, audio.size, cfg, r) == UNKNOW_EXCEPTION
    assert "lang_to_id" in api.last_error()  # tiny.en has no lang_to_id at all
    # the pipeline still works after the refusals
    res = api.generate(pipe, audio)
    assert res["text"].strip() and res["chunks"] is None and res["language"] == "en"


def test_results_and_config_accessors(api, real_ir, speech):
    ffi, lib = api.ffi, api.lib
    pipe = api.pipeline(real_ir)
    audio = np.ascontiguousarray(speech[0])
    r = ffi.new("ov_genai_whisper_decoded_results**")
    assert lib.ov_genai_whisper_pipeline_generate(pipe, ffi.cast("float*", audio.ctypes.data), audio.size,
                                                  ffi.NULL, r) == 0
    res = ffi.gc(r[0], lib.ov_genai_whisper_decoded_results_free)
    n, score, size = ffi.new("size_t*"), ffi.new("float*"), ffi.new("size_t*")
    assert lib.ov_genai_whisper_decoded_results_get_texts_count(res, n) == 0 and n[0] == 1
    assert lib.ov_genai_whisper_decoded_results_get_score_at(res, 0, score) == 0 and score[0] == 1.0
    assert lib.ov_genai_whisper_decoded_results_get_score_at(res, 1, score) == OUT_OF_BOUNDS
    assert lib.ov_genai_whisper_decoded_results_get_text_at(res, 1, ffi.NULL, size) == OUT_OF_BOUNDS
    ch = ffi.new("ov_genai_whisper_decoded_result_chunk**")
    assert lib.ov_genai_whisper_decoded_results_get_chunk_at(res, 0, ch) == NOT_FOUND
    assert lib.ov_genai_whisper_decoded_results_get_chunks_count(res, n) == 0 and n[0] == 0
    text = api.string(lib.ov_genai_whisper_decoded_results_get_string, res)
    assert text == api.string(lib.ov_genai_whisper_decoded_results_get_text_at, res, 0)
    size[0] = len(text.encode())  # one byte short of the terminator
    buf = ffi.new("char[]", size[0])
    assert lib.ov_genai_whisper_decoded_results_get_string(res, buf, size) == OUT_OF_BOUNDS
    # perf metrics: the base metrics, freed with the LLM side's function; Whisper's own through the extras
    pm = ffi.new("ov_genai_perf_metrics**")
    assert lib.ov_genai_whisper_decoded_results_get_perf_metrics(res, pm) == 0
    gen = ffi.new("size_t*")
    assert lib.ov_genai_perf_metrics_get_num_generation_tokens(pm[0], gen) == 0 and gen[0] > 3
    lib.ov_genai_decoded_results_perf_metrics_free(pm[0])
    for which, expected in (("features_extraction", 1), ("encode_inference", 1), ("decode_inference", gen[0])):
        assert lib.ovgenai_c_bundled_whisper_decoded_results_get_durations(res, which.encode(), ffi.NULL, n) == 0
        assert n[0] == expected, which
    assert lib.ovgenai_c_bundled_whisper_decoded_results_get_durations(res, b"nope", ffi.NULL, n) == INVALID_C_PARAM

    # config: defaults of create(), unset strings, token lists, create_from_json = GenAI's reader
    c = ffi.new("ov_genai_whisper_generation_config**")
    assert lib.ov_genai_whisper_generation_config_create(c) == 0
    cfg = ffi.gc(c[0], lib.ov_genai_whisper_generation_config_free)
    i64, b = ffi.new("int64_t*"), ffi.new("bool*")
    assert lib.ov_genai_whisper_generation_config_get_decoder_start_token_id(cfg, i64) == 0 and i64[0] == 50258
    assert lib.ov_genai_whisper_generation_config_get_no_timestamps_token_id(cfg, i64) == 0 and i64[0] == 50363
    assert lib.ov_genai_whisper_generation_config_get_is_multilingual(cfg, b) == 0 and b[0]
    assert lib.ov_genai_whisper_generation_config_get_language(cfg, ffi.NULL, size) == NOT_FOUND
    assert lib.ov_genai_whisper_generation_config_get_language(cfg, ffi.NULL, ffi.NULL) == INVALID_C_PARAM
    assert lib.ov_genai_whisper_generation_config_validate(cfg) == UNKNOW_EXCEPTION
    assert "'lang_to_id' map must be provided for multilingual models." in api.last_error()
    assert lib.ov_genai_whisper_generation_config_set_task(cfg, b"transcribe") == 0
    assert api.string(lib.ov_genai_whisper_generation_config_get_task, cfg) == "transcribe"
    assert lib.ov_genai_whisper_generation_config_set_task(cfg, ffi.NULL) == 0
    assert lib.ov_genai_whisper_generation_config_get_task(cfg, ffi.NULL, size) == NOT_FOUND
    toks = ffi.new("int64_t[]", [1, 2, 3])
    assert lib.ov_genai_whisper_generation_config_set_suppress_tokens(cfg, toks, 3) == 0
    assert lib.ov_genai_whisper_generation_config_get_suppress_tokens_count(cfg, n) == 0 and n[0] == 3
    back = ffi.new("int64_t[]", 3)
    assert lib.ov_genai_whisper_generation_config_get_suppress_tokens(cfg, back, 2) == OUT_OF_BOUNDS
    assert lib.ov_genai_whisper_generation_config_get_suppress_tokens(cfg, back, 3) == 0 and list(back) == [1, 2, 3]
    assert lib.ov_genai_whisper_generation_config_get_suppress_tokens(cfg, ffi.NULL, 3) == INVALID_C_PARAM
    g = ffi.new("ov_genai_generation_config**")
    assert lib.ov_genai_whisper_generation_config_get_generation_config(cfg, g) == 0
    ml = ffi.new("size_t*")
    assert lib.ov_genai_generation_config_get_max_new_tokens(g[0], ml) == 0  # a copy of the base fields
    lib.ov_genai_generation_config_free(g[0])

    og = pytest.importorskip("openvino_genai")
    ref = og.WhisperGenerationConfig(str(real_ir / "generation_config.json"))
    assert lib.ov_genai_whisper_generation_config_create_from_json(str(real_ir / "generation_config.json").encode(),
                                                                   c) == 0
    js = ffi.gc(c[0], lib.ov_genai_whisper_generation_config_free)
    for field in ("decoder_start_token_id", "pad_token_id", "translate_token_id", "transcribe_token_id",
                  "prev_sot_token_id", "no_timestamps_token_id"):
        assert getattr(lib, f"ov_genai_whisper_generation_config_get_{field}")(js, i64) == 0
        assert i64[0] == getattr(ref, field), field
    assert lib.ov_genai_whisper_generation_config_get_is_multilingual(js, b) == 0 and b[0] == ref.is_multilingual
    for field in ("suppress_tokens", "begin_suppress_tokens"):
        assert getattr(lib, f"ov_genai_whisper_generation_config_get_{field}_count")(js, n) == 0
        arr = ffi.new("int64_t[]", max(n[0], 1))
        assert getattr(lib, f"ov_genai_whisper_generation_config_get_{field}")(js, arr, n[0]) == 0
        assert list(arr)[:n[0]] == list(getattr(ref, field)), field


CRASH_PRONE = r"""
import sys
sys.path.insert(0, sys.argv[1])
import test_whisper_bundled as t
api = t.Api(t.pathlib.Path(sys.argv[2]))
ffi, lib = api.ffi, api.lib
p = ffi.new("ov_genai_whisper_pipeline**")
assert lib.ov_genai_whisper_pipeline_create(b"/nonexistent/whisper", b"CPU", 0, p) == t.UNKNOW_EXCEPTION
assert "does not exist" in api.last_error()
assert lib.ov_genai_whisper_pipeline_create(ffi.NULL, b"CPU", 0, p) == t.INVALID_C_PARAM
assert lib.ov_genai_whisper_pipeline_create(sys.argv[3].encode(), b"CPU", 1, p) == t.INVALID_C_PARAM
assert lib.ov_genai_whisper_pipeline_create(sys.argv[3].encode(), b"NO_SUCH_DEVICE", 0, p) == t.UNKNOW_EXCEPTION
lib.ov_genai_whisper_pipeline_free(ffi.NULL)
lib.ov_genai_whisper_decoded_results_free(ffi.NULL)
lib.ov_genai_whisper_decoded_result_chunk_free(ffi.NULL)
lib.ov_genai_whisper_generation_config_free(ffi.NULL)
for fn in ("get_texts_count", "has_chunks", "get_chunks_count"):
    assert getattr(lib, "ov_genai_whisper_decoded_results_" + fn)(ffi.NULL, ffi.NULL) == t.INVALID_C_PARAM
assert lib.ov_genai_whisper_decoded_result_chunk_get_text(ffi.NULL, ffi.NULL, ffi.NULL) == t.INVALID_C_PARAM
c = ffi.new("ov_genai_whisper_generation_config**")
assert lib.ov_genai_whisper_generation_config_create_from_json(b"/nonexistent.json", c) == t.UNKNOW_EXCEPTION
assert lib.ov_genai_whisper_generation_config_create_from_json(ffi.NULL, c) == t.INVALID_C_PARAM
print("ok")
"""


def test_create_and_null_handles_in_a_child(api, real_ir):
    from testsupport import bundled_library_path

    path = bundled_library_path() or REPO / "ovgenai_c" / "_bundled" / "libovgenai_c_bundled.so"
    proc = subprocess.run([sys.executable, "-c", CRASH_PRONE, str(pathlib.Path(__file__).parent), str(path),
                           str(real_ir)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO / "tests")})
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


# ---------------------------------------------------------------------------------------------------- the binding


def _binding_pipe(ir: pathlib.Path):
    from testsupport import bundled_library_path

    import ovgenai_c

    path = bundled_library_path()
    if path is None or not path.exists():
        pytest.skip("bundled backend not built; run scripts/build_backend.sh")
    return ovgenai_c.WhisperPipeline(str(ir), "CPU", library=str(path), **F32)


def _binding_run(pipe, cases: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    out = []
    for c in cases:
        r = pipe.generate(c["audio"], **c["config"])
        chunks = None if r.chunks is None else [[ch.start_ts, ch.end_ts, ch.text] for ch in r.chunks]
        # the language and the stage durations: the bundled backend's extras (upstream's C ABI reports neither)
        pm = r.perf_metrics
        perf = {"generated": pm.get_num_generated_tokens()}
        for which in ("features_extraction", "encode_inference", "decode_inference"):
            perf[which] = len(getattr(pm.whisper_raw_metrics, which + "_durations"))
        out.append({"text": r.texts[0], "chunks": chunks, "language": r.language, "perf": perf})
    return out


def test_binding_exact_with_genai_on_the_speech_samples(api, whisper_real_ir, speech_samples, tmp_path):
    """ovgenai_c.WhisperPipeline over the bundled backend = openvino_genai on the 12 English sentences, plain
    and with timestamps; the word error rate of those transcripts is printed (the WER bound is w1's test)."""
    from whisper_support import wer

    english = list(speech_samples.english)
    cases = [{"audio": s.audio, "config": {}} for s in english]
    cases += [{"audio": s.audio, "config": {"return_timestamps": True}} for s in english]
    names = [f"plain[{i}]" for i in range(len(english))] + [f"timestamps[{i}]" for i in range(len(english))]
    theirs = oracle(whisper_real_ir, cases, tmp_path)
    with _binding_pipe(whisper_real_ir) as pipe:
        ours = _binding_run(pipe, cases)
    assert_same(ours, theirs, names)
    rate = wer([s.text for s in english], [o["text"] for o in ours[:len(english)]])
    print(f"\nbundled whisper-tiny.en on {len(english)} espeak-ng sentences: WER {rate:.1%}, "
          f"{len(cases)} cases identical to openvino_genai")


def test_binding_exact_with_genai_on_the_tiny_random_model(api, whisper_tiny_ir, speech_samples, tmp_path):
    """The random-weights tiny model: no meaningful text, but every token must still match (long windows of
    max_length tokens exercise the timestamp rules and the KV cache to the end)."""
    english = list(speech_samples.english)[:3]
    cases = [{"audio": s.audio, "config": {}} for s in english]
    cases += [{"audio": english[0].audio, "config": {"return_timestamps": True}}]
    theirs = oracle(whisper_tiny_ir, cases, tmp_path)
    with _binding_pipe(whisper_tiny_ir) as pipe:
        ours = _binding_run(pipe, cases)
    assert_same(ours, theirs, [f"case[{i}]" for i in range(len(cases))])


def test_binding_multilingual_exact_with_genai(api, whisper_multilingual_ir, speech_samples, tmp_path):
    foreign = list(speech_samples.foreign)
    cases = [{"audio": s.audio, "config": {}} for s in foreign]  # language detected
    cases += [{"audio": s.audio, "config": {"task": "translate"}} for s in foreign]
    cases += [{"audio": s.audio, "config": {"language": s.language, "return_timestamps": True}} for s in foreign]
    theirs = oracle(whisper_multilingual_ir, cases, tmp_path)
    with _binding_pipe(whisper_multilingual_ir) as pipe:
        ours = _binding_run(pipe, cases)
    assert_same(ours, theirs, [f"case[{i}]" for i in range(len(cases))])


ASR_ORACLE = r"""
import json, sys
import numpy as np
import openvino_genai as og
ir, cases_path, out_path = sys.argv[1:4]
pipe = og.ASRPipeline(ir, "CPU", INFERENCE_PRECISION_HINT="f32")
out = []
for case in json.load(open(cases_path)):
    audio = np.load(case["audio"]).astype(np.float32)
    r = pipe.generate(audio.tolist(), **case["config"])
    chunks = None if r.chunks is None else [[[c.start_ts, c.end_ts, c.text, list(c.token_ids)] for c in cs]
                                            for cs in r.chunks]
    raw = r.perf_metrics.asr_raw_metrics
    stages = {k: len(getattr(raw, k + "_durations")) for k in ("features_extraction", "encode_inference",
                                                              "decode_inference", "word_level_timestamps_processing")}
    out.append({"texts": list(r.texts), "scores": list(r.scores), "languages": list(r.languages), "chunks": chunks,
                "words": r.words, "str": str(r), "type": type(r).__name__, "stages": stages,
                "perf_types": [type(r.perf_metrics).__name__, type(raw).__name__]})
json.dump(out, open(out_path, "w"))
"""


def test_asr_pipeline_exact_with_genai(api, whisper_multilingual_ir, speech_samples, tmp_path):
    """openvino_genai 2026.4's model-agnostic ASRPipeline on a Whisper model: ovgenai_c.ASRPipeline gives the same
    texts, scores, languages (detected, forced), per-text segment lists, string form and stage-duration counts;
    ``context`` is ignored for Whisper as upstream ignores it."""
    pytest.importorskip("openvino_genai")
    import openvino_genai

    if not hasattr(openvino_genai, "ASRPipeline"):
        pytest.skip("openvino_genai has no ASRPipeline (before 2026.4)")
    from testsupport import bundled_library_path

    import ovgenai_c

    samples = list(speech_samples.foreign)[:2] + list(speech_samples.english)[:2]
    cases = [{"audio": s.audio, "config": {}} for s in samples]
    cases += [{"audio": samples[0].audio, "config": {"return_timestamps": True, "context": "ignored by Whisper"}}]
    cases += [{"audio": samples[-1].audio, "config": {"language": "<|de|>", "task": "translate"}}]
    theirs = oracle(whisper_multilingual_ir, cases, tmp_path, ASR_ORACLE)
    path = bundled_library_path()
    if path is None or not path.exists():
        pytest.skip("bundled backend not built; run scripts/build_backend.sh")
    ours = []
    with ovgenai_c.ASRPipeline(str(whisper_multilingual_ir), "CPU", library=str(path), **F32) as pipe:
        for c in cases:
            r = pipe.generate(c["audio"], **c["config"])
            chunks = None if r.chunks is None else [[[ch.start_ts, ch.end_ts, ch.text, list(ch.token_ids)]
                                                     for ch in cs] for cs in r.chunks]
            raw = r.perf_metrics.asr_raw_metrics
            stages = {k: len(getattr(raw, k + "_durations")) for k in (
                "features_extraction", "encode_inference", "decode_inference", "word_level_timestamps_processing")}
            ours.append({"texts": r.texts, "scores": r.scores, "languages": r.languages, "chunks": chunks,
                         "words": r.words, "str": str(r), "type": type(r).__name__, "stages": stages,
                         "perf_types": [type(r.perf_metrics).__name__, type(raw).__name__]})
            assert r.perf_metrics.get_encode_inference_duration().mean > 0
            assert r.perf_metrics.get_decode_inference_duration().mean > 0
    assert [t["languages"] for t in theirs][:2] != [["en"], ["en"]]  # the foreign samples were detected as such
    assert ours == theirs


# ---------------------------------------------------------------------------------------------------- cancellation


def _generate_status(api: Api, pipe, audio: np.ndarray) -> int:
    a = np.ascontiguousarray(audio, dtype=np.float32)
    r = api.ffi.new("ov_genai_whisper_decoded_results**")
    st = api.lib.ov_genai_whisper_pipeline_generate(pipe, api.ffi.cast("float*", a.ctypes.data), a.size, api.ffi.NULL,
                                                    r)
    if st == 0:
        api.lib.ov_genai_whisper_decoded_results_free(r[0])
    return st


def test_cancel_stops_a_running_transcription_only(api, real_ir, speech):
    """The extra's contract: a cancel while generate runs makes it return INFER_CANCELLED (-13) without results; a
    cancel when nothing runs reports so and is not remembered; the handle stays valid after the pipeline's free."""
    import threading
    import time

    pipe = api.pipeline(real_ir)
    handle = api.ffi.new("ovgenai_c_whisper_cancel**")
    assert api.lib.ovgenai_c_bundled_whisper_pipeline_get_cancel(pipe, handle) == 0, api.last_error()
    switch = api.ffi.gc(handle[0], api.lib.ovgenai_c_bundled_whisper_cancel_free)
    was_running = api.ffi.new("int*", 7)
    assert api.lib.ovgenai_c_bundled_whisper_cancel(switch, was_running) == 0 and was_running[0] == 0
    want = api.generate(pipe, speech[1])["text"]
    assert want.strip()  # the idle cancel was not kept for this call

    long_audio = _long_audio(speech)  # ~2 windows: seconds of work
    t0 = time.perf_counter()
    assert _generate_status(api, pipe, long_audio) == 0
    whole = time.perf_counter() - t0
    status: Dict[str, int] = {}
    t = threading.Thread(target=lambda: status.update(st=_generate_status(api, pipe, long_audio)))
    t.start()
    t.join(whole / 2)  # well inside a window's decoding (which is most of the time)
    stopped_running = 0
    while t.is_alive():
        assert api.lib.ovgenai_c_bundled_whisper_cancel(switch, was_running) == 0
        stopped_running += was_running[0]
        t.join(0.01)
    assert status["st"] == -13, (status, api.last_error())  # INFER_CANCELLED
    assert stopped_running >= 1
    # the pipeline goes on, answering as before: nothing of the window left half-decoded seeds the next call
    assert api.generate(pipe, speech[1])["text"] == want

    for bad in ((api.ffi.NULL, handle), (pipe, api.ffi.NULL)):
        assert api.lib.ovgenai_c_bundled_whisper_pipeline_get_cancel(*bad) == -14  # INVALID_C_PARAM
    assert api.lib.ovgenai_c_bundled_whisper_cancel(api.ffi.NULL, was_running) == -14
    api.lib.ovgenai_c_bundled_whisper_cancel_free(api.ffi.NULL)  # a no-op
    api.ffi.release(pipe)  # the pipeline is freed first...
    assert api.lib.ovgenai_c_bundled_whisper_cancel(switch, was_running) == 0 and was_running[0] == 0  # ...not it


def test_binding_timeout_and_ctrl_c_cancel_the_transcription(api, whisper_real_ir, speech, python_sigint_handler):
    """WhisperPipeline on the bundled backend: a timeout and Ctrl-C stop the transcription (not just the wait), say
    so, and leave the pipeline answering as before."""
    import _thread
    import threading
    import time

    from ovgenai_c import errors

    long_audio = _long_audio(speech)
    with _binding_pipe(whisper_real_ir) as pipe:
        want = pipe.generate(speech[0]).texts
        t0 = time.perf_counter()
        pipe.generate(long_audio)
        full = time.perf_counter() - t0
        t0 = time.perf_counter()
        with pytest.raises(errors.GenerationTimeoutError, match="was cancelled") as info:
            pipe.generate(long_audio, timeout=0.2)
        stopped = time.perf_counter() - t0
        assert isinstance(info.value, TimeoutError)
        t0 = time.perf_counter()
        assert pipe.generate(speech[0]).texts == want  # nothing of the cancelled call is left to wait for
        after = time.perf_counter() - t0
        # the cancelled call did not run to its end: the timeout came back, and the next call ran, well within
        # the time a whole transcription of the long audio takes
        assert stopped + after < 0.8 * full, (stopped, after, full)

        timer = threading.Timer(0.2, _thread.interrupt_main)
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt, match="was cancelled"):
                pipe.generate(long_audio)
        finally:
            timer.cancel()
        assert pipe.generate(speech[0]).texts == want


def _wav(samples: np.ndarray) -> bytes:
    import io

    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes((np.clip(samples, -1.0, 1.0) * 32767).astype(np.int16).tobytes())
    return out.getvalue()


def test_server_request_timeout_stops_the_transcription(whisper_real_ir, speech):
    """`ovgenai-c serve` on the bundled backend: a transcription past --request-timeout gets 504 and is stopped, so
    the next request on the same (single) pipeline is answered at once instead of waiting for it (before, it waited
    and ran out of time too)."""
    for module in ("starlette", "uvicorn", "httpx", "python_multipart"):
        pytest.importorskip(module)
    import httpx

    from testsupport import bundled_library_path

    sys.path.insert(0, str(REPO / "tests" / "serve"))
    from serve_helpers import ServerThread

    from ovgenai_c import _loader
    from ovgenai_c.provider import Provider, SessionPool
    from ovgenai_c.serve import ServeConfig, create_app

    path = bundled_library_path()
    if path is None or not path.is_file():
        pytest.skip("bundled backend not built")
    lib = _loader.open_library(str(path))

    def factory(folder: pathlib.Path, index: int) -> Provider:
        return Provider(folder, library=lib, pool=SessionPool(ttl=None, max_resident=1))

    # ~5 minutes of speech, tens of seconds of work: far past the timeout, which leaves a short request (under a
    # second, also on a loaded machine) plenty of time
    long_wav = _wav(np.concatenate([_long_audio(speech)] * 6))
    short_wav = _wav(speech[0])
    config = ServeConfig(models_root=whisper_real_ir.parent, default_model=whisper_real_ir, request_timeout=5.0,
                         parallel=1)
    with ServerThread(create_app(config, provider_factory=factory)) as srv:
        def post(wav: bytes) -> httpx.Response:
            return httpx.post(srv.url + "/v1/audio/transcriptions", timeout=120,
                              files={"file": ("speech.wav", wav, "audio/wav")}, data={"response_format": "text"})

        first = post(short_wav)  # loads the pipeline; the text to expect
        assert first.status_code == 200, ("first", first.text[:300])
        timed_out = post(long_wav)
        assert timed_out.status_code == 504 and "was cancelled" in timed_out.text, timed_out.text[:300]
        again = post(short_wav)  # before: queued behind the abandoned transcription until it ran out of time too
        assert again.status_code == 200, ("again", again.text[:300])
        assert again.text == first.text
