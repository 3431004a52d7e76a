"""Continuous batching (cdefs/93, ovgenai_c.batching.ContinuousBatchingPipeline) on the bundled backend.

Exactness: a request run alone in the batching engine is token-exact with LLMPipeline's single-request run (greedy,
and seeded sampling). Batched, a sequence's logits come from matrix products of another shape, so at near-ties
they can differ from the single-request run on the real model — as in openvino_genai's ContinuousBatchingPipeline,
which gives the same tokens as ours for the same schedule (checked below with step() driving both). The tiny
model has no such near-ties: there every batched sequence equals its single-request run, also when requests
arrive at different steps and when one is cancelled mid-way.
"""
from __future__ import annotations

import gc

import pytest

from helpers import run_in_child
from testsupport import PRECISION_HINT, child_outcome

ovgenai_c = pytest.importorskip("ovgenai_c")
from ovgenai_c import errors  # noqa: E402
from ovgenai_c.batching import ContinuousBatchingPipeline, GenerationStatus  # noqa: E402

# batching always runs the PagedAttention model, so its single-request references are PA runs too
pytestmark = pytest.mark.engine_explicit

PROMPTS = ["What is the capital of France?", "Write a haiku about the sea.", "1+1=", "Tell me a joke about cats."]


@pytest.fixture
def tiny_cb(tiny_dir):
    with ContinuousBatchingPipeline(tiny_dir, None, "CPU", PRECISION_HINT) as cb:
        yield cb


def cfg(**kw):
    return ovgenai_c.GenerationConfig(**kw)


def alone_tokens(path, prompt, config):
    """Generated ids of `prompt` run alone in a fresh batching pipeline (itself equal to LLMPipeline's run: the
    tests above and test_smollm2_alone_equals_single_run_greedy_and_seeded)."""
    with ContinuousBatchingPipeline(path, None, "CPU", PRECISION_HINT) as cb:
        return cb.generate([prompt], [config])[0].tokens[0]


# ---------------------------------------------------------------- tiny model


def test_batch_shares_steps_and_each_sequence_equals_its_single_run(tiny_dir, tiny_cb):
    configs = [cfg(max_new_tokens=n) for n in (12, 20, 7, 16)]
    results = tiny_cb.generate(PROMPTS, configs)
    m = tiny_cb.get_metrics()
    assert m["max_batch"] == 4 and m["shared_steps"] >= 6, m
    for prompt, config, res in zip(PROMPTS, configs, results):
        with ovgenai_c.LLMPipeline(tiny_dir, "CPU", ATTENTION_BACKEND="PA", **PRECISION_HINT) as pipe:
            ref = pipe.generate(prompt, config)
        assert res.m_status == GenerationStatus.FINISHED
        assert res.m_generation_ids == [str(ref)]
        assert res.finish_reasons == ref.finish_reasons
        assert len(res.tokens[0]) == config.max_new_tokens
    assert m["used_blocks"] == 0 or tiny_cb.get_metrics()["used_blocks"] == 0


def test_generate_measures_the_batch_as_genai_does(tiny_dir):
    """generate()'s results carry the batch's perf metrics (the same times and generated total on each, each
    request's own prompt tokens), whether the pipeline steps itself, a streamer reads the first request, or the
    caller steps (step()); a handle's own result() has none."""
    with ContinuousBatchingPipeline(tiny_dir, None, "CPU", PRECISION_HINT) as cb:
        configs = [cfg(max_new_tokens=n) for n in (9, 5)]
        plain = cb.generate(PROMPTS[:2], configs)
        chunks = []
        streamed = cb.generate(PROMPTS[:1], [cfg(max_new_tokens=9)], streamer=chunks.append)
        handle = cb.add_request(99, PROMPTS[2], cfg(max_new_tokens=3))
        assert handle.result().perf_metrics.get_num_generated_tokens() == 0
        cb.step()  # from now on the caller steps
        stepped = cb.generate(PROMPTS[:2], configs)
    for results in (plain, streamed, stepped):
        total = sum(len(r.tokens[0]) for r in results)
        times = {(r.perf_metrics.get_ttft().mean, r.perf_metrics.get_generate_duration().mean) for r in results}
        assert len(times) == 1  # one batch, one set of times
        for r in results:
            pm = r.perf_metrics
            assert pm.get_num_generated_tokens() == total and pm.get_num_input_tokens() == r.num_input_tokens > 0
            assert 0 < pm.get_ttft().mean <= pm.get_generate_duration().mean
            tpot = (pm.get_generate_duration().mean - pm.get_ttft().mean) / (total - len(results))
            assert pm.get_tpot().mean == pytest.approx(tpot) and pm.get_throughput().mean == pytest.approx(1000 / tpot)
    assert sum(len(r.tokens[0]) for r in plain) == 14 and "".join(chunks) == streamed[0].m_generation_ids[0]


