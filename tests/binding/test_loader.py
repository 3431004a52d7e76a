"""Library discovery on archive layouts built here (the official archive cannot be downloaded in the test
environment): trees shaped like OpenVINO GenAI's archive (runtime/lib/intel64, runtime/3rdparty/tbb/lib) holding
either the real OpenVINO of the wheel with the bundled backend in place of libopenvino_genai_c, or small stub
libraries compiled here that stand for *another* OpenVINO version (2026.3.0, soname libopenvino.so.2630) with the
ABI double as the GenAI C library; and broken variants (no TBB, not an ELF file, wrong symbols, an undefined
symbol). The loader's state is per process, so every scenario runs in a child interpreter."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional

import pytest

from ovgenai_c import _loader

ROOT = Path(__file__).resolve().parents[2]
TINY_IR = ROOT / "tests" / "fixtures" / "tiny" / "ir"
STUB_VERSION = "2026.3.0"

# Stand-ins for another OpenVINO release: each exports just enough to be linked and told apart.
STUB_SOURCES = {
    "tbb.c": "int stub_tbb(void) { return 12; }\n",
    "ov.c": "extern int stub_tbb(void);\nint stub_ov(void) { return stub_tbb(); }\n",
    "ov_c.c": (
        "typedef struct { const char* buildNumber; const char* description; } ov_version_t;\n"
        "extern int stub_ov(void);\n"
        "int ov_get_openvino_version(ov_version_t* v) {\n"
        f"    v->buildNumber = \"{STUB_VERSION}-1-stub0000\"; v->description = \"stub\"; return stub_ov() - 12;\n"
        "}\n"
        "void ov_version_free(ov_version_t* v) { (void)v; }\n"),
    "tok.c": "extern int stub_ov(void);\nint stub_tokenizers(void) { return stub_ov(); }\n",
    # loads nowhere: it needs a symbol no library provides (dlopen with RTLD_NOW fails after the preloads)
    "undefined.c": ("extern int symbol_that_no_library_has(void);\n"
                    "int ov_genai_llm_pipeline_create(void) { return symbol_that_no_library_has(); }\n"),
    # loads, but is not a GenAI C library
    "nogenai.c": "extern int stub_ov(void);\nint hello(void) { return stub_ov(); }\n",
}


def _cc(out: Path, source: Path, *args: str) -> None:
    from abi_double.build import find_compiler

    subprocess.run([*find_compiler(), "-shared", "-fPIC", "-O1", "-o", str(out), str(source), *args],
                   check=True, capture_output=True)


@pytest.fixture(scope="module")
def stubs(tmp_path_factory, double_lib_path) -> Dict[str, Path]:
    from abi_double.build import CompilerNotFound

    d = tmp_path_factory.mktemp("stubs")
    for name, text in STUB_SOURCES.items():
        (d / name).write_text(text)
    soname = lambda n: f"-Wl,-soname,{n}"  # noqa: E731
    try:
        _cc(d / "libtbb.so.12", d / "tbb.c", soname("libtbb.so.12"))
        link = ["-L", str(d), "-l:libtbb.so.12"]
        _cc(d / f"libopenvino.so.{STUB_VERSION}", d / "ov.c", soname("libopenvino.so.2630"), *link)
        os.symlink(f"libopenvino.so.{STUB_VERSION}", d / "libopenvino.so.2630")
        # the same, marked never-unloadable, as glibc treats the real libopenvino (it has unique symbols)
        nodelete = d / "nodelete"
        nodelete.mkdir()
        _cc(nodelete / f"libopenvino.so.{STUB_VERSION}", d / "ov.c", soname("libopenvino.so.2630"), "-Wl,-z,nodelete",
            *link)
        link_ov = ["-L", str(d), "-l:libopenvino.so.2630"]
        _cc(d / f"libopenvino_c.so.{STUB_VERSION}", d / "ov_c.c", soname("libopenvino_c.so.2630"), *link_ov)
        _cc(d / "libopenvino_tokenizers.so", d / "tok.c", *link_ov)
        _cc(d / "undefined.so", d / "undefined.c", *link_ov)
        _cc(d / "nogenai.so", d / "nogenai.c", *link_ov)
    except CompilerNotFound as exc:
        pytest.skip(str(exc))
    (d / "garbage.so").write_text("this is not a shared library\n")
    return {"dir": d, "double": double_lib_path, "undefined": d / "undefined.so", "nogenai": d / "nogenai.so",
            "garbage": d / "garbage.so"}


def _bundled() -> Path:
    p = next((p for p in _loader.bundled_candidates() if p.is_file()), None)
    if p is None:
        pytest.skip("the bundled backend is not built")
    return p


def stub_archive(root: Path, stubs: Dict[str, Path], genai_c: Path, *, tbb: Optional[str] = "3rdparty",
                 nodelete: bool = False, tokenizers: bool = True) -> Path:
    """An archive of the stub OpenVINO 2026.3.0 whose GenAI C library is ``genai_c``; returns its root."""
    lib = root / "runtime" / "lib" / "intel64"
    lib.mkdir(parents=True)
    d = stubs["dir"]
    shutil.copy(d / "nodelete" / f"libopenvino.so.{STUB_VERSION}" if nodelete else d / f"libopenvino.so.{STUB_VERSION}",
                lib / f"libopenvino.so.{STUB_VERSION}")
    shutil.copy(d / f"libopenvino_c.so.{STUB_VERSION}", lib / f"libopenvino_c.so.{STUB_VERSION}")
    for stem in ("libopenvino.so", "libopenvino_c.so"):
        os.symlink(f"{stem}.{STUB_VERSION}", lib / f"{stem}.2630")
        os.symlink(f"{stem}.2630", lib / stem)
    if tokenizers:
        shutil.copy(d / "libopenvino_tokenizers.so", lib / "libopenvino_tokenizers.so")
    shutil.copy(genai_c, lib / f"libopenvino_genai_c.so.{STUB_VERSION}.0")
    os.symlink(f"libopenvino_genai_c.so.{STUB_VERSION}.0", lib / "libopenvino_genai_c.so")
    if tbb == "3rdparty":
        (root / "runtime" / "3rdparty" / "tbb" / "lib").mkdir(parents=True)
        shutil.copy(d / "libtbb.so.12", root / "runtime" / "3rdparty" / "tbb" / "lib" / "libtbb.so.12")
    elif tbb == "beside":
        shutil.copy(d / "libtbb.so.12", lib / "libtbb.so.12")
    (root / "setupvars.sh").write_text("# stub archive\n")
    return root


def real_archive(root: Path) -> Path:
    """An archive of the wheel's OpenVINO (symlinked, TBB copied into runtime/3rdparty/tbb/lib) whose GenAI C
    library is a copy of the bundled backend; returns its root."""
    wheel = _loader.openvino_wheel_libs()
    tok = _loader.tokenizers_wheel_lib()
    if wheel is None or tok is None:
        pytest.skip("the openvino / openvino-tokenizers wheels are not installed")
    lib = root / "runtime" / "lib" / "intel64"
    tbb = root / "runtime" / "3rdparty" / "tbb" / "lib"
    lib.mkdir(parents=True)
    tbb.mkdir(parents=True)
    for f in wheel.iterdir():
        if f.name.startswith("libtbb"):
            shutil.copy(f, tbb / f.name)
        else:
            os.symlink(f, lib / f.name)
    os.symlink(tok, lib / "libopenvino_tokenizers.so")
    shutil.copy(_bundled(), lib / "libopenvino_genai_c.so.2026.4.1.0")
    return root


CHILD = r"""
import json, os, sys
import ovgenai_c
from ovgenai_c import _loader, _sharedlibs
out = {}
try:
    out["info"] = ovgenai_c.library_info()
