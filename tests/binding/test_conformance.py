"""Conformance: the same tests on every real library implementing the GenAI C ABI that is present — the bundled
backend (when built), the library ``OVGENAI_C_LIBRARY`` names, the official library of ``OPENVINO_GENAI_DIR``
and of the fetched archive (scripts/fetch_genai_archive.sh) — with the tiny model fixture.

Two OpenVINO versions cannot share a process, so each library runs in its own child pytest:
``test_each_library_in_its_own_process[<library>]`` spawns ``pytest`` on this file with
``OVGENAI_C_CONFORMANCE_LIBRARY`` set to the library, and only in that child are the cases below collected
(they load the library as the process's library). Run one library by hand with
``OVGENAI_C_CONFORMANCE_LIBRARY=/path/to/lib.so python3 -m pytest tests/binding/test_conformance.py``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, List, Optional, Tuple

import pytest

import ovgenai_c
from ovgenai_c import _loader, errors
from testsupport import PRECISION_HINT  # one explicit precision on both sides (bf16 is AMX CPUs' default)

TINY_IR = Path(__file__).resolve().parents[1] / "fixtures" / "tiny" / "ir"
CHILD_ENV = "OVGENAI_C_CONFORMANCE_LIBRARY"
IN_CHILD = bool(os.environ.get(CHILD_ENV))


def _present_libraries() -> List[Tuple[str, Optional[str], str]]:
    """(id, library path or None, why it is absent) for every kind of real library, in discovery terms."""
    found = {source: path for source, path in _loader.candidates()}
    bundled = next((p for p in _loader.bundled_candidates() if p.is_file()), None)
    env = os.environ.get("OVGENAI_C_LIBRARY")
    if env and "abi_double" in env:
        env = None  # the ABI double has its own tests
    genai_dir = found.get("OPENVINO_GENAI_DIR")
    fetched = found.get("fetched archive")
    return [
        ("bundled", str(bundled) if bundled else None,
         "the bundled backend is not built (bash scripts/build_backend.sh)"),
        ("OVGENAI_C_LIBRARY", env if env and Path(env).is_file() else None,
         f"OVGENAI_C_LIBRARY names no file ({env})" if env else "OVGENAI_C_LIBRARY is not set"),
        ("OPENVINO_GENAI_DIR", str(genai_dir) if genai_dir and genai_dir.is_file() else None,
         f"no libopenvino_genai_c.so under OPENVINO_GENAI_DIR={os.environ['OPENVINO_GENAI_DIR']}"
         if os.environ.get("OPENVINO_GENAI_DIR") else "OPENVINO_GENAI_DIR is not set"),
        ("fetched-archive", str(fetched) if fetched and fetched.is_file() else None,
         f"no archive fetched into {_loader.data_home() / 'genai-archive'} (scripts/fetch_genai_archive.sh)"),
    ]


def _child_env(library: str) -> dict:
    env = dict(os.environ)
    env[CHILD_ENV] = library
    # a tokenizers path this process's loader chose (for another library) must not reach the child
    chosen = {lib.tokenizers_path for lib in list(_loader._by_path.values()) + [_loader._loaded] if lib}
    if env.get(_loader.TOKENIZERS_ENV) in chosen:
        del env[_loader.TOKENIZERS_ENV]
    return env


@pytest.mark.parametrize("library", [pytest.param(None, id="in-child")] if IN_CHILD else
                         [pytest.param(lib, id=name) for name, lib, _ in _present_libraries()])
def test_each_library_in_its_own_process(library, request):
    if IN_CHILD:
        pytest.skip("this is the child run of one library")
    if library is None:
        why = {name: reason for name, _, reason in _present_libraries()}[request.node.callspec.id]
        pytest.skip(why)
    for name, lib, _ in _present_libraries():
        if name == request.node.callspec.id:
            break
        if lib and os.path.realpath(lib) == os.path.realpath(library):
            pytest.skip(f"the same library as {name}, run there")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", __file__],
                          cwd=Path(__file__).resolve().parents[2], env=_child_env(library), capture_output=True,
                          text=True, timeout=1800)
    summary = proc.stdout.strip().splitlines()[-1:] or ["no output"]
    print(f"{library}: {summary[0]}")
    assert proc.returncode == 0, f"conformance on {library} failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}"


@pytest.fixture(scope="module")
def real_lib():
    path = os.environ.get(CHILD_ENV)
    if not path:
        pytest.skip("conformance cases run in a child process per library (test_each_library_in_its_own_process)")
    lib = _loader.load_library(path)
    if lib.missing_symbols:
        pytest.fail(f"{path} misses {lib.missing_symbols}")
    return lib


@pytest.fixture(scope="module")
def pipe(real_lib):
    p = ovgenai_c.LLMPipeline(TINY_IR, "CPU", library=real_lib, **PRECISION_HINT)  # repeatable on bf16 CPUs too
    yield p
    p.close()


def test_greedy_is_deterministic_and_honours_max_new_tokens(pipe):
    a = pipe.generate("Hello there", max_new_tokens=12, ignore_eos=True)
    b = pipe.generate("Hello there", max_new_tokens=12, ignore_eos=True)
    assert str(a) == str(b) and str(a)
    assert a.perf_metrics.get_num_generated_tokens() == 12
    assert a.perf_metrics.get_num_input_tokens() > 0
    assert a.finish_reason == "length"
    short = pipe.generate("Hello there", max_new_tokens=4, ignore_eos=True)
    assert str(a).startswith(str(short)[: max(len(str(short)) - 4, 0)])


def test_streamed_text_equals_the_result(pipe):
    pieces = []
    res = pipe.generate("Tell me something", max_new_tokens=24, ignore_eos=True, streamer=pieces.append)
    assert "".join(pieces) == str(res)
    assert list(pipe.stream("Tell me something", max_new_tokens=24, ignore_eos=True)) and True
    assert "".join(pipe.stream("Tell me something", max_new_tokens=24, ignore_eos=True)) == str(res)


def test_stop_from_streamer_ends_early(pipe):
    pieces = []

    def streamer(t):
        pieces.append(t)
        return len(pieces) >= 3

    res = pipe.generate("Count", max_new_tokens=40, ignore_eos=True, streamer=streamer)
    # after the STOP the library may flush the text its detokeniser still held back, once (GenAI's
    # TextStreamer.end()); the streamer sees that too, and nothing after it. GenAI's PagedAttention path sees the
    # STOP one step late and returns that step's token unstreamed: the answer starts with what was streamed.
    assert 3 <= len(pieces) <= 4
    assert str(res).startswith("".join(pieces))
    assert res.perf_metrics.get_num_generated_tokens() < 40


def test_early_stream_close_then_next_generate_works(pipe):
    full = str(pipe.generate("abc", max_new_tokens=16, ignore_eos=True))
    it = pipe.stream("abc", max_new_tokens=200, ignore_eos=True)
    next(it)
    it.close()
    assert str(pipe.generate("abc", max_new_tokens=16, ignore_eos=True)) == full


def test_stop_strings(pipe):
    # Upstream matches a stop string against the decoded text's end after each token, so probe with text that
    # ends on a token boundary: the tail of a shorter generation.
    full = str(pipe.generate("Hello", max_new_tokens=30, ignore_eos=True))
    head = str(pipe.generate("Hello", max_new_tokens=10, ignore_eos=True))
    stop = head[-3:]
    if not stop.strip():
        pytest.skip("generated text too uniform for a stop-string probe")
    cut = pipe.generate("Hello", max_new_tokens=30, ignore_eos=True, stop_strings={stop})
    assert full.startswith(str(cut)) and len(cut) <= len(head) - len(stop)
    assert cut.perf_metrics.get_num_generated_tokens() <= 10
    kept = str(pipe.generate("Hello", max_new_tokens=30, ignore_eos=True, stop_strings={stop},
                             include_stop_str_in_output=True))
    assert kept.endswith(stop) and full.startswith(kept) and len(kept) <= len(head)


def test_chat_cancel_drops_the_turn(real_lib):
    with ovgenai_c.LLMPipeline(TINY_IR, library=real_lib, **PRECISION_HINT) as a, \
            ovgenai_c.LLMPipeline(TINY_IR, library=real_lib, **PRECISION_HINT) as b:
        a.start_chat()
        b.start_chat()
        a.generate("first", max_new_tokens=6, ignore_eos=True)
        b.generate("first", max_new_tokens=6, ignore_eos=True)
        a.generate("noise that gets cancelled", max_new_tokens=6, ignore_eos=True,
                   streamer=lambda t: ovgenai_c.StreamingStatus.CANCEL)
        ra = str(a.generate("second", max_new_tokens=8, ignore_eos=True))
        rb = str(b.generate("second", max_new_tokens=8, ignore_eos=True))
        assert ra == rb


def test_history_equals_chat_turns(pipe):
    hist = ovgenai_c.ChatHistory([{"role": "user", "content": "Hi"}])
    r1 = str(pipe.generate(hist, max_new_tokens=8, ignore_eos=True))
    r2 = str(pipe.generate("Hi", max_new_tokens=8, ignore_eos=True))
    assert r1 == r2


def test_several_sampled_sequences_come_back_without_a_streamer(pipe):
    """GenAI refuses any streamer with num_return_sequences > 1, so the binding calls without its cancel callback
    there: the call works, and what needs the callback (a user streamer, stream(), timeout=) is refused first."""
    kw = dict(max_new_tokens=6, do_sample=True, num_return_sequences=3, rng_seed=11, ignore_eos=True)
    res = pipe.generate("Tell me something", **kw)
    assert len(res.texts) == 3 and len(res.scores) == 3
    # GenAI counts the first step once and every later step per sequence: 1 + 5 * 3 (checked against its pybind)
    assert all(res.texts) and res.perf_metrics.get_num_generated_tokens() == 16
    for call in (lambda: pipe.generate("x", streamer=print, **kw), lambda: list(pipe.stream("x", **kw)),
                 lambda: pipe.generate("x", timeout=30, **kw)):
        with pytest.raises(errors.NotSupportedError, match="num_return_sequences > 1"):
            call()
    assert str(pipe.generate("Hello there", max_new_tokens=3))  # the pipeline is fine afterwards


def test_beam_search_returns_ranked_sequences(pipe):
    res = pipe.generate("Tell me something", max_new_tokens=8, num_beams=4, num_return_sequences=3)
    assert len(res.texts) == 3 and all(res.texts) and len(set(res.texts)) == 3
    assert res.scores == sorted(res.scores, reverse=True) and all(s < 0 for s in res.scores)
    one = pipe.generate("Tell me something", max_new_tokens=8, num_beams=4)
    assert str(one) == res.texts[0]  # the best beam alone
    with pytest.raises(errors.NotSupportedError, match="beam search"):
        list(pipe.stream("Tell me something", max_new_tokens=8, num_beams=4))


def _generate_and_cancel(pipe, max_new_tokens, settle_s, **kwargs):
    """Start a no-streamer generate() in a thread, cancel its bridge ``settle_s`` after it started, wait for the
    call: (its result, the bridge)."""
    import threading
    import time

    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", pipe.generate("Go on", max_new_tokens=max_new_tokens,
                                                                           ignore_eos=True, **kwargs)))
    t.start()
    deadline = time.monotonic() + 30
    while pipe._state.active is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(settle_s)
    bridge = pipe._state.active
    assert bridge is not None
    bridge.cancel("test")
    t.join(60)
    assert not t.is_alive()
    return out["r"], bridge


def _official_plain_call_runs_to_its_end(pipe):
    """On the official library a generate() with neither streamer nor timeout has no callback (as pybind's): a
    cancel cannot reach it, the call runs to its end and its finish reason says so."""
    r, bridge = _generate_and_cancel(pipe, 40, 0.0)
    assert r.finish_reason == "length" and r.perf_metrics.get_num_generated_tokens() == 40
    assert bridge.chunks == 0  # no callback was called


@pytest.mark.parametrize("kwargs", [{}, {"timeout": 3600}], ids=["plain", "with-timeout"])
def test_generate_without_a_streamer_still_cancels(pipe, real_lib, kwargs):
    """Without a user streamer the binding keeps its callback for cancellation; on the bundled library it asks
    for cancel-only calls (no per-token detokenisation), and a cancel still ends the call within a token. On the
    official library only a call with a timeout keeps it (any callback costs a detokenisation per token there)."""
    if real_lib.kind == "official" and not kwargs:
        _official_plain_call_runs_to_its_end(pipe)
        return
    r, bridge = _generate_and_cancel(pipe, 20000, 0.3, **kwargs)
    assert r.finish_reason == "cancel" and 0 < r.perf_metrics.get_num_generated_tokens() < 20000
    assert bridge.chunks > 0
    if real_lib.has_cancel_only_streaming and not kwargs:
        assert bridge.text_parts == []  # the callback got no text: nothing was detokenised for it


def test_bad_config_is_refused_with_a_message(pipe):
    with pytest.raises(errors.ConfigError, match="top_p"):
        pipe.generate("x", max_new_tokens=4, do_sample=True, top_p=0.0)


def test_native_validate_rejects_what_python_rejects(real_lib):
    from ovgenai_c import _capi
    from ovgenai_c._capi import generation_config as native_config

    for fields in ({"max_new_tokens": 0}, {"max_new_tokens": 3, "min_new_tokens": 5},
                   {"max_new_tokens": 3, "num_return_sequences": 2}):
        cfg = ovgenai_c.GenerationConfig(**fields)
        native = native_config.materialise(_capi.bind(real_lib), cfg)
        assert real_lib.lib.ov_genai_generation_config_validate(native) == -17
        real_lib.ffi.release(native)


def test_missing_model_files_give_clear_errors(real_lib, tmp_path):
    with pytest.raises(errors.ModelNotFoundError, match="does not exist"):
        ovgenai_c.LLMPipeline(tmp_path / "nope", library=real_lib)
    (tmp_path / "openvino_model.xml").write_text("<net/>")
    with pytest.raises(errors.ModelNotFoundError, match="openvino_tokenizer.xml"):
        ovgenai_c.LLMPipeline(tmp_path, library=real_lib)


def test_corrupt_model_fails_with_an_exception_not_a_crash(real_lib, tmp_path):
    from ovgenai_c.pipeline import IR_FILES

    for name in IR_FILES:
        (tmp_path / name).write_text("garbage")
    with pytest.raises(errors.GenAIError):
        ovgenai_c.LLMPipeline(tmp_path, library=real_lib)


ORACLE_PROMPTS = [("Hello", 16), ("What is the capital of France?", 32), ("é中🎉", 20)]
# the start of every oracle script: its arguments, and openvino_genai (an import failure is reported as the result)
_ORACLE_PRELUDE = r"""
import json, sys
args = json.loads(sys.argv[1])
try:
    import openvino_genai as ov_genai
except ImportError as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}))
    raise SystemExit(0)