def test_seeded_sampling_per_request_equals_single_run(tiny_dir, tiny_cb):
    configs = [cfg(max_new_tokens=15, do_sample=True, top_k=20, temperature=0.9, rng_seed=s) for s in (1, 2, 3)]
    configs.append(cfg(max_new_tokens=15))  # greedy beside the sampled ones
    results = tiny_cb.generate(PROMPTS, configs)
    refs = []
    for prompt, config in zip(PROMPTS, configs):
        with ovgenai_c.LLMPipeline(tiny_dir, "CPU", ATTENTION_BACKEND="PA", **PRECISION_HINT) as pipe:
            refs.append(str(pipe.generate(prompt, config)))
    assert [r.m_generation_ids[0] for r in results] == refs
    assert len(set(refs[:3])) == 3  # the seeds matter
    again = tiny_cb.generate(PROMPTS[:1], configs[:1])
    assert again[0].m_generation_ids == results[0].m_generation_ids


def test_stop_strings_and_max_new_tokens_per_request(tiny_dir, tiny_cb):
    with ovgenai_c.LLMPipeline(tiny_dir, "CPU", ATTENTION_BACKEND="PA", **PRECISION_HINT) as pipe:
        free_text = str(pipe.generate(PROMPTS[0], cfg(max_new_tokens=30)))
        # a word of the free text that does stop the single-request run (a one-token stop string)
        stop = next(w for w in free_text.split()[2:]
                    if len(str(pipe.generate(PROMPTS[0], cfg(max_new_tokens=30, stop_strings={w})))) < len(free_text))
    configs = [cfg(max_new_tokens=30, stop_strings={stop}),
               cfg(max_new_tokens=30, stop_strings={stop}, include_stop_str_in_output=True),
               cfg(max_new_tokens=5), cfg(max_new_tokens=30)]
    prompts = [PROMPTS[0], PROMPTS[0], PROMPTS[1], PROMPTS[2]]
    results = tiny_cb.generate(prompts, configs)
    for prompt, config, res in zip(prompts, configs, results):
        with ovgenai_c.LLMPipeline(tiny_dir, "CPU", ATTENTION_BACKEND="PA", **PRECISION_HINT) as pipe:
            ref = pipe.generate(prompt, config)
        assert res.m_generation_ids == [str(ref)], config
        assert res.finish_reasons == ref.finish_reasons
    assert stop not in results[0].m_generation_ids[0] and results[1].m_generation_ids[0].endswith(stop)
    assert results[0].finish_reasons == [ovgenai_c.GenerationFinishReason.STOP]