except ovgenai_c.LibraryNotFoundError as e:
    out["error"] = str(e)
    out["error_type"] = type(e).__name__
out["tokenizers_env"] = os.environ.get("OPENVINO_TOKENIZERS_PATH_GENAI")
__EXTRA__
out["mapped"] = _sharedlibs.mapped_libraries()
print(json.dumps(out))
"""


def run_child(tmp_path: Path, env: Dict[str, str], extra: str = "", timeout: float = 120) -> dict:
    """Run the discovery in a fresh interpreter; returns what it printed (library_info or the error, the
    tokenizers variable afterwards, every mapped library)."""
    full = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OVGENAI_C_HOME": str(tmp_path / "ovgenai_c_home")}
    full.update(env)
    proc = subprocess.run([sys.executable, "-c", CHILD.replace("__EXTRA__", extra)], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _under(paths, root: Path):
    root = str(root.resolve())
    return [p for p in paths if p.startswith(root)]


def _openvinos(mapped):
    return [p for p in mapped if os.path.basename(p).startswith("libopenvino.so")]


# ------------------------------------------------------------------------------------------------ layouts

def test_real_archive_layout_with_tbb_under_3rdparty_loads_and_runs(tmp_path):
    """OPENVINO_GENAI_DIR at an archive whose TBB is only in runtime/3rdparty/tbb/lib: that TBB is used, the
    library loads from the archive (versioned name only) and a pipeline generates."""
    root = real_archive(tmp_path / "archive")
    extra = (f"p = ovgenai_c.LLMPipeline({str(TINY_IR)!r}, 'CPU')\n"
             "out['text'] = str(p.generate('Hello', max_new_tokens=4, ignore_eos=True)); p.close()\n")
    out = run_child(tmp_path, {"OPENVINO_GENAI_DIR": str(root)}, extra)
    info = out["info"]
    assert info["source"] == "OPENVINO_GENAI_DIR", out
    assert info["path"] == str(root / "runtime/lib/intel64/libopenvino_genai_c.so.2026.4.1.0")
    assert info["tried_before"] == []
    tbb = [p for p in out["mapped"] if os.path.basename(p).startswith("libtbb.so")]
    assert tbb == [str((root / "runtime/3rdparty/tbb/lib/libtbb.so.12").resolve())]
    assert info["tokenizers_path"] == str(root / "runtime/lib/intel64/libopenvino_tokenizers.so")
    assert info["openvino_version"].startswith("2026.4.1-")
    assert out["text"]


@pytest.mark.parametrize("tbb", ["3rdparty", "beside"])
def test_archive_of_another_openvino_reports_the_mapped_version(tmp_path, stubs, tbb):
    """library_info names what is mapped: the archive's libopenvino (real path) and the version that library
    reports (ov_get_openvino_version of the libopenvino_c beside it), not the wheel's."""
    root = stub_archive(tmp_path / "archive", stubs, stubs["double"], tbb=tbb)
    out = run_child(tmp_path, {"OPENVINO_GENAI_DIR": str(root)})
    info = out["info"]
    assert info["source"] == "OPENVINO_GENAI_DIR" and info["kind"] == "official", out
    lib = root / "runtime" / "lib" / "intel64"
    assert info["libopenvino_path"] == str((lib / f"libopenvino.so.{STUB_VERSION}").resolve())
    assert info["openvino_version"] == f"{STUB_VERSION}-1-stub0000"
    assert info["versions"]["openvino"] == info["openvino_version"]
    assert info["versions"]["archive"] == f"{STUB_VERSION}.0"
    assert "openvino-tokenizers" not in info["versions"]  # the wheel's tokenizers are not the ones in use
    assert info["tokenizers_path"] == out["tokenizers_env"] == str(lib / "libopenvino_tokenizers.so")
    assert info["libopenvino_mapped"] == [f"{info['libopenvino_path']} ({STUB_VERSION}-1-stub0000)"]
    assert _openvinos(out["mapped"]) == [info["libopenvino_path"]]  # the wheel's OpenVINO never came in


