"""Streaming a Whisper transcription on the bundled backend (cdefs/95:
ovgenai_c_bundled_whisper_pipeline_generate_with_streamer; GenAI's C ABI has no Whisper streamer).

- ``WhisperPipeline.generate(streamer=...)`` against openvino_genai's (the oracle, in a child, same IR, f32): what a
  StreamerBase's write() gets and when (a token per step without timestamps, a window's text tokens with them, the
  end token too), how often end() runs, what a callable gets (TextStreamer chunks), and what a STOP / CANCEL from
  the streamer leaves in the result (GenAI keeps the step under way) — identical, call by call;
- the binding's own rules: a failing streamer's exception comes out of generate(), a streamer calling its own
  pipeline is refused, a timeout stops a streaming transcription, the official C ABI refuses a streamer (in
  tests/binding/test_whisper_double.py);
- the C function's contract: argument checks, a callback calling back into its pipeline gets an error status (no
  deadlock), the thread's token streamer.
"""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap
import time
from typing import Any, Dict, List

import numpy as np
import pytest

from test_whisper_bundled import F32, INVALID_C_PARAM, _binding_pipe, api, real_ir, speech  # noqa: F401
from whisper_support import run_oracle_cases

GENERATE_STREAMING = "ovgenai_c_bundled_whisper_pipeline_generate_with_streamer"

# One case run by either library: `mod` is openvino_genai or ovgenai_c (their StreamerBase and StreamingStatus).
RUNNER = r'''
def run_case(mod, base, pipe, audio, case):
    """What a streaming call gave: the writes (token mode) or chunks (text mode), end() calls, the result's text and
    token count, and the text of a plain call on the same audio right after it."""
    stop_after, status = case.get("stop_after"), getattr(mod.StreamingStatus, case.get("status", "STOP"))

    class Recorder(base):
        def __init__(self):
            super().__init__()
            self.writes, self.ended = [], 0

        def write(self, token):
            self.writes.append(list(token) if isinstance(token, list) else [int(token)])
            if stop_after is not None and len(self.writes) >= stop_after:
                return status
            return mod.StreamingStatus.RUNNING

        def end(self):
            self.ended += 1

    if case["mode"] == "tokens":
        streamer = Recorder()
    else:
        chunks = []

        def streamer(text):
            chunks.append(text)
            return status if stop_after is not None and len(chunks) >= stop_after else None

    r = pipe.generate(audio, streamer=streamer, **case["config"])
    out = {"text": r.texts[0], "tokens": len(r.perf_metrics.raw_metrics.m_new_token_times)}
    if case["mode"] == "tokens":
        out["writes"], out["ended"] = streamer.writes, streamer.ended
    else:
        out["chunks"] = chunks
    if stop_after is not None:
        out["after"] = pipe.generate(audio).texts[0]
    return out
'''

ORACLE = RUNNER + r'''
import json, sys
import numpy as np
import openvino_genai as og
ir, cases_path, out_path = sys.argv[1:4]
pipe = og.WhisperPipeline(ir, "CPU", INFERENCE_PRECISION_HINT="f32")
cases = json.load(open(cases_path))
json.dump([run_case(og, og.StreamerBase, pipe, np.load(c["audio"]).astype(np.float32), c) for c in cases],
          open(out_path, "w"))
'''


def _oracle(ir: pathlib.Path, cases: List[Dict[str, Any]], tmp: pathlib.Path) -> List[Dict[str, Any]]:
    pytest.importorskip("openvino_genai")
    return run_oracle_cases(ORACLE, ir, cases, tmp)


