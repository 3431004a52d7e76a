"""Crash-prone inputs, each run in a fresh interpreter so that a crash fails the case instead of the run:
enormous prompts and histories, huge stop sets, lifecycle calls from inside a streamer, and (bundled backend)
corrupt model files, unknown devices/properties, prompts beyond the context, empty histories."""
from __future__ import annotations

import json

import pytest

from relsupport import STATS, TINY_IR, last_json, run_snippet

_DOUBLE_SETUP = """
import gc, threading, time, tempfile
import ovgenai_c
from ovgenai_c import errors
from ovgenai_c.pipeline import IR_FILES
ffi, ctl = _ctl()
model = tempfile.mkdtemp()
for n in IR_FILES:
    open(os.path.join(model, n), "w").close()
p = ovgenai_c.LLMPipeline(model, library=DOUBLE)
def done(**extra):
    assert str(p.generate("still fine", max_new_tokens=5)) == "Echo: still fine"
    p.close()
    settle_garbage()
    print(json.dumps({"live": ctl.ovd_live(ffi.NULL), **extra}))
"""

DOUBLE_CASES = {
    "prompt-20MB-one-word": """
big = "x" * (20 * 1024 * 1024)
res = p.generate(big, max_new_tokens=10)
assert str(res) == "Echo: " + big
done()
""",
    "prompt-50k-words-streamed": """
words = " ".join("w%d" % i for i in range(50000))
n = [0]
def s(t):
    n[0] += 1
res = p.generate(words, max_new_tokens=100000, streamer=s)
assert str(res) == "Echo: " + words and n[0] == 50001
done()
""",
    "history-5000-messages-1MB-content": """
msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": "m%d" % i} for i in range(4999)]
msgs.append({"role": "user", "content": "y" * (1024 * 1024)})
res = p.generate(msgs, max_new_tokens=10)
assert str(res) == "Echo: " + "y" * (1024 * 1024)
done()
""",
    "10000-stop-strings": """
stops = {"stop%d" % i for i in range(10000)}
res = p.generate("a b stop77 c", max_new_tokens=50, stop_strings=stops)
assert str(res) == "Echo: a b ", str(res)
done()
""",
    "100000-stop-token-ids": """
res = p.generate("a b", max_new_tokens=50, stop_token_ids=set(range(100000)))
assert str(res) == "Echo: a b"
done()
""",
    "close-from-inside-streamer": """
def s(t):
    p.close()
try:
    p.generate("a b c", max_new_tokens=10, streamer=s)
    raise SystemExit("close() inside the streamer did not raise")
except RuntimeError as e:
    assert "streamer" in str(e)
done()
""",
    "drop-last-reference-inside-streamer": """
holder = {"p": ovgenai_c.LLMPipeline(model, library=DOUBLE)}
def s(t):
    holder.pop("p", None)
    gc.collect()
res = holder["p"].generate("a b c", max_new_tokens=10, streamer=s)
assert str(res) == "Echo: a b c"
del res
gc.collect()
deadline = time.time() + 5
while ctl.ovd_live(b"pipeline") > 1 and time.time() < deadline:
    time.sleep(0.01)
assert ctl.ovd_live(b"pipeline") == 1
done()
""",
    "nested-generate-on-another-pipeline-from-streamer": """
q = ovgenai_c.LLMPipeline(model, library=DOUBLE)
inner = []
def s(t):
    inner.append(str(q.generate("inner " + t.strip(), max_new_tokens=5)))
res = p.generate("a b", max_new_tokens=10, streamer=s)
assert inner and inner[0] == "Echo: inner Echo:", inner
q.close()
done()
""",
    "stream-closed-from-another-thread-while-blocked": """
ctl.ovd_set_token_delay_us(20000)
before = ctl.ovd_callback_count()
it = p.stream(" ".join(["w"] * 200), max_new_tokens=1000)
next(it)
threading.Timer(0.05, it.close).start()
rest = list(it)
assert ctl.ovd_callback_count() - before < 150  # closed: cancelled natively, not run to its ~200 tokens
ctl.ovd_set_token_delay_us(0)
done()
""",
    "streamer-returns-huge-int": """
try:
    p.generate("a b", max_new_tokens=10, streamer=lambda t: 2**100)
    raise SystemExit("no error")
except ValueError as e:
    assert "StreamingStatus" in str(e)
done()
""",
    "gc-of-open-streams-in-a-loop": """
for i in range(200):
    it = p.stream("a b c d e f", max_new_tokens=10)
    next(it)
    del it
    if i % 50 == 0:
        gc.collect()
done()
""",
}


