"""Find, preload and open a library that implements the GenAI C ABI.

Discovery order (first that loads wins):
  1. an explicit path given to :func:`load_library`;
  2. ``OVGENAI_C_LIBRARY`` — a library file;
  3. ``OPENVINO_GENAI_DIR`` — the root of an unpacked OpenVINO GenAI archive;
  4. where ``scripts/fetch_genai_archive.sh`` installs the archive
     (``$OVGENAI_C_HOME`` or ``$XDG_DATA_HOME/ovgenai_c`` or ``~/.local/share/ovgenai_c``, ``genai-archive/current``);
  5. the bundled backend shipped in the package (``ovgenai_c/_bundled/``) or built in the source tree.
Nothing is loaded at import time; the first use triggers :func:`get_library`.

A candidate is checked before anything of it is mapped (an ELF shared library for this machine, every
dependency found — libtbb beside it or in the archive's ``runtime/3rdparty/tbb/lib`` —, no second OpenVINO
version in the process). A candidate that fails leaves nothing behind: ``OPENVINO_TOKENIZERS_PATH_GENAI`` is
restored and what it preloaded is closed. A failing explicit choice (1–3) raises instead of falling back.
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
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from . import _ffi, _sharedlibs, errors

OFFICIAL_NAME = "libopenvino_genai_c.so"
BUNDLED_NAME = "libovgenai_c_bundled.so"
TOKENIZERS_ENV = "OPENVINO_TOKENIZERS_PATH_GENAI"

_lock = threading.RLock()
_loaded: Optional["LoadedLibrary"] = None
_by_path: Dict[str, "LoadedLibrary"] = {}
_explicit: Optional[str] = None
_preloaded: List[Any] = []  # ctypes handles kept for the life of the process
_left_mapped: List[str] = []  # what failed candidates left mapped (glibc cannot unload everything)
_refusals: List[str] = []  # loads refused because they would mix two OpenVINO versions

# Discovery steps whose failure is reported instead of falling back to the next step.
EXPLICIT_SOURCES = ("explicit argument", "OVGENAI_C_LIBRARY", "OPENVINO_GENAI_DIR")
# Without these a file is not a GenAI C library at all (others may be missing from older versions).
CORE_FUNCTIONS = ("ov_genai_llm_pipeline_create", "ov_genai_llm_pipeline_generate", "ov_genai_llm_pipeline_free")


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
    openvino_path: Optional[str] = None  # real path of the libopenvino mapped for this library
    openvino_version: Optional[str] = None  # read from the mapped library (ov_get_openvino_version)
    openvino_c_path: Optional[str] = None  # real path of the libopenvino_c mapped beside it, if any
    extras: FrozenSet[str] = frozenset()  # the optional functions it exports: ovgenai_c_bundled_*, ov_genai_vlm_*

    def has_extra(self, name: str) -> bool:
        """Whether the library exports the optional function ``name`` (cdefs/9*: the bundled backend's extras;
        cdefs/06: the VLM functions)."""
        return name in self.extras

    @property
    def has_last_error(self) -> bool:
        return self.has_extra("ovgenai_c_bundled_last_error")

    @property
    def has_live_counter(self) -> bool:
        return self.has_extra("ovgenai_c_bundled_live_handles")

    @property
    def has_cancel_only_streaming(self) -> bool:
        return self.has_extra("ovgenai_c_bundled_set_cancel_only_streaming")

    def last_error(self) -> Optional[str]:
        """The bundled backend's text for the last failure on this thread (None elsewhere)."""
        from ._capi import bind, bundled

        return bundled.last_error(bind(self))

    def check(self, status: int, function: str, hint: Optional[str] = None) -> None:
        """Raise the typed error for a failing ``status`` of ``function`` (its status family from its declared
        return type, the library's own error text added if it keeps one)."""
        if status != 0:
            raise self.error(status, function, hint)

    def error(self, status: int, function: str, hint: Optional[str] = None) -> errors.GenAIError:
        """The exception for a failing status of this library."""
        from ._capi import bind

        return bind(self).error(status, function, hint)

    def live_handles(self, kind: Optional[str] = None) -> Optional[int]:
        """Live native objects counted by the bundled backend (None when the library cannot tell)."""
        from ._capi import bind, bundled

        return bundled.live_handles(bind(self), kind)


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


