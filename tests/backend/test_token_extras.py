"""The bundled backend's token-level extras against GenAI (openvino_genai, the oracle) on the same IR and
ATTENTION_BACKEND: generate from token ids (GenAI's generate(TokenizedInputs) → EncodedResults.tokens), the
generated ids and scores of results, the per-thread token streamer (what a StreamerBase.write receives)."""
from __future__ import annotations

import pytest

from helpers import Config, generate, make_streamer, oracle_pair, perf_dict

og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")
pytestmark = pytest.mark.engine_explicit  # runs its engines itself: once per test command
ov = pytest.importorskip("openvino", exc_type=ImportError)

ENGINES = ("SDPA", "PA")
OUT_OF_BOUNDS = -6  # ov_status_e OUT_OF_BOUNDS
SAMPLING = dict(do_sample=True, temperature=0.8, top_k=30, rng_seed=11)


@pytest.fixture(scope="module", params=ENGINES)
def engine(request):
    return request.param


@pytest.fixture(scope="module")
def pair(api, create_pipe, smol_dir, engine):
    yield from oracle_pair(api, create_pipe, smol_dir, engine)


def _ids(oracle, text, chat=True):
    tok = oracle.get_tokenizer()
    if chat:
        text = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
    return [int(t) for t in tok.encode(text, add_special_tokens=not chat).input_ids.data[0]]


def _tokens_of(api, res, index=0):
    ffi, lib = api.ffi, api.lib
    n = ffi.new("size_t*")
    assert lib.ovgenai_c_bundled_decoded_results_get_tokens(res, index, ffi.NULL, n) == 0
    buf = ffi.new("int64_t[]", max(n[0], 1))
    assert lib.ovgenai_c_bundled_decoded_results_get_tokens(res, index, buf, n) == 0
    return [buf[i] for i in range(n[0])]


def _generate_tokens(api, pipe, ids, cfg, mask=None, streamer=None):
    """Returns (status, generated ids per sequence, scores, text, perf) — results freed."""
    ffi, lib = api.ffi, api.lib
    res = ffi.new("ov_genai_decoded_results**")
    arr = ffi.new("int64_t[]", ids)
    m = ffi.new("int64_t[]", mask) if mask is not None else ffi.NULL
    st = lib.ovgenai_c_bundled_llm_pipeline_generate_tokens(pipe, arr, len(ids), m, cfg.ptr,
                                                            streamer if streamer is not None else ffi.NULL, res)
    if st != 0:
        return st, None, None, None, None
    try:
        n = ffi.new("size_t*")
        assert lib.ovgenai_c_bundled_decoded_results_get_num_sequences(res[0], n) == 0
        toks = [_tokens_of(api, res[0], i) for i in range(n[0])]
        f = ffi.new("float*")
        scores = []
        for i in range(n[0]):
            assert lib.ovgenai_c_bundled_decoded_results_get_score(res[0], i, f) == 0
            scores.append(f[0])
        return st, toks, scores, api.results_text(res[0]), perf_dict(api, res[0])
    finally:
        lib.ov_genai_decoded_results_free(res[0])


def _oracle_tokens(oracle, ids, mask=None, streamer=None, **kw):
    t_ids = ov.Tensor(__import__("numpy").array([ids], dtype="int64"))
    t_mask = ov.Tensor(__import__("numpy").array([mask if mask is not None else [1] * len(ids)], dtype="int64"))
    return oracle.generate(og.TokenizedInputs(t_ids, t_mask), og.GenerationConfig(**kw), streamer=streamer)


@pytest.mark.parametrize("sampling", [None, SAMPLING], ids=["greedy", "seeded"])
@pytest.mark.parametrize("chat", [True, False], ids=["templated", "raw"])
def test_generate_tokens_matches_genai(api, pair, sampling, chat):
    pipe, oracle = pair
    ids = _ids(oracle, "Name three colours of the sea.", chat)
    kw = dict(max_new_tokens=20, **(sampling or {}))
    st, toks, scores, text, perf = _generate_tokens(api, pipe, ids, Config(api, **kw))
    assert st == 0, api.last_error()
    o = _oracle_tokens(oracle, ids, **kw)
    assert toks == [list(map(int, t)) for t in o.tokens]
    assert scores == pytest.approx(list(o.scores), rel=1e-4, abs=1e-4)
    assert text == oracle.get_tokenizer().decode(o.tokens[0])
    assert perf["num_input"] == o.perf_metrics.get_num_input_tokens()
    assert perf["num_generated"] == o.perf_metrics.get_num_generated_tokens()


