"""The benchmark's official-library comparison (ovgenai_c_tools/bench/official.py and the "official" section).

The official archive cannot be downloaded here, so a stand-in plays the official library: the bundled backend
copied to another folder as libopenvino_genai_c.so and chosen with OVGENAI_C_LIBRARY — what matters is that
ovgenai_c's own discovery reaches it through an official discovery step. Benchmarks are not tests: nothing here
checks a timing, only which section is produced, how it is labelled and what is measured."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY_IR = ROOT / "tests" / "fixtures" / "tiny" / "ir"
SCRIPT = ROOT / "scripts" / "bench.py"

sys.path.insert(0, str(ROOT))
from ovgenai_c import _loader  # noqa: E402
from ovgenai_c_tools.bench import official  # noqa: E402
from ovgenai_c_tools.bench.ratios import ratio_lines  # noqa: E402
from ovgenai_c_tools.bench.render import render_official  # noqa: E402

CHOICES = ("OVGENAI_C_LIBRARY", "OPENVINO_GENAI_DIR")


def _bundled() -> Path | None:
    return next((p for p in _loader.bundled_candidates() if p.is_file()), None)


def _genai_available() -> bool:
    return subprocess.run([sys.executable, "-c", "import openvino_genai"], capture_output=True).returncode == 0


def _env(tmp_path: Path, **extra: str) -> dict:
    """This environment without any library choice, with an empty home (no fetched archive), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in CHOICES}
    env.update(OVGENAI_C_HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH")
                                                         else [])))
    env.update(extra)
    return env


@pytest.fixture
def stand_in(tmp_path) -> Path:
    bundled = _bundled()
    if bundled is None:
        pytest.skip("the bundled backend is not built (scripts/build_backend.sh)")
    d = tmp_path / "elsewhere"
    d.mkdir()
    lib = d / "libopenvino_genai_c.so"
    shutil.copy2(bundled, lib)
    return lib


def test_release_is_major_minor_patch():
    assert official.release("2026.4.1.0-3408-ab01d1771e4") == "2026.4.1"
    assert official.release("2026.3.0") == "2026.3.0"
    assert official.release("2026.4") is None and official.release(None) is None and official.release("x") is None


def test_versions_decide_like_for_like():
    same = official.compare_versions("2026.4.1.0", "2026.4.1.0-3408-ab01d1771e4")
    assert same["like_for_like"] is True and same["library"] == same["pybind"] == "2026.4.1"
    other = official.compare_versions("2026.3.0.0", "2026.4.1.0-3408-ab01d1771e4")
    assert other["like_for_like"] is False
    assert "2026.3.0" in other["note"] and "2026.4.1" in other["note"] and "not like-for-like" in other["note"]
    unknown = official.compare_versions(None, "2026.4.1.0")
    assert unknown["like_for_like"] is False and "unknown" in unknown["note"]
    # a stand-in that is the bundled backend runs another engine than GenAI's, whatever its version
    bundled = official.compare_versions("2026.4.1.0", "2026.4.1.0-3408-ab01d1771e4", kind="bundled")
    assert bundled["like_for_like"] is False and "the bundled backend" in bundled["note"]
    other = official.compare_versions("2026.4.1.0", "2026.4.1.0", kind="other")
    assert other["like_for_like"] is False and "(kind other)" in other["note"]


def test_library_release_prefers_the_archive_version():
    assert official.library_release({"versions": {"archive": "2026.3.0.0"}, "openvino_version": "2026.4.1-1"}) \
        == "2026.3.0"
    assert official.library_release({"versions": {}, "openvino_version": "2026.4.1-22982-e213a14"}) == "2026.4.1"
    assert official.library_release({"versions": {}}) is None


def test_no_official_library_is_a_one_line_note(tmp_path):
    if _bundled() is None:
        pytest.skip("the bundled backend is not built (scripts/build_backend.sh)")
    found = official.discover(_env(tmp_path))
    assert found["found"] is False
    note = found["note"]
    assert "\n" not in note
    assert note.startswith("no official GenAI C library found")
    assert "OVGENAI_C_LIBRARY and OPENVINO_GENAI_DIR unset" in note and "fetched archive: not installed" in note


