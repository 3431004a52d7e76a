"""Find, preload and open a library that implements the GenAI C ABI.

Discovery order (first that loads wins):
  1. an explicit path given to :func:`load_library`;
  2. ``OVGENAI_C_LIBRARY`` — a library file;
  3. ``OPENVINO_GENAI_DIR`` — the root of an unpacked OpenVINO GenAI archive;
  4. where ``scripts/fetch_genai_archive.sh`` installs the archive
     (``$OVGENAI_C_HOME`` or ``$XDG_DATA_HOME/ovgenai_c`` or ``~/.local/share/ovgenai_c``, ``genai-archive/current``);
  5. the bundled backend shipped in the package (``ovgenai_c/_bundled/``) or built in the source tree.
Nothing is loaded at import time; the first use triggers :func:`get_library`.
"""
from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from . import _ffi, errors

OFFICIAL_NAME = "libopenvino_genai_c.so"
BUNDLED_NAME = "libovgenai_c_bundled.so"
TOKENIZERS_ENV = "OPENVINO_TOKENIZERS_PATH_GENAI"

_lock = threading.RLock()
_loaded: Optional["LoadedLibrary"] = None
_by_path: Dict[str, "LoadedLibrary"] = {}
_explicit: Optional[str] = None
_preloaded: List[Any] = []  # ctypes handles kept for the life of the process


@dataclass
class LoadedLibrary:
    """A loaded GenAI C library: the cffi ``lib`` plus what is known about it."""

    lib: Any
    ffi: Any
    path: str
    kind: str  # "official", "bundled" or "other"
    source: str  # which discovery step found it
    missing_symbols: Tuple[str, ...]
    versions: Dict[str, str] = field(default_factory=dict)
    tokenizers_path: Optional[str] = None
    tried: List[Tuple[str, str]] = field(default_factory=list)
    has_last_error: bool = False
    has_live_counter: bool = False
    has_cancel_only_streaming: bool = False

    def last_error(self) -> Optional[str]:
        """The bundled backend's text for the last failure on this thread (None elsewhere)."""
        if not self.has_last_error:
            return None
        ptr = self.lib.ovgenai_c_bundled_last_error()
        if ptr == self.ffi.NULL:
            return None
        text = self.ffi.string(ptr).decode("utf-8", "replace")
        return text or None

    def check(self, status: int, function: str, family: str = "ov", hint: Optional[str] = None) -> None:
        """The status checker for calls into this library (adds the library's own error text if it has one)."""
        if status != 0:
            raise errors.error_for(status, function, family, hint, self.last_error)

    def error(self, status: int, function: str, family: str = "ov", hint: Optional[str] = None) -> errors.GenAIError:
        """The exception for a failing status of this library."""
        return errors.error_for(status, function, family, hint, self.last_error)

    def live_handles(self, kind: Optional[str] = None) -> Optional[int]:
        """Live native objects counted by the bundled backend (None when the library cannot tell)."""
        if not self.has_live_counter:
            return None
        arg = self.ffi.NULL if kind is None else self.ffi.new("char[]", kind.encode())
        return int(self.lib.ovgenai_c_bundled_live_handles(arg))


def data_home() -> Path:
    """Where per-user data (the fetched archive) lives."""
    if os.environ.get("OVGENAI_C_HOME"):
        return Path(os.environ["OVGENAI_C_HOME"])
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "ovgenai_c"


def archive_lib_dirs(root: Path) -> List[Path]:
    """Library folders inside an OpenVINO GenAI archive root."""
    return [root / "runtime" / "lib" / "intel64", root / "runtime" / "lib" / "aarch64",
            root / "runtime" / "lib", root / "lib"]


def _versioned(directory: Path, stem: str) -> Optional[Path]:
    """``stem`` in ``directory``, accepting versioned sonames (``libx.so.2641``); the plain name first."""
    plain = directory / stem
    if plain.is_file():
        return plain
    hits = sorted(glob.glob(str(directory / (stem + ".*"))), key=len)
    return Path(hits[0]) if hits else None