@pytest.mark.parametrize("name", sorted(DOUBLE_CASES))
def test_crash_prone_on_the_double(name, double_lib_path):
    STATS.case("bad-input")
    proc = run_snippet(_DOUBLE_SETUP + DOUBLE_CASES[name], double=double_lib_path, timeout=90,
                       group=f"crashprone:{name}")
    out = last_json(proc)
    assert out["live"] == 0, out


# ------------------------------------------------------------------------------------------- bundled backend
_BUNDLED = """
import shutil, tempfile, traceback
import ovgenai_c
from ovgenai_c import errors, _loader
lib = _loader.open_library(__LIB__)
TINY = __TINY__
def copy_with(fname, data):
    d = tempfile.mkdtemp()
    for f in os.listdir(TINY):
        shutil.copy(os.path.join(TINY, f), d)
    if data is None:
        os.remove(os.path.join(d, fname))
    else:
        with open(os.path.join(d, fname), "wb") as fh:
            fh.write(data)
    return d
results = {}
def case(name, fn):
    print("CASE", name, flush=True)
    try:
        out = fn()
        results[name] = {"ok": True, "text": str(out)[:60]}
    except Exception as e:
        results[name] = {"ok": False, "type": type(e).__name__, "genai": isinstance(e, errors.GenAIError),
                         "msg": str(e)}
"""

BUNDLED_CREATE = _BUNDLED + """
bin_size = os.path.getsize(os.path.join(TINY, "openvino_model.bin"))
case("garbage-model-xml", lambda: ovgenai_c.LLMPipeline(copy_with("openvino_model.xml", b"garbage"), library=lib))
case("truncated-model-bin", lambda: ovgenai_c.LLMPipeline(copy_with("openvino_model.bin", b"\\0" * 64), library=lib))
case("empty-tokenizer-xml", lambda: ovgenai_c.LLMPipeline(copy_with("openvino_tokenizer.xml", b""), library=lib))
case("garbage-detokenizer-xml", lambda: ovgenai_c.LLMPipeline(copy_with("openvino_detokenizer.xml", b"<net></net>"),
                                                              library=lib))
case("missing-detokenizer-bin", lambda: ovgenai_c.LLMPipeline(copy_with("openvino_detokenizer.bin", None),
                                                              library=lib))
GGUF = os.path.join(os.path.dirname(TINY), "tiny.gguf")
def gguf_with(data):
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "m.gguf"), "wb") as fh:
        fh.write(data)
    return os.path.join(d, "m.gguf")
with open(GGUF, "rb") as fh:
    gguf_bytes = fh.read()
case("truncated-gguf-header", lambda: ovgenai_c.LLMPipeline(gguf_with(gguf_bytes[:4096]), library=lib))
case("truncated-gguf-tensors", lambda: ovgenai_c.LLMPipeline(gguf_with(gguf_bytes[:len(gguf_bytes) // 2]),
                                                             library=lib))
case("gguf-named-garbage", lambda: ovgenai_c.LLMPipeline(gguf_with(b"not a model at all"), library=lib))
case("gguf-version-9", lambda: ovgenai_c.LLMPipeline(gguf_with(gguf_bytes[:4] + b"\\x09\\0\\0\\0" + gguf_bytes[8:]),
                                                     library=lib))
def gguf_answer():  # the bundled backend loads a GGUF file itself: the same answer as its IR folder
    q = ovgenai_c.LLMPipeline(GGUF, library=lib)
    try:
        return q.generate("hello", max_new_tokens=3)
    finally:
        q.close()
case("device-FOO", lambda: ovgenai_c.LLMPipeline(TINY, "FOO", library=lib))
case("property-unknown", lambda: ovgenai_c.LLMPipeline(TINY, library=lib, NOT_A_PROPERTY="1"))
case("property-bad-value", lambda: ovgenai_c.LLMPipeline(TINY, library=lib, INFERENCE_NUM_THREADS="many"))
print("LIVE", lib.live_handles(), flush=True)
p = ovgenai_c.LLMPipeline(TINY, library=lib)
case("works-after", lambda: p.generate("hello", max_new_tokens=3))
p.close()
case("gguf-file", gguf_answer)
print(json.dumps({"results": results, "live": lib.live_handles()}))
"""

EXPECT_CREATE = {
    "garbage-model-xml": "openvino_model.xml",
    "truncated-model-bin": "weights",
    "empty-tokenizer-xml": "openvino_tokenizer.xml",
    "garbage-detokenizer-xml": "openvino_detokenizer",
    "missing-detokenizer-bin": "openvino_detokenizer.bin",
    "truncated-gguf-header": "ends early",
    "truncated-gguf-tensors": "truncated",
    "gguf-named-garbage": "not a GGUF file",
    "gguf-version-9": "GGUF version 9",
    "device-FOO": "FOO",
    "property-unknown": "NOT_A_PROPERTY",
    "property-bad-value": "INFERENCE_NUM_THREADS",
}