def test_discovery_finds_the_stand_in_by_ovgenai_c_library(tmp_path, stand_in):
    found = official.discover(_env(tmp_path, OVGENAI_C_LIBRARY=str(stand_in)))
    assert found["found"] is True and found["label"] == "ovgenai_c[official]"
    assert Path(found["path"]) == stand_in
    assert found["info"]["source"] == "OVGENAI_C_LIBRARY"  # ovgenai_c's own library_info(), from the child
    assert found["description"].startswith(f"OVGENAI_C_LIBRARY: {stand_in} (kind bundled")
    assert found["release"] == official.release(version("openvino"))


def test_a_broken_choice_is_reported_not_replaced(tmp_path):
    if _bundled() is None:
        pytest.skip("the bundled backend is not built (scripts/build_backend.sh)")
    missing = tmp_path / "nowhere" / "libopenvino_genai_c.so"
    found = official.discover(_env(tmp_path, OVGENAI_C_LIBRARY=str(missing)))
    assert found["found"] is False and "\n" not in found["note"]
    assert found["note"] == (f"the official library chosen by OVGENAI_C_LIBRARY={missing} could not be loaded: "
                             f"{missing}: no such file")


def _official_section(lfl: bool) -> dict:
    def eng(ttft: float, tpot: float, outside: float) -> dict:
        return {"ttft_ms": ttft, "tpot_ms": tpot, "outside_engine_ms": outside, "n_out": 8}

    def paired(g: float) -> dict:
        return {"n": 3, "geomean": g, "median": g, "p25": g, "p75": g, "ci95": [g * 0.9, g * 1.1]}

    mode = {"engines": {"ovgenai_c[official]": eng(11.0, 2.2, 0.6), "genai[PA]": eng(10.0, 2.0, 0.2)},
            "paired": {"ttft": paired(1.1), "tpot": paired(1.1)}, "outside_engine_ms_over_pybind": 0.4}
    cmp = official.compare_versions("2026.4.1.0" if lfl else "2026.3.0.0", "2026.4.1.0-3408-ab01d1771e4")
    return {"engine": "ovgenai_c[official]", "library": "OPENVINO_GENAI_DIR: /x/libopenvino_genai_c.so (kind official)",
            "pybind": {"engine": "genai[PA]", "version": "2026.4.1.0-3408-ab01d1771e4",
                       "from": "the installed openvino_genai"}, "comparison": cmp,
            "request": {"prompt": "p", "max_new_tokens": 8}, "reps": 3, "modes": {"none": mode, "callback": mode}}


def _empty_report(off: dict) -> dict:
    return {"binding_overhead": {}, "official": off, "backend_parity": {}, "greedy_agreement": {},
            "streaming_cost": {}, "import_footprint": {}, "physical_limit": {}, "concurrency": {}}


@pytest.mark.parametrize("lfl", [True, False])
def test_official_ratio_lines_and_table(lfl):
    off = _official_section(lfl)
    lines = [ln for ln in ratio_lines(_empty_report(off), [], [])["lines"] if ln["what"].startswith("official")]
    assert len(lines) == 6  # TTFT, TPOT, per-call cost; with and without a streamer
    nostream = {ln["what"].split(":")[1].split()[0]: ln for ln in lines if ln["what"].startswith("official, no str")}
    assert nostream["TPOT"]["target"] == 1.01 and nostream["TTFT"]["target"] == 1.02
    assert nostream["TPOT"]["value"] == pytest.approx(1.1) and nostream["TPOT"]["ci95"] == pytest.approx([0.99, 1.21])
    assert nostream["per-call"]["value"] == pytest.approx(0.4) and nostream["per-call"]["unit"] == "ms"
    text = "\n".join(render_official(off))
    header = text.splitlines()[1]
    assert header == "Official library — ovgenai_c[official] = ovgenai_c over " + off["library"]
    assert "measure" in text and "ovgenai_c[official]" in text.splitlines()[4] and "genai[PA]" in text.splitlines()[4]
    if lfl:
        assert all(ln["like_for_like"] is True and ln["status"] in ("ok", "over", "over, within noise") for ln in lines)
        assert "like-for-like: GenAI 2026.4.1 on both sides" in text
    else:
        assert all(ln["like_for_like"] is False and ln["status"] == "not like-for-like" for ln in lines)
        assert all("the official library is GenAI 2026.3.0, openvino_genai pybind 2026.4.1" in ln["what"]
                   for ln in lines)
        assert "NOT LIKE-FOR-LIKE: the official library is GenAI 2026.3.0, openvino_genai pybind 2026.4.1" in text


