"""GGUF -> OpenVINO IR with the bundled backend: the model and tokenizer IR it builds from a GGUF file to run it,
which is what OpenVINO GenAI writes with ``enable_save_ov_model`` (same graphs, weights compressed to f16) — no
``openvino_genai`` needed, nothing compiled.

    python -m ovgenai_c.gguf_ir MODEL.gguf OUT_DIR [--parts all|model|tokenizers]

Architectures llama, qwen2 and qwen3; tensor types F16 (F32/BF16 for norms, embeddings and the output head), Q4_0,
Q4_1, Q8_0, Q4_K and Q6_K — what GenAI's GGUF reader takes.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence, Union

from . import _capi, _loader, errors
from ._capi import bundled

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

__all__ = ["convert_gguf", "gguf_tokenizer", "bundled_library", "main"]

PathLike = Union[str, "os.PathLike[str]"]


def bundled_library() -> _loader.LoadedLibrary:
    """The bundled backend: the process's library when that is it, else opened beside it (refused when that would
    map a second OpenVINO version: convert in a child process then, as ``python -m ovgenai_c.gguf_ir``)."""
    if _loader.is_loaded() and _loader.get_library().has_extra(bundled.CONVERT_GGUF):
        return _loader.get_library()
    for candidate in _loader.bundled_candidates():
        if candidate.is_file():
            return _loader.open_library(str(candidate))
    raise errors.LibraryNotFoundError(
        "the bundled backend (" + _loader.BUNDLED_NAME + ") is not installed with ovgenai_c; it converts GGUF files "
        "(tried: " + ", ".join(str(c) for c in _loader.bundled_candidates()) + ")")


def convert_gguf(gguf: PathLike, out_dir: PathLike, parts: str = "all",
                 library: Optional[_loader.LoadedLibrary] = None) -> Path:
    """Write the OpenVINO IR of ``gguf`` into ``out_dir`` (made if missing) and return that folder.

    ``parts``: "all" (openvino_model, openvino_tokenizer and openvino_detokenizer .xml/.bin), "model" or
    "tokenizers". ``library``: a loaded library with the bundled extras (default: :func:`bundled_library`).
    Raises :class:`~ovgenai_c.errors.ModelNotFoundError` for a missing file,
    :class:`~ovgenai_c.errors.InvalidParameterError` for bad ``parts`` or an output folder that cannot be made, and
    the library's typed error, with its text, for a file it cannot read (not a GGUF, an unsupported architecture or
    tensor type, ...).
    """
    if parts not in bundled.GGUF_PARTS:
        raise errors.InvalidParameterError(f"parts must be one of {', '.join(bundled.GGUF_PARTS)}, not {parts!r}")
    src = Path(os.fspath(gguf)).expanduser()
    if not src.is_file():
        raise errors.ModelNotFoundError(f"GGUF file not found: {src}")
    out = Path(os.fspath(out_dir)).expanduser()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # (a file of that name, a read-only place, ...)
        raise errors.InvalidParameterError(f"cannot make the output folder {out}: {exc.strerror or exc}") from None
    lib = library if library is not None else bundled_library()
    if not lib.has_extra(bundled.CONVERT_GGUF):
        raise errors.NotSupportedError(
            f"{lib.path} cannot convert GGUF files ({bundled.CONVERT_GGUF} is a bundled-backend extra)")
    bundled.convert_gguf(_capi.bind(lib), str(src), str(out), parts)
    return out


def gguf_tokenizer(gguf: PathLike, library: Optional[_loader.LoadedLibrary] = None) -> "Tokenizer":
    """A :class:`~ovgenai_c.Tokenizer` for the tokenizer a GGUF file carries: its IR written to a private temporary
    folder, which goes with the Tokenizer."""
    from .tokenizer import Tokenizer

    folder = tempfile.mkdtemp(prefix="ovgenai_c-gguf-tokenizer-")
    try:
        convert_gguf(gguf, folder, "tokenizers", library)
        tok = Tokenizer(folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    weakref.finalize(tok, shutil.rmtree, folder, True)
    return tok


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ovgenai_c.gguf_ir", description=__doc__.split("\n\n")[0])
    ap.add_argument("gguf")
    ap.add_argument("out_dir")
    ap.add_argument("--parts", choices=sorted(bundled.GGUF_PARTS), default="all")
    args = ap.parse_args(argv)
    try:
        out = convert_gguf(args.gguf, args.out_dir, args.parts)
    except errors.GenAIError as exc:
        print(f"ovgenai_c.gguf_ir: {exc}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
