"""VLMPipeline over the ABI double: images reach C as libopenvino_c tensors (the double reads their type and shape
and names them in its echo), on the owner thread, with the LLM pipeline's streaming, cancellation, errors and
handle accounting."""
from __future__ import annotations

import asyncio
import dataclasses
import gc
import sys
import threading
import time

import numpy as np
import pytest

import ovgenai_c
from ovgenai_c import _ffi, errors
from ovgenai_c._capi import vlm_pipeline as capi_vlm
from testsupport import settle_garbage

IMG = np.zeros((32, 48, 3), np.uint8)


@pytest.fixture
def make_vlm(double, model_dir):
    made = []

    def _make(**kw):
        p = ovgenai_c.VLMPipeline(model_dir, library=double.library, **kw)
        made.append(p)
        return p

    yield _make
    for p in made:
        p.close()


def _ops(double):
    return [op for op, _, _ in double.thread_log()]


def test_the_vlm_functions_are_optional_and_resolve_on_the_double(double):
    assert len(_ffi.vlm_functions()) == 13
    assert not set(_ffi.vlm_functions()) & set(_ffi.required_functions())
    assert len(_ffi.required_functions()) == 83
    assert all(double.library.has_extra(n) for n in _ffi.vlm_functions())


def test_a_library_without_them_loads_and_vlm_pipeline_names_what_is_missing(double, model_dir):
    lib = dataclasses.replace(double.library, extras=frozenset(
        n for n in double.library.extras if n not in ("ov_genai_vlm_pipeline_create", "ov_genai_vlm_pipeline_free")))
    with pytest.raises(errors.NotSupportedError) as info:
        ovgenai_c.VLMPipeline(model_dir, library=lib)
    assert "ov_genai_vlm_pipeline_create, ov_genai_vlm_pipeline_free" in str(info.value)
    assert "vlm_create" not in _ops(double)
    assert double.live() == 0


def test_generate_sends_every_image_with_its_shape(make_vlm, double):
    pipe = make_vlm()
    res = pipe.generate("describe", images=[IMG, np.ones((2, 16, 16, 3), np.uint8)], max_new_tokens=50)
    assert res.texts == ["Echo: describe [2 images: 32x48x3 2x16x16x3]"]
    assert type(res) is ovgenai_c.VLMDecodedResults and isinstance(res, ovgenai_c.DecodedResults)
    assert res.perf_metrics.get_num_generated_tokens() == 6
    assert res.perf_metrics.get_load_time() == pytest.approx(12.5)
    assert str(pipe.generate("one", image=IMG, max_new_tokens=50)) == "Echo: one [1 image: 32x48x3]"
    assert str(pipe.generate("bare", images=IMG, max_new_tokens=50)) == "Echo: bare [1 image: 32x48x3]"
    assert str(pipe.generate("text only", max_new_tokens=50)) == "Echo: text only"
    assert double.live("vlm_results") == 0 and double.live("results") == 0


def test_create_generate_free_run_on_the_owner_thread(double, model_dir):
    caller = threading.get_native_id()
    pipe = ovgenai_c.VLMPipeline(model_dir, library=double.library)
    owner = pipe.owner_thread_id
    pipe.generate("a", image=IMG, max_new_tokens=5)
    pipe.start_chat()
    pipe.finish_chat()
    pipe.close()
    log = double.thread_log()
    assert {"vlm_create", "vlm_generate", "vlm_start_chat", "vlm_finish_chat", "vlm_free"} <= {op for op, _, _ in log}
    assert all(tid == owner for _, _, tid in log) and owner != caller
    assert double.live() == 0
    with pytest.raises(errors.PipelineClosedError):
        pipe.generate("x", image=IMG, max_new_tokens=2)


def test_forgotten_pipeline_is_freed_on_its_owner(double, model_dir):
    pipe = ovgenai_c.VLMPipeline(model_dir, library=double.library)
    owner = pipe.owner_thread_id
    pipe.generate("x", image=IMG, max_new_tokens=3)
    del pipe
    gc.collect()
    settle_garbage()  # (PyPy: the results go at one collection, the pipeline they kept alive at the next)
    deadline = time.monotonic() + 5
    while double.live("vlm_pipeline") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert double.live() == 0
    assert [tid for op, _, tid in double.thread_log() if op == "vlm_free"] == [owner]


