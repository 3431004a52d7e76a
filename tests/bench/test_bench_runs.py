"""The benchmark script runs end to end on the tiny fixture with minimal repetitions (benchmarks are not tests:
nothing here checks a timing, only that every section is produced from real runs)."""
from __future__ import annotations

import json
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
from ovgenai_c_tools.bench import SECTIONS, render  # noqa: E402
from ovgenai_c_tools.bench.stats import paired_ratios, percentile, ratio, ratio_stats  # noqa: E402


def _bundled() -> Path | None:
    return next((p for p in _loader.bundled_candidates() if p.is_file()), None)


def _genai_available() -> bool:
    return subprocess.run([sys.executable, "-c", "import openvino_genai"], capture_output=True).returncode == 0


def test_percentiles_and_ratios():
    assert percentile([3.0, 1.0, 2.0, 4.0], 0.5) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.95) == pytest.approx(4.8)
    assert percentile([], 0.5) is None
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(None, 2.0) is None and ratio(1.0, 0) is None


def test_paired_ratios_and_their_interval():
    a = [{"t": 2.0}, {}, {"t": 3.0}, {"t": 4.0}]
    b = [{"t": 1.0}, {"t": 1.0}, {"t": 3.0}, {"t": 8.0}]
    assert paired_ratios(a, b, "t") == [2.0, 1.0, 0.5]  # round by round; a failed round (empty) is left out
    st = ratio_stats([2.0, 1.0, 0.5])
    assert st["n"] == 3 and st["geomean"] == pytest.approx(1.0) and st["median"] == 1.0
    lo, hi = st["ci95"]
    assert lo < 0.5 < 2.0 < hi  # 3 rounds this far apart: an interval far wider than the spread's middle
    tight = ratio_stats([1.02, 1.03, 1.01, 1.02, 1.03, 1.02])
    assert 1.0 < tight["ci95"][0] < tight["geomean"] < tight["ci95"][1] < 1.04
    assert ratio_stats([5.0])["ci95"] is None and ratio_stats([]) is None


@pytest.fixture(scope="module")
def quick_tmpdir(tmp_path_factory) -> Path:
    """The quick run's TMPDIR (where the benchmark makes its scratch folder)."""
    return tmp_path_factory.mktemp("bench-tmpdir")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory, quick_tmpdir):
    bundled = _bundled()
    if bundled is None:
        pytest.skip("the bundled backend is not built (scripts/build_backend.sh)")
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    env = dict(os.environ, XDG_CACHE_HOME=str(out.parent / "cache"),  # the ABI double is built there
               TMPDIR=str(quick_tmpdir))
    env.pop("OVGENAI_C_LIBRARY", None)
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--model", str(TINY_IR), "--out", str(out),
                           "--library", str(bundled), "--no-fetch"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=str(out.parent))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout


def test_quick_run_has_every_section(quick_run):
    report, stdout = quick_run
    for name in SECTIONS:
        assert name in report, name
        assert "error" not in report[name], (name, report[name].get("error"))
    assert report["meta"]["quick"] is True
    assert Path(report["meta"]["model"]) == TINY_IR.resolve()
    assert report["meta"]["model_bin_bytes"] == (TINY_IR / "openvino_model.bin").stat().st_size
    # the human table and the ratio lines are printed
    assert "Binding overhead" in stdout and "Ratios" in stdout and "JSON written to" in stdout


def test_quick_run_removes_its_scratch_folder(quick_run, quick_tmpdir):
    """Worker logs, the backend's private copy and the double's model folder go with a run in which every engine
    ran: repeated runs do not fill the temporary folder."""
    report, stdout = quick_run
    assert not report["meta"]["engine_errors"] and not report["meta"]["worker_crashes"]
    assert report["meta"]["worker_logs"] is None and "worker logs kept" not in stdout
    assert sorted(p.name for p in quick_tmpdir.iterdir()) == []


