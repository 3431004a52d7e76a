"""A private model folder for the pipeline forms the GenAI C API cannot take directly.

``ov_genai_llm_pipeline_create`` loads a model *folder*: the model IR and the tokenizer IR side by side. openvino_genai
also builds a pipeline from a :class:`~ovgenai_c.Tokenizer` object (``LLMPipeline(models_path, tokenizer, device)``)
and from a model held in memory (``LLMPipeline(model_xml, weights, tokenizer, device)``, e.g. decrypted by the
application). For those the binding assembles a folder: symbolic links to files that are on disk, bytes that are only
in memory written out (into a memory-backed folder, /dev/shm or $XDG_RUNTIME_DIR, where one has room; elsewhere
with a warning, since they then touch a disk), creates the pipeline from it and removes it before the constructor
returns. The folder is private (mode 0700) and ``OVGENAI_C_STAGING_DIR`` chooses where it goes.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Iterable, List, Optional, Tuple

from . import errors
from .ir_folder import DETOKENIZER_XML, MODEL_XML, TOKENIZER_XML

# What a tokenizer folder contributes (GenAI's Tokenizer reads its IR and these JSON / template files); the rest
# of a model folder (the model IR, config.json, generation_config.json, ...) belongs to the model.
TOKENIZER_FILES = (TOKENIZER_XML, "openvino_tokenizer.bin", DETOKENIZER_XML, "openvino_detokenizer.bin",
                   "tokenizer_config.json", "special_tokens_map.json", "processor_config.json",
                   "chat_template.json", "chat_template.jinja")
MEMORY_BACKED_ROOTS = ("/dev/shm",)  # then $XDG_RUNTIME_DIR (a tmpfs where systemd runs)
_HEADROOM = 16 << 20


class StagingWarning(UserWarning):
    """Model bytes held in memory were written to a folder on disk (no memory-backed folder had room)."""


def weights_bytes(weights: Any, what: str) -> memoryview:
    """The bytes of an IR's weights given as bytes, a uint8 numpy array or an ``openvino.Tensor`` (no copy)."""
    if isinstance(weights, (bytes, bytearray, memoryview)):
        return memoryview(weights).cast("B")
    import numpy as np

    data = weights.data if hasattr(weights, "data") and not isinstance(weights, np.ndarray) else weights
    if not isinstance(data, np.ndarray):
        raise TypeError(f"{what} must be a uint8 openvino.Tensor, numpy array or bytes, not {type(weights).__name__}")
    return memoryview(np.ascontiguousarray(data).reshape(-1).view(np.uint8))


def model_xml_bytes(model: Any) -> bytes:
    """The model IR's XML text (str, as openvino_genai takes it, or bytes)."""
    if isinstance(model, bytes):
        return model
    if not isinstance(model, str):
        raise TypeError(f"model must be the IR's XML text (str), not {type(model).__name__}")
    if "\0" in model:
        raise errors.InvalidParameterError(f"model (the IR's XML text) contains a NUL character at index "
                                           f"{model.index(chr(0))}")
    try:
        return model.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise errors.InvalidParameterError(f"model (the IR's XML text) is not valid Unicode text: {exc.reason} at "
                                           f"index {exc.start}") from None