"""
_ORACLE = _ORACLE_PRELUDE + r"""
pipe = ov_genai.LLMPipeline(args["model"], "CPU", ATTENTION_BACKEND="SDPA", **args["properties"])
print(json.dumps({"version": ov_genai.get_version(), "module": ov_genai.__file__,
                  "texts": [str(pipe.generate(p, max_new_tokens=n, ignore_eos=True)) for p, n in args["prompts"]]}))
"""


def oracle_env(library_path: str, env: dict, tokenizers_path: Optional[str]) -> Tuple[dict, str]:
    """The environment of the openvino_genai pybind oracle for a library, and where it comes from: the pybind module
    of the official archive the library comes from when the archive ships one (its own OpenVINO), else the installed
    one. The oracle runs in a child: the library's OpenVINO may be another version than the installed wheel's, and
    two cannot share a process. The tokenizers path the loader chose for this library stays out of the child."""
    from ovgenai_c_tools.bench.official import archive_pybind_env

    archive = archive_pybind_env(library_path, env)
    out = dict(archive if archive is not None else env)
    if tokenizers_path and out.get(_loader.TOKENIZERS_ENV) == tokenizers_path:
        del out[_loader.TOKENIZERS_ENV]
    return out, ("the archive's python/openvino_genai" if archive is not None else "the installed openvino_genai")


def run_oracle(script: str, args: dict, lib: Any, cwd: Path, timeout: float, what: str) -> Tuple[dict, str]:
    """Run an oracle script in a child with :func:`oracle_env`'s environment for ``lib``; its result (the JSON of its
    last line) and where its openvino_genai came from. Skips when that cannot be imported, or when ``lib`` is an
    official library and the oracle is of another release."""
    from ovgenai_c_tools.bench.official import release

    env, origin = oracle_env(lib.path, dict(os.environ), lib.tokenizers_path)
    proc = subprocess.run([sys.executable, "-c", script, json.dumps(args)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"the {what} ({origin}) failed:\n{proc.stderr[-3000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if "error" in out:
        pytest.skip(f"openvino_genai (oracle, {origin}) cannot be imported: {out['error']}")
    ours_release = release(lib.openvino_version)
    if lib.kind == "official" and ours_release and ours_release != release(out["version"]):
        pytest.skip(f"no openvino_genai of the library's release: the library runs on OpenVINO "
                    f"{lib.openvino_version}, the oracle ({origin}) is openvino_genai {out['version']}")
    return out, origin


def test_matches_openvino_genai_sdpa_on_the_tiny_model(real_lib, tmp_path):
    args = {"model": str(TINY_IR), "properties": PRECISION_HINT, "prompts": ORACLE_PROMPTS}
    oracle, origin = run_oracle(_ORACLE, args, real_lib, tmp_path, 600, "oracle")
    with ovgenai_c.LLMPipeline(TINY_IR, library=real_lib, ATTENTION_BACKEND="SDPA", **PRECISION_HINT) as ours:
        for (prompt, n), want in zip(ORACLE_PROMPTS, oracle["texts"]):
            got = str(ours.generate(prompt, max_new_tokens=n, ignore_eos=True))
            assert got == want, (prompt, got, want, f"oracle: {origin} {oracle['version']}")


def test_the_oracle_of_an_archive_library_is_the_archive_pybind(tmp_path):
    """An official library inside an archive that ships python/openvino_genai is compared with that pybind module
    (its own OpenVINO), never with the installed one in this process; the loader's tokenizers path stays out."""
    lib = tmp_path / "genai" / "runtime" / "lib" / "intel64" / "libopenvino_genai_c.so"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"")
    env = {"PATH": "/usr/bin", _loader.TOKENIZERS_ENV: str(lib.parent / "libopenvino_tokenizers.so")}
    out, origin = oracle_env(str(lib), env, env[_loader.TOKENIZERS_ENV])
    assert origin == "the installed openvino_genai" and _loader.TOKENIZERS_ENV not in out
    (tmp_path / "genai" / "python" / "openvino_genai").mkdir(parents=True)
    (tmp_path / "genai" / "python" / "openvino_genai" / "__init__.py").write_text("")
    out, origin = oracle_env(str(lib), env, env[_loader.TOKENIZERS_ENV])
    assert origin == "the archive's python/openvino_genai"
    assert out["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path / "genai" / "python")
    assert _loader.TOKENIZERS_ENV not in out
    kept = {**env, _loader.TOKENIZERS_ENV: "/user/choice.so"}
    assert oracle_env(str(lib), kept, env[_loader.TOKENIZERS_ENV])[0][_loader.TOKENIZERS_ENV] == "/user/choice.so"


# ---- vlm_pipeline.h: on any library that exports it (optional functions: a library without them still loads)
VLM_MODEL_ENV = "OVGENAI_C_VLM_MODEL"  # a VLM IR folder the library supports, for the generate cases


@pytest.fixture(scope="module")
def vlm_lib(real_lib):
    from ovgenai_c.vlm_pipeline import missing_functions

    missing = missing_functions(real_lib)
    if missing:
        pytest.skip(f"{real_lib.path} exports no vlm_pipeline.h functions ({', '.join(missing[:3])}, ...)")
    return real_lib


def test_vlm_create_on_a_non_vlm_folder_is_a_clear_error(vlm_lib):
    """The tiny LLM folder is not a VLM: the bundled backend says VLMs need the official library; any other
    library answers with a typed error (not a crash), and no pipeline is left behind."""
    before = vlm_lib.live_handles() if vlm_lib.has_live_counter else None
    with pytest.raises(errors.GenAIError) as info:
        ovgenai_c.VLMPipeline(TINY_IR, "CPU", library=vlm_lib)
    if vlm_lib.kind == "bundled":
        assert isinstance(info.value, errors.NotSupportedError)
        assert "needs the official GenAI C library" in str(info.value)
    else:
        assert "ov_genai_vlm_pipeline_create" in str(info.value)
    if before is not None:
        assert vlm_lib.live_handles() == before  # (the module's LLM pipeline is live meanwhile)


def test_vlm_create_on_a_missing_folder_is_refused_before_c(vlm_lib, tmp_path):
    with pytest.raises(errors.ModelNotFoundError, match="does not exist"):
        ovgenai_c.VLMPipeline(tmp_path / "nope", library=vlm_lib)


def test_vlm_generate_with_an_image_streams_its_result(vlm_lib):
    import numpy as np

    folder = os.environ.get(VLM_MODEL_ENV)
    if vlm_lib.kind == "bundled":
        pytest.skip("the bundled backend does not implement VLMs (create answers NOT_IMPLEMENTED)")
    if not folder:
        pytest.skip(f"no VLM model folder for {vlm_lib.path} (set {VLM_MODEL_ENV} to one it supports)")
    image = np.zeros((64, 64, 3), np.uint8)
    image[:, :32] = 255
    with ovgenai_c.VLMPipeline(folder, "CPU", library=vlm_lib) as vlm:
        pieces = []
        res = vlm.generate("Describe the image.", images=[image], max_new_tokens=12, streamer=pieces.append)
        assert str(res) and "".join(pieces) == str(res)
        assert res.perf_metrics.get_num_generated_tokens() > 0
        assert "".join(vlm.stream("Describe the image.", image=image, max_new_tokens=12)) == str(res)


# ---- whisper_generation_config.h / whisper_pipeline.h: on any library that exports them (optional functions)
WHISPER_MODEL_ENV = "OVGENAI_C_WHISPER_MODEL"  # an English Whisper IR folder (default: the cached whisper-tiny.en)
WHISPER_MULTILINGUAL_ENV = "OVGENAI_C_WHISPER_MULTILINGUAL_MODEL"  # (default: the cached whisper-base)
SPEECH = "The quick brown fox jumps over the lazy dog."


def _whisper_folder(env: str, cached: str) -> Optional[Path]:
    from ovgenai_c.models import cache_root
    from ovgenai_c.whisper_pipeline import missing_whisper_files

    folder = Path(os.environ[env]) if os.environ.get(env) else cache_root() / "models" / cached / "ir"
    return folder if folder.is_dir() and not missing_whisper_files(folder) else None


@pytest.fixture(scope="module")
def whisper_lib(real_lib):
    from ovgenai_c.whisper_pipeline import missing_functions

    missing = missing_functions(real_lib)
    if missing:
        pytest.skip(f"{real_lib.path} exports no Whisper functions ({', '.join(missing[:3])}, ...)")
    return real_lib


@pytest.fixture(scope="module")
def whisper_model(whisper_lib):
    folder = _whisper_folder(WHISPER_MODEL_ENV, "whisper-tiny.en")
    if folder is None:
        pytest.skip(f"no Whisper model (set {WHISPER_MODEL_ENV}, or fetch whisper-tiny.en: "
                    "ovgenai_c.models.default_whisper_model())")
    return folder


@pytest.fixture(scope="module")
def whisper(whisper_lib, whisper_model):
    from ovgenai_c.tokenizer_ir_compat import crash_reason

    why = crash_reason(whisper_model, whisper_lib)
    if why is not None:  # (the binding refuses it: test_a_tokenizer_the_library_would_crash_on_is_refused)
        pytest.skip(f"the Whisper model's tokenizer IR is too new for this library (set {WHISPER_MODEL_ENV} to a "
                    f"folder whose tokenizer the library's openvino_tokenizers converted): {why}")
    try:
        p = ovgenai_c.WhisperPipeline(whisper_model, "CPU", library=whisper_lib)
    except errors.NotImplementedGenAIError as exc:
        pytest.skip(f"{whisper_lib.path} answers NOT_IMPLEMENTED for Whisper: {exc}")
    yield p
    p.close()


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> Path:
    import shutil

    espeak = shutil.which("espeak-ng")
    if espeak is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng): no speech to transcribe")
    path = tmp_path_factory.mktemp("speech") / "fox.wav"
    subprocess.run([espeak, "-w", str(path), SPEECH], check=True, capture_output=True, timeout=60)
    if not _resampler_importable():  # (PyPy: no soxr or scipy wheels) espeak's 22050 Hz made 16 kHz by sox
        sox = shutil.which("sox")
        if sox is None:
            pytest.skip("no resampler here (soxr / scipy) and no sox to write the speech at 16 kHz")
        at_16k = path.with_name("fox16k.wav")
        subprocess.run([sox, str(path), "-r", "16000", str(at_16k)], check=True, capture_output=True, timeout=60)
        return at_16k
    return path


