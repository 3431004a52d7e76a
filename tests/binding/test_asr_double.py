"""ASRPipeline (openvino_genai 2026.4's model-agnostic speech pipeline) over the ABI double: dispatch by
config.json's model_type, ASR's config and result types (pybind's names; the installed pybind module is the oracle
for fields and defaults), the conversion to the Whisper pipeline's config, and what the C API cannot run."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import ovgenai_c
from ovgenai_c import errors
from ovgenai_c.asr_config import ASRGenerationConfig
from ovgenai_c.asr_pipeline import ASRPipeline, asr_model_type
from ovgenai_c.whisper_config import WhisperGenerationConfig

from abi_double.controls import make_whisper_dir

TONE = (0.5 * np.sin(np.arange(16000 * 2) / 7.0)).astype(np.float32)


def echo(samples: np.ndarray, task: str = "transcribe", lang: str = "auto", extra: str = "") -> str:
    """The double's fake transcription (abi_double.c, the Whisper section)."""
    x = samples.astype(np.float32)
    return f" {task} {lang} {x.size} samples sum {float(np.sum(x.astype(np.float64))):.4f} " \
           f"peak {float(np.max(np.abs(x))):.4f}{extra}"


def _folder(tmp_path: Path, model_type: object = "whisper", **generation_config: object) -> Path:
    folder = make_whisper_dir(tmp_path / "asr")
    if generation_config:
        data = json.loads((folder / "generation_config.json").read_text())
        data.update(generation_config)
        (folder / "generation_config.json").write_text(json.dumps(data))
    if model_type is not None:
        (folder / "config.json").write_text(json.dumps({"model_type": model_type}))
    return folder


@pytest.fixture
def make_asr(double, tmp_path):
    made = []

    def _make(**generation_config):
        p = ASRPipeline(_folder(tmp_path, **generation_config), "CPU", library=double.library)
        made.append(p)
        return p

    yield _make
    for p in made:
        p.close()


def test_exported_under_pybinds_names():
    for name in ("ASRPipeline", "ASRGenerationConfig", "ASRDecodedResults", "ASRDecodedResultChunk"):
        assert getattr(ovgenai_c, name).__name__ == name and name in ovgenai_c.__all__


def test_dispatch_by_model_type(double, tmp_path):
    with pytest.raises(errors.ModelNotFoundError, match="config.json not found"):
        ASRPipeline(_folder(tmp_path, model_type=None), "CPU", library=double.library)
    (tmp_path / "asr" / "config.json").write_text(json.dumps({"architectures": ["WhisperForConditionalGeneration"]}))
    with pytest.raises(errors.ConfigError, match="config.json must contain 'model_type' field"):
        ASRPipeline(tmp_path / "asr", "CPU", library=double.library)
    for kind in ("qwen3_asr", "fun_asr"):
        with pytest.raises(errors.NotSupportedError, match=f"a '{kind}' model; the GenAI C API runs Whisper models"):
            ASRPipeline(_folder(tmp_path, model_type=kind), "CPU", library=double.library)
    with pytest.raises(errors.NotSupportedError, match="Unsupported 'llama' ASR model type"):
        ASRPipeline(_folder(tmp_path, model_type="llama"), "CPU", library=double.library)
    with pytest.raises(errors.ModelNotFoundError, match="model folder not found"):
        asr_model_type(tmp_path / "absent")
    assert double.live() == 0  # nothing was created for a refused model


def test_generate_gives_asr_results(double, make_asr):
    pipe = make_asr()
    assert isinstance(pipe.get_generation_config(), ASRGenerationConfig)
    res = pipe.generate(TONE)
    assert type(res).__name__ == "ASRDecodedResults"
    assert res.texts == [echo(TONE)] and res.scores == [1.0] and str(res) == echo(TONE)
    assert res.languages == [""]  # a multilingual model, no language asked: detection is not in upstream's C ABI
    assert res.chunks is None and res.words is None
    res = pipe.generate(TONE, language="de", return_timestamps=True, context="for Qwen3-ASR only")
    assert res.languages == ["de"] and res.texts == [echo(TONE, lang="de")]
    assert isinstance(res.chunks, list) and len(res.chunks) == 1  # one segment list per text
    assert all(isinstance(c, ovgenai_c.ASRDecodedResultChunk) and c.token_ids == [] for c in res.chunks[0])


def test_english_only_model_reports_en(double, make_asr):
    res = make_asr(is_multilingual=False).generate(TONE)
    assert res.languages == ["en"]