def test_staggered_arrivals_and_cancel_mid_way(tiny_dir, tiny_cb):
    """step() drives the schedule: B arrives at step 4, C at step 7, B is cancelled at step 9."""
    config = cfg(max_new_tokens=20)
    got = {1: [], 2: [], 3: []}
    handles = {}

    def step(n):
        for _ in range(n):
            tiny_cb.step()
            for k, h in handles.items():
                while h.can_read():
                    for out in h.read().values():
                        got[k].extend(out.generated_ids)

    tiny_cb.step()  # nothing queued: the caller steps from now on
    handles[1] = tiny_cb.add_request(1, PROMPTS[0], config, templated=True)
    step(4)
    handles[2] = tiny_cb.add_request(2, PROMPTS[1], config, templated=True)
    step(3)
    handles[3] = tiny_cb.add_request(3, PROMPTS[3], config, templated=True)
    step(2)
    handles[2].cancel()
    read_at_cancel = len(got[2])
    while tiny_cb.has_non_finished_requests():
        step(1)
    assert [handles[k].get_status() for k in (1, 2, 3)] == [GenerationStatus.FINISHED, GenerationStatus.CANCEL,
                                                            GenerationStatus.FINISHED]
    m = tiny_cb.get_metrics()
    assert m["shared_steps"] >= 5 and m["max_batch"] == 3 and m["used_blocks"] == 0, m
    refs = {k: alone_tokens(tiny_dir, PROMPTS[i], config) for k, i in ((1, 0), (2, 1), (3, 3))}
    assert got[1] == refs[1] and got[3] == refs[3]
    # cancelled within one token: nothing given out after the cancel, and what was given is its single run's start
    assert len(got[2]) == read_at_cancel and 0 < read_at_cancel < 20
    assert got[2] == refs[2][:read_at_cancel]
    assert handles[2].read() == {}
    for h in handles.values():
        h.close()
    assert ovgenai_c.load_library().live_handles("generation_handle") == 0


def test_prompts_waiting_together_are_prefilled_in_one_step_beside_the_decodes(tiny_dir, tiny_cb):
    """What bounds the time to first token of a burst of requests: every prompt queued before a step is prefilled in
    that step (all of them, with no token budget set), together with the decodes of the requests already running,
    so each gets its first token after one step whatever the burst's size."""
    config = cfg(max_new_tokens=12)
    tiny_cb.step()  # nothing queued: the caller steps from now on
    first = tiny_cb.add_request(1, PROMPTS[0], config, templated=True)
    tiny_cb.step()
    tiny_cb.step()
    assert len(first.read()[0].generated_ids) == 2
    steps = tiny_cb.get_metrics()["steps"]
    burst = [tiny_cb.add_request(k, p, config, templated=True) for k, p in enumerate(PROMPTS[1:], start=2)]
    assert tiny_cb.get_metrics()["waiting"] == len(burst)
    tiny_cb.step()
    m = tiny_cb.get_metrics()
    assert m["steps"] == steps + 1 and m["max_batch"] == 1 + len(burst), m
    assert m["waiting"] == 0 and m["running"] == 1 + len(burst), m
    assert [len(h.read()[0].generated_ids) for h in burst] == [1] * len(burst)  # each prompt's first token
    assert len(first.read()[0].generated_ids) == 1  # and the running request's next one, in the same inference
    while tiny_cb.has_non_finished_requests():
        tiny_cb.step()
    got = [h.read_all()[0].generated_ids for h in [first] + burst]
    assert got == [alone_tokens(tiny_dir, p, config) for p in PROMPTS]  # token-exact with each single run
    for h in [first] + burst:
        h.close()


def _alone_ids(path, ids, config, sc=None):
    with ContinuousBatchingPipeline(path, sc, "CPU", PRECISION_HINT) as cb:
        return cb.add_request(1, ids, config).read_all()[0].generated_ids


