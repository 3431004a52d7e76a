"""A tokenizer IR that crashes an official GenAI library of an older release, refused before C is called.

GenAI's tokenizer setup rewrites the tokenizer IR to make its padding and truncation stateful
(``MakePaddingSatateful``, run by every pipeline and Tokenizer on ``openvino_tokenizer.xml``). Up to release 2026.3
that pass, when the main-token input of ``CombineSegments`` comes from a ``Truncate`` node, takes Truncate's
max-length input as a ``Constant`` without checking: a NULL dereference — the **process dies** with SIGSEGV, no
error status — when that input is anything else. openvino_tokenizers 2026.4 writes exactly that: tokenizers with
a post-processor template (Whisper's ``<|startoftranscript|>`` ... ``<|endoftext|>``, BERT's ``[CLS]``/``[SEP]``)
get a Truncate whose max length is ``Select(ReadValue(truncation), ...)`` (stateful truncation made by the
converter). GenAI 2026.4 checks for it (upstream openvino.genai dd626e8e, "modify transformation to allow make
truncation false").

Found by running ovgenai_c's WhisperPipeline on a GenAI 2026.3.0.0 C library with the whisper-tiny.en IR this
package converts (openvino_tokenizers 2026.4.1): ``ov_genai_whisper_pipeline_create`` and openvino_genai 2026.3's
own pybind WhisperPipeline both die in ``MakePaddingSatateful::run_on_model``. The same folder with the tokenizer
re-converted by openvino_tokenizers 2026.3 (a Constant max length) loads and transcribes.

:func:`crash_reason` tells whether a folder's tokenizer IR has that shape and the library is of a release that
crashes on it; the pipelines (LLM, VLM, Whisper) raise :class:`~ovgenai_c.NotSupportedError` with the fix instead
of letting C take the process down (:func:`refuse_crashing_tokenizer`). Pure standard library (an XML parse of the
small tokenizer .xml).
"""
from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

FIXED_IN = (2026, 4)  # the first GenAI release whose tokenizer setup checks the Truncate's max-length input
TOKENIZER_XML = "openvino_tokenizer.xml"


def _release(version: Optional[str]) -> Optional[Tuple[int, int]]:
    m = re.match(r"\s*(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def library_release(lib: object) -> Optional[Tuple[int, int]]:
    """(year, minor) of an official GenAI library: its versioned file name / archive folder, else the OpenVINO it
    runs on (GenAI and OpenVINO are released in step); None when unknown."""
    versions: Dict[str, str] = getattr(lib, "versions", None) or {}
    return _release(versions.get("archive")) or _release(getattr(lib, "openvino_version", None))


def unchecked_truncates(tokenizer_xml: Union[str, os.PathLike]) -> List[str]:
    """The ``Truncate`` layers of a tokenizer IR whose max-length input (input ``3 * m_num_inputs``) is not a
    ``Const``: what GenAI <= 2026.3 dereferences as a Constant. Empty when there is none (or the file cannot be
    parsed: then GenAI reports the problem itself)."""
    try:
        root = ET.parse(os.fspath(tokenizer_xml)).getroot()
    except (OSError, ET.ParseError):
        return []
    layers = root.find("layers")
    edges = root.find("edges")
    if layers is None or edges is None:
        return []
    kinds = {layer.get("id"): layer.get("type") for layer in layers}
    source = {(e.get("to-layer"), e.get("to-port")): e.get("from-layer") for e in edges}
    found = []
    for layer in layers:
        if layer.get("type") != "Truncate":
            continue
        data = layer.find("data")
        try:
            n = int(data.get("m_num_inputs", "1")) if data is not None else 1
        except ValueError:
            n = 1
        ports = [p.get("id") for p in (layer.find("input") if layer.find("input") is not None else [])]
        if len(ports) <= 3 * n:
            continue
        producer = source.get((layer.get("id"), ports[3 * n]))
        if producer is not None and kinds.get(producer) != "Const":
            found.append(f"{layer.get('name')} (max length from {kinds.get(producer)})")
    return found


def converter_version(tokenizer_xml: Union[str, os.PathLike]) -> Optional[str]:
    """The openvino_tokenizers version recorded in a tokenizer IR's rt_info, if any."""
    try:
        with open(tokenizer_xml, "r", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r'<openvino_tokenizers_version\s+value="([^"]*)"', text)
    return m.group(1) if m else None


def crash_reason(folder: Union[str, os.PathLike], lib: object) -> Optional[str]:
    """Why creating a pipeline on ``folder`` would crash ``lib`` (None: it would not, as far as known).

    Only official libraries of a known release older than :data:`FIXED_IN` are concerned (the bundled backend
    reads tokenizer IR with the OpenVINO it ships; a library of unknown release is not second-guessed)."""
    if getattr(lib, "kind", None) != "official":
        return None
    release = library_release(lib)
    if release is None or release >= FIXED_IN:
        return None
    xml = Path(folder) / TOKENIZER_XML
    if not xml.is_file():
        return None
    bad = unchecked_truncates(xml)
    if not bad:
        return None
    made_by = converter_version(xml)
    return (f"{xml} cannot be loaded by GenAI {release[0]}.{release[1]} ({getattr(lib, 'path', '?')}): its Truncate "
            f"node {bad[0]} takes its max length from a non-constant input (stateful truncation, as "
            f"openvino_tokenizers >= 2026.4 writes it{'; this one was made by ' + made_by if made_by else ''}), and "
            "GenAI <= 2026.3's tokenizer setup (MakePaddingSatateful) dereferences that input as a Constant and "
            "crashes the process (SIGSEGV). Re-convert the tokenizer with the openvino_tokenizers of the library's "
            "release (convert_tokenizer(..., with_detokenizer=True) of openvino_tokenizers "
            f"{release[0]}.{release[1]}), or use a GenAI library >= {FIXED_IN[0]}.{FIXED_IN[1]}")


def refuse_crashing_tokenizer(folder: Union[str, os.PathLike], lib: object) -> None:
    """Raise :class:`~ovgenai_c.NotSupportedError` when :func:`crash_reason` finds one."""
    why = crash_reason(folder, lib)
    if why is not None:
        from .errors import NotSupportedError

        raise NotSupportedError(why)


__all__ = ["FIXED_IN", "refuse_crashing_tokenizer", "crash_reason", "converter_version", "library_release",
           "unchecked_truncates"]