def _archive_root(lib_dir: Path) -> Optional[Path]:
    """The archive root above ``.../runtime/lib[/<arch>]`` (None when the library is not in that layout)."""
    for d in [lib_dir, *list(lib_dir.parents)[:3]]:
        if d.name == "runtime":
            return d.parent
    return None


def dependency_dirs(lib_path: Path) -> Tuple[Optional[Path], List[Path]]:
    """(folder of the libopenvino to use, folders to look for libtbb in) for a library at ``lib_path``.

    A library with libopenvino beside it (an archive) uses that one and the archive's TBB
    (``runtime/3rdparty/tbb/lib``, or beside); any other uses the ``openvino`` wheel's libraries.
    """
    lib_dir = lib_path.parent
    ov_dir = lib_dir if _versioned(lib_dir, "libopenvino.so") else openvino_wheel_libs()
    tbb_dirs = [lib_dir]
    root = _archive_root(lib_dir)
    if root is not None:
        tbb_dirs += [root / "runtime" / "3rdparty" / "tbb" / "lib"]
    if ov_dir is not None and ov_dir not in tbb_dirs:
        tbb_dirs.append(ov_dir)
    return ov_dir, tbb_dirs


def _dependency_plan(lib_path: Path) -> Tuple[List[Path], List[Path]]:
    """The dependencies to preload, in order (libtbb, libopenvino, libopenvino_c, libopenvino_genai), and the
    folders they were looked for in."""
    ov_dir, tbb_dirs = dependency_dirs(lib_path)
    plan: List[Path] = []
    tbb = next((p for d in tbb_dirs for p in [_versioned(d, "libtbb.so")] if p), None)
    if tbb is not None:
        plan.append(tbb)
    if ov_dir is not None:
        for stem in ("libopenvino.so", "libopenvino_c.so"):
            p = _versioned(ov_dir, stem)
            if p is not None:
                plan.append(p)
    # The official C library links libopenvino_genai from its own folder.
    genai = _versioned(lib_path.parent, "libopenvino_genai.so")
    if genai is not None and genai.name != lib_path.name:
        plan.append(genai)
    return plan, tbb_dirs + ([ov_dir] if ov_dir is not None and ov_dir not in tbb_dirs else [])


def _choose_tokenizers(lib_path: Path, openvino: Optional[str]) -> Optional[str]:
    """The openvino_tokenizers extension the library will use (the variable's value if set, else beside the
    library, else the wheel's).

    Raises OSError when it was built for another libopenvino than ``openvino`` (the soname the library uses):
    loading it would map a second OpenVINO into the process.
    """
    env = os.environ.get(TOKENIZERS_ENV)
    if env:
        found: Optional[Path] = Path(env)
    else:
        found = _versioned(lib_path.parent, "libopenvino_tokenizers.so") or tokenizers_wheel_lib()
    if found is None:
        return None
    wants = None
    try:
        wants = next((n for n in _sharedlibs.read_elf(found).needed if n.startswith("libopenvino.so")), None)
    except _sharedlibs.NotLoadable:
        pass
    if openvino is not None and wants is not None and wants != openvino:
        if env:
            raise OSError(f"{TOKENIZERS_ENV}={env} is built for {wants}, this library uses {openvino}; unset it or "
                          f"point it at the openvino_tokenizers that matches")
        return None  # the wheel's extension does not match this library: let the library look beside itself
    return str(found)


def _dlclose(handle: int) -> None:
    """dlclose a ctypes handle: CPython's _ctypes has it, PyPy's does not (there: libc's own, through ctypes)."""
    import _ctypes

    close = getattr(_ctypes, "dlclose", None)
    if close is not None:
        try:
            close(handle)
        except OSError:
            pass
        return
    libc_dlclose = ctypes.CDLL(None).dlclose
    libc_dlclose.argtypes, libc_dlclose.restype = [ctypes.c_void_p], ctypes.c_int
    libc_dlclose(handle)  # (a failure leaves the library mapped, which the caller's mapped_libraries() reports)