def _package_dir(name: str) -> Optional[Path]:
    """Folder of an installed package found without importing it (importing openvino costs ~0.3 s)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            return Path(loc)
    if spec.origin:
        return Path(spec.origin).parent
    return None


def openvino_wheel_libs() -> Optional[Path]:
    """``openvino/libs`` of the pip wheel, if installed."""
    d = _package_dir("openvino")
    if d and (d / "libs").is_dir():
        return d / "libs"
    return None


def tokenizers_wheel_lib() -> Optional[Path]:
    """``libopenvino_tokenizers.so`` of the openvino-tokenizers wheel, if installed."""
    d = _package_dir("openvino_tokenizers")
    if d:
        p = _versioned(d / "lib", "libopenvino_tokenizers.so")
        if p:
            return p
    return None


def bundled_candidates() -> List[Path]:
    """Where the bundled backend may be: in the package (every entry of its __path__), then dev builds."""
    here = Path(__file__).resolve().parent
    dirs: List[Path] = []
    import ovgenai_c

    for entry in list(getattr(ovgenai_c, "__path__", [])) + [str(here)]:
        d = Path(entry) / "_bundled"
        if d not in dirs:
            dirs.append(d)
    # an installed copy, when the package is imported from a source tree that shadows it
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        try:
            installed = Path(str(distribution("ovgenai_c").locate_file("ovgenai_c/_bundled"))).resolve()
            if installed not in dirs:
                dirs.append(installed)
        except PackageNotFoundError:
            pass
    except ImportError:  # pragma: no cover
        pass
    dirs += [here.parent / "native" / "build"]
    return [d / BUNDLED_NAME for d in dirs]


def candidates() -> List[Tuple[str, Path]]:
    """Every (source, path) in discovery order."""
    out: List[Tuple[str, Path]] = []
    if _explicit:
        out.append(("explicit argument", Path(_explicit)))
    env_lib = os.environ.get("OVGENAI_C_LIBRARY")
    if env_lib:
        out.append(("OVGENAI_C_LIBRARY", Path(env_lib)))
    env_dir = os.environ.get("OPENVINO_GENAI_DIR")
    if env_dir:
        found = [p for d in archive_lib_dirs(Path(env_dir)) for p in [_versioned(d, OFFICIAL_NAME)] if p]
        out.append(("OPENVINO_GENAI_DIR", found[0] if found else Path(env_dir) / "runtime/lib/intel64" / OFFICIAL_NAME))
    fetched = data_home() / "genai-archive" / "current"
    found = [p for d in archive_lib_dirs(fetched) for p in [_versioned(d, OFFICIAL_NAME)] if p]
    out.append(("fetched archive", found[0] if found else fetched / "runtime/lib/intel64" / OFFICIAL_NAME))
    for p in bundled_candidates():
        out.append(("bundled backend", p))
    return out


def _preload(path: Path) -> Optional[str]:
    """dlopen a dependency with RTLD_GLOBAL; returns an error text or None."""
    try:
        _preloaded.append(ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL))
        return None
    except OSError as exc:
        return str(exc)


def _preload_dependencies(lib_path: Path) -> Tuple[Optional[Path], List[str]]:
    """Preload libtbb, libopenvino, libopenvino_c (beside the library, else from the openvino wheel).

    Returns the folder the dependencies came from and the notes of what failed.
    """
    notes: List[str] = []
    beside = lib_path.parent
    dep_dir: Optional[Path] = None
    if _versioned(beside, "libopenvino.so"):
        dep_dir = beside
    else:
        dep_dir = openvino_wheel_libs()
    if dep_dir is None:
        notes.append("libopenvino not found beside the library nor in the openvino wheel")
        return None, notes
    for stem in ("libtbb.so", "libopenvino.so", "libopenvino_c.so"):
        p = _versioned(dep_dir, stem)
        if p is None:
            if stem != "libopenvino_c.so":
                notes.append(f"{stem} not found in {dep_dir}")
            continue
        err = _preload(p)
        if err:
            notes.append(f"{p}: {err}")
    # The official C library links libopenvino_genai from its own folder.
    genai = _versioned(beside, "libopenvino_genai.so")
    if genai is not None and genai.name != lib_path.name:
        err = _preload(genai)
        if err:
            notes.append(f"{genai}: {err}")
    return dep_dir, notes


def _set_tokenizers_path(lib_path: Path) -> Optional[str]:
    if os.environ.get(TOKENIZERS_ENV):
        return os.environ[TOKENIZERS_ENV]
    p = _versioned(lib_path.parent, "libopenvino_tokenizers.so") or tokenizers_wheel_lib()
    if p is not None:
        os.environ[TOKENIZERS_ENV] = str(p)
        return str(p)
    return None


def _versions(lib_path: Path, kind: str, lib: Any, ffi: Any, dep_dir: Optional[Path]) -> Dict[str, str]:
    v: Dict[str, str] = {}
    if kind == "bundled":
        try:
            v["bundled"] = ffi.string(lib.ovgenai_c_bundled_version()).decode()
        except Exception:
            pass
    m = re.search(r"(\d{4}\.\d+\.\d+(?:\.\d+)?)", str(lib_path.resolve()))
    if kind == "official" and m:
        v["archive"] = m.group(1)
    try:
        from importlib.metadata import version

        for dist in ("openvino", "openvino-tokenizers"):
            try:
                v[dist] = version(dist)
            except Exception:
                pass
    except ImportError:  # pragma: no cover
        pass
    if dep_dir is not None:
        so = _versioned(dep_dir, "libopenvino.so")
        if so is not None:
            v["libopenvino"] = so.name
    return v


def _open(source: str, path: Path) -> LoadedLibrary:
    if not path.exists():
        raise OSError("no such file")
    ffi = _ffi.get_ffi()
    dep_dir, notes = _preload_dependencies(path)
    tok = _set_tokenizers_path(path)
    try:
        lib = ffi.dlopen(str(path))
    except OSError as exc:
        raise OSError(f"{exc}" + (f" (dependency notes: {'; '.join(notes)})" if notes else ""))
    missing = []
    for name in _ffi.required_functions():
        try:
            getattr(lib, name)
        except (AttributeError, NotImplementedError):
            missing.append(name)
    present_optional = set()
    for name in _ffi.optional_functions():
        try:
            getattr(lib, name)
            present_optional.add(name)
        except (AttributeError, NotImplementedError):
            pass
    if "ovgenai_c_bundled_version" in present_optional:
        kind = "bundled"
    elif path.name.startswith("libopenvino_genai_c"):
        kind = "official"
    else:
        kind = "other"
    return LoadedLibrary(
        lib=lib, ffi=ffi, path=str(path), kind=kind, source=source, missing_symbols=tuple(missing),
        versions=_versions(path, kind, lib, ffi, dep_dir), tokenizers_path=tok,
        has_last_error="ovgenai_c_bundled_last_error" in present_optional,
        has_live_counter="ovgenai_c_bundled_live_handles" in present_optional,
        has_cancel_only_streaming="ovgenai_c_bundled_set_cancel_only_streaming" in present_optional,
    )


def load_library(path: Optional[str] = None) -> LoadedLibrary:
    """Load the GenAI C library now (``path`` first if given). Later calls return the same library.

    Raises :class:`~ovgenai_c.errors.LibraryNotFoundError` listing every place tried and why each failed.
    """
    global _loaded, _explicit
    with _lock:
        if _loaded is not None:
            if path is not None and Path(path).resolve() != Path(_loaded.path).resolve():
                raise errors.InvalidParameterError(
                    f"a GenAI C library is already loaded from {_loaded.path}; cannot switch to {path} in this process")
            return _loaded
        if path is not None:
            _explicit = str(path)
        tried: List[Tuple[str, str]] = []
        for source, cand in candidates():
            try:
                loaded = _open(source, cand)
            except OSError as exc:
                tried.append((f"{source}: {cand}", str(exc)))
                if source in ("explicit argument", "OVGENAI_C_LIBRARY"):
                    break  # an explicit choice that fails must not silently fall back
                continue
            loaded.tried = tried
            _by_path.setdefault(str(cand.resolve()), loaded)
            _loaded = loaded
            return loaded
        lines = "\n".join(f"  - {where}: {why}" for where, why in tried)
        raise errors.LibraryNotFoundError(
            "no library implementing the OpenVINO GenAI C API could be loaded. Tried:\n" + lines +
            "\nSet OVGENAI_C_LIBRARY to libopenvino_genai_c.so, set OPENVINO_GENAI_DIR to an unpacked GenAI "
            "archive, run scripts/fetch_genai_archive.sh, or install ovgenai_c from source so that its bundled "
            "backend is built.")


def open_library(path: str) -> LoadedLibrary:
    """Open one specific library file (cached per path), independently of the process default.

    Useful to run the same code against several implementations of the ABI in one process.
    """
    key = str(Path(path).resolve())
    with _lock:
        if key in _by_path:
            return _by_path[key]
        try:
            loaded = _open("explicit library", Path(path))
        except OSError as exc:
            raise errors.LibraryNotFoundError(f"cannot load the GenAI C library {path}: {exc}") from None
        _by_path[key] = loaded
        return loaded


def get_library() -> LoadedLibrary:
    """The loaded library, loading it on first use."""
    if _loaded is not None:
        return _loaded
    return load_library()


def openvino_c_library() -> Tuple[Path, Optional[str]]:
    """libopenvino_c of the OpenVINO the loaded GenAI library runs on, and the openvino_tokenizers extension path.

    Loads the GenAI library first (its OpenVINO is the one already in the process): libopenvino_c beside it,
    else in the openvino wheel — where :func:`_preload_dependencies` took libopenvino from.
    """
    lib = get_library()
    beside = Path(lib.path).parent
    dep_dir = beside if _versioned(beside, "libopenvino.so") else openvino_wheel_libs()
    found = _versioned(dep_dir, "libopenvino_c.so") if dep_dir is not None else None
    if found is None:
        raise errors.LibraryNotFoundError(
            f"libopenvino_c.so (OpenVINO's C API) not found beside {lib.path} nor in the openvino wheel")
    return found, lib.tokenizers_path


def is_loaded() -> bool:
    """True once a library has been loaded in this process."""
    return _loaded is not None


def library_info() -> Dict[str, Any]:
    """Path, kind (official / bundled / other), versions, missing symbols and discovery details."""
    lib = get_library()
    return {
        "path": lib.path,
        "kind": lib.kind,
        "source": lib.source,
        "versions": dict(lib.versions),
        "missing_symbols": list(lib.missing_symbols),
        "declared_functions": len(_ffi.required_functions()),
        "tokenizers_path": lib.tokenizers_path,
        "tried_before": [f"{w}: {why}" for w, why in lib.tried],
    }

