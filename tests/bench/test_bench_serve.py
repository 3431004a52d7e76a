"""The benchmark's serve section: ``ovgenai-c serve`` in a child process under concurrent streaming HTTP clients,
beside openvino_genai's ContinuousBatchingPipeline and one-request-at-a-time, on the tiny fixture (--quick). Checks
the structure and that every figure is a real, finite, positive measurement — never a timing bound."""
from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY_IR = ROOT / "tests" / "fixtures" / "tiny" / "ir"
SCRIPT = ROOT / "scripts" / "bench.py"

sys.path.insert(0, str(ROOT))
from ovgenai_c import _loader  # noqa: E402
from ovgenai_c_tools.bench import render  # noqa: E402
from ovgenai_c_tools.bench import serving  # noqa: E402


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def test_sse_parser_joins_multiline_data_and_skips_comments():
    raw = (b": keep-alive\r\n\r\ndata: {\"a\": 1}\r\n\r\ndata: line one\ndata: line two\n\n"
           b"event: x\ndata:[DONE]\n\n")
    assert list(serving.sse_events(io.BytesIO(raw))) == ['{"a": 1}', "line one\nline two", "[DONE]"]
    assert list(serving.sse_events(io.BytesIO(b"data: tail-without-blank-line\n"))) == ["tail-without-blank-line"]


def test_level_result_and_the_paired_target_ratios():
    cell = serving.level_result(2.0, [0.1, 0.3, None], [10, 20, 0], ["boom"])
    assert cell["tokens"] == 30 and cell["tokens_per_s"] == 15.0 and cell["requests"] == 3
    assert cell["p50_ttft_ms"] == pytest.approx(200.0) and cell["error_count"] == 1
    one = {serving.SERVER: {"1": serving.level_result(1.0, [0.1], [10]),
                            "8": serving.level_result(1.0, [0.2, 0.4], [40, 40])},
           serving.GENAI_CB: {"1": serving.level_result(1.0, [0.1], [20]),
                              "8": serving.level_result(1.0, [0.1], [40])}}
    pr = serving.paired([one], 8)
    assert pr["server_scaling"]["geomean"] == pytest.approx(8.0)
    assert pr["server_vs_genai_cb"]["geomean"] == pytest.approx(2.0)
    assert pr["server_ttft_growth"]["geomean"] == pytest.approx(0.39 / 0.1)  # p95 of [0.2, 0.4] over 0.1
    assert pr["server_single_vs_sequential"] is None  # that system did not run
    lines = {ln["what"].split(" [")[0]: ln for ln in serving.ratio_lines({"paired": pr, "top_level": 8,
                                                                         "server_scheduling": {"mode": "pool"}})}
    scaling = lines["serve: server tok/s at 8 clients / at 1 client (server mode: pool)"]
    assert scaling["status"] == "ok" and scaling["at_least"] and scaling["target"] == 3.0
    assert lines["serve: server p95 TTFT at 8 clients / median TTFT at 1 client"]["status"] == "over"


@pytest.fixture(scope="module")
def serve_run(tmp_path_factory):
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    bundled = next((p for p in _loader.bundled_candidates() if p.is_file()), None)
    if bundled is None:
        pytest.skip("the bundled backend is not built (scripts/build_backend.sh)")
    out = tmp_path_factory.mktemp("bench_serve") / "bench.json"
    env = dict(os.environ, XDG_CACHE_HOME=str(out.parent / "cache"))
    env.pop("OVGENAI_C_LIBRARY", None)
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--only", "serve", "--model", str(TINY_IR),
                           "--out", str(out), "--library", str(bundled), "--no-fetch", "--serve-per-client", "2"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=str(out.parent))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout


def test_serve_section_measures_every_level_over_http(serve_run):
    report, stdout = serve_run
    sec = report["serve"]
    assert "error" not in sec, sec.get("error")
    assert sec["levels"] == [1, 2, 4, 8] and sec["top_level"] == 8
    assert sec["requests_per_client"] == 2  # --serve-per-client (--quick alone sends 1)
    # the server batches a model's requests on the bundled backend (one continuous-batching pipeline)
    sch = sec["server_scheduling"]
    assert sch["mode"] == "continuous_batching" and sch["pipelines"] == 1 and sch["batch_size"] == 8, sch  # the default --batch-size
    assert sec["server"]["command"][0] == "serve" and "--no-cache" in sec["server"]["command"]
    (rnd,) = sec["rounds"]
    for lv in (1, 2, 4, 8):
        cell = rnd[serving.SERVER][str(lv)]
        assert cell["error_count"] == 0, cell["errors"]
        assert cell["requests"] == lv * sec["requests_per_client"]
        assert _positive(cell["tokens_per_s"]) and _positive(cell["wall_s"])
        assert 0 < cell["tokens"] <= cell["requests"] * sec["max_tokens"]  # counted from the streams' usage
        assert len(cell["ttft_s"]) == cell["requests"] and all(_positive(t) for t in cell["ttft_s"])
        assert cell["p50_ttft_ms"] <= cell["p95_ttft_ms"]
    seq = rnd[serving.SEQUENTIAL]["sequential"]
    assert _positive(seq["tokens_per_s"]) and all(_positive(t) for t in seq["ttft_s"])
    assert "Serve —" in stdout and "server mode: continuous_batching" in stdout
    assert "serve: server tok/s at 8 clients / at 1 client" in stdout and "target ≥ 3.0" in stdout


def test_serve_section_runs_genai_continuous_batching_beside_it(serve_run):
    report, _ = serve_run
    sec = report["serve"]
    if sec.get("genai_cb_skipped"):
        pytest.skip(f"openvino_genai is not available: {sec['genai_cb_skipped']}")
    (rnd,) = sec["rounds"]
    for lv in (1, 2, 4, 8):
        cell = rnd[serving.GENAI_CB][str(lv)]
        assert cell["requests"] == lv * sec["requests_per_client"] and _positive(cell["tokens_per_s"])
        assert all(_positive(t) for t in cell["ttft_s"])
    for key in ("server_scaling", "server_vs_genai_cb", "server_ttft_growth", "genai_cb_scaling"):
        st = sec["paired"][key]
        assert st["n"] == 1 and _positive(st["geomean"]), key
    ratio_whats = [ln["what"] for ln in report["ratios"]["lines"]]
    assert any(w.startswith("serve: server tok/s / GenAI ContinuousBatchingPipeline") for w in ratio_whats)
    assert "serve" in render(report)