def _resampler_importable() -> bool:
    import importlib.util

    return any(importlib.util.find_spec(m) is not None for m in ("soxr", "scipy"))


_WHISPER_ORACLE = _ORACLE_PRELUDE + r"""
import numpy as np
pipe = ov_genai.WhisperPipeline(args["model"], "CPU")
out = []
for samples, fields in args["requests"]:
    try:
        r = pipe.generate(np.load(samples).tolist(), **fields)
    except Exception as exc:
        out.append({"error": f"{type(exc).__name__}: {exc}".splitlines()[0]})
        continue
    out.append({"text": str(r), "texts": list(r.texts), "scores": [float(x) for x in r.scores],
                "chunks": None if r.chunks is None else [[c.start_ts, c.end_ts, c.text] for c in r.chunks],
                "generated": r.perf_metrics.get_num_generated_tokens(),
                "input": r.perf_metrics.get_num_input_tokens()})
cfg = pipe.get_generation_config()
config = {name: getattr(cfg, name) for name in args["config_fields"]}
print(json.dumps({"version": ov_genai.get_version(), "results": out, "config": config}))
"""


@pytest.fixture(scope="module")
def whisper_oracle(whisper_lib, tmp_path_factory):
    """``oracle(model_folder, [(samples, fields), ...])``: openvino_genai's WhisperPipeline on the same folder and
    samples, in a child process (the library's OpenVINO may be another version than the installed wheel's, and two
    cannot share a process): the archive's own pybind module for an archive library, else the installed one. Returns
    per request the text, texts, scores, chunks and perf counts (or the error), and the pipeline config."""
    import numpy as np

    from ovgenai_c.whisper_config import C_FIELDS

    folder = tmp_path_factory.mktemp("whisper_oracle")

    def oracle(model: Path, requests: list) -> dict:
        reqs = []
        for i, (samples, fields) in enumerate(requests):
            npy = folder / f"{len(list(folder.iterdir()))}_{i}.npy"
            np.save(npy, np.ascontiguousarray(samples, np.float32))
            reqs.append([str(npy), fields])
        args = {"model": str(model), "requests": reqs,
                "config_fields": [*C_FIELDS, "lang_to_id", "max_length", "eos_token_id", "max_new_tokens"]}
        out, origin = run_oracle(_WHISPER_ORACLE, args, whisper_lib, folder, 900, "Whisper oracle")
        out["origin"] = f"{origin} {out['version']}"
        return out

    return oracle