@pytest.mark.parametrize("prefix_caching", [True, False])
def test_a_running_requests_computed_prefix_is_shared_not_prefilled_again(tiny_dir, prefix_caching):
    """A prompt arriving while another request runs takes the common prefix's KV cache from it (down to the token,
    within the blocks that request will not write again; a partly used block is copied on the first write) and
    prefills only the rest; every sequence stays token-exact with its single run, the donor's too."""
    from ovgenai_c import SchedulerConfig

    tok = ovgenai_c.Tokenizer(tiny_dir)
    text = ("The quick brown fox jumps over the lazy dog while the old lighthouse keeper watches the grey sea "
            "and counts the ships that pass the rocks in the long winter night before the storm arrives")
    base = [int(x) for x in tok.encode(text, add_special_tokens=False).input_ids.data.ravel()]
    assert len(base) >= 45
    other = [int(x) for x in tok.encode(" tell me about cats instead", add_special_tokens=False).input_ids.data.ravel()]
    a = base[:45]
    b = base[:25] + [t for t in other if t != base[25]]  # 25 tokens in common with a, then different
    c = list(a)  # the same prompt: as much as a's full blocks hold
    sc = SchedulerConfig()
    sc.enable_prefix_caching = prefix_caching
    config = cfg(max_new_tokens=10)
    with ContinuousBatchingPipeline(tiny_dir, sc, "CPU", PRECISION_HINT) as cb:
        cb.step()  # nothing queued: the caller steps from now on
        ha = cb.add_request(1, a, config)
        cb.step()  # a's prompt computed
        hb, hc = cb.add_request(2, b, config), cb.add_request(3, c, config)
        cb.step()
        m = cb.get_metrics()
        assert m["prompt_tokens"] == len(a) + len(b) + len(c), m
        # b: its 25 common tokens (inside a's first, full block: copied when b writes its 26th); c: a's full block
        assert m["reused_tokens"] == ((25 + 32) if prefix_caching else 0), m
        while cb.has_non_finished_requests():
            cb.step()
        got = [h.read_all()[0].generated_ids for h in (ha, hb, hc)]
        assert cb.get_metrics()["used_blocks"] == 0
    assert got == [_alone_ids(tiny_dir, p, config) for p in (a, b, c)]


def test_stop_keeps_tokens_and_reports_stop(tiny_cb):
    tiny_cb.step()  # nothing queued: the caller steps from now on
    h = tiny_cb.add_request(1, PROMPTS[0], cfg(max_new_tokens=50), templated=True)
    for _ in range(5):
        tiny_cb.step()
    h.stop()
    tiny_cb.step()
    assert h.get_status() == GenerationStatus.STOP
    outs = h.read_all()
    assert len(outs[0].generated_ids) == 5  # one token per step (the prefill's included), none after the stop
    assert outs[0].finish_reason == ovgenai_c.GenerationFinishReason.STOP
    h.close()


def test_background_loop_streams_text_and_handles_return_to_zero(tiny_dir):
    lib = ovgenai_c.load_library()
    gc.collect()
    before = lib.live_handles("generation_handle")
    with ContinuousBatchingPipeline(tiny_dir, None, "CPU", PRECISION_HINT) as cb:
        assert lib.live_handles("batching_pipeline") >= 1
        handles = [cb.add_request(i, p, cfg(max_new_tokens=16), templated=True) for i, p in enumerate(PROMPTS)]
        texts = ["" for _ in handles]
        while any(h.get_status() == GenerationStatus.RUNNING for h in handles):
            for i, h in enumerate(handles):
                h.wait(0.05)
                texts[i] += h.read_text()
        for i, h in enumerate(handles):
            texts[i] += h.read_text()
            assert texts[i] == h.result().m_generation_ids[0]
        del handles, h
    gc.collect()
    assert lib.live_handles("generation_handle") == before
    assert lib.live_handles("batching_pipeline") == 0


def test_read_text_async_streams_every_request_on_the_loop_without_threads(tiny_dir):
    """Awaited reads of concurrent requests, woken by the pipeline's step signal: each stream's text is its whole
    result; no executor thread is started; a timeout with nothing new raises TimeoutError; a free mid-wait ends
    the wait (status IGNORED)."""
    import asyncio

    with ContinuousBatchingPipeline(tiny_dir, None, "CPU", PRECISION_HINT) as cb:
        async def stream(h):
            chunks = []
            while True:
                text = await h.read_text_async(30)
                if text:
                    chunks.append(text)
                elif h.get_status() != GenerationStatus.RUNNING:
                    return chunks

        async def main():
            handles = [cb.add_request(i, p, cfg(max_new_tokens=n), templated=True)
                       for i, (p, n) in enumerate(zip(PROMPTS, (12, 20, 7, 16)))]
            streamed = await asyncio.gather(*(stream(h) for h in handles))
            assert asyncio.get_running_loop()._default_executor is None  # no worker thread was used
            return handles, streamed

        handles, streamed = asyncio.run(main())
        # streamed as the steps came, not all at the end: the tiny model's steps take about a millisecond, so on a
        # loaded machine the loop may see several steps at once — but not every request's whole text in one read
        assert max(len(chunks) for chunks in streamed) >= 2, streamed
        for h, chunks in zip(handles, streamed):
            assert "".join(chunks) == h.result().m_generation_ids[0]
            h.close()

        cb.step()  # the caller steps from now on: nothing moves unless it does
        h = cb.add_request(9, PROMPTS[0], cfg(max_new_tokens=50), templated=True)

        async def stalled():
            with pytest.raises(TimeoutError, match="within 0.2 s"):
                await h.read_text_async(0.2)
            waiter = asyncio.ensure_future(h.read_text_async(30))
            await asyncio.sleep(0.05)
            await asyncio.get_running_loop().run_in_executor(None, cb.close)
            return await asyncio.wait_for(waiter, 10)

        assert asyncio.run(stalled()) == ""
        assert h.get_status() == GenerationStatus.IGNORED
        h.close()


