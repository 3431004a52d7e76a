"""The cffi FFI object, built once from the C declarations in ``cdefs/``.

cdefs are read in file-name order (the upstream include order). Files whose name starts with ``9`` are
ovgenai_c's own optional extras (their functions are named ``ovgenai_c_*``), not upstream headers, and the binding's
relay helper (``ovgenai_relay_*``, looked up only in its own small library: ``_relay``).
``cdefs/openvino/`` holds the subset of OpenVINO's own C API (libopenvino_c) that ovgenai_c uses; its functions
(``ov_*`` but not ``ov_genai_*``) are never looked up in the GenAI library. Nothing here loads a shared library.

Parsing the declarations (pycparser) is the slow part of a first use. cffi's out-of-line ABI mode
(``set_source(name, None)``) turns the parsed declarations into a small Python module that builds the same FFI
without parsing: it is written once per set of declarations (named by their digest) into the cache folder
(``$OVGENAI_C_CACHE``, else ``$XDG_CACHE_HOME/ovgenai_c``, else ``~/.cache/ovgenai_c``) under ``ffi/``, and loaded
from there afterwards. Where the folder cannot be written, the declarations are parsed in each process.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple

_lock = threading.Lock()
_ffi: Any = None
_functions: Optional[Tuple[Tuple[str, ...], ...]] = None

# cdefs/openvino/ in upstream include order (a header is parsed after the ones it depends on)
_OPENVINO_ORDER = ("ov_common.h", "ov_shape.h", "ov_tensor.h", "ov_model.h", "ov_infer_request.h",
                   "ov_compiled_model.h", "ov_core.h")
GENAI_PREFIX = "ov_genai_"  # upstream GenAI C functions
EXTRA_PREFIX = "ovgenai_c_"  # the bundled backend's optional extras (cdefs/9*)
VLM_PREFIX = "ov_genai_vlm_"  # cdefs/06_vlm_pipeline.h: upstream, but optional (a library without VLM still loads)
WHISPER_PREFIX = "ov_genai_whisper_"  # cdefs/07 and 08 (Whisper): upstream, optional as the VLM ones
RELAY_PREFIX = "ovgenai_relay_"  # cdefs/94: the binding's own helper library (libovgenai_c_relay), never GenAI's
_MODULE_PREFIX = "ovgenai_c_ffi_"
_MARKER = "# ovgenai_c precompiled FFI "


def cdefs_dir() -> Path:
    """Where the declarations live: inside the installed package, else the source tree's top-level cdefs/."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "cdefs", here.parent / "cdefs"):
        if candidate.is_dir() and any(candidate.glob("*.h")):
            return candidate
    raise RuntimeError(f"ovgenai_c: C declarations not found (looked in {here / 'cdefs'} and {here.parent / 'cdefs'})")


def _declaration_files() -> List[Path]:
    root = cdefs_dir()
    ov_files = sorted((root / "openvino").glob("*.h"), key=lambda p: (
        _OPENVINO_ORDER.index(p.name) if p.name in _OPENVINO_ORDER else len(_OPENVINO_ORDER), p.name))
    return sorted(root.glob("*.h")) + ov_files


def _digest(texts: List[str]) -> str:
    import _cffi_backend  # its version, without importing cffi's parser
    import hashlib  # (here, not at import: on PyPy hashlib is cffi's, which `import ovgenai_c` must not load)

    h = hashlib.sha256(f"cffi {_cffi_backend.__version__}\n".encode())
    for text in texts:
        h.update(text.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:24]


def precompiled_dir() -> Path:
    """The folder of the precompiled FFI modules (the ``ffi/`` folder of ovgenai_c's cache)."""
    env = os.environ.get("OVGENAI_C_CACHE")
    if env:
        root = Path(env).expanduser()
    elif os.environ.get("XDG_CACHE_HOME"):
        root = Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "ovgenai_c"
    else:
        root = Path.home() / ".cache" / "ovgenai_c"
    return root / "ffi"