def test_generate_tokens_with_left_padding_matches_unpadded(api, pair):
    """Positions whose attention_mask is 0 are left out (as GenAI's PA pipeline does)."""
    pipe, oracle = pair
    ids = _ids(oracle, "Name three colours of the sea.")
    cfg = Config(api, max_new_tokens=12)
    plain = _generate_tokens(api, pipe, ids, cfg)[1]
    padded = _generate_tokens(api, pipe, [0, 0, 0] + ids, cfg, mask=[0, 0, 0] + [1] * len(ids))[1]
    assert padded == plain


def test_scores_of_sampled_sequences_match_genai(api, pair, engine):
    pipe, oracle = pair
    ids = _ids(oracle, "Hi")
    # SDPA: upstream's stateful pipeline reads sequence 0's KV cache for every sampled sequence (native/README,
    # OVGENAI_C_BUNDLED_COMPAT_ROW0), so several sequences are compared on PA only
    kw = dict(max_new_tokens=8, num_return_sequences=3 if engine == "PA" else 1, **SAMPLING)
    st, toks, scores, _, _ = _generate_tokens(api, pipe, ids, Config(api, **kw))
    assert st == 0, api.last_error()
    o = _oracle_tokens(oracle, ids, **kw)
    assert toks == [list(map(int, t)) for t in o.tokens]
    assert scores == pytest.approx(list(o.scores), rel=1e-4)


class _Collect(og.StreamerBase):
    def __init__(self, stop_after=None, status=None):
        super().__init__()
        self.ids, self.calls, self.stop_after, self.status = [], [], stop_after, status

    def write(self, token):
        got = list(token) if isinstance(token, list) else [token]
        self.calls.append(got)
        self.ids += got
        if self.stop_after is not None and len(self.ids) >= self.stop_after:
            return self.status
        return og.StreamingStatus.RUNNING

    def end(self):
        pass


@pytest.mark.parametrize("stop", [None, (3, 1), (5, 2)], ids=["run", "STOP@3", "CANCEL@5"])
def test_token_streamer_gets_genai_ids(api, pair, stop):
    pipe, oracle = pair
    ffi, lib = api.ffi, api.lib
    ids = _ids(oracle, "Tell me about whales.")
    got = []

    @ffi.callback("ov_genai_streaming_status_e(const int64_t*, size_t, void*)")
    def on_tokens(p, n, args):
        got.extend(p[i] for i in range(n))
        if stop is not None and len(got) >= stop[0]:
            return stop[1]
        return 0

    lib.ovgenai_c_bundled_set_token_streamer(on_tokens, ffi.NULL)
    try:
        st, toks, _, _, _ = _generate_tokens(api, pipe, ids, Config(api, max_new_tokens=16))
        # a plain text generate on this thread streams ids too (the streamer_callback may be NULL)
        before = len(got)
        res = ffi.new("ov_genai_decoded_results**")
        assert lib.ov_genai_llm_pipeline_generate(pipe, b"Hi", Config(api, max_new_tokens=3).ptr, ffi.NULL, res) == 0
        lib.ov_genai_decoded_results_free(res[0])
        assert len(got) > before
        del got[before:]
    finally:
        lib.ovgenai_c_bundled_set_token_streamer(ffi.NULL, ffi.NULL)
    assert st == 0, api.last_error()
    theirs = _Collect(*(stop or (None, None)))
    if stop is not None:
        theirs.status = og.StreamingStatus.STOP if stop[1] == 1 else og.StreamingStatus.CANCEL
    o = _oracle_tokens(oracle, ids, streamer=theirs, max_new_tokens=16)
    assert all(len(c) == 1 for c in theirs.calls)  # GenAI writes one id per call here: so do we
    assert got == theirs.ids
    assert toks == [list(map(int, t)) for t in o.tokens]
    # and the text streamer is back once the token streamer is cleared
    chunks = []
    sc, keep = make_streamer(api, lambda s: (chunks.append(s), 0)[1])
    assert generate(api, pipe, "Hi", Config(api, max_new_tokens=4), streamer=sc).status == 0 and chunks


def test_bad_token_input_is_refused(api, pair):
    pipe, _ = pair
    ffi, lib = api.ffi, api.lib
    cfg = Config(api, max_new_tokens=2)
    assert _generate_tokens(api, pipe, [1, 10 ** 9], cfg)[0] != 0
    assert "vocabulary" in api.last_error()
    assert _generate_tokens(api, pipe, [1, -5], cfg)[0] != 0
    assert _generate_tokens(api, pipe, [1, 2], cfg, mask=[0, 0])[0] != 0
    assert "no tokens" in api.last_error()
    assert _generate_tokens(api, pipe, [1, 2], cfg, mask=[1, 7])[0] != 0
    assert "0 or 1" in api.last_error()
    res = ffi.new("ov_genai_decoded_results**")
    assert lib.ovgenai_c_bundled_llm_pipeline_generate_tokens(pipe, ffi.NULL, 3, ffi.NULL, cfg.ptr, ffi.NULL, res) != 0
    assert lib.ovgenai_c_bundled_llm_pipeline_generate_tokens(pipe, ffi.new("int64_t[]", [1]), 0, ffi.NULL, cfg.ptr,
                                                              ffi.NULL, res) != 0
    assert lib.ov_genai_llm_pipeline_start_chat(pipe) == 0
    try:
        assert _generate_tokens(api, pipe, [1, 2], cfg)[0] != 0
        assert "chat" in api.last_error()
    finally:
        assert lib.ov_genai_llm_pipeline_finish_chat(pipe) == 0