def test_every_image_form_is_taken(make_vlm, double, tmp_path):
    Image = pytest.importorskip("PIL.Image")

    pipe = make_vlm()
    strided = np.zeros((10, 40, 3), np.uint8)[:, ::2]  # not C-contiguous: copied
    path = tmp_path / "red.png"
    Image.new("RGB", (7, 5), (255, 0, 0)).save(path)
    forms = [ovgenai_c.Tensor(IMG), strided, Image.new("RGBA", (9, 4)), str(path), path]
    res = pipe.generate("forms", images=forms, max_new_tokens=50)
    assert str(res) == "Echo: forms [5 images: 32x48x3 10x20x3 4x9x3 5x7x3 5x7x3]"


def test_image_files_without_pillow_name_the_extra(make_vlm, double, tmp_path, monkeypatch):
    pipe = make_vlm()
    path = tmp_path / "x.png"
    path.write_bytes(b"not read")
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(errors.NotSupportedError) as info:
        pipe.generate("x", image=path)
    assert "Pillow" in str(info.value) and "ovgenai_c[vision]" in str(info.value)
    assert "vlm_generate" not in _ops(double)


@pytest.mark.parametrize("bad, words", [
    (np.zeros((4, 4, 3), np.float32), "must be uint8"),
    (np.zeros((4, 4), np.uint8), "3 dims (height, width, 3) or 4"),
    (np.zeros((1, 1, 4, 4, 3), np.uint8), "got shape [1, 1, 4, 4, 3]"),
    (np.zeros((4, 4, 4), np.uint8), "3 channels (RGB)"),
    (np.zeros((0, 4, 3), np.uint8), "the image is empty"),
    ("/no/such/image.png", "no such image file"),
    (42, "not int"),
])
def test_bad_images_are_refused_before_c(make_vlm, double, bad, words):
    pipe = make_vlm()
    with pytest.raises(errors.InvalidParameterError) as info:
        pipe.generate("x", images=[IMG, bad])
    assert words in str(info.value) and "images[1]" in str(info.value)
    with pytest.raises(errors.InvalidParameterError):
        pipe.stream("x", image=bad)
    assert "vlm_generate" not in _ops(double)


def test_positional_arguments_are_pybinds_images_config_streamer(make_vlm, double):
    """As openvino_genai.VLMPipeline.generate(prompt, images, generation_config, streamer): image= is keyword-only."""
    pipe = make_vlm()
    cfg = ovgenai_c.GenerationConfig(max_new_tokens=2)
    seen = []
    res = pipe.generate("a b c", [IMG], cfg, seen.append)
    assert str(res) == "Echo: a " and "".join(seen) == "Echo: a "
    assert "".join(pipe.stream("a b c", IMG, cfg)) == "Echo: a "
    with pytest.raises(errors.NotSupportedError, match="videos"):
        pipe.generate("x", videos=[IMG])


def test_images_and_image_together_are_refused(make_vlm, double):
    pipe = make_vlm()
    with pytest.raises(errors.InvalidParameterError, match="not both"):
        pipe.generate("x", images=[IMG], image=IMG)
    with pytest.raises(errors.InvalidParameterError, match="takes one image"):
        pipe.generate("x", image=[IMG])
    with pytest.raises(errors.NotSupportedError, match="one prompt"):
        pipe.generate(["a", "b"], image=IMG)