def test_archive_release_is_the_one_its_library_file_names(tmp_path, stubs):
    """The archive release in library_info() comes from the library's versioned file name, not from a folder
    that names another release (an archive of 2026.3 unpacked under a 2026.4.1.0 folder is 2026.3)."""
    root = stub_archive(tmp_path / "genai-archive" / "2026.4.1.0", stubs, stubs["double"])
    info = run_child(tmp_path, {"OPENVINO_GENAI_DIR": str(root)})["info"]
    assert info["kind"] == "official" and info["versions"]["archive"] == f"{STUB_VERSION}.0", info


# ------------------------------------------------------------------------------- explicit choices fail loudly

def _choice_env(choice: str, tmp_path: Path, stubs, lib: Path):
    """(env, the words the error must name) for an explicit choice of ``lib`` by environment."""
    if choice == "OVGENAI_C_LIBRARY":
        return {"OVGENAI_C_LIBRARY": str(lib)}, f"OVGENAI_C_LIBRARY={lib}"
    root = stub_archive(tmp_path / "archive", stubs, lib)
    return {"OPENVINO_GENAI_DIR": str(root)}, f"OPENVINO_GENAI_DIR={root}"


BROKEN = {
    "garbage": "not an ELF shared library",
    "nogenai": "not a GenAI C library: it does not export ov_genai_llm_pipeline_create",
    "undefined": "undefined symbol: symbol_that_no_library_has",
}