def _unload(handles: List[Any], env_before: Optional[str], mapped_before: List[str]) -> List[str]:
    """Undo a failed candidate: restore the tokenizers variable, dlclose what it preloaded (last first).
    Returns what stays mapped anyway (glibc never unloads some libraries, libopenvino among them)."""
    if env_before is None:
        os.environ.pop(TOKENIZERS_ENV, None)
    else:
        os.environ[TOKENIZERS_ENV] = env_before
    for h in reversed(handles):
        _dlclose(h._handle)
    before = set(mapped_before)
    left = [p for p in _sharedlibs.mapped_libraries() if p not in before]
    _left_mapped.extend(p for p in left if p not in _left_mapped)
    return left


class _VersionConflict(OSError):
    """_open's refusal of a library that would map a second OpenVINO version (OpenVINOVersionConflictError)."""


def _not_loaded(text: str, exc: Optional[OSError]) -> errors.LibraryNotFoundError:
    """The error for a library that could not be loaded: typed as a version conflict when ``exc`` (the refusal that
    decides, if any) was one."""
    cls = errors.OpenVINOVersionConflictError if isinstance(exc, _VersionConflict) else errors.LibraryNotFoundError
    return cls(text)


def _check_openvino_conflict(closure: "_sharedlibs.Closure", path: Path) -> Optional[str]:
    """The text of a refusal when loading would map a second libopenvino of another version, else None."""
    brings = closure.openvino()
    if brings is None or brings[0] not in closure.new:
        return None
    for mapped in _sharedlibs.mapped_openvino():
        if _sharedlibs.openvino_soname(Path(mapped)) != brings[0]:
            text = (f"{path} needs OpenVINO {_sharedlibs.openvino_version_of_file(Path(brings[1]))} ({brings[1]}), "
                    f"but this process already has OpenVINO {_openvino_version_mapped(mapped)} mapped ({mapped}); "
                    f"two OpenVINO versions cannot share one process (their symbols would bind to each other): "
                    f"use a separate process for each library")
            _refusals.append(text)
            return text
    return None


def _openvino_version_mapped(libopenvino: str) -> str:
    """The version of a mapped libopenvino: ``ov_get_openvino_version`` of the libopenvino_c mapped beside it,
    else what its file name or soname says."""
    folder = os.path.dirname(libopenvino)
    for p in _sharedlibs.mapped_libraries():
        if os.path.dirname(p) == folder and os.path.basename(p).startswith("libopenvino_c.so"):
            v = _sharedlibs.runtime_version(p)
            if v:
                return v
    return _sharedlibs.openvino_version_of_file(Path(libopenvino))


def _versions(lib_path: Path, kind: str, lib: Any, ffi: Any, openvino_path: Optional[str],
              tokenizers: Optional[str]) -> Dict[str, str]:
    v: Dict[str, str] = {}
    if kind == "bundled":
        try:
            v["bundled"] = ffi.string(lib.ovgenai_c_bundled_version()).decode()
        except Exception:
            pass
    # the release the library's own versioned file name says (libopenvino_genai_c.so.2026.3.0.0), else its folders'
    # (an archive's name); a folder may name another release than the library in it
    real = lib_path.resolve()
    m = (re.fullmatch(r"libopenvino_genai_c\.so\.(\d{4}\.\d+\.\d+(?:\.\d+)?)", real.name)
         or re.search(r"(\d{4}\.\d+\.\d+(?:\.\d+)?)", str(real.parent)))
    if kind == "official" and m:
        v["archive"] = m.group(1)
    if openvino_path:
        v["openvino"] = _openvino_version_mapped(openvino_path)
        v["libopenvino"] = openvino_path
    wheel_tok = tokenizers_wheel_lib()
    if tokenizers and wheel_tok and os.path.realpath(tokenizers) == os.path.realpath(wheel_tok):
        try:
            from importlib.metadata import version

            v["openvino-tokenizers"] = version("openvino-tokenizers")
        except Exception:
            pass
    return v


