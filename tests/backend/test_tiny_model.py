"""The bundled backend on the committed tiny random-weight model (tests/fixtures/tiny/ir): golden
outputs, oracle parity (GenAI SDPA), pipeline properties, configuration plumbing and bad input."""
from __future__ import annotations

import json
import pathlib
import shutil

import pytest

from helpers import (Config, chat_history, default_backend, generate, generate_with_history, make_streamer,
                     run_in_child)
from testsupport import GOLDEN_PRECISION, PRECISION_HINT, child_outcome, run_threads

REPO = pathlib.Path(__file__).resolve().parents[2]
EXPECTED = REPO / "tests" / "fixtures" / "tiny" / "expected.json"


@pytest.fixture(scope="module")
def tiny_oracle(tiny_dir):
    og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")
    if default_backend() == "PA":  # the suite runs on PA: compare with GenAI's default (PA) pipeline
        return og.LLMPipeline(str(tiny_dir), "CPU", **PRECISION_HINT)
    return og.LLMPipeline(str(tiny_dir), "CPU", ATTENTION_BACKEND="SDPA", **PRECISION_HINT)


def test_golden_chat_template_case(api, tiny_dir, create_pipe):
    golden = json.loads(EXPECTED.read_text())
    cases = [c for c in golden["cases"] if c["chat_template"]]
    assert cases
    st, pipe = create_pipe(tiny_dir, "INFERENCE_PRECISION_HINT", golden["precision"])  # as the golden was made
    assert st == 0, api.last_error()
    try:
        for c in cases:
            r = generate(api, pipe, c["prompt"], Config(api, max_new_tokens=c["max_new_tokens"]), want_perf=True)
            assert r.status == 0, api.last_error()
            assert r.text == c["text"]
            assert r.perf["num_input"] == len(c["input_ids"])
            assert r.perf["num_generated"] == len(c["output_ids"])
    finally:
        api.lib.ov_genai_llm_pipeline_free(pipe)


@pytest.mark.parametrize("prompt", ["Hello", "中文 é 🙂", "a\nb\tc", "What is 2+2?"])
def test_greedy_matches_oracle(api, tiny_pipe, tiny_oracle, prompt):
    r = generate(api, tiny_pipe, prompt, Config(api, max_new_tokens=40, ignore_eos=True), want_perf=True)
    o = tiny_oracle.generate([prompt], max_new_tokens=40, ignore_eos=True)
    assert r.text == o.texts[0]
    assert r.perf["num_input"] == o.perf_metrics.get_num_input_tokens()


def test_stop_strings_match_oracle(api, tiny_pipe, tiny_oracle):
    base = generate(api, tiny_pipe, "Hello", Config(api, max_new_tokens=30)).text
    words = [w for w in base.split()[2:] if w.isascii() and w.isalpha() and len(w) >= 3]
    assert words, base
    for stop, must_stop in (("e", True), (words[0], False)):
        for inc in (False, True):
            r = generate(api, tiny_pipe, "Hello", Config(api, max_new_tokens=30, stop_strings=[stop], include_stop_str_in_output=inc))
            o = tiny_oracle.generate(["Hello"], max_new_tokens=30, stop_strings={stop}, include_stop_str_in_output=inc)
            assert r.text == o.texts[0]
            if must_stop:
                assert len(r.text) < len(base)


def test_chat_and_history_match_oracle(api, tiny_pipe, tiny_oracle):
    lib = api.lib
    assert lib.ov_genai_llm_pipeline_start_chat(tiny_pipe) == 0
    tiny_oracle.start_chat()
    try:
        for q in ("Hi", "More", "Again?"):
            r = generate(api, tiny_pipe, q, Config(api, max_new_tokens=12), want_perf=True)
            o = tiny_oracle.generate([q], max_new_tokens=12)
            assert r.text == o.texts[0]
            assert r.perf["num_input"] == o.perf_metrics.get_num_input_tokens()
    finally:
        lib.ov_genai_llm_pipeline_finish_chat(tiny_pipe)
        tiny_oracle.finish_chat()
    import openvino_genai as og

    msgs = [{"role": "user", "content": "One"}, {"role": "assistant", "content": "Two"}, {"role": "user", "content": "Three"}]
    h = chat_history(api, json.dumps(msgs))
    try:
        r = generate_with_history(api, tiny_pipe, h, Config(api, max_new_tokens=12))
        o = tiny_oracle.generate(og.ChatHistory(msgs), max_new_tokens=12)
        assert r.text == o.texts[0]
    finally:
        lib.ov_genai_chat_history_free(h)
        lib.ov_genai_llm_pipeline_finish_chat(tiny_pipe)
        tiny_oracle.finish_chat()


