"""Helpers for the provider tests: the ABI double's controls and model folders it accepts."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, Optional

from ovgenai_c.pipeline import IR_FILES


CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
CHATML_TOOLS = ("{% if tools %}{{'<|im_start|>system\\n# Tools\\n<tools>'}}{% for t in tools %}{{ t | tojson }}"
                "{% endfor %}{{'</tools>\\nReturn <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call>"
                "<|im_end|>\\n'}}{% endif %}" + CHATML)
CHATML_THINK = CHATML + "{% if enable_thinking is defined and not enable_thinking %}<think>\\n\\n</think>{% endif %}"


# The ABI double and its controls: the helper shared by every suite that drives the double.
from abi_double.controls import Double  # noqa: E402

Controls = Double


def write_tokenizer_xml(path: Path, template: Optional[str]) -> None:
    net = ET.Element("net", name="tokenizer", version="11")
    ET.SubElement(net, "layers")
    ET.SubElement(net, "edges")
    rt = ET.SubElement(net, "rt_info")
    if template is not None:
        ET.SubElement(rt, "chat_template", value=template)
    ET.SubElement(rt, "eos_token_id", value="2")
    ET.ElementTree(net).write(path, encoding="utf-8", xml_declaration=True)


def make_ir(folder: Path, template: Optional[str] = CHATML, profile: Optional[Dict[str, Any]] = None,
            profile_text: Optional[str] = None) -> Path:
    """An IR-shaped folder the double accepts (empty model files) with a real chat template in rt_info."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in IR_FILES:
        (folder / name).write_text("")
    write_tokenizer_xml(folder / "openvino_tokenizer.xml", template)
    if profile is not None:
        (folder / "ovgenai_c.profile.json").write_text(json.dumps(profile))
    if profile_text is not None:
        (folder / "ovgenai_c.profile.json").write_text(profile_text)
    return folder