def test_kv_block_limit_queues_and_preempts_and_refuses_what_never_fits(tiny_dir):
    from ovgenai_c import SchedulerConfig

    sc = SchedulerConfig()
    sc.num_kv_blocks = 8
    sc.max_num_batched_tokens = 4096
    sc.enable_prefix_caching = False
    configs = [cfg(max_new_tokens=60) for _ in PROMPTS]
    with ContinuousBatchingPipeline(tiny_dir, sc, "CPU", PRECISION_HINT) as cb:
        results = cb.generate(PROMPTS, configs)
        m = cb.get_metrics()
        assert m["block_limit"] == 8 and m["used_blocks"] == 0 and m["preempted"] >= 1, m
        for prompt, config, res in zip(PROMPTS, configs, results):
            with ovgenai_c.LLMPipeline(tiny_dir, "CPU", ATTENTION_BACKEND="PA", **PRECISION_HINT) as pipe:
                assert res.m_generation_ids == [str(pipe.generate(prompt, config))]
        # one request larger than the whole pool: IGNORED, with the reason
        h = cb.add_request(9, " ".join(["word"] * 400), cfg(max_new_tokens=4))
        with pytest.raises(errors.GenAIError, match="did not fit in the KV cache"):
            h.result()
        assert h.get_status() == GenerationStatus.IGNORED
        h.close()


def test_bad_input_gives_clear_errors(tiny_dir, tiny_cb):
    with pytest.raises(errors.NotSupportedError, match="beam search"):
        tiny_cb.add_request(1, "x", cfg(num_beams=2, num_return_sequences=1, max_new_tokens=3))
    with pytest.raises(errors.GenAIError, match="outside the model's vocabulary"):
        tiny_cb.add_request(1, [1, 2, 10 ** 9], cfg(max_new_tokens=3))
    with pytest.raises(errors.InvalidParameterError):
        tiny_cb.generate(["a", "b"], [cfg(max_new_tokens=2)])
    with pytest.raises(TypeError):
        tiny_cb.add_request(1, 3.5, cfg(max_new_tokens=3))
    with pytest.raises(errors.GenAIError, match="ATTENTION_BACKEND must be PA"):
        ContinuousBatchingPipeline(tiny_dir, None, "CPU", {"ATTENTION_BACKEND": "SDPA"})
    tiny_cb.close()
    with pytest.raises(errors.PipelineClosedError):
        tiny_cb.add_request(1, "x", cfg(max_new_tokens=2))


