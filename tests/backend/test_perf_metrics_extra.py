"""ovgenai_c_bundled_perf_metrics_get_raw (cdefs/92_ovgenai_c_perf_metrics.h) at the C level: every series,
the two-call convention, and refusals with their last-error text."""
from __future__ import annotations

import pytest

OK, NOT_FOUND, OUT_OF_BOUNDS, INVALID_C_PARAM = 0, -5, -6, -14
SERIES = ("generate_durations", "tokenization_durations", "detokenization_durations", "chat_template_durations",
          "inference_durations", "token_infer_durations", "m_times_to_first_token", "m_durations", "m_batch_sizes",
          "m_new_token_times", "sampling_durations")


@pytest.fixture
def metrics(api, tiny_pipe):
    ffi, lib = api.ffi, api.lib
    cfg = ffi.new("ov_genai_generation_config**")
    assert lib.ov_genai_generation_config_create(cfg) == OK
    assert lib.ov_genai_generation_config_set_max_new_tokens(cfg[0], 5) == OK
    assert lib.ov_genai_generation_config_set_ignore_eos(cfg[0], True) == OK
    res = ffi.new("ov_genai_decoded_results**")
    assert lib.ov_genai_llm_pipeline_generate(tiny_pipe, b"Hello", cfg[0], ffi.NULL, res) == OK
    pm = ffi.new("ov_genai_perf_metrics**")
    assert lib.ov_genai_decoded_results_get_perf_metrics(res[0], pm) == OK
    yield pm[0]
    lib.ov_genai_decoded_results_perf_metrics_free(pm[0])
    lib.ov_genai_decoded_results_free(res[0])
    lib.ov_genai_generation_config_free(cfg[0])


def _series(api, pm, name):
    ffi, lib = api.ffi, api.lib
    size = ffi.new("size_t*")
    assert lib.ovgenai_c_bundled_perf_metrics_get_raw(pm, name.encode(), ffi.NULL, size) == OK
    values = ffi.new("double[]", max(size[0], 1))
    assert lib.ovgenai_c_bundled_perf_metrics_get_raw(pm, name.encode(), values, size) == OK
    return [values[i] for i in range(size[0])]


def test_every_series_matches_the_mean_getters(api, metrics):
    ffi, lib = api.ffi, api.lib
    got = {name: _series(api, metrics, name) for name in SERIES}
    assert len(got["m_durations"]) == 4 and len(got["m_new_token_times"]) == 5
    assert len(got["generate_durations"]) == len(got["m_times_to_first_token"]) == 1
    mean, std = ffi.new("float*"), ffi.new("float*")
    assert lib.ov_genai_perf_metrics_get_tpot(metrics, mean, std) == OK
    assert sum(got["m_durations"]) / 4 / 1000 == pytest.approx(mean[0], rel=1e-4)
    assert lib.ov_genai_perf_metrics_get_ttft(metrics, mean, std) == OK
    assert got["m_times_to_first_token"][0] / 1000 == pytest.approx(mean[0], rel=1e-4)
    assert all(b > 0 for b in got["m_batch_sizes"])
    assert len(got["sampling_durations"]) == 5 and all(d > 0 for d in got["sampling_durations"])  # one per step


def test_two_call_convention_and_refusals(api, metrics):
    ffi, lib = api.ffi, api.lib
    size = ffi.new("size_t*")
    assert lib.ovgenai_c_bundled_perf_metrics_get_raw(metrics, b"m_durations", ffi.NULL, size) == OK
    small = ffi.new("double[]", 1)
    size[0] = 1
    assert lib.ovgenai_c_bundled_perf_metrics_get_raw(metrics, b"m_durations", small, size) == OUT_OF_BOUNDS
    assert lib.ovgenai_c_bundled_perf_metrics_get_raw(metrics, b"bogus", ffi.NULL, size) == NOT_FOUND
    assert "no raw series named 'bogus'" in ffi.string(lib.ovgenai_c_bundled_last_error()).decode()
    assert lib.ovgenai_c_bundled_perf_metrics_get_raw(ffi.NULL, b"m_durations", ffi.NULL, size) == INVALID_C_PARAM
    assert lib.ovgenai_c_bundled_perf_metrics_get_raw(metrics, ffi.NULL, ffi.NULL, size) == INVALID_C_PARAM
    assert lib.ovgenai_c_bundled_perf_metrics_get_raw(metrics, b"m_durations", ffi.NULL, ffi.NULL) == INVALID_C_PARAM