def _ours(pipe: Any, cases: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    import ovgenai_c
    from ovgenai_c import streamers

    scope: Dict[str, Any] = {}
    exec(RUNNER, scope)
    return [scope["run_case"](ovgenai_c, streamers.StreamerBase, pipe, c["audio"], c) for c in cases]


def _compare(ours: List[Dict[str, Any]], theirs: List[Dict[str, Any]], cases: List[Dict[str, Any]]) -> None:
    bad = [f"{c['name']}:\n  ours  {a}\n  genai {b}" for c, a, b in zip(cases, ours, theirs) if a != b]
    assert not bad, "\n".join(bad)


def test_streaming_exact_with_genai(api, whisper_real_ir, speech_samples, tmp_path):
    """Every case's writes / chunks, end() calls, text, token count and the next call's text equal openvino_genai's."""
    english = list(speech_samples.english)
    one = english[0].audio
    long_audio = np.concatenate([s.audio for s in english])
    cases: List[Dict[str, Any]] = []
    for i, s in enumerate(english[:3]):
        cases.append({"name": f"tokens[{i}]", "audio": s.audio, "mode": "tokens", "config": {}})
        cases.append({"name": f"text[{i}]", "audio": s.audio, "mode": "text", "config": {}})
        cases.append({"name": f"timestamps[{i}]", "audio": s.audio, "mode": "tokens",
                      "config": {"return_timestamps": True}})
    cases += [
        {"name": "long tokens", "audio": long_audio, "mode": "tokens", "config": {}},
        {"name": "long timestamps", "audio": long_audio, "mode": "tokens", "config": {"return_timestamps": True}},
        {"name": "long text", "audio": long_audio, "mode": "text", "config": {}},
        {"name": "long stop after the first window", "audio": long_audio, "mode": "tokens", "config": {},
         "stop_after": 1},
        {"name": "long text stop at the 2nd chunk", "audio": long_audio, "mode": "text", "config": {},
         "stop_after": 2},
        {"name": "text stop at the 1st chunk", "audio": one, "mode": "text", "config": {}, "stop_after": 1},
        {"name": "cancel at the 3rd token", "audio": one, "mode": "tokens", "config": {}, "stop_after": 3,
         "status": "CANCEL"},
    ]
    with _binding_pipe(whisper_real_ir) as pipe:
        plain = _ours(pipe, [cases[0]])[0]
        n = len(plain["writes"])  # the last write is the end token
        assert n > 4 and plain["ended"] == 1
        for k in (1, 2, 3, n - 1, n):  # n - 1: the step under way finishes the text and is streamed after the stop
            cases.append({"name": f"stop at token {k}", "audio": english[0].audio, "mode": "tokens", "config": {},
                          "stop_after": k})
        ours = _ours(pipe, cases)
    theirs = _oracle(whisper_real_ir, cases, tmp_path)
    _compare(ours, theirs, cases)
    by_name = {c["name"]: o for c, o in zip(cases, ours)}
    # what the cases show (so that a change in both libraries would be seen too)
    assert by_name["stop at token 1"]["tokens"] == 1 and len(by_name["stop at token 2"]["writes"]) == 2
    assert by_name["stop at token 2"]["tokens"] == 3  # the step under way is kept, not streamed
    assert len(by_name[f"stop at token {n - 1}"]["writes"]) == n  # ...unless it ends the text
    assert all(len(w) == 1 for w in by_name["tokens[0]"]["writes"])
    assert len(by_name["timestamps[0]"]["writes"]) == 1 and len(by_name["long timestamps"]["writes"]) >= 2
    assert "".join(by_name["text[0]"]["chunks"]) == by_name["text[0]"]["text"]
    assert by_name["stop at token 3"]["after"] == by_name["tokens[0]"]["text"]


def test_streaming_multilingual_exact_with_genai(api, whisper_multilingual_ir, speech_samples, tmp_path):
    """Language detection and translate: the language / task tokens are the prompt's, never streamed."""
    cases = []
    for i, s in enumerate(list(speech_samples.foreign)[:2]):
        cases.append({"name": f"detect[{i}]", "audio": s.audio, "mode": "tokens", "config": {}})
        cases.append({"name": f"translate[{i}]", "audio": s.audio, "mode": "text", "config": {"task": "translate"}})
    with _binding_pipe(whisper_multilingual_ir) as pipe:
        ours = _ours(pipe, cases)
    _compare(ours, _oracle(whisper_multilingual_ir, cases, tmp_path), cases)


def test_beam_search_streams_the_chosen_beam(api, whisper_real_ir, speech_samples, tmp_path):
    """A streamer with beam search (upstream allows it): with timestamps each window's text tokens, as GenAI streams
    them; without, the chosen beam's tokens (its end token too) in one write when the search ends — GenAI writes one
    of its finished beams there, in its map's order, often not the one its result keeps: ours always is, so the
    streamed text is the result's. The results equal GenAI's in every case."""
    english = list(speech_samples.english)
    long_audio = np.concatenate([s.audio for s in english])
    cases: List[Dict[str, Any]] = []
    for i, s in enumerate(english[:4]):
        for beams in (2, 4):
            config = {"num_beams": beams}
            cases.append({"name": f"tokens[{i}] x{beams}", "audio": s.audio, "mode": "tokens", "config": config})
            cases.append({"name": f"text[{i}] x{beams}", "audio": s.audio, "mode": "text", "config": config})
            cases.append({"name": f"timestamps[{i}] x{beams}", "audio": s.audio, "mode": "tokens",
                          "config": {**config, "return_timestamps": True}})
    cases += [{"name": "long x2", "audio": long_audio, "mode": "tokens", "config": {"num_beams": 2}},
              {"name": "long x2 stop after the first window", "audio": long_audio, "mode": "tokens",
               "config": {"num_beams": 2}, "stop_after": 1}]
    with _binding_pipe(whisper_real_ir) as pipe:
        ours = _ours(pipe, cases)
        tok = pipe.get_tokenizer()
        eos = pipe.get_generation_config().eos_token_id
        decode = [tok.decode(o["writes"][0]) if c["mode"] == "tokens" and o["writes"] else None
                  for c, o in zip(cases, ours)]
    theirs = _oracle(whisper_real_ir, cases, tmp_path)
    same_as_genai_beam = 0
    for c, a, b, text in zip(cases, ours, theirs, decode):
        assert a["text"] == b["text"], c["name"]
        timestamps = c["config"].get("return_timestamps") or c["name"].startswith("long")
        if timestamps:  # (long-form decodes with timestamps)
            assert a == b, f"{c['name']}:\n  ours  {a}\n  genai {b}"
        elif c["mode"] == "tokens":
            assert len(a["writes"]) == 1 and a["writes"][0][-1] == eos and a["ended"] == 1, c["name"]
            assert text == a["text"], c["name"]  # the chosen beam
            same_as_genai_beam += a["writes"] == b["writes"]
        else:
            assert "".join(a["chunks"]) == a["text"], c["name"]
    assert same_as_genai_beam >= 1  # where GenAI's first finished beam is the chosen one, the same write
    stopped = ours[-1]
    assert len(stopped["writes"]) == 1 and stopped["text"] != ours[-2]["text"]  # a stop ends the audio


def test_text_streamer_and_asr_pipeline(api, whisper_real_ir, speech_samples):
    """A TextStreamer over the pipeline's tokenizer, a TextStreamer keeping special tokens (decoded here from the
    ids) and ASRPipeline all stream the result's text."""
    import ovgenai_c
    from ovgenai_c import streamers
    from testsupport import bundled_library_path

    audio = speech_samples.english[1].audio
    with _binding_pipe(whisper_real_ir) as pipe:
        want = pipe.generate(audio).texts[0]
        got: List[str] = []
        pipe.generate(audio, streamer=streamers.TextStreamer(pipe.get_tokenizer(), got.append))
        assert "".join(got) == want
        raw: List[str] = []
        keep = streamers.TextStreamer(pipe.get_tokenizer(), raw.append, {"skip_special_tokens": False})
        pipe.generate(audio, streamer=keep)
        assert "".join(raw) == want + "<|endoftext|>"
    with ovgenai_c.ASRPipeline(str(whisper_real_ir), "CPU", library=str(bundled_library_path()), **F32) as asr:
        pieces: List[str] = []
        result = asr.generate(audio, streamer=pieces.append)
        assert "".join(pieces) == result.texts[0] == want


def test_streamer_failures_and_reentry(api, whisper_real_ir, speech_samples):
    """A streamer's exception stops the transcription and is raised from generate() as it was; a streamer calling
    its own pipeline (generate, close) gets a RuntimeError; a bad streamer is refused; the pipeline answers as
    before after each."""
    from ovgenai_c import errors

    audio = speech_samples.english[2].audio
    with _binding_pipe(whisper_real_ir) as pipe:
        want = pipe.generate(audio).texts[0]
        seen: List[str] = []

        def failing(text: str) -> None:
            seen.append(text)
            raise ValueError("streamer broke on " + text)

        with pytest.raises(ValueError, match="streamer broke on") as info:
            pipe.generate(audio, streamer=failing)
        assert len(seen) == 1 and str(info.value) == "streamer broke on " + seen[0]
        assert pipe.generate(audio).texts[0] == want

        for call in (lambda: pipe.generate(audio), pipe.close, lambda: pipe.set_generation_config(
                pipe.get_generation_config())):
            def reentrant(text: str, call=call) -> None:
                call()

            with pytest.raises(RuntimeError, match="re-entrant|own streamer"):
                pipe.generate(audio, streamer=reentrant)
            assert pipe.generate(audio).texts[0] == want
        for bad in (42, "text"):
            with pytest.raises(errors.InvalidParameterError, match="streamer must be a callable"):
                pipe.generate(audio, streamer=bad)


def test_timeout_stops_a_streaming_transcription(api, whisper_real_ir, speech):
    """A slow streamer and a timeout: GenerationTimeoutError saying the transcription was cancelled, the streamer is
    not called after generate() raised, and the next call answers in full."""
    from ovgenai_c import errors

    with _binding_pipe(whisper_real_ir) as pipe:  # (one window without timestamps: a chunk per few tokens)
        want = pipe.generate(speech[0]).texts[0]
        t0 = time.monotonic()
        chunks = len(list(pipe.stream(speech[1])))
        whole = time.monotonic() - t0  # (the timeout: the first chunk comes well before, the end ~0.2 s x chunks after)
        assert chunks >= 8
        calls: List[float] = []

        def slow(text: str) -> None:
            calls.append(time.monotonic())
            time.sleep(0.2)

        t0 = time.monotonic()
        with pytest.raises(errors.GenerationTimeoutError, match="was cancelled"):
            pipe.generate(speech[1], streamer=slow, timeout=whole)
        raised = time.monotonic()
        assert raised - t0 < whole + 2.0 and 0 < len(calls) < chunks
        n = len(calls)
        time.sleep(0.5)
        assert len(calls) == n and all(t <= raised for t in calls)
        assert pipe.generate(speech[0]).texts[0] == want


def test_stream_iterator(api, whisper_real_ir, whisper_multilingual_ir, speech):
    """WhisperPipeline.stream(): the pieces make the text, ``.result`` is what generate() returns (chunks with
    timestamps, on audio of several windows); closing it early stops the transcription (the next call answers in
    full); a timeout stops it and says so; ASRPipeline.stream() gives ASR's results."""
    import ovgenai_c
    from ovgenai_c import errors
    from testsupport import bundled_library_path

    from test_whisper_bundled import _long_audio

    long_audio = _long_audio(speech)
    with _binding_pipe(whisper_real_ir) as pipe:
        want = pipe.generate(long_audio, return_timestamps=True)
        s = pipe.stream(long_audio, return_timestamps=True)
        pieces = list(s)
        assert len(pieces) >= 2 and "".join(pieces) == want.texts[0] == s.text
        assert s.result.texts == want.texts and [(c.start_ts, c.end_ts, c.text) for c in s.result.chunks] == \
            [(c.start_ts, c.end_ts, c.text) for c in want.chunks]
        assert next(s, None) is None  # done: stays done

        t0 = time.monotonic()
        full = pipe.generate(long_audio)
        whole = time.monotonic() - t0
        with pipe.stream(long_audio) as s:
            first = next(s)
            t0 = time.monotonic()
        closed_in = time.monotonic() - t0
        assert first and s.result is None and closed_in < 0.5 * whole, (closed_in, whole)
        assert pipe.generate(long_audio).texts == full.texts  # nothing of the stopped call stayed behind
        with pytest.raises(errors.GenerationTimeoutError, match=r"stream\(\) exceeded .* was cancelled"):
            for _ in pipe.stream(np.concatenate([long_audio] * 3), timeout=0.3):
                pass
        assert pipe.generate(speech[0]).texts[0].strip()
    with ovgenai_c.ASRPipeline(str(whisper_multilingual_ir), "CPU", library=str(bundled_library_path()),
                               **F32) as asr:
        want = asr.generate(speech[0], context="ignored for Whisper")
        s = asr.stream(speech[0], context="ignored for Whisper")
        assert "".join(s) == want.texts[0] and type(s.result) is type(want)
        assert s.result.texts == want.texts and s.result.languages == want.languages


def test_astream(api, whisper_real_ir, speech):
    """WhisperPipeline.astream(): the pieces make the text; closing it early (or cancelling the consuming task) stops
    the transcription without blocking the loop, and the next call answers in full; a timeout raises."""
    import asyncio

    from ovgenai_c import errors

    from test_whisper_bundled import _long_audio

    long_audio = _long_audio(speech)
    with _binding_pipe(whisper_real_ir) as pipe:
        t0 = time.monotonic()
        want = pipe.generate(long_audio).texts[0]
        whole = time.monotonic() - t0

        async def collect() -> List[str]:
            return [piece async for piece in pipe.astream(long_audio)]

        pieces = asyncio.run(collect())
        assert len(pieces) >= 2 and "".join(pieces) == want

        async def first_then_close():
            stream = pipe.astream(long_audio)
            first = await stream.__anext__()
            ticks = 0

            async def tick():  # the loop stays free while the close waits for C
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0.001)

            ticker = asyncio.ensure_future(tick())
            t0 = time.monotonic()
            await stream.aclose()
            ticker.cancel()
            return first, time.monotonic() - t0, ticks

        first, closing, ticks = asyncio.run(first_then_close())
        assert first and closing < 0.5 * whole and ticks >= 1, (closing, whole, ticks)

        async def cancel_the_consumer():
            got: List[str] = []

            async def consume():
                async for piece in pipe.astream(long_audio):
                    got.append(piece)

            task = asyncio.ensure_future(consume())
            while not got:
                await asyncio.sleep(0.005)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return got

        assert asyncio.run(cancel_the_consumer())
        assert pipe.generate(long_audio).texts[0] == want  # nothing of the stopped calls stayed behind

        async def too_slow():
            async for _ in pipe.astream(np.concatenate([long_audio] * 3), timeout=0.3):
                pass

        with pytest.raises(errors.GenerationTimeoutError, match=r"astream\(\) exceeded .* was cancelled"):
            asyncio.run(too_slow())