def test_quick_run_measured_the_bundled_engine(quick_run):
    report, _ = quick_run
    eng = report["binding_overhead"]["engines"]["ovgenai_c[bundled]"]
    assert eng["n_out"] == report["binding_overhead"]["request"]["max_new_tokens"]  # ignore_eos: exact count
    assert eng["n_in"] > 0 and eng["ttft_ms"] > 0 and eng["tpot_ms"] > 0
    assert eng["peak_rss_kb"] > eng["harness_rss_kb"] > 0
    assert eng["load_s"] > 0 and eng["library_kind"] == "bundled"
    for cell in report["backend_parity"]["cells"]:
        b = cell["engines"]["ovgenai_c[bundled]"]
        assert b["n_out"] == cell["max_new_tokens"]
    conc = report["concurrency"]
    n = conc["threads"] * conc["requests_per_thread"] * conc["reps"]
    assert conc["shared"]["requests"] == n and conc["separate"]["requests"] == n
    assert conc["shared"]["errors"] == [] and conc["separate"]["errors"] == []


def test_quick_run_streaming_and_footprint(quick_run):
    report, _ = quick_run
    dbl = report["streaming_cost"]["abi_double"]
    assert dbl["tokens"] == report["meta"]["settings"]["double_tokens"]
    assert set(dbl["us_per_token_vs_c_no_streamer"]) >= {"generate", "callback", "iter", "async"}
    mods = report["import_footprint"]["modules"]
    assert mods["ovgenai_c"]["import_s"] > 0 and mods["ovgenai_c"]["rss_kb"] > 0
    assert mods["ovgenai_c"].get("first_use_load_library_s", 0) > 0
    pl = report["physical_limit"]
    assert pl["bandwidth_gbps"] > 0 and pl["weight_bytes"] > 0 and pl["decode_bound_tokens_per_s"] > 0
    assert "ovgenai_c[bundled]" in pl["decode_fraction"]
    lines = report["ratios"]["lines"]
    assert any(ln["what"].startswith("streaming:") and ln["value"] is not None for ln in lines)


def test_quick_run_compares_with_genai(quick_run):
    report, _ = quick_run
    if not _genai_available():
        pytest.skip("openvino_genai (the comparison engine) is not installed")
    engines = report["binding_overhead"]["engines"]
    assert {"genai[PA]", "genai[SDPA]"} <= set(engines)
    pairs = report["greedy_agreement"]["pairs"]
    key = "ovgenai_c[bundled] vs genai[SDPA]"
    assert pairs[key]["prompts"] == len(report["greedy_agreement"]["prompts"])
    assert 0.0 <= pairs[key]["rate"] <= 1.0
    assert "openvino_genai" in report["import_footprint"]["modules"]
    tags = [ln["what"] for ln in report["ratios"]["lines"] if ln["value"] is not None]
    assert any("TPOT ovgenai_c[bundled] / genai[PA]" in t for t in tags)
    pooled = report["backend_parity"]["pooled"]["ovgenai_c[bundled] / genai[PA]"]
    cells = report["backend_parity"]["cells"]
    assert pooled["ttft"]["n"] == len(cells) * report["backend_parity"]["reps"]  # every round paired
    assert any(t.startswith("parity, all ") for t in tags)
    assert any("TTFT ovgenai_c[bundled] / genai[SDPA]" in t for t in tags)


