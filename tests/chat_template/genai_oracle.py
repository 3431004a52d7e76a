"""Renders chat templates with real GenAI (``openvino_genai.Tokenizer.apply_chat_template``, its C++ minja-based
engine) in a child process: one Tokenizer for the whole batch, and GenAI's stderr chatter and any crash stay out
of the test process.

    python genai_oracle.py TOKENIZER_DIR JOBS_JSON OUT_JSON

JOBS_JSON: [{"template", "messages", "add_generation_prompt", "tools" (list or null), "extra" (object)}];
OUT_JSON: [{"ok": text} | {"error": "minja's message"}], in order.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

_MINJA_ERROR = re.compile(r"Minja's error: (.*?)(?: at row \d+, column \d+:|$)", re.S)


def _short_error(text: str) -> str:
    m = _MINJA_ERROR.search(text)
    return (m.group(1) if m else text).strip().splitlines()[0] if text.strip() else text


def render_all(tokenizer_dir: Path, jobs: list[dict], workdir: Path) -> list[dict]:
    """Renders every job with GenAI in one child process; returns one {"ok"}/{"error"} dict per job."""
    src, dst = workdir / "genai_jobs.json", workdir / "genai_out.json"
    src.write_text(json.dumps(jobs, ensure_ascii=False), encoding="utf-8")
    res = subprocess.run([sys.executable, __file__, str(tokenizer_dir), str(src), str(dst)],
                         capture_output=True, text=True, timeout=900)
    if res.returncode != 0:
        raise RuntimeError(f"GenAI oracle failed (rc {res.returncode}):\n{res.stderr[-4000:]}")
    return json.loads(dst.read_text(encoding="utf-8"))


def _main(tokenizer_dir: str, jobs_path: str, out_path: str) -> int:
    import openvino_genai

    tok = openvino_genai.Tokenizer(tokenizer_dir)
    out = []
    for job in json.loads(Path(jobs_path).read_text(encoding="utf-8")):
        try:
            text = tok.apply_chat_template(job["messages"], job["add_generation_prompt"],
                                           chat_template=job["template"], tools=job["tools"],
                                           extra_context=job["extra"])
            out.append({"ok": text})
        except Exception as e:  # noqa: BLE001 - a template GenAI cannot render is an outcome to compare
            out.append({"error": _short_error(str(e))})
    Path(out_path).write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(_main(*sys.argv[1:4]))