# ---------------------------------------------------------------------------------------------------- the C function


def _c_generate(api, pipe, audio: np.ndarray, streamer) -> int:
    a = np.ascontiguousarray(audio, dtype=np.float32)
    r = api.ffi.new("ov_genai_whisper_decoded_results**")
    st = getattr(api.lib, GENERATE_STREAMING)(pipe, api.ffi.cast("float*", a.ctypes.data), a.size, api.ffi.NULL,
                                              streamer, r)
    if st == 0:
        api.lib.ov_genai_whisper_decoded_results_free(r[0])
    return st


def test_c_contract(api, real_ir, speech):
    """NULLs are refused by name; a text callback gets the text; with the thread's token streamer set the ids go
    there and the text callback may be NULL; STOP ends the call with OK."""
    ffi, lib = api.ffi, api.lib
    pipe = api.pipeline(real_ir)
    want = api.generate(pipe, speech[0])["text"]
    audio = np.ascontiguousarray(speech[0], dtype=np.float32)
    raw = ffi.cast("float*", audio.ctypes.data)
    out = ffi.new("ov_genai_whisper_decoded_results**")
    fn = getattr(lib, GENERATE_STREAMING)
    assert fn(pipe, raw, audio.size, ffi.NULL, ffi.NULL, out) == INVALID_C_PARAM
    assert "streamer" in api.last_error()
    texts: List[bytes] = []

    @ffi.callback("ov_genai_streaming_status_e(const char*, void*)")
    def on_text(text, args):
        texts.append(ffi.string(text))
        return 0

    streamer = ffi.new("streamer_callback*", {"callback_func": on_text, "args": ffi.NULL})
    for bad in ((ffi.NULL, raw, audio.size, ffi.NULL, streamer, out), (pipe, ffi.NULL, audio.size, ffi.NULL,
                                                                        streamer, out),
                (pipe, raw, audio.size, ffi.NULL, streamer, ffi.NULL),
                (pipe, raw, audio.size, ffi.NULL, ffi.new("streamer_callback*"), out)):
        assert fn(*bad) == INVALID_C_PARAM
    assert not texts
    assert _c_generate(api, pipe, speech[0], streamer) == 0
    assert b"".join(texts).decode() == want

    ids: List[List[int]] = []

    @ffi.callback("ov_genai_streaming_status_e(const int64_t*, size_t, void*)")
    def on_ids(p, n, args):
        ids.append([p[i] for i in range(n)])
        return 1 if len(ids) == 2 else 0  # STOP at the second token

    lib.ovgenai_c_bundled_set_token_streamer(on_ids, ffi.NULL)
    try:
        assert _c_generate(api, pipe, speech[0], ffi.NULL) == 0, api.last_error()
    finally:
        lib.ovgenai_c_bundled_set_token_streamer(ffi.NULL, ffi.NULL)
    assert len(ids) == 2 and all(len(x) == 1 for x in ids)
    assert api.generate(pipe, speech[0])["text"] == want  # the stop left nothing behind