def _load_precompiled(path: Path, marker: str) -> Any:
    """The FFI a precompiled module builds, or None when there is none (or it is not ours for these cdefs)."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            if f.readline() != marker:
                return None
    except OSError:
        return None
    try:  # imported from its file, so Python caches its bytecode beside it
        spec = importlib.util.spec_from_file_location(path.stem, str(path))
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception:
        return None
    return getattr(module, "ffi", None)


def _write_precompiled(builder: Any, path: Path, marker: str) -> bool:
    """Write the out-of-line module for ``builder``'s declarations (atomically: concurrent writers are fine)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        builder.set_source(path.stem, None)
        fd, tmp = tempfile.mkstemp(prefix=path.stem, suffix=".tmp", dir=str(path.parent))
        os.close(fd)
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # cffi says "generating <file>"
                builder.emit_python_code(tmp)
            body = Path(tmp).read_text(encoding="utf-8")
            Path(tmp).write_text(marker + body, encoding="utf-8")
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return True
    except (OSError, ValueError):
        return False


def _build() -> Any:
    import cffi

    texts = [p.read_text(encoding="utf-8") for p in _declaration_files()]
    digest = _digest(texts)
    marker = f"{_MARKER}{digest}\n"
    path = precompiled_dir() / f"{_MODULE_PREFIX}{digest}.py"
    ffi = _load_precompiled(path, marker)
    if ffi is not None:
        return ffi
    builder = cffi.FFI()
    for text in texts:
        builder.cdef(text)
    if _write_precompiled(builder, path, marker):
        ffi = _load_precompiled(path, marker)
        if ffi is not None:
            return ffi
    return builder  # in-line ABI mode: the same declarations, parsed in this process


# the FFI methods that parse a C type given as a string in their first argument
_PARSING_METHODS = ("new", "cast", "typeof", "sizeof", "alignof", "offsetof", "getctype", "from_buffer", "callback")


class CallTypes:
    """The C types every generate call makes cdata of, resolved once per FFI, and ``new``: the wrapped FFI's own,
    which given one of these types does no type work, so it needs no serialising (the wrapper's checks cost a warm
    PyPy generate about 1.3 µs of its ~11)."""

    __slots__ = ("char_array", "size_ptr", "int_ptr", "decoded_results_ptr", "new")
    CDECLS = ("char[]", "size_t*", "int*", "ov_genai_decoded_results**")

    def __init__(self, ffi: "SerialisedTypesFFI") -> None:
        for name, cdecl in zip(self.__slots__, self.CDECLS):
            setattr(self, name, ffi.typeof(cdecl))
        self.new = ffi.wrapped.new


class SerialisedTypesFFI:
    """An FFI whose C type work happens one thread at a time. cffi makes a type on the first use of its string (and
    a function's types on its first access) and caches it; two threads doing that at once for one FFI broke on every
    interpreter tried: PyPy's backend does it with the interpreter lock released (the threads got each other's types,
    and kept them), and CPython's gives the lock up whenever a garbage collection inside it runs Python code (a
    finalizer), after which the other thread realized the same declared struct too and cffi 2.0's check of that
    aborted the process. So the declared types (every typedef and struct) are all made when the FFI is built, the
    first use of each string runs under one lock, and :meth:`dlopen` resolves every declared name of the library
    under it; what follows finds it all made. Everything else is the wrapped FFI's own."""

    def __init__(self, ffi: Any) -> None:
        self.wrapped = ffi
        self._lock = threading.RLock()  # (re-entered when a collection runs a finalizer that allocates)
        self._known: set = set()
        for name in dir(ffi):
            if not name.startswith("_") and name not in _PARSING_METHODS and name not in ("errno", "dlopen"):
                setattr(self, name, getattr(ffi, name))
        for name in _PARSING_METHODS:
            setattr(self, name, self._serialised(getattr(ffi, name)))
        self._make_declared_types()
        self.call_types = CallTypes(self)

    def _make_declared_types(self) -> None:
        """Make every declared typedef and struct now, on the building thread (a struct's fields too, where it has
        any): a later string only combines them (pointers, arrays)."""
        typedefs, structs, unions = self.wrapped.list_types()
        for cdecl in list(typedefs) + [f"struct {n}" for n in structs] + [f"union {n}" for n in unions]:
            ctype = self.typeof(cdecl)
            if ctype.kind in ("struct", "union"):
                try:
                    self.wrapped.sizeof(ctype)  # (lays the fields out)
                except Exception:  # opaque: no fields to make
                    pass

    def _serialised(self, method: Callable[..., Any]) -> Callable[..., Any]:
        known, lock = self._known, self._lock

        def call(*args: Any, **kwargs: Any) -> Any:
            cdecl = args[0] if args else kwargs.get("cdecl")
            if type(cdecl) is not str or cdecl in known:
                return method(*args, **kwargs)
            with lock:
                out = method(*args, **kwargs)
                known.add(cdecl)  # (only once it parsed: a string that failed fails again, under the lock)
            return out

        call.__name__ = call.__qualname__ = method.__name__
        call.__doc__ = method.__doc__
        return call

    def dlopen(self, name: Any, *args: Any) -> Any:
        with self._lock:
            lib = self.wrapped.dlopen(name, *args)
            if name is not None:  # (None: the process itself, opened only to list the declarations)
                for symbol in dir(lib):
                    try:
                        getattr(lib, symbol)
                    except Exception:  # not exported by this library (or not makeable now: made at first use)
                        pass
        return lib

    @property
    def errno(self) -> int:
        return self.wrapped.errno

    @errno.setter
    def errno(self, value: int) -> None:
        self.wrapped.errno = value