def test_binding_lines_of_an_official_library_of_another_release_get_no_verdict():
    """binding_overhead compares ovgenai_c[official] with the installed pybind: with an archive of another GenAI
    release that is not a binding comparison, and its TTFT/TPOT lines say so instead of a verdict."""
    st = {"n": 3, "geomean": 0.8, "median": 0.8, "p25": 0.8, "p75": 0.8, "ci95": [0.7, 0.9]}
    engines = {e: {"ttft_ms": 10.0, "tpot_ms": 2.0} for e in ("ovgenai_c[official]", "ovgenai_c[bundled]", "genai[PA]")}
    report = _empty_report({})
    report["binding_overhead"] = {
        "engines": engines,
        "paired": {f"{ov} / genai[PA]": {"ttft": st, "tpot": st} for ov in ("ovgenai_c[official]", "ovgenai_c[bundled]")},
        "comparisons": {"ovgenai_c[official] / genai[PA]": official.compare_versions("2026.3.0.0", "2026.4.1.0-1-x")}}
    lines = {ln["what"].split(" [")[0]: ln for ln in ratio_lines(report, ["ovgenai_c[official]", "ovgenai_c[bundled]"],
                                                                  ["genai[PA]"])["lines"]}
    off = lines["binding: TPOT ovgenai_c[official] / genai[PA] (not like-for-like: the official library is GenAI "
                "2026.3.0, openvino_genai pybind 2026.4.1)"]
    assert off["status"] == "not like-for-like" and off["like_for_like"] is False
    bundled = lines["binding: TPOT ovgenai_c[bundled] / genai[PA]"]
    assert bundled["status"] == "ok" and "like_for_like" not in bundled
    report["binding_overhead"]["comparisons"] = {
        "ovgenai_c[official] / genai[PA]": official.compare_versions("2026.4.1.0", "2026.4.1.0-1-x")}
    lines = {ln["what"].split(" [")[0]: ln for ln in ratio_lines(report, ["ovgenai_c[official]"], ["genai[PA]"])["lines"]}
    assert lines["binding: TPOT ovgenai_c[official] / genai[PA]"]["status"] == "ok"


def test_skipped_official_section_renders_one_line():
    text = render_official({"skipped": "no official GenAI C library found (...)"})
    assert text == ["", "Official library: no official GenAI C library found (...)"]


def _run(tmp_path: Path, env: dict, *extra: str) -> tuple:
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--only", "official", "--model", str(TINY_IR),
                           "--out", str(out), "--no-fetch", *extra],
                          capture_output=True, text=True, timeout=600, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout


def test_bench_compares_the_stand_in_with_pybind(tmp_path, stand_in):
    if not _genai_available():
        pytest.skip("openvino_genai (the comparison engine) is not installed")
    report, stdout = _run(tmp_path, _env(tmp_path, OVGENAI_C_LIBRARY=str(stand_in)))
    assert report["meta"]["official_library"]["found"] is True
    off = report["official"]
    assert "skipped" not in off and "error" not in off, off
    assert off["library"].startswith(f"OVGENAI_C_LIBRARY: {stand_in}")
    assert off["pybind"]["engine"] == "genai[PA]" and off["pybind"]["from"] == "the installed openvino_genai"
    # the stand-in is the bundled backend: another engine than pybind's, so never like-for-like
    assert off["comparison"]["like_for_like"] is False and "the bundled backend" in off["comparison"]["note"]
    assert "NOT LIKE-FOR-LIKE: the library is the bundled backend" in stdout
    assert all(ln["status"] == "not like-for-like" for ln in report["ratios"]["lines"]
               if ln["what"].startswith("official") and ln["value"] is not None)
    for mode in ("none", "callback"):
        m = off["modes"][mode]
        for e in ("ovgenai_c[official]", "genai[PA]"):
            assert m["engines"][e]["n_out"] == off["request"]["max_new_tokens"]  # ignore_eos: exact count
            assert m["engines"][e]["ttft_ms"] > 0 and m["engines"][e]["tpot_ms"] > 0
        assert m["paired"]["ttft"]["n"] == off["reps"] and m["paired"]["tpot"]["n"] == off["reps"]
    # the ovgenai_c[official] worker ran over the stand-in, not over a rediscovered library
    assert str(stand_in) in [lib["path"] for lib in report["meta"]["ovgenai_c_libraries"]]
    assert f"Official library — ovgenai_c[official] = ovgenai_c over OVGENAI_C_LIBRARY: {stand_in}" in stdout
    assert any(ln.startswith("measure") and "ovgenai_c[official]" in ln and "genai[PA]" in ln
               for ln in stdout.splitlines())
    tags = [ln["what"] for ln in report["ratios"]["lines"] if ln["value"] is not None]
    assert any(t.startswith("official, no streamer: TPOT ovgenai_c[official] / genai[PA]") for t in tags)
    assert any(t.startswith("official, no streamer: TTFT ovgenai_c[official] / genai[PA]") for t in tags)


