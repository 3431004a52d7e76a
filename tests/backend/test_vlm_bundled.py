"""vlm_pipeline.h on the bundled backend: create answers NOT_IMPLEMENTED with a last-error text saying the official
GenAI C library is needed; every other function refuses NULL or foreign handles without a crash; results made by
ov_genai_vlm_decoded_results_create work; VLMPipeline over the bundled backend raises NotSupportedError."""
from __future__ import annotations

import pytest

OK, NOT_IMPLEMENTED, OUT_OF_BOUNDS, INVALID_C_PARAM = 0, -2, -6, -14


def test_create_is_not_implemented_and_says_why(api, tmp_path):
    ffi, lib = api.ffi, api.lib
    before = api.live()  # (other modules' session fixtures may hold handles)
    out = ffi.new("ov_genai_vlm_pipeline**")
    out[0] = ffi.cast("ov_genai_vlm_pipeline*", 1)  # must be cleared
    assert lib.ov_genai_vlm_pipeline_create(str(tmp_path).encode(), b"CPU", 0, out) == NOT_IMPLEMENTED
    assert out[0] == ffi.NULL
    text = api.last_error()
    assert "ov_genai_vlm_pipeline_create" in text and "official" in text and "libopenvino_genai_c" in text
    assert api.live() == before


def test_create_checks_its_arguments_first(api):
    ffi, lib = api.ffi, api.lib
    out = ffi.new("ov_genai_vlm_pipeline**")
    assert lib.ov_genai_vlm_pipeline_create(ffi.NULL, b"CPU", 0, out) == INVALID_C_PARAM
    assert "models_path" in api.last_error()
    assert lib.ov_genai_vlm_pipeline_create(b"/x", ffi.NULL, 0, out) == INVALID_C_PARAM
    assert lib.ov_genai_vlm_pipeline_create(b"/x", b"CPU", 0, ffi.NULL) == INVALID_C_PARAM
    assert "'pipe'" in api.last_error()


def test_pipeline_functions_refuse_null_and_foreign_handles(api):
    ffi, lib = api.ffi, api.lib
    before = api.live()
    res = ffi.new("ov_genai_vlm_decoded_results**")
    cfg = ffi.new("ov_genai_generation_config**")
    foreign = ffi.cast("ov_genai_vlm_pipeline*", 0x10)  # never dereferenced: the library makes no VLM pipeline
    for pipe in (ffi.NULL, foreign):
        assert lib.ov_genai_vlm_pipeline_generate(pipe, b"x", ffi.NULL, 0, ffi.NULL, ffi.NULL, res) == INVALID_C_PARAM
        assert lib.ov_genai_vlm_pipeline_generate_with_history(pipe, ffi.NULL, ffi.NULL, 0, ffi.NULL, ffi.NULL,
                                                               res) == INVALID_C_PARAM
        assert lib.ov_genai_vlm_pipeline_start_chat(pipe) == INVALID_C_PARAM
        assert lib.ov_genai_vlm_pipeline_finish_chat(pipe) == INVALID_C_PARAM
        assert lib.ov_genai_vlm_pipeline_get_generation_config(pipe, cfg) == INVALID_C_PARAM
        assert lib.ov_genai_vlm_pipeline_set_generation_config(pipe, ffi.NULL) == INVALID_C_PARAM
    assert "official" in api.last_error()
    lib.ov_genai_vlm_pipeline_free(ffi.NULL)
    lib.ov_genai_vlm_pipeline_free(foreign)
    assert api.live() == before


def test_results_create_free_string_and_perf_metrics(api):
    ffi, lib = api.ffi, api.lib
    before, results_before = api.live(), api.live("results")
    out = ffi.new("ov_genai_vlm_decoded_results**")
    assert lib.ov_genai_vlm_decoded_results_create(out) == OK
    assert api.live("results") == results_before + 1
    size = ffi.new("size_t*")
    assert lib.ov_genai_vlm_decoded_results_get_string(out[0], ffi.NULL, size) == OK
    assert size[0] == 1
    buf = ffi.new("char[]", 1)
    assert lib.ov_genai_vlm_decoded_results_get_string(out[0], buf, size) == OK and ffi.string(buf) == b""
    size[0] = 0
    assert lib.ov_genai_vlm_decoded_results_get_string(out[0], buf, size) == OUT_OF_BOUNDS
    assert lib.ov_genai_vlm_decoded_results_get_string(out[0], buf, ffi.NULL) == INVALID_C_PARAM
    metrics = ffi.new("ov_genai_perf_metrics**")
    assert lib.ov_genai_vlm_decoded_results_get_perf_metrics(out[0], metrics) == OK
    n = ffi.new("size_t*")
    assert lib.ov_genai_perf_metrics_get_num_generation_tokens(metrics[0], n) == OK and n[0] == 0
    lib.ov_genai_vlm_decoded_results_perf_metrics_free(metrics[0])
    lib.ov_genai_vlm_decoded_results_free(out[0])
    assert lib.ov_genai_vlm_decoded_results_create(ffi.NULL) == INVALID_C_PARAM
    assert lib.ov_genai_vlm_decoded_results_get_perf_metrics(ffi.NULL, metrics) == INVALID_C_PARAM
    lib.ov_genai_vlm_decoded_results_free(ffi.NULL)
    lib.ov_genai_vlm_decoded_results_perf_metrics_free(ffi.NULL)
    assert api.live() == before


def test_vlm_pipeline_over_the_bundled_backend_says_the_official_library_is_needed(tmp_path):
    from testsupport import bundled_library_path

    import ovgenai_c
    from ovgenai_c import _loader, errors

    path = bundled_library_path()
    if path is None:
        pytest.skip("bundled backend not built; run scripts/build_backend.sh")
    lib = _loader.open_library(str(path))
    assert lib.kind == "bundled"
    with pytest.raises(errors.NotSupportedError) as info:
        ovgenai_c.VLMPipeline(tmp_path, library=lib)
    assert isinstance(info.value, errors.GenAIError)
    text = str(info.value)
    assert "VLMPipeline needs the official GenAI C library" in text
    assert "NOT_IMPLEMENTED" in text and "libopenvino_genai_c" in text