def _same_as_oracle(got, want: dict, what) -> None:
    """A WhisperDecodedResults equals the oracle's: text, texts, scores, chunks (start, end, text) and the perf
    metrics' token counts."""
    assert "error" not in want, (what, want["error"])
    assert str(got) == want["text"] and got.texts == want["texts"], (what, str(got), want["text"])
    assert got.scores == want["scores"], (what, got.scores, want["scores"])
    chunks = None if got.chunks is None else [[c.start_ts, c.end_ts, c.text] for c in got.chunks]
    assert chunks == want["chunks"], (what, chunks, want["chunks"])
    pm = got.perf_metrics
    assert (pm.get_num_generated_tokens(), pm.get_num_input_tokens()) == (want["generated"], want["input"]), what


def test_whisper_create_on_a_non_whisper_folder_is_refused_before_c(whisper_lib, tmp_path):
    with pytest.raises(errors.ModelNotFoundError, match="openvino_encoder_model.xml"):
        ovgenai_c.WhisperPipeline(TINY_IR, library=whisper_lib)
    with pytest.raises(errors.ModelNotFoundError, match="does not exist"):
        ovgenai_c.WhisperPipeline(tmp_path / "nope", library=whisper_lib)


def test_whisper_corrupt_model_fails_with_an_exception_not_a_crash(whisper_lib, tmp_path):
    from ovgenai_c.whisper_pipeline import WHISPER_IR

    for stem in WHISPER_IR:
        for ext in (".xml", ".bin"):
            (tmp_path / f"{stem}{ext}").write_text("garbage")
    before = whisper_lib.live_handles() if whisper_lib.has_live_counter else None
    with pytest.raises(errors.GenAIError):
        ovgenai_c.WhisperPipeline(tmp_path, library=whisper_lib)
    if before is not None:
        assert whisper_lib.live_handles() == before