BUNDLED_GENERATE = _BUNDLED + """
p = ovgenai_c.LLMPipeline(TINY, library=lib)
case("empty-prompt", lambda: p.generate("", max_new_tokens=3))
case("beyond-context-prompt", lambda: p.generate("word " * 2500, max_new_tokens=2))
case("special-token-prompt", lambda: p.generate("<|im_start|><|im_end|><|endoftext|>", max_new_tokens=3))
case("empty-history", lambda: p.generate(ovgenai_c.ChatHistory(), max_new_tokens=3))
p.finish_chat()
case("unknown-role-history", lambda: p.generate([{"role": "alien", "content": "x"}], max_new_tokens=3))
p.finish_chat()
case("echo", lambda: p.generate("hi", max_new_tokens=3, echo=True))
case("beams", lambda: p.generate("hi", max_new_tokens=3, num_beams=2, num_return_sequences=2))
case("beams-streamed", lambda: p.generate("hi", max_new_tokens=3, num_beams=2, streamer=print))
case("beams-absurd", lambda: p.generate("hi", max_new_tokens=2, num_beams=10**9))
case("beams-huge", lambda: p.generate("hi", max_new_tokens=2, num_beams=512, num_beam_groups=256,
                                      diversity_penalty=3e38, no_repeat_ngram_size=1, length_penalty=-3e38))
case("huge-stop-token-id", lambda: p.generate("hi", max_new_tokens=3, stop_token_ids={2**62}))
case("many-stop-strings", lambda: p.generate("hi", max_new_tokens=3, stop_strings={"s%d" % i for i in range(5000)}))
case("sampling-extremes", lambda: p.generate("hi", max_new_tokens=3, do_sample=True, temperature=1e-30, top_k=1,
                                             top_p=1e-30, rng_seed=2**63))
case("penalties-extremes", lambda: p.generate("hi", max_new_tokens=3, repetition_penalty=3e38,
                                              presence_penalty=2.0, frequency_penalty=-2.0))
case("streamer-raises", lambda: p.generate("hi", max_new_tokens=3, streamer=lambda t: 1 / 0))
case("works-after", lambda: p.generate("hello", max_new_tokens=3))
p.close()
print(json.dumps({"results": results, "live": lib.live_handles()}))
"""

EXPECT_GENERATE_ERRORS = {
    "empty-history": "empty",
    "beams-streamed": "stream",
    "beams-absurd": "num_beams",
    "streamer-raises": "division",
}


def _bundled_run(code, bundled_path, group):
    code = code.replace("__LIB__", repr(str(bundled_path))).replace("__TINY__", repr(str(TINY_IR)))
    proc = run_snippet(code, timeout=180, group=group)
    return last_json(proc)


def test_bundled_bad_model_files_devices_properties(bundled_path):
    out = _bundled_run(BUNDLED_CREATE, bundled_path, "crashprone:bundled-create")
    res = out["results"]
    STATS.case("bad-input", len(res))
    for name, needle in EXPECT_CREATE.items():
        r = res[name]
        assert not r["ok"], f"{name}: create succeeded"
        assert r["genai"], f"{name}: {r['type']} is not a GenAIError"
        assert needle.lower() in r["msg"].lower(), f"{name}: message does not name {needle!r}: {r['msg'][:400]}"
    assert res["works-after"]["ok"], res["works-after"]
    assert res["gguf-file"] == res["works-after"]  # (the GGUF file itself: the IR folder's answer)
    assert out["live"] == 0


def test_bundled_bad_generate_inputs(bundled_path):
    out = _bundled_run(BUNDLED_GENERATE, bundled_path, "crashprone:bundled-generate")
    res = out["results"]
    STATS.case("bad-input", len(res))
    for name, r in res.items():
        if name in EXPECT_GENERATE_ERRORS:
            assert not r["ok"], f"{name}: expected an error, got {r}"
            if name != "streamer-raises":
                assert r["genai"], f"{name}: {r}"
            assert EXPECT_GENERATE_ERRORS[name] in r["msg"].lower(), f"{name}: {r['msg'][:300]}"
        else:
            # allowed to work or to fail with a typed error; never a crash or an untyped exception
            assert r["ok"] or r["genai"], f"{name}: {r}"
    assert res["works-after"]["ok"], res["works-after"]
    assert res["beams"]["ok"], res["beams"]  # beam search is implemented
    assert out["live"] == 0, json.dumps(out)[:500]
