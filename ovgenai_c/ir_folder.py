"""What an OpenVINO IR LLM folder is — the one definition the pipeline, the default model, the provider's
catalog and the command line share: the stateful model and the tokenizer / detokenizer IR, each an ``.xml``
with its ``.bin`` weights, side by side in one folder (what ``optimum-cli export openvino`` and
``openvino_genai.LLMPipeline(gguf, enable_save_ov_model=True)`` write)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import List, Union

MODEL_XML = "openvino_model.xml"
TOKENIZER_XML = "openvino_tokenizer.xml"
DETOKENIZER_XML = "openvino_detokenizer.xml"
IR_FILES = (MODEL_XML, "openvino_model.bin", TOKENIZER_XML, "openvino_tokenizer.bin",
            DETOKENIZER_XML, "openvino_detokenizer.bin")
DESCRIPTION = "an OpenVINO IR LLM folder needs the stateful model and the tokenizer/detokenizer IR"


def missing_ir_files(folder: Union[str, os.PathLike]) -> List[str]:
    """The files of :data:`IR_FILES` that ``folder`` lacks (all of them when it is not a folder)."""
    p = Path(folder)
    return [name for name in IR_FILES if not (p / name).is_file()]


def is_ir_folder(folder: Union[str, os.PathLike]) -> bool:
    """True when ``folder`` is a folder holding every file of :data:`IR_FILES`."""
    return Path(folder).is_dir() and not missing_ir_files(folder)


__all__ = ["MODEL_XML", "TOKENIZER_XML", "DETOKENIZER_XML", "IR_FILES", "DESCRIPTION", "missing_ir_files",
           "is_ir_folder"]