def test_config_round_trip_keeps_context(make_asr):
    pipe = make_asr()
    cfg = pipe.get_generation_config()
    cfg.context = "names: Ada, Grace"
    cfg.language = "fr"
    pipe.set_generation_config(cfg)
    back = pipe.get_generation_config()
    assert type(back) is ASRGenerationConfig and back.context == "names: Ada, Grace" and back.language == "fr"
    assert pipe.generate(TONE).texts == [echo(TONE, lang="fr")]
    assert pipe.generate(TONE, {"task": "translate", "context": "x"}).texts == [echo(TONE, "translate", "fr")]
    with pytest.raises(errors.ConfigError, match="'language' xx must be provided in 'lang_to_id' map"):
        pipe.generate(TONE, language="xx")  # the Whisper model's rules apply when it runs the config


def test_config_fields_and_defaults_as_pybind():
    og = pytest.importorskip("openvino_genai")
    if not hasattr(og, "ASRGenerationConfig"):
        pytest.skip("openvino_genai has no ASRGenerationConfig (before 2026.4)")
    theirs, ours = og.ASRGenerationConfig(), ASRGenerationConfig()
    names = [n for n in dir(theirs) if not n.startswith("_") and not callable(getattr(theirs, n))]
    assert "context" in names
    skipped = {"adapters", "logprobs", "parsers", "structured_output_config", "stop_criteria"}
    for name in names:
        if name in skipped or not hasattr(ours, name):
            continue
        a, b = getattr(ours, name), getattr(theirs, name)
        if isinstance(b, (set, frozenset)):
            a, b = set(a), set(b)
        assert a == b or (isinstance(b, float) and abs(a - b) < 1e-6), name
    assert [n for n in names if n not in skipped and not hasattr(ours, n)] == []


def test_config_conversions_and_rules():
    cfg = ASRGenerationConfig(context="c", language="en", max_new_tokens=5)
    assert repr(cfg).startswith("ASRGenerationConfig(") and "context='c'" in repr(cfg)
    copy = cfg.copy()
    assert type(copy) is ASRGenerationConfig and copy == cfg and copy.context == "c"
    whisper = cfg.to_whisper()
    assert type(whisper) is WhisperGenerationConfig and whisper.language == "en" and whisper.max_new_tokens == 5
    with pytest.raises(AttributeError):
        whisper.context
    back = ASRGenerationConfig.from_whisper(whisper)
    assert back.context is None and back.language == "en"
    with pytest.raises(errors.InvalidParameterError, match="context must be a str or None"):
        cfg.context = 3
    with pytest.raises(TypeError, match="unknown ASRGenerationConfig field"):
        cfg.update_generation_config(contexts="x")
    # ASR's own rules are upstream's ASRGenerationConfig::validate(): the base ones, one sequence, no assisting
    with pytest.raises(errors.ConfigError, match="'num_return_sequences' must be 1"):
        ASRGenerationConfig(max_new_tokens=5, num_return_sequences=2, num_beams=2).validate()
    ASRGenerationConfig(max_new_tokens=5, language="xx").validate()  # Whisper's language rule is not ASR's


def test_config_from_a_models_json(tmp_path):
    folder = make_whisper_dir(tmp_path / "w")
    cfg = ASRGenerationConfig(folder / "generation_config.json")
    assert cfg.lang_to_id["<|fr|>"] == 50265 and cfg.eos_token_id == 50257 and cfg.context is None
    assert cfg.to_whisper() == WhisperGenerationConfig(folder / "generation_config.json")


def test_perf_metrics_types_without_the_stage_extra(double, make_asr, tmp_path):
    """A library without the bundled backend's stage-duration extra (upstream's C ABI has no getter): the perf
    metrics are ASRPerfMetrics / WhisperPerfMetrics with the common values and empty stage lists (NaN means)."""
    import math

    from ovgenai_c.whisper_pipeline import WhisperPipeline

    assert "ovgenai_c_bundled_whisper_decoded_results_get_durations" not in double.library.extras
    res = make_asr().generate(TONE)
    pm = res.perf_metrics
    assert type(pm) is ovgenai_c.ASRPerfMetrics and type(pm.asr_raw_metrics) is ovgenai_c.ASRRawPerfMetrics
    assert pm.asr_raw_metrics == ovgenai_c.ASRRawPerfMetrics()
    assert all(math.isnan(x) for x in pm.get_encode_inference_duration()) and pm.get_num_generated_tokens() >= 0
    with WhisperPipeline(tmp_path / "asr", "CPU", library=double.library) as pipe:
        wpm = pipe.generate(TONE).perf_metrics
    assert type(wpm) is ovgenai_c.WhisperPerfMetrics and wpm.whisper_raw_metrics == ovgenai_c.WhisperRawPerfMetrics()
    assert math.isnan(wpm.get_features_extraction_duration().mean)