def test_the_double_checks_tensor_types_itself(make_vlm, double):
    """Past the Python checks (the capi layer called directly): the library sees the tensors' real type/shape."""
    pipe = make_vlm()
    from ovgenai_c._streaming import StreamBridge

    def run(arrays):
        def _go(st):
            return capi_vlm.generate(st.capi, st.handle, None, StreamBridge(None), streamable=False,
                                     cancel_only=False, prompt=b"raw", images=arrays)
        return pipe._call(_go)

    assert run([IMG]).text == "Echo: raw [1 image: 32x48x3]"
    with pytest.raises(errors.UnknownExceptionError):
        run([np.zeros((4, 4, 3), np.float32)])
    with pytest.raises(errors.UnknownExceptionError):
        run([np.zeros((4, 4, 2), np.uint8)])

    def null_tensor(st):
        ffi = st.capi.ffi
        out = ffi.new("ov_genai_vlm_decoded_results**")
        return st.capi.lib.ov_genai_vlm_pipeline_generate(st.handle, b"x", ffi.new("const struct ov_tensor*[]", 1),
                                                          1, ffi.NULL, ffi.NULL, out)

    assert pipe._call(null_tensor) == -14
    assert double.live("vlm_results") == 0


def test_the_callers_array_can_change_while_a_stream_runs(make_vlm, double):
    double.delay(20000)
    pipe = make_vlm()
    arr = np.zeros((8, 8, 3), np.uint8)
    it = pipe.stream("a b c d", image=arr, max_new_tokens=50)
    first = next(it)
    arr.resize((0,), refcheck=False)  # the caller's buffer goes away: the call has its own copy
    del arr
    gc.collect()
    rest = "".join(it)
    assert first + rest == "Echo: a b c d [1 image: 8x8x3]"


def test_stream_streamer_and_astream(make_vlm, double):
    pipe = make_vlm()
    stream = pipe.stream("hi", image=IMG, max_new_tokens=50)
    parts = list(stream)
    assert parts == ["Echo: ", "hi ", "[1 ", "image: ", "32x48x3]"]
    assert type(stream.result) is ovgenai_c.VLMDecodedResults and str(stream.result) == "".join(parts)
    seen = []
    res = pipe.generate("hi", images=[IMG], streamer=seen.append, max_new_tokens=50)
    assert "".join(seen) == str(res)

    async def main():
        return "".join([p async for p in pipe.astream("yo", image=IMG, max_new_tokens=50)])

    assert asyncio.run(main()) == "Echo: yo [1 image: 32x48x3]"


def test_a_token_level_streamer_is_refused(make_vlm, double):
    from ovgenai_c.streamers import StreamerBase

    class Tokens(StreamerBase):
        def write(self, token):
            return ovgenai_c.StreamingStatus.RUNNING

        def end(self):
            pass

    pipe = make_vlm()
    with pytest.raises(errors.NotSupportedError, match="token-level"):
        pipe.generate("x", image=IMG, streamer=Tokens())


def test_streamer_cancel_and_closing_a_stream_cancel_natively(make_vlm, double):
    pipe = make_vlm()
    pipe.start_chat()
    pipe.generate("kept", image=IMG, max_new_tokens=50)
    pipe.generate("dropped", image=IMG, max_new_tokens=50, streamer=lambda t: ovgenai_c.StreamingStatus.CANCEL)
    assert double.ctl.ovd_last_callback_status() == 2
    assert double.chat_size(pipe) == 2
    pipe.finish_chat()
    double.delay(20000)
    before = double.ctl.ovd_callback_count()
    it = pipe.stream(" ".join(f"w{i}" for i in range(100)), image=IMG, max_new_tokens=1000)
    assert next(it)
    it.close()
    assert double.ctl.ovd_last_callback_status() == 2
    assert double.ctl.ovd_callback_count() - before < 50
    assert double.live("vlm_results") == 0


@pytest.mark.parametrize("entry", ["generate", "stream", "astream"])
def test_timeout_cancels_natively(make_vlm, double, entry):
    double.delay(50000)
    pipe = make_vlm()
    prompt = " ".join(["w"] * 200)
    with pytest.raises(errors.GenerationTimeoutError) as info:
        if entry == "generate":
            pipe.generate(prompt, image=IMG, max_new_tokens=1000, timeout=0.2)
        elif entry == "stream":
            with pipe.stream(prompt, image=IMG, max_new_tokens=1000, timeout=0.2) as it:
                list(it)
        else:
            async def consume():
                return [p async for p in pipe.astream(prompt, image=IMG, max_new_tokens=1000, timeout=0.2)]
            asyncio.run(consume())
    assert f"{entry}() exceeded its timeout of 0.2 s" in str(info.value)
    assert info.value.partial_text.startswith("Echo:")
    assert double.ctl.ovd_last_callback_status() == 2
    assert double.live("vlm_results") == 0