def test_streaming_never_splits_utf8(api, tiny_pipe):
    chunks = []
    sc, keep = make_streamer(api, lambda s: (chunks.append(s), 0)[1])  # strict UTF-8 decode in the callback
    r = generate(api, tiny_pipe, "中文 é 🙂", Config(api, max_new_tokens=64), streamer=sc)
    assert r.status == 0
    assert "".join(chunks) == r.text


def test_properties_reach_compile_model(api, tiny_dir, tmp_path):
    """CACHE_DIR and PERFORMANCE_HINT reach compile_model. In a child: compiling with PERFORMANCE_HINT=THROUGHPUT
    raises SIGFPE inside OpenVINO's CPU plugin under bf16 on AMX (the f32 hint, set here, avoids it)."""
    cache = tmp_path / "cache"
    proc = run_in_child(f"""
        st, pipe = create(TINY, "CACHE_DIR", {str(cache)!r}, "PERFORMANCE_HINT", "THROUGHPUT")
        assert st == 0, api.last_error()
        try:
            assert generate(api, pipe, "Hi", Config(api, max_new_tokens=3)).status == 0
        finally:
            api.lib.ov_genai_llm_pipeline_free(pipe)
        st, pipe = create(TINY, "PERFORMANCE_HINT", "NOT_A_HINT")
        err = api.last_error()
        assert st == -17 and ("PERFORMANCE_HINT" in err or "NOT_A_HINT" in err), (st, err)
        """)
    child_outcome(proc, "PERFORMANCE_HINT=THROUGHPUT on the tiny model")
    assert cache.is_dir() and any(cache.iterdir())  # OpenVINO wrote its model cache there


def test_precision_hint_reaches_compile_model(api, tiny_dir, create_pipe):
    """The INFERENCE_PRECISION_HINT every comparison here relies on is handed to the CPU plugin: a value it does
    not know is refused at create, naming the property."""
    st, pipe = create_pipe(tiny_dir, "INFERENCE_PRECISION_HINT", "f99")
    assert st == -17 and ("INFERENCE_PRECISION_HINT" in api.last_error() or "f99" in api.last_error())
    st, pipe = create_pipe(tiny_dir, "INFERENCE_PRECISION_HINT", GOLDEN_PRECISION)
    assert st == 0, api.last_error()
    api.lib.ov_genai_llm_pipeline_free(pipe)


def test_the_cpu_default_precision_generates(api, tiny_dir, create_pipe):
    """Without the hint the plugin picks its default (bf16 on AMX / avx512_bf16 CPUs): it loads and generates."""
    st, pipe = create_pipe(tiny_dir, precision=False)
    assert st == 0, api.last_error()
    try:
        r = generate(api, pipe, "Hi", Config(api, max_new_tokens=8, ignore_eos=True), want_perf=True)
        assert r.status == 0 and r.text and r.perf["num_generated"] == 8
    finally:
        api.lib.ov_genai_llm_pipeline_free(pipe)


def test_properties(api, tiny_dir, create_pipe):
    st, pipe = create_pipe(tiny_dir, "ATTENTION_BACKEND", "PA")  # PagedAttention runner (test_paged_attention.py)
    assert st == 0, api.last_error()
    assert generate(api, pipe, "Hi", Config(api, max_new_tokens=3)).status == 0
    api.lib.ov_genai_llm_pipeline_free(pipe)
    st, pipe = create_pipe(tiny_dir, "ATTENTION_BACKEND", "FOO")
    assert st == -17
    st, pipe = create_pipe(tiny_dir, "NO_SUCH_PROPERTY_XYZ", "1")
    assert st == -17 and "NO_SUCH_PROPERTY_XYZ" in api.last_error()
    p = api.ffi.new("ov_genai_llm_pipeline**")
    assert api.lib.ov_genai_llm_pipeline_create(str(tiny_dir).encode(), b"NO_SUCH_DEVICE", 0, p) == -17