def new_ffi() -> Any:
    """A new FFI with every declaration and its declared types made, its type work serialised from here on."""
    return SerialisedTypesFFI(_build())


def get_ffi() -> Any:
    """Return the shared FFI with every declaration (thread-safe, built once)."""
    global _ffi
    if _ffi is not None:
        return _ffi
    with _lock:
        if _ffi is None:
            _ffi = new_ffi()
    return _ffi


def _declared_functions() -> Tuple[Tuple[str, ...], ...]:
    """(required GenAI functions, bundled extras, OpenVINO functions, VLM functions, Whisper functions), from the
    FFI's own list of declared names."""
    global _functions
    if _functions is None:
        ffi = get_ffi()
        typedefs = ffi.list_types()[0]
        constants = set()
        for name in typedefs:
            tp = ffi.typeof(name)
            if tp.kind == "enum":
                constants.update(tp.relements)
        lib = ffi.dlopen(None)  # lists the declarations; nothing is looked up
        names = sorted(n for n in dir(lib) if n not in constants)
        genai = tuple(n for n in names if n.startswith(GENAI_PREFIX) and not n.startswith((VLM_PREFIX, WHISPER_PREFIX)))
        extras = tuple(n for n in names if n.startswith(EXTRA_PREFIX))
        openvino = tuple(n for n in names if not n.startswith((GENAI_PREFIX, EXTRA_PREFIX, RELAY_PREFIX)))
        vlm = tuple(n for n in names if n.startswith(VLM_PREFIX))
        whisper = tuple(n for n in names if n.startswith(WHISPER_PREFIX))
        _functions = (genai, extras, openvino, vlm, whisper)
    return _functions


def required_functions() -> Tuple[str, ...]:
    """Every upstream C function the binding needs (83: the LLM side of GenAI 2026.x; the VLM ones are optional)."""
    return _declared_functions()[0]


def optional_functions() -> Tuple[str, ...]:
    """Extras that only the bundled backend exports."""
    return _declared_functions()[1]


def vlm_functions() -> Tuple[str, ...]:
    """The 13 functions of vlm_pipeline.h (upstream, but optional: a library without them loads, and VLMPipeline
    says which are missing)."""
    return _declared_functions()[3]


def whisper_functions() -> Tuple[str, ...]:
    """The 57 functions of whisper_generation_config.h and whisper_pipeline.h (upstream, but optional: a library
    without them loads, and WhisperPipeline says which are missing)."""
    return _declared_functions()[4]


def openvino_functions() -> Tuple[str, ...]:
    """The OpenVINO C API functions declared in ``cdefs/openvino/`` (looked up in libopenvino_c, not GenAI)."""
    return _declared_functions()[2]


def missing_symbol_errors() -> Tuple[type, ...]:
    """What looking up a symbol that the library lacks raises: AttributeError in cffi's in-line mode, ``ffi.error``
    in its out-of-line mode."""
    import _cffi_backend  # (loaded by then: only called once a library is open)

    return (AttributeError, NotImplementedError, _cffi_backend.FFI.error)


def has_symbol(lib: Any, name: str) -> bool:
    """Whether the opened library ``lib`` exports the declared ``name``."""
    try:
        getattr(lib, name)
        return True
    except missing_symbol_errors():
        return False


def cstr(ffi: Any, value: Optional[str]) -> Any:
    """A NUL-terminated UTF-8 ``char[]`` for ``value`` (NULL for None); the caller keeps it alive."""
    if value is None:
        return ffi.NULL
    return ffi.new("char[]", value.encode("utf-8"))