@pytest.mark.parametrize("broken", sorted(BROKEN))
@pytest.mark.parametrize("choice", ["load_library", "OVGENAI_C_LIBRARY", "OPENVINO_GENAI_DIR"])
def test_explicit_choice_that_fails_raises_and_never_falls_back(tmp_path, stubs, choice, broken):
    if choice == "load_library":
        out, named = _run_load_library_only(tmp_path, stubs[broken]), f"load_library({str(stubs[broken])!r})"
    else:
        env, named = _choice_env(choice, tmp_path, stubs, stubs[broken])
        out = run_child(tmp_path, env)
    assert "info" not in out, out
    err = out["error"]
    assert named in err and BROKEN[broken] in err and "Not falling back" in err, err
    assert "bundled" not in err
    assert not [p for p in out["mapped"] if p.endswith("libovgenai_c_bundled.so")]
    assert out["tokenizers_env"] is None  # nothing of the failed choice stays
    assert not [p for p in out["mapped"] if str(stubs["dir"]) in p or "archive" in p]


def _run_load_library_only(tmp_path: Path, lib: Path) -> dict:
    code = ("import json, os, ovgenai_c\nfrom ovgenai_c import _sharedlibs\nout = {}\n"
            f"try:\n    ovgenai_c.load_library({str(lib)!r})\n    out['info'] = ovgenai_c.library_info()\n"
            "except ovgenai_c.LibraryNotFoundError as e:\n    out['error'] = str(e)\n"
            "out['tokenizers_env'] = os.environ.get('OPENVINO_TOKENIZERS_PATH_GENAI')\n"
            "out['mapped'] = _sharedlibs.mapped_libraries()\nprint(json.dumps(out))\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OVGENAI_C_HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_archive_without_tbb_fails_before_mapping_anything(tmp_path, stubs):
    """No libtbb beside the library nor in runtime/3rdparty/tbb/lib: OPENVINO_GENAI_DIR fails naming what is
    missing and where it was looked for, with nothing of the archive mapped and no fallback."""
    root = stub_archive(tmp_path / "archive", stubs, stubs["double"], tbb=None)
    out = run_child(tmp_path, {"OPENVINO_GENAI_DIR": str(root)})
    err = out["error"]
    assert f"OPENVINO_GENAI_DIR={root}" in err and "libtbb.so.12 (needed by libopenvino.so.2630) not found" in err
    assert str(root / "runtime" / "3rdparty" / "tbb" / "lib") in err and "Not falling back" in err
    assert not _under(out["mapped"], root) and not _openvinos(out["mapped"])
    assert out["tokenizers_env"] is None


def test_archive_dir_without_a_library_names_where_it_looked(tmp_path):
    (tmp_path / "empty" / "runtime").mkdir(parents=True)
    out = run_child(tmp_path, {"OPENVINO_GENAI_DIR": str(tmp_path / "empty")})
    err = out["error"]
    assert "OPENVINO_GENAI_DIR" in err and "no libopenvino_genai_c.so in" in err
    assert str(tmp_path / "empty" / "runtime" / "lib" / "intel64") in err and "Not falling back" in err


# ------------------------------------------------------------------------ a failed candidate leaves no trace

@pytest.mark.parametrize("broken", ["undefined", "nogenai"])
def test_failed_fetched_archive_leaves_nothing_for_the_bundled_backend(tmp_path, stubs, broken):
    """The fetched archive (another OpenVINO) fails after its dependencies were preloaded and its tokenizers
    path was set: the bundled backend that loads next finds the tokenizers variable unset (so it takes the
    wheel's extension, not the archive's), and none of the archive's libraries stay mapped."""
    bundled = _bundled()
    home = tmp_path / "ovgenai_c_home"
    root = stub_archive(home / "genai-archive" / STUB_VERSION, stubs, stubs[broken])
    os.symlink(STUB_VERSION, home / "genai-archive" / "current")
    out = run_child(tmp_path, {})
    info = out["info"]
    assert info["source"] == "bundled backend" and info["path"] == str(bundled), out
    assert any(t.startswith("fetched archive") and BROKEN[broken] in t for t in info["tried_before"]), info
    assert out["tokenizers_env"] == str(_loader.tokenizers_wheel_lib())
    assert info["tokenizers_path"] == out["tokenizers_env"]
    assert not _under(out["mapped"], root), _under(out["mapped"], root)
    assert len(info["libopenvino_mapped"]) == 1 and info["openvino_version"].startswith("2026.4.1-")
    assert info["left_mapped_by_failed_candidates"] == [] and info["refused"] == []


def test_what_a_failed_candidate_cannot_unload_blocks_another_openvino(tmp_path, stubs):
    """A libopenvino that glibc never unloads (like the real one) stays mapped after its candidate failed: the
    bundled backend on another OpenVINO is then refused with both versions named, instead of mixing them."""
    _bundled()
    home = tmp_path / "ovgenai_c_home"
    stub_archive(home / "genai-archive" / STUB_VERSION, stubs, stubs["undefined"], nodelete=True)
    os.symlink(STUB_VERSION, home / "genai-archive" / "current")
    out = run_child(tmp_path, {})
    err = out["error"]
    assert "could not be unloaded, stays mapped" in err and f"libopenvino.so.{STUB_VERSION}" in err, err
    assert "two OpenVINO versions cannot share one process" in err
    assert out["error_type"] == "OpenVINOVersionConflictError"  # a LibraryNotFoundError that says why, by type
    assert f"already has OpenVINO {STUB_VERSION}" in err and "needs OpenVINO 2026.4.1-" in err
    assert len(_openvinos(out["mapped"])) == 1  # the wheel's libopenvino was never mapped beside it


# --------------------------------------------------------------------- two OpenVINO versions in one process

def test_second_library_on_another_openvino_is_refused(tmp_path, stubs):
    """The archive of OpenVINO 2026.3 is loaded; opening the bundled backend (2026.4.1) in the same process is
    refused naming both versions, nothing of it is mapped, and library_info() lists the refusal."""
    bundled = _bundled()
    root = stub_archive(tmp_path / "archive", stubs, stubs["double"])
    extra = (f"try:\n    _loader.open_library({str(bundled)!r})\nexcept ovgenai_c.LibraryNotFoundError as e:\n"
             "    out['second'] = str(e)\n    out['second_type'] = type(e).__name__\n"
             "out['info_after'] = ovgenai_c.library_info()\n")
    out = run_child(tmp_path, {"OPENVINO_GENAI_DIR": str(root)}, extra)
    second = out["second"]
    assert out["second_type"] == "OpenVINOVersionConflictError"
    assert str(bundled) in second and f"OpenVINO {STUB_VERSION}-1-stub0000" in second and "2026.4.1-" in second
    assert out["info_after"]["refused"] and f"{STUB_VERSION}-1-stub0000" in out["info_after"]["refused"][0]
    assert len(_openvinos(out["mapped"])) == 1 and not [p for p in out["mapped"] if p.endswith("_bundled.so")]


def test_archive_of_another_openvino_is_refused_after_the_bundled_backend(tmp_path, stubs):
    bundled = _bundled()
    root = stub_archive(tmp_path / "archive", stubs, stubs["double"])
    lib = root / "runtime" / "lib" / "intel64" / "libopenvino_genai_c.so"
    extra = (f"try:\n    _loader.open_library({str(lib)!r})\nexcept ovgenai_c.LibraryNotFoundError as e:\n"
             "    out['second'] = str(e)\n    out['second_type'] = type(e).__name__\n")
    out = run_child(tmp_path, {"OVGENAI_C_LIBRARY": str(bundled)}, extra)
    assert out["info"]["path"] == str(bundled)
    second = out["second"]
    assert out["second_type"] == "OpenVINOVersionConflictError"
    assert f"needs OpenVINO {STUB_VERSION}" in second and "already has OpenVINO 2026.4.1-" in second, second
    assert not _under(out["mapped"], root)


def test_tokenizers_variable_for_another_openvino_is_refused(tmp_path, stubs):
    bundled = _bundled()
    tok = stubs["dir"] / "libopenvino_tokenizers.so"
    out = run_child(tmp_path, {"OVGENAI_C_LIBRARY": str(bundled), "OPENVINO_TOKENIZERS_PATH_GENAI": str(tok)})
    err = out["error"]
    assert f"OPENVINO_TOKENIZERS_PATH_GENAI={tok} is built for libopenvino.so.2630" in err, err
    assert "libopenvino.so.2641" in err and not _openvinos(out["mapped"])
    assert out["tokenizers_env"] == str(tok)  # the user's own value is left as it was


def test_a_failed_load_library_path_does_not_stick(tmp_path, stubs):
    """load_library(bad) raises; a later load_library() without a path discovers as usual."""
    bundled = _bundled()
    extra = (f"try:\n    ovgenai_c.load_library({str(stubs['garbage'])!r})\nexcept ovgenai_c.LibraryNotFoundError:\n"
             "    out['first'] = 'refused'\nout['then'] = ovgenai_c.load_library().path\n")
    code = "import json, ovgenai_c\nout = {}\n" + extra + "print(json.dumps(out))\n"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OVGENAI_C_HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"first": "refused", "then": str(bundled)}


