"""The converter against CTranslate2 itself (the ``ctranslate2`` package, when installed): the same model.bin run
by CTranslate2 and as our IR by OpenVINO gives the same encoder output and the same greedy tokens. On the tiny
random model every weight matters, so a misplaced one shows."""
from __future__ import annotations

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