def test_c_level_null_arguments_and_free_with_running_requests(tiny_dir):
    """In a child: NULL arguments give INVALID_C_PARAM; a step rings the event fd (non-blocking, drained by a read);
    freeing the pipeline with requests running ends them IGNORED, leaves their handles usable and a dup of the event
    fd at end of file."""
    body = """
ffi, lib = api.ffi, api.lib
out = ffi.new("ovgenai_c_bundled_batching_pipeline**")
hint = [ffi.new("char[]", b"INFERENCE_PRECISION_HINT"), ffi.new("char[]", b"f32")]
assert lib.ovgenai_c_bundled_batching_pipeline_create(str(TINY).encode(), b"CPU", 2, out, *hint) == 0, api.last_error()
pipe = out[0]
h = ffi.new("ovgenai_c_bundled_generation_handle**")
assert lib.ovgenai_c_bundled_batching_pipeline_add_request(pipe, ffi.NULL, 1, ffi.NULL, h) == -14
assert "prompt" in api.last_error()
assert lib.ovgenai_c_bundled_batching_pipeline_add_request(ffi.NULL, b"x", 1, ffi.NULL, h) == -14
assert lib.ovgenai_c_bundled_generation_handle_read(ffi.NULL, ffi.NULL, ffi.NULL, ffi.new("size_t*")) == -14
cfg = Config(api, max_new_tokens=100000, ignore_eos=True)
hs = []
for i in range(3):
    assert lib.ovgenai_c_bundled_batching_pipeline_add_request(pipe, b"hello there", 1, cfg.ptr, h) == 0
    hs.append(h[0])
fd = ffi.new("int*")
assert lib.ovgenai_c_bundled_batching_pipeline_get_event_fd(ffi.NULL, fd) == -14
assert lib.ovgenai_c_bundled_batching_pipeline_get_event_fd(pipe, ffi.NULL) == -14
assert lib.ovgenai_c_bundled_batching_pipeline_get_event_fd(pipe, fd) == 0 and fd[0] >= 0
import os, select
mine = os.dup(fd[0])
assert lib.ovgenai_c_bundled_batching_pipeline_step(pipe) == 0  # the caller steps from now on: none runs on
assert select.select([mine], [], [], 5)[0] == [mine]  # a step rang
assert len(os.read(mine, 4096)) >= 1
try:
    os.read(mine, 1)
    raise AssertionError("the drained signal is still readable")
except BlockingIOError:
    pass  # non-blocking and empty until the next step
lib.ovgenai_c_bundled_batching_pipeline_free(pipe)
drained = b""
while True:  # the free's ring, then end of file: the pipeline's own ends are closed
    assert select.select([mine], [], [], 5)[0] == [mine]
    chunk = os.read(mine, 4096)
    if not chunk:
        break
    drained += chunk
os.close(mine)
st = ffi.new("int*")
for x in hs:
    assert lib.ovgenai_c_bundled_generation_handle_get_status(x, st) == 0 and st[0] == 2, st[0]
    lib.ovgenai_c_bundled_generation_handle_free(x)
lib.ovgenai_c_bundled_generation_handle_free(ffi.NULL)
lib.ovgenai_c_bundled_batching_pipeline_free(ffi.NULL)
assert api.live("generation_handle") == 0 and api.live("batching_pipeline") == 0
print("OK")
"""
    child_outcome(run_in_child(body), "batching C API in a child")


# ---------------------------------------------------------------- the real default model


def test_smollm2_alone_equals_single_run_greedy_and_seeded(smol_dir):
    configs = [cfg(max_new_tokens=24), cfg(max_new_tokens=24, do_sample=True, top_p=0.9, rng_seed=7)]
    with ContinuousBatchingPipeline(smol_dir, None, "CPU", PRECISION_HINT) as cb:
        alone = [cb.generate([PROMPTS[0]], [c])[0] for c in configs]
    for config, res in zip(configs, alone):
        with ovgenai_c.LLMPipeline(smol_dir, "CPU", ATTENTION_BACKEND="PA", **PRECISION_HINT) as pipe:
            ref = pipe.generate(PROMPTS[0], config)
        assert res.m_generation_ids == [str(ref)]
        assert res.finish_reasons == ref.finish_reasons


def _genai_ids(og, path, prompts):
    tok = og.Tokenizer(str(path))
    out = []
    for p in prompts:
        text = tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True)
        out.append(tok.encode(text, add_special_tokens=False).input_ids)
    return out


