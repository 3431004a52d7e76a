"""Native renderer vs Python jinja2 (configured like transformers) on real chat templates.

Every template is rendered over every conversation in conversations.CASES (plus SPECIAL_CASES for templates that
want another tool format) with add_generation_prompt true and false. A case passes when both render the same text, or when both fail (e.g. a template that raises for a
conversation shape it does not support). Per-template pass counts are printed in the terminal summary.
"""
from __future__ import annotations

import pytest

from hf_jinja import hf_render
from conversations import TOOLS, contexts
from testsupport import CHATML

# The 70 templates vendored in llama-cpp-python==0.3.36 (vendor/llama.cpp/models/templates).
REAL_TEMPLATE_NAMES = """
Apertus-8B-Instruct Apriel-1.6-15b-Thinker-fixed Bielik-11B-v3.0-Instruct ByteDance-Seed-OSS Cohere2MoE
CohereForAI-c4ai-command-r-plus-tool_use CohereForAI-c4ai-command-r7b-12-2024-tool_use GLM-4.6 GLM-4.7-Flash
GigaChat3-10B-A1.8B GigaChat3.1-10B-A1.8B HuggingFaceTB-SmolLM3-3B Kimi-K2-Instruct Kimi-K2-Thinking Kimi-K3
LFM2-8B-A1B LFM2.5-8B-A1B LFM2.5-Instruct MiMo-VL MiniMax-M1 MiniMax-M2 MiniMax-M3
Mistral-Small-3.2-24B-Instruct-2506 NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 NVIDIA-Nemotron-Nano-v2
NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use NousResearch-Hermes-3-Llama-3.1-8B-tool_use Qwen-QwQ-32B
Qwen-Qwen2.5-7B-Instruct Qwen-Qwen3-0.6B Qwen3-Coder Qwen3.5-4B Reka-Edge Spark2.5 StepFun3.5-Flash
deepseek-ai-DeepSeek-R1-Distill-Llama-8B deepseek-ai-DeepSeek-R1-Distill-Qwen-32B deepseek-ai-DeepSeek-V3.1
deepseek-ai-DeepSeek-V3.2 deepseek-ai-DeepSeek-V4-Flash-0731 deepseek-ai-DeepSeek-V4
fireworks-ai-llama-3-firefunction-v2 google-gemma-2-2b-it google-gemma-4-31B-it-interleaved google-gemma-4-31B-it
ibm-granite-granite-3.3-2B-Instruct ibm-granite-granite-4.0 ibm-granite-granite-4.1 inclusionai-ling-3.0-flash
llama-cpp-deepseek-r1 llama-cpp-rwkv-world meetkai-functionary-medium-v3.1 meetkai-functionary-medium-v3.2
meta-llama-Llama-3.1-8B-Instruct meta-llama-Llama-3.2-3B-Instruct meta-llama-Llama-3.3-70B-Instruct
microsoft-Phi-3.5-mini-instruct mistralai-Ministral-3-14B-Reasoning-2512 mistralai-Mistral-Nemo-Instruct-2407
moonshotai-Kimi-K2 muse-glimmer openai-gpt-oss-120b openbmb-MiniCPM5-1B poolside-Laguna-S-2.1
poolside-Laguna-XS-2.1 poolside-Laguna-XS.2 tencent-Hy3 unsloth-Apriel-1.5 unsloth-mistral-Devstral-Small-2507
upstage-Solar-Open-100B
""".split()

SMOLLM2 = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# pass counts per template, printed by pytest_terminal_summary (conftest)
PASS_COUNTS: dict[str, tuple[int, int, int]] = {}


@pytest.fixture(scope="session")
def all_templates(real_templates) -> dict[str, str]:
    out = dict(real_templates)
    out["SmolLM2-135M-Instruct (rt_info)"] = SMOLLM2
    out["ChatML"] = CHATML
    return out


@pytest.fixture(scope="session")
def native_results(ct_harness, all_templates):
    """One batch run of the harness over all templates x contexts: {name: [(case_id, ctx, result)]}."""
    jobs, meta = [], []
    for name, text in all_templates.items():
        for cid, ctx in contexts(name):
            jobs.append({"template": text, "context": ctx})
            meta.append((name, cid, ctx))
    results = ct_harness.batch(jobs)
    out: dict[str, list] = {}
    for (name, cid, ctx), r in zip(meta, results):
        out.setdefault(name, []).append((cid, ctx, r))
    return out


def test_all_70_real_templates_present(real_templates):
    assert sorted(real_templates) == sorted(REAL_TEMPLATE_NAMES)