def test_elf_facts_are_read_without_loading(stubs, tmp_path):
    from ovgenai_c import _sharedlibs

    ov = _sharedlibs.read_elf(stubs["dir"] / f"libopenvino.so.{STUB_VERSION}")
    assert ov.soname == "libopenvino.so.2630" and "libtbb.so.12" in ov.needed
    assert _sharedlibs.openvino_version_of_file(stubs["dir"] / "libopenvino.so.2630") == STUB_VERSION
    with pytest.raises(_sharedlibs.NotLoadable, match="not an ELF shared library"):
        _sharedlibs.check_loadable(stubs["garbage"])
    foreign = tmp_path / "libforeign.so"
    data = bytearray((stubs["dir"] / "libtbb.so.12").read_bytes())
    data[18:20] = (183 if _sharedlibs.own_machine() != 183 else 62).to_bytes(2, "little")  # e_machine
    foreign.write_bytes(bytes(data))
    with pytest.raises(_sharedlibs.NotLoadable, match="built for .*, this Python runs on"):
        _sharedlibs.check_loadable(foreign)


def test_archive_of_another_openvino_is_refused_after_import_openvino(tmp_path, stubs):
    """`import openvino` maps the wheel's OpenVINO: an archive of another version is then refused, naming both."""
    pytest.importorskip("openvino", exc_type=ImportError)
    root = stub_archive(tmp_path / "archive", stubs, stubs["double"])
    code = ("import json, openvino, ovgenai_c\nfrom ovgenai_c import _sharedlibs\nout = {}\n"
            "try:\n    ovgenai_c.library_info()\nexcept ovgenai_c.LibraryNotFoundError as e:\n    out['error'] = str(e)\n"
            "out['mapped'] = _sharedlibs.mapped_libraries()\nprint(json.dumps(out))\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OPENVINO_GENAI_DIR": str(root)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    err = out["error"]
    assert f"OPENVINO_GENAI_DIR={root}" in err and f"needs OpenVINO {STUB_VERSION}" in err, err
    assert "already has OpenVINO 2026.4.1-" in err and not _under(out["mapped"], root)
