"""Chat templates of the provider tests (model folders: testsupport.make_ir; the double: tests/conftest.py)."""
from __future__ import annotations

from testsupport import CHATML, make_ir, write_tokenizer_xml  # noqa: F401  (the one copy: tests/testsupport.py)

CHATML_TOOLS = ("{% if tools %}{{'<|im_start|>system\\n# Tools\\n<tools>'}}{% for t in tools %}{{ t | tojson }}"
                "{% endfor %}{{'</tools>\\nReturn <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call>"
                "<|im_end|>\\n'}}{% endif %}" + CHATML)
CHATML_THINK = CHATML + "{% if enable_thinking is defined and not enable_thinking %}<think>\\n\\n</think>{% endif %}"