def check_model_ir(xml: bytes, weights_size: int) -> None:
    """What can be checked of an in-memory model IR before the C API reads it (its errors name a folder the user
    never saw): well-formed XML, an IR's layout, every constant inside the weights."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise errors.NetworkNotReadError(f"model (the IR's XML text) is not well-formed XML: {exc}") from None
    layers = root.find("layers")
    if root.tag != "net" or layers is None or root.find("edges") is None:
        raise errors.NetworkNotReadError(
            f"model is not an OpenVINO IR's XML text (expected <net> with <layers> and <edges>, got <{root.tag}>)")
    for layer in layers.iter("layer"):
        if layer.get("type") != "Const":
            continue
        data = layer.find("data")
        try:
            offset, size = int(data.get("offset", "0")), int(data.get("size", "0"))  # type: ignore[union-attr]
        except (AttributeError, ValueError):
            continue  # left to OpenVINO's reader
        if offset < 0 or size < 0 or offset + size > weights_size:
            raise errors.NetworkNotReadError(
                f"the weights hold {weights_size} bytes, but constant {layer.get('name')!r} of the model reads bytes "
                f"{offset}..{offset + size}: are these the weights of this model?")


def _memory_backed_root(nbytes: int) -> Optional[str]:
    roots: List[str] = list(MEMORY_BACKED_ROOTS)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        roots.append(runtime)
    for root in roots:
        try:
            st = os.statvfs(root)
        except OSError:
            continue
        if os.access(root, os.W_OK | os.X_OK) and st.f_bavail * st.f_frsize >= nbytes + _HEADROOM:
            return root
    return None


class StagedFolder:
    """A private folder that lives from its creation until :meth:`remove` (also a context manager)."""

    def __init__(self, written_bytes: int = 0) -> None:
        chosen = os.environ.get("OVGENAI_C_STAGING_DIR") or None
        root = chosen or (_memory_backed_root(written_bytes) if written_bytes else None)
        if written_bytes and root is None:
            root = tempfile.gettempdir()
            warnings.warn(f"the model held in memory ({written_bytes / 2**20:.0f} MiB) is written to a private "
                          f"folder under {root} for the GenAI C API (which loads a folder) and removed once the "
                          "pipeline is made: no memory-backed folder (/dev/shm, $XDG_RUNTIME_DIR) has room; "
                          "OVGENAI_C_STAGING_DIR chooses the folder", StagingWarning, stacklevel=4)
        self.path = Path(tempfile.mkdtemp(prefix="ovgenai_c-model-", dir=root))

    def link(self, source: Path, name: Optional[str] = None) -> None:
        (self.path / (name or source.name)).symlink_to(source.resolve())

    def write(self, name: str, data: Any) -> None:
        fd = os.open(self.path / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def renamed(self, exc: errors.GenAIError, what: str) -> errors.GenAIError:
        """``exc`` with this folder (which the user never named) replaced by ``what`` (e.g. "the model given in
        memory") in its message."""
        path = str(self.path)
        if path not in str(exc):
            return exc
        named = f"{what} (staged in a private folder, now removed)"
        text = str(exc).replace(f"the model folder {path}", named).replace(path, named)
        try:
            return type(exc)(text, exc.status, exc.status_name, exc.function)
        except TypeError:  # a class with a constructor of its own: keep the original
            return exc

    def __enter__(self) -> "StagedFolder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


def _tokenizer_files(tokenizer: Any) -> Tuple[Optional[Path], Iterable[Tuple[str, bytes]]]:
    """Where a Tokenizer's files are (its folder), or the IR it was made from in memory."""
    folder = getattr(tokenizer, "path", None)
    if folder is not None:
        return Path(folder), ()
    return None, tokenizer.memory_ir_files()


def _add_tokenizer(staged: StagedFolder, tokenizer: Any) -> None:
    folder, memory = _tokenizer_files(tokenizer)
    if folder is not None:
        for name in TOKENIZER_FILES:
            if (folder / name).is_file():
                staged.link(folder / name)
    for name, data in memory:
        staged.write(name, data)


def _memory_size(tokenizer: Any) -> int:
    folder, memory = _tokenizer_files(tokenizer)
    return 0 if folder is not None else sum(len(data) for _, data in memory)


def stage_for_tokenizer(models_path: str, tokenizer: Any) -> Optional[StagedFolder]:
    """What a pipeline made with ``tokenizer`` loads: None when it is the model folder's own (the folder itself),
    else :func:`stage_with_tokenizer`'s folder."""
    folder = getattr(tokenizer, "path", None)
    if folder is not None and os.path.realpath(folder) == os.path.realpath(models_path):
        return None
    return stage_with_tokenizer(models_path, tokenizer)


def stage_with_tokenizer(models_path: str, tokenizer: Any) -> StagedFolder:
    """A folder with the model folder's files (links) and ``tokenizer``'s in place of the folder's own."""
    staged = StagedFolder(_memory_size(tokenizer))
    try:
        for entry in sorted(Path(models_path).iterdir()):
            if entry.is_file() and entry.name not in TOKENIZER_FILES:
                staged.link(entry)
        _add_tokenizer(staged, tokenizer)
    except BaseException:
        staged.remove()
        raise
    return staged


def stage_memory_model(model: Any, weights: Any, tokenizer: Any) -> StagedFolder:
    """A folder with the model IR given in memory (XML text and weights) and ``tokenizer``'s files."""
    xml = model_xml_bytes(model)
    data = weights_bytes(weights, "weights")
    check_model_ir(xml, data.nbytes)
    staged = StagedFolder(len(xml) + data.nbytes + _memory_size(tokenizer))
    try:
        staged.write(MODEL_XML, xml)
        staged.write("openvino_model.bin", data)
        _add_tokenizer(staged, tokenizer)
    except BaseException:
        staged.remove()
        raise
    return staged


__all__ = ["StagedFolder", "StagingWarning", "TOKENIZER_FILES", "check_model_ir", "stage_for_tokenizer",
           "stage_memory_model", "stage_with_tokenizer"]