def test_chat_history_goes_through_generate_with_history(make_vlm, double):
    pipe = make_vlm()
    history = ovgenai_c.ChatHistory([{"role": "user", "content": "what is this"}])
    res = pipe.generate(history, image=IMG, max_new_tokens=50)
    assert str(res) == "Echo: what is this [1 image: 32x48x3]"
    assert str(pipe.generate([{"role": "user", "content": "again"}], max_new_tokens=50)) == "Echo: again"
    with pytest.raises(errors.InvalidParameterError, match="empty"):
        pipe.generate(ovgenai_c.ChatHistory(), image=IMG)


def test_generation_config_roundtrip(make_vlm, double):
    pipe = make_vlm()
    cfg = pipe.get_generation_config()
    cfg.max_new_tokens = 2
    pipe.set_generation_config(cfg)
    assert pipe.get_generation_config().max_new_tokens == 2
    assert str(pipe.generate("a b c d", image=IMG)) == "Echo: a "
    assert "vlm_set_config" in _ops(double)
    assert double.live("config") == 0


@pytest.mark.parametrize("function, status, exc", [
    ("ov_genai_vlm_pipeline_generate", -1, errors.GeneralError),
    ("ov_genai_vlm_pipeline_generate", -17, errors.UnknownExceptionError),
    ("ov_genai_vlm_pipeline_generate_with_history", -7, errors.UnexpectedError),
    ("ov_genai_vlm_decoded_results_get_string", -6, errors.OutOfBoundsError),
    ("ov_genai_vlm_decoded_results_get_perf_metrics", -1, errors.GeneralError),
])
def test_faults_become_typed_errors_and_leak_nothing(make_vlm, double, function, status, exc):
    pipe = make_vlm()
    double.fail(function, status, 0)
    prompt = ovgenai_c.ChatHistory([{"role": "user", "content": "q"}]) if "history" in function else "q"
    with pytest.raises(exc) as info:
        pipe.generate(prompt, image=IMG, max_new_tokens=5)
    assert function in str(info.value)
    double.ctl.ovd_reset()
    assert str(pipe.generate("ok", max_new_tokens=5)) == "Echo: ok"
    settle_garbage()  # (the dropped results' perf-metrics copy: at once on CPython, at a collection on PyPy)
    assert double.live("vlm_results") == 0 and double.live("perf_metrics") == 0


def test_midstream_failure_raises_after_the_streamed_text(make_vlm, double):
    pipe = make_vlm()
    double.fail("generate_midstream", -7, 2)
    seen = []
    with pytest.raises(errors.UnexpectedError):
        pipe.generate("a b c d e f", image=IMG, max_new_tokens=50, streamer=seen.append)
    assert len(seen) == 2
    assert double.live("vlm_results") == 0


def test_failing_create_leaves_no_thread_or_handle(double, model_dir):
    before = threading.active_count()
    double.fail("ov_genai_vlm_pipeline_create", -17, 0)
    with pytest.raises(errors.UnknownExceptionError) as info:
        ovgenai_c.VLMPipeline(model_dir, library=double.library)
    assert "ov_genai_vlm_pipeline_create" in str(info.value) and "VLM model folder" in str(info.value)
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == before
    assert double.live() == 0


def test_model_path_checks(double, tmp_path):
    with pytest.raises(errors.ModelNotFoundError, match="does not exist"):
        ovgenai_c.VLMPipeline(tmp_path / "nope", library=double.library)
    (tmp_path / "f.bin").write_bytes(b"")
    with pytest.raises(errors.ModelNotFoundError, match="is a file"):
        ovgenai_c.VLMPipeline(tmp_path / "f.bin", library=double.library)
    assert double.live() == 0