def test_a_tokenizer_the_library_would_crash_on_is_refused(real_lib, tmp_path):
    """GenAI <= 2026.3 dies (SIGSEGV) on a tokenizer IR whose Truncate takes a non-constant max length (what
    openvino_tokenizers >= 2026.4 writes for Whisper); the binding refuses such a folder by name on that library,
    for Whisper and LLM pipelines alike (the LLM one: the tiny LLM with that tokenizer)."""
    import shutil

    from ovgenai_c.tokenizer_ir_compat import crash_reason

    from ovgenai_c.models import cache_root

    folders = [_whisper_folder(WHISPER_MODEL_ENV, "whisper-tiny.en"), _whisper_folder(WHISPER_MULTILINGUAL_ENV,
                                                                                       "whisper-base")]
    folders += [cache_root() / "models" / name / "ir" for name in ("whisper-tiny.en", "whisper-base")]  # (cached)
    folders = [f for f in folders if f is not None and (f / "openvino_tokenizer.xml").is_file()]
    folder = next((f for f in folders if crash_reason(f, real_lib)), None)
    if folder is None:
        pytest.skip(f"no Whisper model at hand whose tokenizer IR {real_lib.path} would crash on (GenAI <= 2026.3 "
                    "with a tokenizer converted by openvino_tokenizers >= 2026.4)")
    with pytest.raises(errors.NotSupportedError, match="MakePaddingSatateful"):
        ovgenai_c.WhisperPipeline(folder, library=real_lib)
    llm = tmp_path / "llm"
    shutil.copytree(TINY_IR, llm)
    for ext in (".xml", ".bin"):
        shutil.copy(folder / f"openvino_tokenizer{ext}", llm / f"openvino_tokenizer{ext}")
    with pytest.raises(errors.NotSupportedError, match="MakePaddingSatateful"):
        ovgenai_c.LLMPipeline(llm, library=real_lib)


