"""The official GenAI C library, as ovgenai_c's own discovery finds it (OVGENAI_C_LIBRARY, OPENVINO_GENAI_DIR,
the archive scripts/fetch_genai_archive.sh installs, or ``--library``), and whether openvino_genai pybind is
of the same release, so that the comparison of the two is like-for-like.

Discovery runs in a child interpreter (``ovgenai_c.load_library()`` then ``library_info()``): the benchmark's
own process never maps an OpenVINO, and what the loader does to the environment stays in that child."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional

OFFICIAL = "ovgenai_c[official]"
GENAI_ARCHIVE = "genai[archive]"  # openvino_genai pybind from the official archive's own python/ folder
# the discovery steps that choose a library other than the bundled backend (ovgenai_c._loader's names)
OFFICIAL_SOURCES = ("explicit argument", "OVGENAI_C_LIBRARY", "OPENVINO_GENAI_DIR", "fetched archive")
_CHOICE_VARIABLES = ("OVGENAI_C_LIBRARY", "OPENVINO_GENAI_DIR")

_PROBE = r"""
import json, sys
import ovgenai_c
try:
    ovgenai_c.load_library(sys.argv[1] if len(sys.argv) > 1 else None)
    print(json.dumps({"ok": True, **ovgenai_c.library_info()}))
except Exception as exc:
    print(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}))
"""


def probe_library(env: Dict[str, str], path: Optional[str] = None, timeout: float = 120.0) -> Dict[str, Any]:
    """``library_info()`` of the library ovgenai_c's discovery loads in a fresh interpreter with ``env``
    (``path``: load that file instead, as ``load_library(path)`` does); ``{"ok": False, "error": ...}`` when
    it cannot load one."""
    cmd = [sys.executable, "-c", _PROBE] + ([path] if path else [])
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"library discovery did not finish within {timeout:.0f} s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        return {"ok": False, "error": f"library discovery failed: {tail[0]}"}
    return json.loads(lines[-1])


def release(version: Optional[str]) -> Optional[str]:
    """The ``major.minor.patch`` of a version string (``2026.4.1.0-3408-ab01d17`` -> ``2026.4.1``), or None."""
    m = re.match(r"\s*(\d+)\.(\d+)\.(\d+)", version or "")
    return ".".join(m.groups()) if m else None


def library_release(info: Dict[str, Any]) -> Optional[str]:
    """The GenAI release of a library from its ``library_info()``: the archive's version when its path names one,
    else the OpenVINO it runs on (GenAI and OpenVINO are released in step)."""
    versions = info.get("versions") or {}
    return release(versions.get("archive")) or release(info.get("openvino_version"))


def describe(info: Dict[str, Any]) -> str:
    """What was found, in one line: discovery step, path, kind and versions."""
    versions = info.get("versions") or {}
    parts = [f"kind {info.get('kind')}"]
    if versions.get("archive"):
        parts.append(f"archive {versions['archive']}")
    if info.get("openvino_version"):
        parts.append(f"OpenVINO {info['openvino_version']}")
    return f"{info.get('source')}: {info.get('path')} ({', '.join(parts)})"


def discover(env: Dict[str, str], explicit: Optional[str] = None) -> Dict[str, Any]:
    """The official library for the benchmark: ``{"found": True, "label", "path", "info", "release",
    "description"}``, or ``{"found": False, "note": <one line saying why>}``.

    ``explicit``: the ``--library`` file (then it is the only library considered); otherwise ovgenai_c's
    discovery order decides, and a library it reaches by one of :data:`OFFICIAL_SOURCES` counts as official —
    whatever it is (a stand-in such as the bundled backend under another path included)."""
    info = probe_library(env, explicit)
    if not info.get("ok"):
        chosen = [f"{v}={env[v]}" for v in _CHOICE_VARIABLES if env.get(v)]
        lines = (info.get("error") or "unknown error").splitlines()
        if not explicit and not chosen:
            return {"found": False, "note": f"no official GenAI C library found, and no library loads: {lines[0]}"}
        by = f"--library {explicit}" if explicit else ", ".join(chosen)
        # the loader names the candidate and why it failed on a "  - <path>: <why>" line
        detail = next((x.strip()[2:] for x in lines if x.strip().startswith("- ")), lines[0])
        return {"found": False, "note": f"the official library chosen by {by} could not be loaded: {detail}"}
    if info.get("source") not in OFFICIAL_SOURCES:
        unset = [v for v in _CHOICE_VARIABLES if not env.get(v)]
        fetched = next((why.split(": ", 2)[-1] for why in info.get("tried_before") or []
                        if why.startswith("fetched archive")), "not found")
        return {"found": False,
                "note": f"no official GenAI C library found ({' and '.join(unset)} unset; fetched archive: {fetched})"}
    return {"found": True, "label": OFFICIAL, "path": info["path"], "info": info, "release": library_release(info),
            "description": describe(info)}


def compare_versions(library: Optional[str], pybind: Optional[str], kind: str = "official") -> Dict[str, Any]:
    """Whether ovgenai_c over a library of release ``library`` and ``kind`` (library_info()'s) against pybind
    ``pybind`` (any version strings) is like-for-like: GenAI's own C library, the same release on both sides."""
    lib_rel, py_rel = release(library), release(pybind)
    out: Dict[str, Any] = {"like_for_like": False, "library": lib_rel, "pybind": py_rel}
    if kind == "bundled":
        out["note"] = ("not like-for-like: the library is the bundled backend (ovgenai_c's own engine), not GenAI's "
                       "C library")
    elif kind != "official":
        out["note"] = f"not like-for-like: the library is not GenAI's own C library (kind {kind})"
    elif lib_rel is None or py_rel is None:
        what = "the official library's" if lib_rel is None else "openvino_genai pybind's"
        out["note"] = f"not like-for-like: {what} version is unknown"
    elif lib_rel != py_rel:
        out["note"] = f"not like-for-like: the official library is GenAI {lib_rel}, openvino_genai pybind {py_rel}"
    else:
        out.update(like_for_like=True, note=f"like-for-like: GenAI {lib_rel} on both sides")
    return out

def archive_pybind_env(library_path: str, env: Dict[str, str]) -> Optional[Dict[str, str]]:
    """The environment in which ``import openvino_genai`` gets the pybind module of the archive the library comes
    from (its ``python/`` folder first on PYTHONPATH, its library folders on LD_LIBRARY_PATH, as the archive's
    setupvars.sh sets them), or None when the library is not in an archive that ships one."""
    lib = Path(library_path)
    root = next((d.parent for d in [lib.parent, *list(lib.parents)[1:4]] if d.name == "runtime"), None)
    if root is None or not (root / "python" / "openvino_genai" / "__init__.py").is_file():
        return None
    lib_dirs = [str(lib.parent)] + [str(d) for d in [root / "runtime" / "3rdparty" / "tbb" / "lib"] if d.is_dir()]
    out = dict(env)
    out["PYTHONPATH"] = os.pathsep.join([str(root / "python")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    out["LD_LIBRARY_PATH"] = os.pathsep.join(lib_dirs + ([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH")
                                                         else []))
    return out