def test_smollm2_batch_equals_genai_continuous_batching(smol_dir):
    og = pytest.importorskip("openvino_genai")
    sc = og.SchedulerConfig()
    sc.max_num_batched_tokens, sc.enable_prefix_caching, sc.num_kv_blocks = 4096, False, 64
    ref_pipe = og.ContinuousBatchingPipeline(str(smol_dir), sc, "CPU", PRECISION_HINT)
    c = og.GenerationConfig()
    c.max_new_tokens = 24
    refs = [r.m_generation_ids[0] for r in ref_pipe.generate(PROMPTS, [c] * 4)]
    ours_sc = ovgenai_c.SchedulerConfig()
    ours_sc.max_num_batched_tokens, ours_sc.enable_prefix_caching, ours_sc.num_kv_blocks = 4096, False, 64
    with ContinuousBatchingPipeline(smol_dir, ours_sc, "CPU", PRECISION_HINT) as cb:
        ours = cb.generate(PROMPTS, [cfg(max_new_tokens=24)] * 4)
        assert cb.get_metrics()["max_batch"] == 4
    assert [r.m_generation_ids[0] for r in ours] == refs
    # perf metrics as GenAI's: the batch's generated tokens and times on every result, each request's prompt tokens
    ref_results = ref_pipe.generate(PROMPTS, [c] * 4)
    for r, ref in zip(ours, ref_results):
        pm, rm = r.perf_metrics, ref.perf_metrics
        assert pm.get_num_input_tokens() == rm.get_num_input_tokens()
        assert pm.get_num_generated_tokens() == rm.get_num_generated_tokens() == sum(len(x.tokens[0]) for x in ours)
        assert 0 < pm.get_ttft().mean < pm.get_generate_duration().mean and pm.get_tpot().mean > 0
        assert pm.get_throughput().mean == pytest.approx(1000 / pm.get_tpot().mean)
        assert rm.get_throughput().mean == pytest.approx(1000 / rm.get_tpot().mean, rel=1e-3)
        assert r.extended_perf_metrics is ref.extended_perf_metrics is None


def test_smollm2_staggered_and_cancelled_equal_genai_on_the_same_schedule(smol_dir):
    og = pytest.importorskip("openvino_genai")
    import numpy as np

    # prompts without near-ties under batching: "What is the capital of France?" is one with (its 7th token
    # flips between '.' and ',' with the batch's shape; see the README's limits)
    ids = _genai_ids(og, smol_dir, [PROMPTS[2], PROMPTS[1], PROMPTS[3]])

    def drive(pipe, make_cfg, prompts):
        config = make_cfg()
        config.max_new_tokens = 30
        got, handles, cancelled = {1: [], 2: [], 3: []}, {}, set()

        def step(n):
            for _ in range(n):
                pipe.step()
                for k, h in handles.items():
                    while k not in cancelled and h.can_read():
                        for out in h.read().values():
                            got[k].extend(int(t) for t in out.generated_ids)

        pipe.step()  # nothing queued yet (ours: the caller steps from now on)
        handles[1] = pipe.add_request(1, prompts[0], config)
        step(4)
        handles[2] = pipe.add_request(2, prompts[1], config)
        step(3)
        handles[3] = pipe.add_request(3, prompts[2], config)
        step(2)
        handles[2].cancel()
        cancelled.add(2)
        while pipe.has_non_finished_requests():
            step(1)
        return got, [int(handles[k].get_status()) for k in (1, 2, 3)]

    sc = og.SchedulerConfig()
    sc.max_num_batched_tokens, sc.enable_prefix_caching, sc.num_kv_blocks = 4096, False, 64
    ref = drive(og.ContinuousBatchingPipeline(str(smol_dir), sc, "CPU", PRECISION_HINT), og.GenerationConfig, ids)
    ours_sc = ovgenai_c.SchedulerConfig()
    ours_sc.max_num_batched_tokens, ours_sc.enable_prefix_caching, ours_sc.num_kv_blocks = 4096, False, 64
    with ContinuousBatchingPipeline(smol_dir, ours_sc, "CPU", PRECISION_HINT) as cb:
        ours = drive(cb, ovgenai_c.GenerationConfig, [[int(x) for x in np.array(t.data).ravel()] for t in ids])
    assert ours == ref
    assert ours[1] == [1, 3, 1] and 0 < len(ours[0][2]) < 30