@pytest.mark.parametrize("props", [("INFERENCE_NUM_THREADS", "1"), ("NUM_STREAMS", "2")])
def test_threading_properties(api, tiny_dir, props):
    """In a child: INFERENCE_NUM_THREADS=1 / NUM_STREAMS=2 raise SIGFPE inside OpenVINO's CPU plugin under bf16
    on AMX (the f32 hint, set here, avoids it)."""
    proc = run_in_child(f"""
        st, pipe = create(TINY, *{props!r}, "ATTENTION_BACKEND", "SDPA")
        assert st == 0, api.last_error()
        assert generate(api, pipe, "Hi", Config(api, max_new_tokens=3)).status == 0
        api.lib.ov_genai_llm_pipeline_free(pipe)
        """)
    child_outcome(proc, "=".join(props) + " on the tiny model")


def test_missing_tokenizers_extension(api, tiny_dir, create_pipe, monkeypatch):
    monkeypatch.setenv("OPENVINO_TOKENIZERS_PATH_GENAI", "/nonexistent/libopenvino_tokenizers.so")
    st, _ = create_pipe(tiny_dir)
    assert st == -17
    assert "OPENVINO_TOKENIZERS_PATH_GENAI" in api.last_error()


def test_unsupported_modes_and_bad_input(api, tiny_pipe):
    echoed = generate(api, tiny_pipe, "Hi", Config(api, max_new_tokens=4, echo=True))
    if default_backend() == "SDPA":  # as GenAI's stateful pipeline
        assert echoed.status == -17 and "echo is not supported in the stateful pipeline" in api.last_error()
    else:  # as GenAI's default (PA) pipeline
        plain = generate(api, tiny_pipe, "Hi", Config(api, max_new_tokens=4))
        assert echoed.status == plain.status == 0 and "Hi" in echoed.text and echoed.text.endswith(plain.text.strip())
    assert generate(api, tiny_pipe, b"bad \xff\xfe utf8", Config(api, max_new_tokens=4)).status == -17
    assert "UTF-8" in api.last_error()
    assert generate(api, tiny_pipe, "Hi", Config(api, max_new_tokens=0)).status == -17
    sc, keep = make_streamer(api, lambda s: 0)
    r = generate(api, tiny_pipe, "Hi", Config(api, max_new_tokens=4, do_sample=True, num_return_sequences=2), streamer=sc)
    assert r.status == -17
    # the pipeline still works afterwards
    assert generate(api, tiny_pipe, "Hi", Config(api, max_new_tokens=4)).status == 0


def test_pipeline_generation_config_roundtrip(api, tiny_pipe):
    ffi, lib = api.ffi, api.lib
    out = ffi.new("ov_genai_generation_config**")
    assert lib.ov_genai_llm_pipeline_get_generation_config(tiny_pipe, out) == 0
    n = ffi.new("size_t*")
    assert lib.ov_genai_generation_config_get_max_new_tokens(out[0], n) == 0
    assert lib.ov_genai_generation_config_validate(out[0]) == 0  # eos 2 filled from the tokenizer
    lib.ov_genai_generation_config_free(out[0])
    bad = Config(api, max_new_tokens=0)
    assert lib.ov_genai_llm_pipeline_set_generation_config(tiny_pipe, bad.ptr) == -17
    good = Config(api, max_new_tokens=5, ignore_eos=True)
    assert lib.ov_genai_llm_pipeline_set_generation_config(tiny_pipe, good.ptr) == 0
    r = generate(api, tiny_pipe, "Hello", None, want_perf=True)  # NULL config: the pipeline's
    assert r.status == 0 and r.perf["num_generated"] == 5
    assert lib.ov_genai_llm_pipeline_get_generation_config(tiny_pipe, out) == 0
    assert lib.ov_genai_generation_config_get_max_new_tokens(out[0], n) == 0 and n[0] == 5
    lib.ov_genai_generation_config_free(out[0])
    assert generate(api, tiny_pipe, b"Hello", None, streamer=None).status == 0
    assert lib.ov_genai_llm_pipeline_generate(tiny_pipe, b"x", ffi.NULL, ffi.NULL, ffi.NULL) == -14