REENTRY = textwrap.dedent(r'''
    import sys
    import numpy as np
    sys.path[:0] = sys.argv[3:]
    import test_whisper_bundled as t
    import test_whisper_streaming as s
    from testsupport import bundled_library_path
    api = t.Api(bundled_library_path())
    pipe = api.pipeline(sys.argv[1])
    audio = np.load(sys.argv[2])
    inner = []

    @api.ffi.callback("ov_genai_streaming_status_e(const char*, void*)")
    def back_in(text, args):
        if not inner:
            inner.append(s._c_generate(api, pipe, audio, streamer))
            inner.append("re-entrant" in api.last_error())
            cfg = api.ffi.new("ov_genai_whisper_generation_config**")
            inner.append(api.lib.ov_genai_whisper_pipeline_get_generation_config(pipe, cfg))
        return 0

    streamer = api.ffi.new("streamer_callback*", {"callback_func": back_in, "args": api.ffi.NULL})
    outer = s._c_generate(api, pipe, audio, streamer)
    print(outer, inner, api.generate(pipe, audio)["text"].strip() != "")
''')


def test_c_callback_calling_back_in_gets_an_error_not_a_deadlock(api, real_ir, speech, tmp_path):
    np.save(tmp_path / "a.npy", speech[0])
    here = pathlib.Path(__file__).resolve().parent
    proc = subprocess.run([sys.executable, "-c", REENTRY, str(real_ir), str(tmp_path / "a.npy"), str(here),
                           str(here.parent)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # UNKNOW_EXCEPTION for both calls back in (the error saying why), the outer call and a later one go on
    assert proc.stdout.strip() == "0 [-17, True, -17] True", proc.stdout


# ---------------------------------------------------------------------------------------------------- front-ends


def _bundled_library():
    from testsupport import bundled_library_path

    from ovgenai_c import _loader

    path = bundled_library_path()
    if path is None or not path.is_file():
        pytest.skip("bundled backend not built")
    return _loader.open_library(str(path))


def test_provider_and_cli_stream(api, whisper_real_ir, speech, tmp_path):
    """Provider.transcribe(on_text=) gets the text as it comes (True stops it, keeping what was decoded) and says
    so in its capabilities; `ovgenai-c transcribe` prints the same text streamed as with --no-stream."""
    import os

    from ovgenai_c import errors
    from ovgenai_c.provider import Provider

    from test_whisper_bundled import REPO, _wav

    lib = _bundled_library()
    with Provider(whisper_real_ir, library=lib) as p:
        assert p.capabilities.transcribe_stream and p.capabilities.to_dict()["transcribe_stream"] is True
        pieces: List[str] = []
        r = p.transcribe(speech[1], on_text=pieces.append)
        assert len(pieces) > 3 and "".join(pieces) == r.text
        first: List[str] = []
        cut = p.transcribe(speech[1], on_text=lambda s: first.append(s) or True)
        # (after the stop, the text held back comes too, as GenAI's TextStreamer.end() gives it)
        assert first and cut.text.startswith("".join(first)) and r.text.startswith(cut.text)
        assert len(cut.text) < len(r.text)
        with pytest.raises(errors.InvalidParameterError, match="on_text must be a callable"):
            p.transcribe(speech[1], on_text="print")
    wav = tmp_path / "speech.wav"
    wav.write_bytes(_wav(speech[1]))
    outs = []
    for extra in ([], ["--no-stream"]):
        proc = subprocess.run([sys.executable, "-m", "ovgenai_c", "transcribe", str(wav), "--model",
                               str(whisper_real_ir), "--library", str(lib.path), *extra], cwd=str(REPO),
                              capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, OVGENAI_C_CACHE=str(tmp_path / "cache")))
        assert proc.returncode == 0, proc.stderr[-2000:]
        outs.append(proc.stdout)
    assert outs[0] == outs[1] and outs[0].strip()


def test_server_streams_a_transcription(api, whisper_real_ir, speech):
    """stream=true: transcript.text.delta events as the text comes, then transcript.text.done with the whole text
    (the non-streamed answer), through httpx and the openai client; a client that leaves mid-stream stops the
    transcription, so the next request on the one pipeline is answered without waiting for the rest."""
    for module in ("starlette", "uvicorn", "httpx", "python_multipart"):
        pytest.importorskip(module)
    import httpx

    from test_whisper_bundled import REPO, _long_audio, _wav

    sys.path.insert(0, str(REPO / "tests" / "serve"))
    from serve_helpers import ServerThread

    from ovgenai_c.provider import Provider, SessionPool
    from ovgenai_c.serve import ServeConfig, create_app

    lib = _bundled_library()

    def factory(folder: pathlib.Path, index: int) -> Provider:
        return Provider(folder, library=lib, pool=SessionPool(ttl=None, max_resident=1))

    short_wav = _wav(speech[1])
    very_long_wav = _wav(np.concatenate([_long_audio(speech)] * 8))  # ~10 minutes (19 MB): about 20 windows
    config = ServeConfig(models_root=whisper_real_ir.parent, default_model=whisper_real_ir, parallel=1)
    with ServerThread(create_app(config, provider_factory=factory)) as srv:
        url = srv.url + "/v1/audio/transcriptions"
        files = {"file": ("speech.wav", short_wav, "audio/wav")}
        whole = httpx.post(url, files=files, data={"response_format": "json"}, timeout=120)
        assert whole.status_code == 200, whole.text
        want = whole.json()["text"]
        events = []
        with httpx.stream("POST", url, files=files, data={"stream": "true"}, timeout=120) as r:
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            for line in r.iter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line[len("data: "):]))
        deltas = [e["delta"] for e in events if e["type"] == "transcript.text.delta"]
        assert len(deltas) > 3 and "".join(deltas) == want
        assert events[-1] == {"type": "transcript.text.done", "text": want}

        openai = pytest.importorskip("openai")
        client = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused")
        got = list(client.audio.transcriptions.create(model=whisper_real_ir.name, file=("s.wav", short_wav),
                                                      stream=True))
        assert "".join(e.delta for e in got if e.type == "transcript.text.delta") == want
        assert got[-1].type == "transcript.text.done" and got[-1].text == want

        long_files = {"file": ("long.wav", very_long_wav, "audio/wav")}
        t0 = time.monotonic()
        assert httpx.post(url, files=long_files, data={"response_format": "json"}, timeout=300).status_code == 200
        full = time.monotonic() - t0
        with httpx.stream("POST", url, files=long_files, data={"stream": "true"}, timeout=120) as r:
            for line in r.iter_lines():
                if line.startswith("data: "):
                    break  # the first window's text: then the client leaves
        t0 = time.monotonic()
        again = httpx.post(url, files=files, data={"response_format": "json"}, timeout=120)
        waited = time.monotonic() - t0
        assert again.status_code == 200 and again.json()["text"] == want
        # without the stop it waits for the rest (~90 % of `full`); with it, for about one 30 s window of 20
        assert waited < 0.5 * full, f"the next request waited {waited:.1f} s of a {full:.1f} s transcription"