def test_tokenizer_form_gives_the_folder_forms_answers(tiny_dir, tiny_cb, tmp_path, monkeypatch):
    """openvino_genai's ContinuousBatchingPipeline(models_path, tokenizer, scheduler_config, device, **properties):
    a folder with only the model IR and the tokenizer as an object answer as the whole folder does; the staged
    folder (the C create loads one folder) is gone once the constructor returns."""
    import shutil

    staging = tmp_path / "staging"
    staging.mkdir()
    monkeypatch.setenv("OVGENAI_C_STAGING_DIR", str(staging))
    model_only = tmp_path / "model_only"
    model_only.mkdir()
    for name in ("openvino_model.xml", "openvino_model.bin"):
        shutil.copy(tiny_dir / name, model_only / name)
    with pytest.raises(errors.ModelNotFoundError, match="openvino_tokenizer.xml"):
        ContinuousBatchingPipeline(model_only, None, "CPU", PRECISION_HINT)
    config = cfg(max_new_tokens=10)
    want = [r.m_generation_ids for r in tiny_cb.generate(PROMPTS[:2], [config, config])]
    tok = ovgenai_c.Tokenizer(tiny_dir)
    with ContinuousBatchingPipeline(model_only, tok, None, "CPU", **PRECISION_HINT) as cb:
        assert not any(staging.iterdir()), "the staged folder outlived the constructor"
        assert cb.get_tokenizer() is tok
        assert [r.m_generation_ids for r in cb.generate(PROMPTS[:2], [config, config])] == want
    assert tiny_cb.get_tokenizer().get_eos_token_id() == tok.get_eos_token_id()  # the folder's own, made on demand
    with pytest.raises(TypeError, match="device is missing"):
        ContinuousBatchingPipeline(model_only, tok, None)
    with pytest.raises(TypeError, match="tokenizer must be an ovgenai_c.Tokenizer"):
        ContinuousBatchingPipeline(model_only, None, "CPU", tokenizer=object())


def test_chat_turns_are_genais(tiny_dir):
    """GenAI's ContinuousBatchingPipeline chat (start_chat / finish_chat, deprecated there with a warning, as
    here): each generate takes one prompt and answers the whole conversation; the answers equal openvino_genai's,
    a cancelled turn leaves no trace, several prompts are refused, and finish_chat forgets the turns."""
    og = pytest.importorskip("openvino_genai")
    config = cfg(max_new_tokens=6)
    props = dict(PRECISION_HINT)

    def run(mod, cb, gc):
        out = []
        cb.start_chat("You are terse.")
        for prompt in ("Hello there", "And again"):
            out.append(cb.generate([prompt], [gc])[0].m_generation_ids)
        cb.finish_chat()
        out.append(cb.generate(["And again"], [gc])[0].m_generation_ids)
        return out

    theirs_cb = og.ContinuousBatchingPipeline(str(tiny_dir), og.SchedulerConfig(), "CPU", props)
    with pytest.warns(DeprecationWarning, match="start_chat\\(\\) / finish_chat\\(\\) API is deprecated"):
        theirs = run(og, theirs_cb, og.GenerationConfig(max_new_tokens=6))
    with ContinuousBatchingPipeline(tiny_dir, None, "CPU", props) as cb:
        with pytest.warns(DeprecationWarning, match="start_chat\\(\\) / finish_chat\\(\\) API is deprecated"):
            ours = run(ovgenai_c, cb, config)
        assert ours == theirs
        assert ours[1] != ours[2]  # the second turn saw the first
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            cb.start_chat("You are terse.")
            with pytest.raises(errors.InvalidParameterError, match="Can't chat with multiple prompts"):
                cb.generate(["a", "b"], [config, config])
            first = cb.generate(["Hello there"], [config])[0]
            # long enough (1000 tokens, no EOS) that the first text chunk's CANCEL lands before the request ends
            long = cfg(max_new_tokens=1000, ignore_eos=True)
            cancelled = cb.generate(["And again"], [long], streamer=lambda t: ovgenai_c.StreamingStatus.CANCEL)[0]
            assert cancelled.m_status == GenerationStatus.CANCEL
            again = cb.generate(["And again"], [config])[0]  # as if the cancelled turn had never happened
            cb.finish_chat()
        assert [first.m_generation_ids, again.m_generation_ids] == theirs[:2]