def _open(source: str, path: Path) -> LoadedLibrary:
    """Check, preload and open one candidate. On any failure nothing it did stays: the tokenizers variable is
    restored and what it preloaded is closed (what glibc cannot unload is named in the error)."""
    if not path.exists():
        raise OSError("no such file")
    plan, looked_in = _dependency_plan(path)
    for p in plan + [path]:
        try:
            _sharedlibs.check_loadable(p)
        except _sharedlibs.NotLoadable as exc:
            raise OSError(f"{p}: {exc}") from None
    closure = _sharedlibs.resolve(plan + [path], looked_in)
    if closure.missing:
        raise OSError("; ".join(f"{name} (needed by {by}) not found" + (f" in {', '.join(where)}" if where else "")
                                for name, by, where in closure.missing))
    conflict = _check_openvino_conflict(closure, path)
    if conflict:
        raise _VersionConflict(conflict)
    brings = closure.openvino()
    tok = _choose_tokenizers(path, brings[0] if brings else None)
    ffi = _ffi.get_ffi()
    env_before = os.environ.get(TOKENIZERS_ENV)
    mapped_before = _sharedlibs.mapped_libraries()
    handles: List[Any] = []
    try:
        for p in plan:
            if _sharedlibs.read_elf(p).name in closure.reused:
                continue  # the same soname is mapped already: the dynamic linker uses that one
            handles.append(ctypes.CDLL(str(p), mode=ctypes.RTLD_GLOBAL))
        if tok is not None:
            os.environ[TOKENIZERS_ENV] = tok
        lib = ffi.dlopen(str(path))
        missing, present_optional = _symbols(lib)
        core = [n for n in CORE_FUNCTIONS if n in missing]
        if core:
            ffi.dlclose(lib)
            raise OSError(f"not a GenAI C library: it does not export {', '.join(core)}")
    except BaseException as exc:  # (a Ctrl-C half-way is undone too)
        left = _unload(handles, env_before, mapped_before)
        if not isinstance(exc, OSError):
            raise
        note = f" (could not be unloaded, stays mapped: {', '.join(left)})" if left else ""
        raise OSError(f"{exc}{note}") from None
    _preloaded.extend(handles)
    if "ovgenai_c_bundled_version" in present_optional:
        kind = "bundled"
    elif path.name.startswith("libopenvino_genai_c"):
        kind = "official"
    else:
        kind = "other"
    openvino_path = None
    if brings is not None:
        openvino_path = os.path.realpath(brings[1])
    openvino_c = next((p for p in _sharedlibs.mapped_libraries() if openvino_path
                       and os.path.dirname(p) == os.path.dirname(openvino_path)
                       and os.path.basename(p).startswith("libopenvino_c.so")), None)
    versions = _versions(path, kind, lib, ffi, openvino_path, tok)
    return LoadedLibrary(
        lib=lib, ffi=ffi, path=str(path), kind=kind, source=source, missing_symbols=tuple(missing),
        versions=versions, tokenizers_path=tok,
        openvino_path=openvino_path, openvino_version=versions.get("openvino"), openvino_c_path=openvino_c,
        extras=frozenset(present_optional),
    )


def _symbols(lib: Any) -> Tuple[List[str], set]:
    """(required functions the library lacks, optional functions it has: the bundled extras, the VLM and Whisper
    functions)."""
    missing = [name for name in _ffi.required_functions() if not _ffi.has_symbol(lib, name)]
    present_optional = {name for name in (*_ffi.optional_functions(), *_ffi.vlm_functions(), *_ffi.whisper_functions())
                        if _ffi.has_symbol(lib, name)}
    return missing, present_optional


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
        conflict: Optional[OSError] = None  # a candidate refused for needing another OpenVINO version
        for source, cand in candidates():
            try:
                loaded = _open(source, cand)
            except OSError as exc:
                why = _why_missing(source, cand) if not cand.exists() else str(exc)
                tried.append((f"{source}: {cand}", why))
                conflict = exc if isinstance(exc, _VersionConflict) else conflict
                if source in EXPLICIT_SOURCES:
                    # an explicit choice that fails is reported, never replaced by another library
                    choice = _describe_choice(source)
                    if source == "explicit argument":
                        _explicit = None  # a later load_library() without a path discovers as usual
                    raise _not_loaded(
                        f"the GenAI C library chosen by {choice} could not be loaded:\n"
                        f"  - {cand}: {why}\n"
                        f"Not falling back to other libraries because this choice is explicit; fix it or remove it "
                        f"to let ovgenai_c discover a library.", exc) from None
                continue
            loaded.tried = tried
            _by_path.setdefault(str(cand.resolve()), loaded)
            _loaded = loaded
            return loaded
        lines = "\n".join(f"  - {where}: {why}" for where, why in tried)
        raise _not_loaded(
            "no library implementing the OpenVINO GenAI C API could be loaded. Tried:\n" + lines +
            "\nSet OVGENAI_C_LIBRARY to libopenvino_genai_c.so, set OPENVINO_GENAI_DIR to an unpacked GenAI "
            "archive, run scripts/fetch_genai_archive.sh, or install ovgenai_c from source so that its bundled "
            "backend is built.", conflict)