def _compare(hf_env, name, text, cases):
    import jinja2

    try:
        compiled = hf_env.from_string(text)
    except jinja2.TemplateError as e:  # pragma: no cover - all shipped templates compile
        compiled, compile_err = None, str(e)
    passed = both_err = 0
    failures = []
    for cid, ctx, r in cases:
        if compiled is None:
            ok, exp = False, compile_err
        else:
            c = dict(ctx)
            try:
                ok, exp = True, compiled.render(**c)
            except Exception as e:  # noqa: BLE001
                ok, exp = False, f"{type(e).__name__}: {e}"
        if ok and r.get("ok") == exp:
            passed += 1
        elif not ok and "error" in r:
            # raise_exception(msg) must surface exactly msg
            if exp.startswith("TemplateError: ") and r["error"] != exp[len("TemplateError: "):]:
                failures.append((cid, f"<python error: {exp}>", r))
                continue
            passed += 1
            both_err += 1
        else:
            failures.append((cid, exp if ok else f"<python error: {exp}>", r))
    PASS_COUNTS[name] = (passed, len(cases), both_err)
    return failures


@pytest.mark.parametrize("name", REAL_TEMPLATE_NAMES + ["SmolLM2-135M-Instruct (rt_info)", "ChatML"])
def test_template_matches_jinja2(name, all_templates, native_results, hf_env):
    failures = _compare(hf_env, name, all_templates[name], native_results[name])
    if failures:
        cid, exp, got = failures[0]
        pytest.fail(f"{len(failures)} mismatching case(s); first {cid}:\nexpected {exp!r}\n     got {got!r}")


REQUIRED_RENDERING = {
    # template -> substrings a successful tool_calls render must contain (proves tools really rendered)
    "Qwen-Qwen2.5-7B-Instruct": ["<tools>", '"name": "get_weather"', "<tool_call>", "<tool_response>"],
    "Qwen-Qwen3-0.6B": ["<tools>", "<tool_call>"],
    "meta-llama-Llama-3.1-8B-Instruct": ["get_weather", "<|start_header_id|>ipython<|end_header_id|>"],
    "mistralai-Mistral-Nemo-Instruct-2407": ["[AVAILABLE_TOOLS]", "[TOOL_CALLS]"],
}


@pytest.mark.parametrize("name", sorted(REQUIRED_RENDERING))
def test_tool_templates_really_render_tools(name, native_results):
    res = {cid: r for cid, _, r in native_results[name]}
    text = res["tool_calls-gen"].get("ok")
    assert text is not None, res["tool_calls-gen"]
    for needle in REQUIRED_RENDERING[name]:
        assert needle in text, needle


def test_qwen3_enable_thinking_changes_output(native_results):
    res = {cid: r for cid, _, r in native_results["Qwen-Qwen3-0.6B"]}
    on, off = res["thinking_on-gen"]["ok"], res["thinking_off-gen"]["ok"]
    assert off.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert on.endswith("<|im_start|>assistant\n")


def test_smollm2_exact(native_results):
    res = {cid: r for cid, _, r in native_results["SmolLM2-135M-Instruct (rt_info)"]}
    assert res["plain-gen"]["ok"] == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
    )


def test_llama32_date_from_strftime_now(native_results):
    import datetime

    res = {cid: r for cid, _, r in native_results["meta-llama-Llama-3.2-3B-Instruct"]}
    assert "Today Date: " + datetime.datetime.now().strftime("%d %b %Y") in res["plain-gen"]["ok"]


def test_chatml_render_is_fast(ct_harness):
    messages = [{"role": ["user", "assistant"][i % 2], "content": f"Message {i}: some realistic text here."}
                for i in range(10)]
    us = ct_harness.bench(CHATML, {"messages": messages, "add_generation_prompt": True}, 2000)
    assert us < 1000.0, f"{us:.1f} us per render"


def test_tools_default_to_none_like_transformers(ct_harness, hf_env):
    # transformers always passes tools=None / documents=None; the native renderer defines them when absent.
    t = "{{ tools is defined }}|{{ tools is none }}|{{ documents is none }}|{{ other is defined }}"
    res = ct_harness.render(t, {"messages": []})
    assert res.stdout.decode() == hf_render(hf_env, t, {"messages": []})[1] == "True|True|True|False"


def test_tools_passed_through(ct_harness):
    t = "{{ tools | map(attribute='function') | map(attribute='name') | join(',') }}"
    res = ct_harness.render(t, {"messages": [], "tools": TOOLS})
    assert res.stdout.decode() == "get_weather,add"


def test_matches_real_openvino_genai_on_chatml_family(ct_harness):
    """Cross-check with the real GenAI (pybind, test oracle only) on the ChatML-style templates."""
    from pathlib import Path

    g = pytest.importorskip("openvino_genai")
    tok_dir = Path(__file__).resolve().parents[1] / "fixtures" / "tiny" / "ir"
    if not (tok_dir / "openvino_tokenizer.xml").exists():
        pytest.skip("tiny tokenizer fixture not present")
    tok = g.Tokenizer(str(tok_dir))
    jobs, expected = [], []
    for template in (SMOLLM2, CHATML):
        for cid, ctx in contexts():
            if ctx["tools"] is not None or not cid.split("-")[0] in ("plain", "system", "multi_turn", "assistant_last"):
                continue
            expected.append(tok.apply_chat_template(ctx["messages"], ctx["add_generation_prompt"],
                                                    chat_template=template))
            jobs.append({"template": template, "context": ctx})
    got = ct_harness.batch(jobs)
    assert len(got) == 16
    assert [r.get("ok") for r in got] == expected
