"""The benchmark's whisper section: ovgenai_c's WhisperPipeline (bundled backend) beside openvino_genai's, on
whisper-tiny.en and espeak-ng speech (--quick). Checks the structure and that every figure is a real, finite,
positive measurement — never a timing bound."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench.py"

sys.path.insert(0, str(ROOT))
from ovgenai_c import _loader  # noqa: E402
from ovgenai_c.whisper_models import whisper_model_status  # noqa: E402
from ovgenai_c_tools.bench import transcription  # noqa: E402

CLIPS = {"short": {"duration_s": 10.0, "samples": 160000, "windows": 1, "text": "a"},
         "long": {"duration_s": 40.0, "samples": 640000, "windows": 2, "text": "b"}}


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def test_round_cell_defines_time_to_first_segment_by_the_first_window():
    whole = transcription.round_cell(CLIPS["short"], 2.0, None, "t")
    assert whole["rtf"] == pytest.approx(0.2) and whole["ttfs_s"] == 2.0
    assert whole["ttfs_from"] == "whole call (one window)"
    cut = transcription.round_cell(CLIPS["long"], 8.0, 1.5, "t")
    assert cut["rtf"] == pytest.approx(0.2) and cut["ttfs_s"] == 1.5 and cut["ttfs_from"] == "first 30 s window"


def test_making_a_clip_leaves_nothing_in_tmpdir(tmp_path):
    """espeak-ng's audio library makes a runtime folder in TMPDIR on its first use on a machine (no XDG_RUNTIME_DIR,
    no ~/.config/pulse yet: a fresh HOME here) and leaves it: the bench gives it a private one that goes."""
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng)")
    home, tmp, cache = tmp_path / "home", tmp_path / "tmp", tmp_path / "cache"
    home.mkdir()
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONPATH=os.pathsep.join(sys.path))
    code = ("import sys; from pathlib import Path; from ovgenai_c_tools.bench.transcription import make_clip; "
            "print(make_clip('hi', 'Hello there.', Path(sys.argv[1]))['samples'])")
    proc = subprocess.run([sys.executable, "-c", code, str(cache)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout.split()[-1]) > 8000  # half a second of speech at least
    assert sorted(p.name for p in tmp.iterdir()) == []


def test_paired_ratios_summary_and_ratio_lines():
    def rnd(a_full: float, b_full: float, text_b: str = "same"):
        return {transcription.OVGENAI_C: {"short": transcription.round_cell(CLIPS["short"], a_full, None, "same"),
                                          "long": transcription.round_cell(CLIPS["long"], 4 * a_full, a_full, "x")},
                transcription.GENAI: {"short": transcription.round_cell(CLIPS["short"], b_full, None, text_b),
                                      "long": transcription.round_cell(CLIPS["long"], 4 * b_full, 2 * b_full, "x")}}

    rounds = [rnd(1.0, 2.0), rnd(1.0, 1.0, "other")]
    for r, (a, b) in zip(rounds, ((0.2, 0.4), (0.3, 0.3))):  # the streamed calls' first text (short clip)
        r[transcription.OVGENAI_C]["short"] = transcription.round_cell(
            CLIPS["short"], r[transcription.OVGENAI_C]["short"]["wall_s"], None, "same",
            {"first_text_s": a, "wall_s": 1.0, "text": "same"})
        r[transcription.GENAI]["short"] = transcription.round_cell(
            CLIPS["short"], r[transcription.GENAI]["short"]["wall_s"], None, r[transcription.GENAI]["short"]["text"],
            {"first_text_s": b, "wall_s": 1.0, "text": "differs"})
    pr = transcription.paired(rounds, ["short", "long"])
    assert pr["short_rtf"]["n"] == 2 and pr["short_rtf"]["geomean"] == pytest.approx(math.sqrt(0.5))
    assert pr["long_ttfs"]["geomean"] == pytest.approx(math.sqrt(0.25 * 0.5))
    summ = transcription.summarise(rounds, ["short", "long"])
    assert summ[transcription.OVGENAI_C]["short"]["rtf"] == pytest.approx(0.1)
    assert summ[transcription.GENAI]["short"]["rtf"] == pytest.approx(0.15)
    assert summ[transcription.GENAI]["long"]["ttfs_ms"] == pytest.approx(3000.0)
    assert transcription.transcripts_agree(rounds, ["short", "long"]) == {"short": False, "long": True}
    assert pr["short_first"]["n"] == 2 and pr["short_first"]["geomean"] == pytest.approx(math.sqrt(0.5))
    assert pr["long_first"] is None  # no streamed call on that clip
    assert summ[transcription.GENAI]["short"]["first_text_ms"] == pytest.approx(350.0)
    assert rounds[0][transcription.OVGENAI_C]["short"]["streamed_text_same"] is True
    assert rounds[0][transcription.GENAI]["short"]["streamed_text_same"] is False
    lines = transcription.ratio_lines({"paired": pr, "clips": CLIPS})
    assert len(lines) == 6 and all(ln["target"] == 1.0 and not ln["at_least"] for ln in lines)
    by = {ln["what"].split(" [")[0]: ln for ln in lines}
    assert by["whisper: ovgenai_c / openvino_genai time to first segment, long clip (40.0 s)"]["status"] == "ok"
    assert by["whisper: ovgenai_c / openvino_genai real-time factor, short clip (10.0 s)"]["status"] == "ok"
    assert transcription.ratio_lines({"paired": {}, "clips": CLIPS})[0]["value"] is None


@pytest.fixture(scope="module")
def whisper_run(tmp_path_factory):
    pytest.importorskip("openvino_genai")
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (the section's speech comes from it)")
    status = whisper_model_status()
    if not status["ready"]:
        pytest.skip(f"whisper-tiny.en IR not in the cache ({status['ir']}); ovgenai-c fetches it on first use")
    bundled = next((p for p in _loader.bundled_candidates() if p.is_file()), None)
    if bundled is None:
        pytest.skip("the bundled backend is not built (scripts/build_backend.sh)")
    out = tmp_path_factory.mktemp("bench_whisper") / "bench.json"
    env = dict(os.environ, XDG_CACHE_HOME=str(out.parent / "cache"))
    env.pop("OVGENAI_C_LIBRARY", None)
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--only", "whisper", "--whisper-model",
                           status["ir"], "--out", str(out), "--library", str(bundled), "--no-fetch"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=str(out.parent))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout


def test_whisper_section_measures_both_pipelines_on_both_clips(whisper_run):
    report, stdout = whisper_run
    sec = report["whisper"]
    assert "error" not in sec and "skipped" not in sec, sec.get("error") or sec.get("skipped")
    assert not sec.get("engine_errors"), sec.get("engine_errors")
    assert sec["model_name"] == "whisper-tiny.en"
    clips = sec["clips"]
    assert set(clips) == {"short", "long"}
    assert clips["short"]["windows"] == 1 and clips["short"]["duration_s"] < transcription.WINDOW_S
    assert clips["long"]["windows"] >= 2 and clips["long"]["duration_s"] > transcription.WINDOW_S
    (rnd,) = sec["rounds"]
    for system in (transcription.OVGENAI_C, transcription.GENAI):
        for c in ("short", "long"):
            cell = rnd[system][c]
            assert _positive(cell["wall_s"]) and _positive(cell["rtf"]) and _positive(cell["ttfs_s"])
            assert cell["rtf"] == pytest.approx(cell["wall_s"] / clips[c]["duration_s"])
            assert cell["text"].strip()  # it transcribed something
            # the streamed call: its first text came before its end, and it is the plain call's text
            assert _positive(cell["first_text_s"]) and cell["first_text_s"] < cell["streamed_wall_s"]
            assert cell["streamed_text_same"] is True
        assert rnd[system]["short"]["ttfs_s"] == rnd[system]["short"]["wall_s"]
        assert rnd[system]["long"]["ttfs_from"] == "first 30 s window"
    for key in ("short_rtf", "short_ttfs", "short_first", "long_rtf", "long_ttfs", "long_first"):
        st = sec["paired"][key]
        assert st["n"] == 1 and _positive(st["geomean"]), key
    assert set(sec["transcripts_agree"]) == {"short", "long"}
    whisper_lines = [ln for ln in report["ratios"]["lines"] if ln["what"].startswith("whisper:")]
    assert len(whisper_lines) == 6 and all(_positive(ln["value"]) for ln in whisper_lines)
    assert "Whisper — whisper-tiny.en" in stdout and "time to first segment" in stdout
    assert "time to first text ms (streamed)" in stdout and "no Whisper streamer" in stdout
    assert "another text than the plain call" not in stdout
    assert report["serve"] == {"skipped": "not selected (--only)"}


def test_whisper_only_is_a_known_section():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--only", "whisper,nonsense"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "nonsense" in proc.stderr and "whisper" not in proc.stderr.split(":")[-1]