def test_whisper_native_config_fields_round_trip(whisper_lib):
    from ovgenai_c import _capi
    from ovgenai_c._capi import whisper_generation_config as wcfg

    capi = _capi.bind(whisper_lib)
    values = dict(decoder_start_token_id=1, pad_token_id=2, translate_token_id=3, transcribe_token_id=4,
                  prev_sot_token_id=5, no_timestamps_token_id=6, max_initial_timestamp_index=7, is_multilingual=False,
                  language="<|en|>", task="translate", return_timestamps=True, initial_prompt="é中 prompt",
                  hotwords="hot", begin_suppress_tokens=[9, 10], suppress_tokens=[11])
    with wcfg.released(capi, wcfg.create(capi)) as handle:
        defaults = wcfg.read(capi, handle)
        wcfg.update(capi, handle, values)
        back = wcfg.read(capi, handle)
        wcfg.update(capi, handle, {"language": None, "task": None, "suppress_tokens": []})
        cleared = wcfg.read(capi, handle)
    from ovgenai_c.whisper_config import C_FIELDS

    expected_defaults = {k: d for k, (_, d) in C_FIELDS.items()}
    assert {k: defaults[k] for k in expected_defaults} == {k: list(v) if isinstance(v, tuple) else v
                                                           for k, v in expected_defaults.items()}
    assert {k: back[k] for k in values} == values
    assert (cleared["language"], cleared["task"], cleared["suppress_tokens"]) == (None, None, [])