def test_result_tokens_two_call_protocol(api, pair):
    pipe, oracle = pair
    ffi, lib = api.ffi, api.lib
    res = ffi.new("ov_genai_decoded_results**")
    ids = _ids(oracle, "Hi")
    assert lib.ovgenai_c_bundled_llm_pipeline_generate_tokens(pipe, ffi.new("int64_t[]", ids), len(ids), ffi.NULL,
                                                              Config(api, max_new_tokens=5, ignore_eos=True).ptr,
                                                              ffi.NULL, res) == 0
    try:
        n = ffi.new("size_t*")
        assert lib.ovgenai_c_bundled_decoded_results_get_tokens(res[0], 0, ffi.NULL, n) == 0 and n[0] == 5
        small = ffi.new("int64_t[]", 4)
        n[0] = 4
        assert lib.ovgenai_c_bundled_decoded_results_get_tokens(res[0], 0, small, n) == OUT_OF_BOUNDS
        assert lib.ovgenai_c_bundled_decoded_results_get_tokens(res[0], 1, ffi.NULL, n) == OUT_OF_BOUNDS
        assert lib.ovgenai_c_bundled_decoded_results_get_score(res[0], 1, ffi.new("float*")) == OUT_OF_BOUNDS
        assert lib.ovgenai_c_bundled_decoded_results_get_tokens(res[0], 0, ffi.NULL, ffi.NULL) != 0
    finally:
        lib.ov_genai_decoded_results_free(res[0])


def _reasons(api, pipe, prompt, cfg, streamer=None):
    ffi, lib = api.ffi, api.lib
    res = ffi.new("ov_genai_decoded_results**")
    st = lib.ov_genai_llm_pipeline_generate(pipe, prompt.encode(), cfg.ptr, streamer if streamer is not None else
                                            ffi.NULL, res)
    assert st == 0, api.last_error()
    try:
        n = ffi.new("size_t*")
        assert lib.ovgenai_c_bundled_decoded_results_get_num_sequences(res[0], n) == 0
        r = ffi.new("int*")
        out = []
        for i in range(n[0]):
            assert lib.ovgenai_c_bundled_decoded_results_get_finish_reason(res[0], i, r) == 0
            out.append(r[0])
        assert lib.ovgenai_c_bundled_decoded_results_get_finish_reason(res[0], n[0], r) == OUT_OF_BOUNDS
        return out
    finally:
        lib.ov_genai_decoded_results_free(res[0])


@pytest.mark.parametrize("case", ["eos", "length", "stop_string", "sampled3", "beams", "STOP", "CANCEL"])
def test_finish_reasons_match_genai(api, pair, engine, case):
    pipe, oracle = pair
    kw = {"eos": dict(max_new_tokens=100), "length": dict(max_new_tokens=5),
          "stop_string": dict(max_new_tokens=100, stop_strings={"!"}),
          "sampled3": dict(max_new_tokens=30, do_sample=True, num_return_sequences=3, rng_seed=1),
          "beams": dict(max_new_tokens=30, num_beams=3, num_return_sequences=2),
          "STOP": dict(max_new_tokens=30), "CANCEL": dict(max_new_tokens=30)}[case]
    if case == "sampled3" and engine == "SDPA":
        pytest.skip("upstream's stateful pipeline reads row 0's KV cache for every sampled sequence (README)")
    cfg = Config(api, **kw)
    sc = keep = None
    o_streamer = None
    if case in ("STOP", "CANCEL"):
        code = 1 if case == "STOP" else 2
        seen = []
        sc, keep = make_streamer(api, lambda s: (seen.append(s), code if len(seen) == 2 else 0)[1])
        o_seen = []
        want = getattr(og.StreamingStatus, case)
        o_streamer = lambda s: (o_seen.append(s), want if len(o_seen) == 2 else og.StreamingStatus.RUNNING)[1]  # noqa: E731
    ours = _reasons(api, pipe, "Hi" if case != "STOP" and case != "CANCEL" else "Write a poem", cfg, sc)
    prompt = "Hi" if case not in ("STOP", "CANCEL") else "Write a poem"
    o = oracle.generate([prompt], og.GenerationConfig(**kw), streamer=o_streamer)
    assert ours == [r.value for r in o.finish_reasons]
