"""A thinking model on the command line (the ABI double answers a fixed text): the reasoning between Ollama's
"Thinking..." / "...done thinking." lines or hidden, streamed or not, in --json; --think / --no-think and the chat's
/set think / nothink reach the chat template; a model without the switch refuses --think."""
from __future__ import annotations

import json
import subprocess

import pytest

from cli_helpers import ROOT, CHATML, cli_env, driver_args, make_ir

CHATML_THINK = CHATML + "{% if enable_thinking is defined and not enable_thinking %}<think>\\n\\n</think>{% endif %}"
REPLY = "<think>\nFirst I add.\nThen I check.\n</think>\n\nIt is 4."
SHOWN = "Thinking...\nFirst I add.\nThen I check.\n...done thinking.\n\nIt is 4.\n"


def _run(double_lib_path, tmp_path, *args, stdin=None, **env_extra):
    env = cli_env(double_lib_path, tmp_path, OVD_REPLY=REPLY, **env_extra)
    return subprocess.run(driver_args(double_lib_path, 0, *args), env=env, input=stdin, text=True,
                          capture_output=True, timeout=120, cwd=str(ROOT))


@pytest.fixture
def thinker(tmp_path):
    return make_ir(tmp_path / "thinker", CHATML_THINK)


@pytest.mark.parametrize("extra", [[], ["--no-stream"]])
def test_generate_shows_the_reasoning_apart_or_hides_it(double_lib_path, tmp_path, thinker, extra):
    r = _run(double_lib_path, tmp_path, "generate", str(thinker), "2+2?", *extra)
    assert r.returncode == 0 and r.stdout == SHOWN, r.stderr
    r = _run(double_lib_path, tmp_path, "generate", str(thinker), "2+2?", "--hide-thinking", *extra)
    assert r.returncode == 0 and r.stdout == "It is 4.\n", r.stderr


def test_generate_json_has_the_reasoning_and_the_answer(double_lib_path, tmp_path, thinker):
    r = _run(double_lib_path, tmp_path, "generate", str(thinker), "2+2?", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["thinking"] == "First I add.\nThen I check." and doc["text"] == "It is 4."


def test_the_switch_reaches_the_template_and_is_refused_without_one(double_lib_path, tmp_path, thinker):
    log = tmp_path / "inputs.jsonl"
    for flag, want in (("--no-think", False), ("--think", True)):
        r = _run(double_lib_path, tmp_path, "generate", str(thinker), "2+2?", flag, OVD_LOG_INPUTS=str(log),
                 OVD_LOG_EXTRA="1")
        assert r.returncode == 0, r.stderr
        assert json.loads(log.read_text().splitlines()[-1])["extra"] == {"enable_thinking": want}
    r = _run(double_lib_path, tmp_path, "chat", str(thinker), "--hide-thinking", stdin="/set nothink\nhi\n/show\n",
             OVD_LOG_INPUTS=str(log), OVD_LOG_EXTRA="1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:2] == ["(thinking off)", "It is 4."] and "thinking:     off" in r.stdout
    assert json.loads(log.read_text().splitlines()[-1])["extra"] == {"enable_thinking": False}
    r = _run(double_lib_path, tmp_path, "chat", str(thinker), stdin="hi\n")
    assert r.returncode == 0 and r.stdout == SHOWN, r.stderr
    plain = make_ir(tmp_path / "plain", CHATML)
    r = _run(double_lib_path, tmp_path, "generate", str(plain), "2+2?", "--think")
    assert r.returncode != 0 and "thinking switch" in r.stderr
    r = _run(double_lib_path, tmp_path, "generate", str(plain), "2+2?", "--think", "--no-think")
    assert r.returncode != 0 and "not allowed with argument" in r.stderr