def test_whisper_native_validate_applies_upstreams_rules(whisper_lib):
    from ovgenai_c import _capi
    from ovgenai_c._capi import whisper_generation_config as wcfg

    capi = _capi.bind(whisper_lib)

    def status(**fields) -> int:
        with wcfg.released(capi, wcfg.create(capi)) as handle:
            wcfg.update(capi, handle, fields)
            return whisper_lib.lib.ov_genai_whisper_generation_config_validate(handle)

    assert status() == -17  # multilingual (the default) with no lang_to_id
    assert status(is_multilingual=False) == 0
    assert status(is_multilingual=False, language="en") == -17
    assert status(is_multilingual=False, task="transcribe") == -17


def test_whisper_config_from_the_models_json_matches_pythons(whisper_lib, whisper_model):
    from ovgenai_c import _capi
    from ovgenai_c._capi import whisper_generation_config as wcfg

    capi = _capi.bind(whisper_lib)
    path = whisper_model / "generation_config.json"
    with wcfg.released(capi, wcfg.from_json(capi, str(path))) as handle:
        native = wcfg.read(capi, handle)
    python = ovgenai_c.WhisperGenerationConfig(path)
    assert {k: native[k] for k in python.c_values()} == {k: list(v) if isinstance(v, tuple) else v
                                                         for k, v in python.c_values().items()}


def test_whisper_transcribes_speech_as_openvino_genai(whisper, whisper_oracle, speech):
    from ovgenai_c.audio import read_wav

    samples = read_wav(speech)
    want = whisper_oracle(whisper.models_path, [(samples, {}), (samples, {"return_timestamps": True})])
    got = whisper.generate(samples)
    _same_as_oracle(got, want["results"][0], want["origin"])
    assert "fox" in str(got).lower()
    assert whisper.generate(speech).texts == got.texts  # the WAV path, read and resampled the same way
    assert got.perf_metrics.get_num_generated_tokens() > 0
    assert got.perf_metrics.get_generate_duration().mean > 0
    _same_as_oracle(whisper.generate(samples, return_timestamps=True), want["results"][1], want["origin"])
    assert got.chunks is None


def test_whisper_long_form_audio_matches_openvino_genai(whisper, whisper_oracle, speech):
    import numpy as np

    from ovgenai_c.audio import read_wav

    one = read_wav(speech)
    pause = np.zeros(16000, np.float32)
    samples = np.concatenate([one, pause] * 12)  # > 30 s: several windows
    assert samples.size > 16000 * 30
    calls = [{"return_timestamps": True}, {}]
    want = whisper_oracle(whisper.models_path, [(samples, fields) for fields in calls])
    for fields, expected in zip(calls, want["results"]):
        _same_as_oracle(whisper.generate(samples, **fields), expected, (fields, want["origin"]))