def test_handles_of_one_kind_are_refused_by_the_other(make_vlm, make_pipe, double):
    """An LLM handle given to a VLM function (and the reverse) is INVALID_C_PARAM, not a crash."""
    vlm, llm = make_vlm(), make_pipe()
    lib, ffi = double.library.lib, double.library.ffi
    assert lib.ov_genai_llm_pipeline_start_chat(ffi.cast("ov_genai_llm_pipeline*", vlm._state.handle)) == -14
    assert lib.ov_genai_vlm_pipeline_start_chat(ffi.cast("ov_genai_vlm_pipeline*", llm._state.handle)) == -14
    assert lib.ov_genai_vlm_pipeline_start_chat(ffi.NULL) == -14
    assert double.chat_size(vlm) == -1  # no chat was started on either


def test_names_match_openvino_genai_vlm_pipeline():
    """Every public method of openvino_genai.VLMPipeline exists here, but set_chat_template (the C API cannot set
    a template), and generate's positional parameters are pybind's images overload's."""
    import inspect

    ov_genai = pytest.importorskip("openvino_genai", reason="openvino_genai (oracle) not installed")
    theirs = {n for n in dir(ov_genai.VLMPipeline) if not n.startswith("_")}
    assert theirs - {"set_chat_template"} <= set(dir(ovgenai_c.VLMPipeline))
    params = list(inspect.signature(ovgenai_c.VLMPipeline.generate).parameters)
    assert params[:5] == ["self", "prompt", "images", "generation_config", "streamer"]
    assert "generate(self: openvino_genai.py_openvino_genai.VLMPipeline, prompt: str, images: " in \
        ov_genai.VLMPipeline.generate.__doc__


def test_result_and_base_class_names_are_openvino_genais(make_vlm, double):
    """VLMDecodedResults (a DecodedResults, for a str prompt too: not a str, as pybind's) and VLMPipelineBase, for
    code that checks types against openvino_genai's; the results pickle as themselves; LLMPipeline's stay
    DecodedResults."""
    import pickle

    pipe = make_vlm()
    assert isinstance(pipe, ovgenai_c.VLMPipelineBase) and isinstance(pipe, ovgenai_c.LLMPipeline)
    res = pipe.generate("text only", max_new_tokens=50)
    assert type(res) is ovgenai_c.VLMDecodedResults and not isinstance(res, str)
    assert repr(res).startswith("VLMDecodedResults(texts=['Echo: text only']")
    back = pickle.loads(pickle.dumps(res))
    assert type(back) is ovgenai_c.VLMDecodedResults and back == res
    ov_genai = pytest.importorskip("openvino_genai", reason="openvino_genai (oracle) not installed")
    assert [c.__name__ for c in ov_genai.VLMDecodedResults.__mro__[:2]] == \
        [c.__name__ for c in ovgenai_c.VLMDecodedResults.__mro__[:2]]
    assert ov_genai.VLMPipelineBase in ov_genai.VLMPipeline.__mro__


def test_a_system_message_chat_is_refused_by_name(make_vlm, double):
    """VLMPipeline.start_chat(system_message) is refused: a conversation kept here and sent through the C API as a
    history would lose the earlier turns' images (a plain start_chat goes on as before)."""
    pipe = make_vlm()
    with pytest.raises(ovgenai_c.NotSupportedError, match=r"VLMPipeline.start_chat\(system_message\)"):
        pipe.start_chat("Be terse.")
    pipe.start_chat()
    assert str(pipe.generate("hi", max_new_tokens=50)) == "Echo: hi"
    pipe.finish_chat()


def test_set_chat_template_is_refused_by_name(make_vlm):
    """pybind's VLMPipeline.set_chat_template has no C function: NotSupportedError, not AttributeError."""
    pipe = make_vlm()
    with pytest.raises(errors.NotSupportedError, match="set_chat_template: vlm_pipeline.h has no function"):
        pipe.set_chat_template("{{ messages }}")