def test_quick_run_lookup_section(quick_run):
    report, stdout = quick_run
    if not _genai_available():
        pytest.skip("openvino_genai (the comparison engine) is not installed")
    lk = report["lookup"]
    assert lk["engines"] == ["ovgenai_c[bundled+lookup]", "genai[PA]", "genai[lookup]"]
    assert {row["kind"] for row in lk["prompts"].values()} == {"input_grounded", "open_ended"}
    for row in lk["prompts"].values():
        for e in lk["engines"]:
            assert row["engines"][e]["tokens_per_s"] > 0 and row["engines"][e]["n_out"] > 0
        for other in ("genai[PA]", "genai[lookup]"):
            st = row["ratios"][f"ovgenai_c[bundled+lookup] / {other}"]
            assert st["n"] == lk["reps"] and st["geomean"] > 0  # every round paired
        done, total = row["same_text_as_genai_default"].split("/")
        assert int(total) == lk["reps"] and 0 <= int(done) <= int(total)
    for kind, target in lk["targets"].items():
        assert lk["pooled"][kind]["ovgenai_c[bundled+lookup] / genai[PA]"]["n"] >= 1
        assert lk["verdicts"][kind] in ("ok", "under", "under, within noise")
    assert "Prompt lookup" in stdout and "pooled input_grounded, end-to-end tokens/s" in stdout
    assert lk["pooled_decode"]["open_ended"]["ovgenai_c[bundled+lookup] / genai[PA]"]["n"] >= 1
    # the section's own workers are gone: the ratio lines compare the plain engines only
    assert not any("lookup" in ln["what"] for ln in report["ratios"]["lines"])


def test_quick_run_speculative_section(quick_run):
    report, stdout = quick_run
    if not _genai_available():
        pytest.skip("openvino_genai (the comparison engine) is not installed")
    sp = report["speculative"]
    assert sp["engines"] == ["ovgenai_c[bundled+draft]", "genai[draft]", "genai[PA]"] and sp["self_draft"]
    for row in sp["prompts"].values():
        for e in sp["engines"]:
            assert row["engines"][e]["tokens_per_s"] > 0 and row["engines"][e]["n_out"] > 0
        for other in ("genai[draft]", "genai[PA]"):
            assert row["ratios"][f"ovgenai_c[bundled+draft] / {other}"]["n"] == sp["reps"]  # every round paired
    assert sp["pooled"]["ovgenai_c[bundled+draft] / genai[draft]"]["geomean"] > 0
    assert "Speculative decoding — ovgenai_c[bundled+draft]" in stdout and "draft: the model itself" in stdout


def test_run_without_engines_still_reports_every_section(tmp_path):
    """A model folder that no engine can load: the run goes on, reports why, and exits 0."""
    empty = tmp_path / "empty-model"
    empty.mkdir()
    out = tmp_path / "b.json"
    scratch_root = tmp_path / "tmpdir"
    scratch_root.mkdir()
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--no-genai", "--model", str(empty), "--out",
                           str(out), "--library", str(tmp_path / "no-such-lib.so")],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path),
                          env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), TMPDIR=str(scratch_root)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert set(SECTIONS) <= set(report)
    assert "ovgenai_c[bundled]" in report["meta"]["engine_errors"]
    # an engine that did not start: the workers' logs stay, and the report says where
    kept = Path(report["meta"]["worker_logs"])
    assert kept.parent == scratch_root and f"worker logs kept in {kept}" in proc.stdout
    assert any(p.name.startswith("ovgenai_c_bundled.") for p in kept.iterdir()), list(kept.iterdir())
    assert report["concurrency"].get("skipped")
    text = render(report)
    assert "Ratios" in text


def test_bad_model_argument_is_a_usage_error(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--model", str(tmp_path / "nope")], capture_output=True,
                          text=True, timeout=60, cwd=str(tmp_path))
    assert proc.returncode == 2 and "not a folder" in proc.stderr