def test_whisper_config_is_the_models(whisper, whisper_oracle, speech):
    from ovgenai_c.audio import read_wav

    theirs = whisper_oracle(whisper.models_path, [(read_wav(speech), {})])["config"]
    ours = whisper.get_generation_config()
    for name, value in theirs.items():
        mine = getattr(ours, name)
        assert (mine if name != "lang_to_id" else dict(mine)) == value, name


def test_whisper_initial_prompt_hotwords_and_set_generation_config(whisper, whisper_oracle, speech):
    from ovgenai_c.audio import read_wav

    samples = read_wav(speech)
    calls = [{"initial_prompt": "Foxes."}, {"hotwords": "Dog"},
             {"initial_prompt": "Foxes.", "hotwords": "Dog", "return_timestamps": True}]
    want = whisper_oracle(whisper.models_path, [(samples, fields) for fields in calls])
    for fields, expected in zip(calls, want["results"]):
        _same_as_oracle(whisper.generate(samples, **fields), expected, (fields, want["origin"]))
    cfg = whisper.get_generation_config()
    cfg.hotwords = "Dog"
    whisper.set_generation_config(cfg)
    try:
        _same_as_oracle(whisper.generate(samples), want["results"][1], ("set_generation_config", want["origin"]))
    finally:
        whisper.set_generation_config(ovgenai_c.WhisperGenerationConfig(
            Path(whisper.models_path) / "generation_config.json"))


def test_whisper_timeout_stops_or_abandons_and_the_pipeline_goes_on(whisper, speech):
    """A timeout stops the transcription where the library has the bundled backend's cancel extra, and abandons the
    wait elsewhere (GenAI's C ABI cannot cancel): either way the error says which, and the next call answers as
    before."""
    from ovgenai_c._capi import whisper_pipeline as native_whisper
    from ovgenai_c.audio import read_wav

    samples = read_wav(speech)
    expected = str(whisper.generate(samples))
    cancels = whisper._library.has_extra(native_whisper.GET_CANCEL)
    with pytest.raises(errors.GenerationTimeoutError, match="was cancelled" if cancels else "NOT stopped"):
        whisper.generate(samples, timeout=0.001)
    assert str(whisper.generate(samples)) == expected


def test_whisper_refusals_on_a_real_library(whisper):
    """A base field (max_new_tokens): set through the bundled backend's extra where the library has it, refused by
    name elsewhere (the C ABI has no setter); audio too short for the feature extractor: refused everywhere."""
    import numpy as np

    from ovgenai_c.whisper_pipeline import BASE_EXTRA

    silence = np.zeros(16000, np.float32)
    if whisper._library.has_extra(BASE_EXTRA):
        assert whisper.generate(silence, max_new_tokens=3).perf_metrics.get_num_generated_tokens() <= 3
    else:
        with pytest.raises(errors.NotSupportedError, match="max_new_tokens"):
            whisper.generate(silence, max_new_tokens=3)
    with pytest.raises(errors.InvalidParameterError, match="too short"):
        whisper.generate(np.zeros(100, np.float32))


def test_whisper_multilingual_language_and_translate_match_openvino_genai(whisper_lib, whisper_oracle, speech):
    """Language and task on a multilingual model. A plain language code ("de") is sent to C as its lang_to_id key
    ("<|de|>"): GenAI 2026.3 refuses the plain form (its pybind too), later releases accept both; the oracle is asked
    with the key, so every release agrees."""
    from ovgenai_c.audio import read_wav
    from ovgenai_c.tokenizer_ir_compat import crash_reason
    from ovgenai_c.whisper_config import wrapped_language

    folder = _whisper_folder(WHISPER_MULTILINGUAL_ENV, "whisper-base")
    if folder is None:
        pytest.skip(f"no multilingual Whisper model (set {WHISPER_MULTILINGUAL_ENV}, or fetch whisper-base)")
    if crash_reason(folder, whisper_lib):
        pytest.skip(f"the multilingual model's tokenizer IR is too new for this library (set "
                    f"{WHISPER_MULTILINGUAL_ENV}): {crash_reason(folder, whisper_lib)}")
    samples = read_wav(speech)
    calls = [{}, {"language": "<|en|>"}, {"language": "de", "task": "translate"}, {"task": "transcribe"},
             {"language": "en", "return_timestamps": True, "initial_prompt": "Foxes."}]
    asked = [{**f, "language": wrapped_language(f["language"])} if "language" in f else f for f in calls]
    want = whisper_oracle(folder, [(samples, fields) for fields in asked])
    with ovgenai_c.WhisperPipeline(folder, library=whisper_lib) as ours:
        for fields, expected in zip(calls, want["results"]):
            _same_as_oracle(ours.generate(samples, **fields), expected, (fields, want["origin"]))
        with pytest.raises(errors.ConfigError, match="must be provided in 'lang_to_id' map"):
            ours.generate(samples, language="xx")


# The cases above are collected only in a child run (one library per process); the parent runs the spawner.
for _name, _case in list(globals().items()):
    if _name.startswith("test_") and _name != "test_each_library_in_its_own_process" and callable(_case):
        _case.__test__ = IN_CHILD
del _name, _case  # (else pytest collects the last case a second time, as "_case", since it carries __test__)