def test_sampled_transcriptions_through_the_provider_and_the_server(api, whisper_real_ir, speech, tmp_path):
    """A temperature above 0 samples the transcription on the bundled backend (Provider.transcribe(temperature=,
    seed=), OpenAI's ``temperature`` form field): the same text as WhisperPipeline.generate(do_sample=True, ...) with
    that seed; 0 stays greedy; out-of-range values are refused naming the field."""
    for module in ("starlette", "uvicorn", "httpx", "python_multipart"):
        pytest.importorskip(module)
    import httpx

    from test_whisper_bundled import REPO, _wav

    sys.path.insert(0, str(REPO / "tests" / "serve"))
    from serve_helpers import ServerThread

    from ovgenai_c import WhisperPipeline, errors
    from ovgenai_c.provider import Provider, SessionPool
    from ovgenai_c.serve import ServeConfig, create_app

    lib = _bundled_library()
    import io

    from ovgenai_c.audio import read_wav

    wav = _wav(speech[1])
    audio = read_wav(io.BytesIO(wav))  # (what the server reads: a sampled text changes with the int16 rounding)
    with WhisperPipeline(whisper_real_ir, "CPU", library=lib, **F32) as pipe:
        greedy = pipe.generate(audio).texts[0]
        sampled = {seed: pipe.generate(audio, do_sample=True, temperature=1.0, rng_seed=seed).texts[0]
                   for seed in (0, 1, 2, 3)}
    assert any(t != greedy for t in sampled.values()), sampled  # sampling at 1.0 changes the text
    with Provider(whisper_real_ir, library=lib, properties=F32) as p:
        assert p.capabilities.transcribe_sampling and p.capabilities.to_dict()["transcribe_sampling"] is True
        assert p.transcribe(audio, temperature=0).text == p.transcribe(audio).text == greedy
        assert {s: p.transcribe(audio, temperature=1.0, seed=s).text for s in sampled} == sampled
        assert p.transcribe(audio, temperature=1).text == sampled[0]  # seed 0: GenAI's default rng_seed
        for bad in (-0.5, float("nan"), "0.5", True):
            with pytest.raises(errors.InvalidParameterError, match="temperature must be a number >= 0"):
                p.transcribe(audio, temperature=bad)
        with pytest.raises(errors.InvalidParameterError, match="seed must be an int"):
            p.transcribe(audio, temperature=0.5, seed=-1)

    def factory(folder: pathlib.Path, index: int) -> Provider:
        return Provider(folder, library=lib, properties=F32, pool=SessionPool(ttl=None, max_resident=1))

    config = ServeConfig(models_root=whisper_real_ir.parent, default_model=whisper_real_ir, parallel=1)
    with ServerThread(create_app(config, provider_factory=factory)) as srv:
        url = srv.url + "/v1/audio/transcriptions"
        files = {"file": ("speech.wav", wav, "audio/wav")}
        r = httpx.post(url, files=files, data={"temperature": "1.0"}, timeout=120)
        assert r.status_code == 200 and r.json()["text"] == sampled[0], r.text
        # (with timestamps the decoding differs: its segments say the temperature they were sampled at)
        r = httpx.post(url, files=files, data={"temperature": "0.7", "response_format": "verbose_json"}, timeout=120)
        assert r.status_code == 200 and {s["temperature"] for s in r.json()["segments"]} == {0.7}, r.text
        assert httpx.post(url, files=files, data={"temperature": "0"}, timeout=120).json()["text"] == greedy
        events = []
        with httpx.stream("POST", url, files=files, data={"stream": "true", "temperature": "1"}, timeout=120) as s:
            events = [json.loads(line[6:]) for line in s.iter_lines() if line.startswith("data: ")]
        assert events[-1] == {"type": "transcript.text.done", "text": sampled[0]}
        for value in ("1.5", "-0.1", "warm"):
            bad = httpx.post(url, files=files, data={"temperature": value}, timeout=120)
            assert bad.status_code == 400 and bad.json()["error"]["param"] == "temperature", bad.text
    # the command line: --temperature / --seed, as the provider with the CLI's (default-precision) pipeline
    import os

    path = tmp_path / "speech.wav"
    path.write_bytes(wav)
    with Provider(whisper_real_ir, library=lib) as p:
        want = p.transcribe(path, temperature=1.0, seed=2).text.strip()
    runs = []
    for extra in (["--temperature", "1", "--seed", "2", "--no-stream"], ["--temperature", "-1"]):
        runs.append(subprocess.run([sys.executable, "-m", "ovgenai_c", "transcribe", str(path), "--model",
                                    str(whisper_real_ir), "--library", str(lib.path), "--no-cache", *extra],
                                   cwd=str(REPO), capture_output=True, text=True, timeout=300,
                                   env=dict(os.environ, OVGENAI_C_CACHE=str(tmp_path / "cache"))))
    assert runs[0].returncode == 0 and runs[0].stdout.strip() == want, runs[0].stderr[-2000:]
    assert runs[1].returncode != 0 and "--temperature must be >= 0" in runs[1].stderr