def _why_missing(source: str, cand: Path) -> str:
    """Why a candidate path does not exist, in the words of its discovery step."""
    if source == "fetched archive":
        root = data_home() / "genai-archive" / "current"
        if not root.exists():
            return "not installed (scripts/fetch_genai_archive.sh installs the official archive there)"
    if source in ("OPENVINO_GENAI_DIR", "fetched archive"):
        root = data_home() / "genai-archive" / "current"
        if source == "OPENVINO_GENAI_DIR":
            root = Path(os.environ["OPENVINO_GENAI_DIR"])
        if not root.is_dir():
            return "no such folder"
        return (f"no {OFFICIAL_NAME} in {', '.join(str(d) for d in archive_lib_dirs(root))} "
                f"(it should be the archive's root, holding runtime/)")
    return "no such file"


def _describe_choice(source: str) -> str:
    if source == "explicit argument":
        return f"load_library({_explicit!r})"
    return f"{source}={os.environ.get(source, '')}"


def open_library(path: str) -> LoadedLibrary:
    """Open one specific library file (cached per path), independently of the process default.

    Useful to run the same code against several implementations of the ABI in one process — all on one
    OpenVINO: a library that would map a second libopenvino version is refused (OpenVINOVersionConflictError).
    """
    key = str(Path(path).resolve())
    with _lock:
        if key in _by_path:
            return _by_path[key]
        try:
            loaded = _open("explicit library", Path(path))
        except OSError as exc:
            raise _not_loaded(f"cannot load the GenAI C library {path}: {exc}", exc) from None
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
    """Path, kind (official / bundled / other), versions, missing symbols and discovery details.

    ``openvino_version`` and ``libopenvino_path`` are read from the libopenvino actually mapped for the library;
    ``libopenvino_mapped`` lists every libopenvino in the process (more than one is a mix of versions) and
    ``refused`` the loads refused because they would have brought a second OpenVINO version. ``vlm_functions``:
    how many of vlm_pipeline.h's 13 (optional) functions the library exports; ``whisper_functions``: how many of
    the 57 of whisper_generation_config.h and whisper_pipeline.h (optional too).
    """
    lib = get_library()
    return {
        "path": lib.path,
        "kind": lib.kind,
        "source": lib.source,
        "versions": dict(lib.versions),
        "openvino_version": lib.openvino_version,
        "libopenvino_path": lib.openvino_path,
        "libopenvino_mapped": [f"{p} ({_openvino_version_mapped(p)})" for p in _sharedlibs.mapped_openvino()],
        "missing_symbols": list(lib.missing_symbols),
        "declared_functions": len(_ffi.required_functions()),
        "vlm_functions": sum(lib.has_extra(n) for n in _ffi.vlm_functions()),  # of 13 (optional: VLMPipeline)
        "whisper_functions": sum(lib.has_extra(n) for n in _ffi.whisper_functions()),  # of 57 (WhisperPipeline)
        "tokenizers_path": lib.tokenizers_path,
        "tried_before": [f"{w}: {why}" for w, why in lib.tried],
        "left_mapped_by_failed_candidates": list(_left_mapped),
        "refused": list(_refusals),
    }