def test_bench_without_official_library_prints_one_line(tmp_path):
    if _bundled() is None:
        pytest.skip("the bundled backend is not built (scripts/build_backend.sh)")
    report, stdout = _run(tmp_path, _env(tmp_path), "--no-genai")
    assert report["meta"]["official_library"]["found"] is False
    note = report["official"]["skipped"]
    assert note.startswith("no official GenAI C library found")
    assert [ln for ln in stdout.splitlines() if ln.startswith("Official library")] == [f"Official library: {note}"]
    assert not any(ln["what"].startswith("official") for ln in report["ratios"]["lines"])


def _fake_archive(tmp_path: Path, stand_in: Path, pybind: str) -> Path:
    """An archive layout around the stand-in: runtime/lib/intel64/libopenvino_genai_c.so and python/openvino_genai,
    either the installed pybind package linked in ("installed") or one that cannot be imported ("broken")."""
    root = tmp_path / "archive"
    lib_dir = root / "runtime" / "lib" / "intel64"
    lib_dir.mkdir(parents=True)
    shutil.move(str(stand_in), lib_dir / stand_in.name)
    (root / "python").mkdir()
    if pybind == "installed":
        import importlib.util

        spec = importlib.util.find_spec("openvino_genai")
        if spec is None or spec.origin is None:
            pytest.skip("openvino_genai (the comparison engine) is not installed")
        (root / "python" / "openvino_genai").symlink_to(Path(spec.origin).parent, target_is_directory=True)
    else:
        (root / "python" / "openvino_genai").mkdir()
        (root / "python" / "openvino_genai" / "__init__.py").write_text(
            'raise ImportError("this openvino_genai was built for another Python")\n')
    return root


def test_bench_uses_the_archives_own_pybind(tmp_path, stand_in):
    if not _genai_available():
        pytest.skip("openvino_genai (the comparison engine) is not installed")
    root = _fake_archive(tmp_path, stand_in, "installed")
    report, stdout = _run(tmp_path, _env(tmp_path, OPENVINO_GENAI_DIR=str(root)))
    off = report["official"]
    assert off["library"].startswith(f"OPENVINO_GENAI_DIR: {root / 'runtime' / 'lib' / 'intel64'}")
    assert off["pybind"]["engine"] == "genai[archive]"
    assert off["pybind"]["from"] == "the official archive's python/ folder"
    assert Path(off["pybind"]["module"]).parent == root / "python" / "openvino_genai"  # imported from the archive
    assert off["modes"]["none"]["paired"]["tpot"]["n"] == off["reps"]
    assert any(ln.startswith("measure") and "genai[archive]" in ln for ln in stdout.splitlines())
    assert any(ln["what"].startswith("official, no streamer: TPOT ovgenai_c[official] / genai[archive]")
               for ln in report["ratios"]["lines"])


def test_bench_falls_back_to_the_installed_pybind_and_says_so(tmp_path, stand_in):
    if not _genai_available():
        pytest.skip("openvino_genai (the comparison engine) is not installed")
    root = _fake_archive(tmp_path, stand_in, "broken")
    report, stdout = _run(tmp_path, _env(tmp_path, OPENVINO_GENAI_DIR=str(root)))
    py = report["official"]["pybind"]
    assert py["engine"] == "genai[PA]" and py["from"] == "the installed openvino_genai"
    assert py["note"].startswith("the archive's own openvino_genai did not start")
    assert "built for another Python" in py["note"]
    assert f"  ({py['note']})" in stdout.splitlines()
    assert report["official"]["modes"]["none"]["paired"]["tpot"]["n"] == report["official"]["reps"]


def test_discovery_labels_the_abi_double_by_what_it_is(tmp_path, double_lib_path):
    """Any library an official discovery step reaches is the official column's, and the label says what it is:
    here the ABI double (neither GenAI's library nor the bundled backend: kind "other")."""
    found = official.discover(_env(tmp_path, OVGENAI_C_LIBRARY=str(double_lib_path)))
    assert found["found"] is True and found["info"]["kind"] == "other"
    assert found["description"].startswith(f"OVGENAI_C_LIBRARY: {double_lib_path} (kind other")