def test_prompt_longer_than_context(api, tiny_dir, create_pipe, tmp_path):
    d = tmp_path / "tiny"
    shutil.copytree(tiny_dir, d)
    (d / "config.json").write_text(json.dumps({"max_position_embeddings": 200}))
    st, pipe = create_pipe(d)
    assert st == 0, api.last_error()
    try:
        r = generate(api, pipe, "word " * 300, Config(api, max_new_tokens=4))
        assert r.status == -17 and "context" in api.last_error()
        r = generate(api, pipe, "Hi", Config(api, max_new_tokens=100, ignore_eos=True), want_perf=True)
        assert r.status == 0 and r.perf["num_input"] + r.perf["num_generated"] <= 200
    finally:
        api.lib.ov_genai_llm_pipeline_free(pipe)


def test_no_handle_leaks(api, tiny_dir, create_pipe):
    before = api.live()
    st, pipe = create_pipe(tiny_dir)
    assert st == 0
    assert api.live("pipeline") >= 1
    r = generate(api, pipe, "Hi", Config(api, max_new_tokens=3), want_perf=True)
    assert r.status == 0
    api.lib.ov_genai_llm_pipeline_free(pipe)
    assert api.live() == before


TOOLS_TEMPLATE = ("{% if tools %}{% for t in tools %}T:{{ t.name }};{% endfor %}{% endif %}X:{{ enable_thinking }};"
                  "{% for m in messages %}{{ m.role }}={{ m.content }};{% endfor %}"
                  "{% if add_generation_prompt %}A:{% endif %}")


def _with_template(src: pathlib.Path, dst: pathlib.Path, template: str) -> pathlib.Path:
    import re
    from xml.sax.saxutils import quoteattr

    shutil.copytree(src, dst)
    for name in ("openvino_tokenizer.xml", "openvino_detokenizer.xml"):
        p = dst / name
        text = p.read_text()
        text, n = re.subn(r'<chat_template value="[^"]*"', lambda m: "<chat_template value=" + quoteattr(template), text)
        if name == "openvino_tokenizer.xml":
            assert n == 1
        p.write_text(text)
    return dst


def test_tools_and_extra_context_reach_the_template(api, tiny_dir, create_pipe, tmp_path):
    og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")
    d = _with_template(tiny_dir, tmp_path / "tiny_tools", TOOLS_TEMPLATE)
    st, pipe = create_pipe(d)
    assert st == 0, api.last_error()
    h = chat_history(api, '[{"role":"user","content":"One"}]', tools_json='[{"name":"f"},{"name":"g"}]',
                     extra_json='{"enable_thinking": false}')
    try:
        r = generate_with_history(api, pipe, h, Config(api, max_new_tokens=3), want_perf=True)
        assert r.status == 0, api.last_error()
        expected = "T:f;T:g;X:False;user=One;A:"
        ids = og.Tokenizer(str(d)).encode(expected, add_special_tokens=False).input_ids.data
        assert r.perf["num_input"] == ids.shape[1]
        # a plain prompt sees no tools and an undefined enable_thinking (after leaving history mode)
        assert api.lib.ov_genai_llm_pipeline_finish_chat(pipe) == 0
        r2 = generate(api, pipe, "One", Config(api, max_new_tokens=3), want_perf=True)
        ids2 = og.Tokenizer(str(d)).encode("X:;user=One;A:", add_special_tokens=False).input_ids.data
        assert r2.status == 0 and r2.perf["num_input"] == ids2.shape[1]
    finally:
        api.lib.ov_genai_chat_history_free(h)
        api.lib.ov_genai_llm_pipeline_free(pipe)


def test_broken_template_fails_cleanly(api, tiny_dir, create_pipe, tmp_path):
    d = _with_template(tiny_dir, tmp_path / "tiny_broken", "{% for m in messages %}{{ m.content ")
    st, pipe = create_pipe(d)
    assert st == 0, api.last_error()  # the template is only needed at generate time
    try:
        r = generate(api, pipe, "Hi", Config(api, max_new_tokens=3))
        assert r.status == -17 and "template" in api.last_error()
    finally:
        api.lib.ov_genai_llm_pipeline_free(pipe)


def test_streaming_with_stop_string_matches_result(api, tiny_pipe):
    chunks = []
    sc, keep = make_streamer(api, lambda s: (chunks.append(s), 0)[1])
    r = generate(api, tiny_pipe, "Hello", Config(api, max_new_tokens=30, stop_strings=["e"]), streamer=sc)
    assert r.status == 0
    assert "".join(chunks) == r.text


def test_concurrent_calls_are_serialised(api, tiny_pipe):
    cfg = Config(api, max_new_tokens=24, ignore_eos=True)
    want = generate(api, tiny_pipe, "Hello", cfg).text
    out = []

    def work(_):
        for _ in range(3):
            out.append(generate(api, tiny_pipe, "Hello", cfg).text)

    assert not run_threads(work, 3, timeout=600)
    assert out == [want] * 9