def test_oracle_is_fetched_privately_when_missing(tmp_path, monkeypatch):
    """When openvino_genai is missing, bench pip-installs it (no deps, same version as openvino) into its own
    cache folder and adds that folder to the comparison workers' path — never into the environment."""
    from ovgenai_c_tools.bench import environment

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls = []

    class Done:
        def __init__(self, rc: int) -> None:
            self.returncode, self.stdout, self.stderr = rc, "", "" if rc == 0 else "ModuleNotFoundError"

    def fake_run(cmd, env=None, **kw):
        calls.append((cmd, env))
        if cmd[1:3] == ["-m", "pip"]:
            target = Path(cmd[cmd.index("--target") + 1])
            (target / "openvino_genai").mkdir(parents=True)
            return Done(0)
        # the import probe succeeds only with the private folder on the path
        ok = env is not None and str(tmp_path / "ovgenai_c" / "bench" / "oracle") in env.get("PYTHONPATH", "")
        return Done(0 if ok and (tmp_path / "ovgenai_c" / "bench" / "oracle" / "openvino_genai").is_dir() else 1)

    monkeypatch.setattr(environment.subprocess, "run", fake_run)
    assert environment.ensure_oracle(allow_fetch=False) == (None, "openvino_genai is not importable (and --no-fetch was given)")
    extra, reason = environment.ensure_oracle(allow_fetch=True)
    assert reason is None and extra == tmp_path / "ovgenai_c" / "bench" / "oracle"
    pip = [c for c, _ in calls if c[1:3] == ["-m", "pip"]]
    assert len(pip) == 1 and "--no-deps" in pip[0] and "--target" in pip[0]
    from importlib.metadata import version

    want = version("openvino")
    want = want if want.count(".") >= 3 else want + ".0"
    assert pip[0][-1] == f"openvino-genai=={want}"
    # a second run reuses the folder without pip
    calls.clear()
    assert environment.ensure_oracle(allow_fetch=True) == (extra, None)
    assert not [c for c, _ in calls if c[1:3] == ["-m", "pip"]]


def test_forms_probe_compares_the_one_token_form_on_and_off():
    from ovgenai_c_tools.bench.decode_profile import profile_forms

    out = profile_forms(TINY_IR, context=40, steps=12, reps=2)
    assert out["same_text"] is True
    assert out["tpot_ms"]["on"] > 0 and out["tpot_ms"]["off"] > 0
    assert out["tpot_on_over_off"] == out["tpot_ms"]["on"] / out["tpot_ms"]["off"]
    assert set(out["load_s"]) == {"on", "off"}


def test_cold_python_probe_times_every_case_after_real_inferences():
    bundled = _bundled()
    if bundled is None:
        pytest.skip("the bundled backend is not built (scripts/build_backend.sh)")
    from ovgenai_c_tools.bench import cold_python

    out = cold_python.run(TINY_IR, str(bundled), tokens=3, rounds=3)
    assert out["library"] == "bundled" and out["tokens"] == 3 and out["rounds"] == 3
    assert set(out["median_us"]) == set(cold_python.CASES)
    assert all(v > 0 for v in out["median_us"].values())
    assert out["right_after_over_warm"] == round(out["median_us"]["right_after"] / out["median_us"]["warm"], 2)


def test_cold_python_probe_runs_one_inference_before_each_timed_case():
    from ovgenai_c_tools.bench import cold_python

    runs = []
    out = cold_python.measure(lambda: runs.append(1), rounds=4)
    assert len(runs) == 2 + 4 * (len(cold_python.CASES) - 1)  # two warm-ups, then every case but "warm"
    assert out["rounds"] == 4 and set(out["median_us"]) == set(cold_python.CASES)


def test_quick_run_gguf_load_section(quick_run):
    """The tiny fixture's GGUF (beside its IR folder) loaded by both engines in fresh processes: load times, peak
    RSS, paired ratios and the same greedy answer."""
    report, stdout = quick_run
    sec = report["gguf_load"]
    assert Path(sec["gguf"]) == (TINY_IR.parent / "tiny.gguf").resolve() and sec["rounds"] == 1
    bundled = sec["engines"]["ovgenai_c[bundled]"]
    assert bundled["load_s"] > 0 and bundled["first_answer_s"] > 0 and bundled["peak_rss_mib"] > 0
    assert bundled["text"]
    if "genai" in sec["engines"]:  # openvino_genai in the test environment
        assert sec["same_text"] is True and sec["engines"]["genai"]["text"] == bundled["text"]
        assert sec["paired"]["load_s"]["n"] == 1
        assert "GGUF load" in stdout and any(l["what"].startswith("gguf: load") for l in report["ratios"]["lines"])