def test_reentrant_call_from_streamer_fails_cleanly(api, tiny_pipe):
    inner = []

    def handler(s):
        if not inner:
            inner.append(generate(api, tiny_pipe, "x", Config(api, max_new_tokens=2)).status)
            inner.append(api.last_error())
        return 0

    sc, keep = make_streamer(api, handler)
    r = generate(api, tiny_pipe, "Hello", Config(api, max_new_tokens=12), streamer=sc)
    assert r.status == 0
    assert inner[0] == -17 and "re-entrant" in inner[1]


def test_chat_template_from_tokenizer_config(api, tiny_dir, create_pipe, tmp_path):
    import re

    og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")
    d = tmp_path / "tiny_hf"
    shutil.copytree(tiny_dir, d)
    for name in ("openvino_tokenizer.xml", "openvino_detokenizer.xml"):
        p = d / name
        p.write_text(re.sub(r'\s*<chat_template value="[^"]*"\s*/>', "", p.read_text()))
    assert "chat_template" not in (d / "openvino_tokenizer.xml").read_text()
    (d / "tokenizer_config.json").write_text(json.dumps(
        {"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D:{{ messages[0].content }}|"}]}))
    st, pipe = create_pipe(d)
    assert st == 0, api.last_error()
    try:
        r = generate(api, pipe, "abc", Config(api, max_new_tokens=2), want_perf=True)
        assert r.status == 0, api.last_error()
        ids = og.Tokenizer(str(tiny_dir)).encode("D:abc|", add_special_tokens=False).input_ids.data
        assert r.perf["num_input"] == ids.shape[1]
    finally:
        api.lib.ov_genai_llm_pipeline_free(pipe)


@pytest.mark.parametrize("prompt,stops", [("中文 é 🙂", None), ("Hello", None), ("Hello", ["e"])])
def test_stream_chunks_identical_to_oracle(api, tiny_pipe, tiny_oracle, prompt, stops):
    import openvino_genai as og

    kw = dict(max_new_tokens=40)
    ours, theirs = [], []
    sc, keep = make_streamer(api, lambda s: (ours.append(s), 0)[1])
    cfg = Config(api, stop_strings=stops, **kw) if stops else Config(api, **kw)
    assert generate(api, tiny_pipe, prompt, cfg, streamer=sc).status == 0
    okw = dict(kw, stop_strings=set(stops)) if stops else kw
    tiny_oracle.generate([prompt], streamer=lambda s: (theirs.append(s), og.StreamingStatus.RUNNING)[1], **okw)
    assert ours == theirs


def test_cancel_only_streaming_skips_text_but_still_cancels(api, tiny_pipe):
    """The bundled extra behind ovgenai_c's no-streamer calls: the callback gets "" once per token (no
    detokenisation), and its status still stops generation at once."""
    calls = []

    def on(chunk):
        calls.append(chunk)
        return 2 if len(calls) == 3 else 0  # CANCEL at the third token

    cfg = dict(max_new_tokens=8, ignore_eos=True)
    plain = generate(api, tiny_pipe, "Hi", Config(api, **cfg), want_perf=True)
    api.lib.ovgenai_c_bundled_set_cancel_only_streaming(1)
    try:
        sc, keep = make_streamer(api, lambda s: calls.append(s) or 0)
        r = generate(api, tiny_pipe, "Hi", Config(api, **cfg), streamer=sc, want_perf=True)
        assert r.status == 0 and r.text == plain.text  # the result's text is unaffected
        assert calls == [""] * 8  # one call per generated token, no text
        calls.clear()
        sc, keep = make_streamer(api, on)
        r = generate(api, tiny_pipe, "Hi", Config(api, **cfg), streamer=sc, want_perf=True)
        assert r.status == 0 and calls == [""] * 3 and r.perf["num_generated"] == 3
    finally:
        api.lib.ovgenai_c_bundled_set_cancel_only_streaming(0)
    pieces = []
    sc, keep = make_streamer(api, lambda s: pieces.append(s) or 0)
    r = generate(api, tiny_pipe, "Hi", Config(api, **cfg), streamer=sc)
    assert "".join(pieces) == r.text == plain.text  # off again: text streams as before
