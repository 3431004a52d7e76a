"""Side-by-side TTFT / TPOT: bundled SDPA vs bundled PA vs openvino_genai default (PA on CPU) vs GenAI SDPA.

All four pipelines live in one process and are run interleaved (round robin, several reps, after warm-up),
so machine noise hits them alike. Greedy, chat template applied, ignore_eos, fixed max_new_tokens.

    python native/tools/bench_attention.py [--model /tmp/smol] [--reps 10] [--new 40] [--prompt TEXT]

The bundled library is OVGENAI_C_BUNDLED_LIB, else ovgenai_c/_bundled/libovgenai_c_bundled.so.
openvino_genai (pip) is only the reference here.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "backend"))

import cffi  # noqa: E402

from helpers import Config, generate  # noqa: E402


class _Api:
    def __init__(self, ffi, lib):
        self.ffi, self.lib = ffi, lib

    def last_error(self):
        return self.ffi.string(self.lib.ovgenai_c_bundled_last_error()).decode()

    def results_text(self, res):
        size = self.ffi.new("size_t*")
        assert self.lib.ov_genai_decoded_results_get_string(res, self.ffi.NULL, size) == 0
        buf = self.ffi.new("char[]", size[0])
        assert self.lib.ov_genai_decoded_results_get_string(res, buf, size) == 0
        return self.ffi.string(buf).decode()


def load_api():
    ffi = cffi.FFI()
    for h in sorted((REPO / "cdefs").glob("0*.h")):
        ffi.cdef(h.read_text())
    ffi.cdef("const char* ovgenai_c_bundled_last_error(void);")
    path = os.environ.get("OVGENAI_C_BUNDLED_LIB") or str(REPO / "ovgenai_c" / "_bundled" / "libovgenai_c_bundled.so")
    return _Api(ffi, ffi.dlopen(path))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="/tmp/smol")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--new", type=int, default=40)
    ap.add_argument("--prompt", default="What is the capital of France?")
    ap.add_argument("--fresh", action="store_true",
                    help="a different question every rep (only the chat template's system prefix can be reused)")
    a = ap.parse_args()

    import openvino_genai as og
    import openvino_tokenizers

    os.environ.setdefault("OPENVINO_TOKENIZERS_PATH_GENAI",
                          str(pathlib.Path(openvino_tokenizers.__file__).parent / "lib" / "libopenvino_tokenizers.so"))
    api = load_api()

    def bundled(backend):
        pipe = api.ffi.new("ov_genai_llm_pipeline**")
        args = [api.ffi.new("char[]", s) for s in (b"ATTENTION_BACKEND", backend.encode())]
        st = api.lib.ov_genai_llm_pipeline_create(a.model.encode(), b"CPU", 2, pipe, *args)
        assert st == 0, api.last_error()
        p = pipe[0]

        def run(prompt):
            r = generate(api, p, prompt, Config(api, max_new_tokens=a.new, ignore_eos=True), want_perf=True)
            assert r.status == 0, api.last_error()
            return r.perf["ttft"][0], r.perf["tpot"][0], r.perf["num_input"], r.text
        return run

    def genai(**props):
        pipe = og.LLMPipeline(a.model, "CPU", **props)

        def run(prompt):
            r = pipe.generate([prompt], max_new_tokens=a.new, ignore_eos=True)
            m = r.perf_metrics
            return m.get_ttft().mean, m.get_tpot().mean, m.get_num_input_tokens(), r.texts[0]
        return run

    runners = {"bundled SDPA": bundled("SDPA"), "bundled PA": bundled("PA"),
               "GenAI default (PA)": genai(), "GenAI SDPA": genai(ATTENTION_BACKEND="SDPA")}
    def prompt_for(i):
        return f"{a.prompt} Answer number {i}." if a.fresh else a.prompt

    for i in range(a.warmup):
        for r in runners.values():
            r(prompt_for(1000 + i))
    data = {k: ([], []) for k in runners}
    info = {}
    for i in range(a.reps):
        for k, r in runners.items():
            ttft, tpot, nin, text = r(prompt_for(i))
            data[k][0].append(ttft)
            data[k][1].append(tpot)
            info[k] = (nin, text)
    ref = data["GenAI default (PA)"]
    ref_ttft, ref_tpot = statistics.median(ref[0]), statistics.median(ref[1])
    print(f"model {a.model}, prompt tokens {info['bundled PA'][0]}, new tokens {a.new}, reps {a.reps} (interleaved)"
          f"{', fresh question each rep' if a.fresh else ', same prompt each rep'}")
    print(f"| {'pipeline':<20} | TTFT ms median (min) | TPOT ms median (min) | TTFT / GenAI default | TPOT / GenAI default |")
    print("|" + "---|" * 5)
    for k, (t1, t2) in data.items():
        m1, m2 = statistics.median(t1), statistics.median(t2)
        print(f"| {k:<20} | {m1:7.2f} ({min(t1):6.2f}) | {m2:6.2f} ({min(t2):5.2f}) | {m1 / ref_ttft:5.2f} | {m2 / ref_tpot:5.2f} |")
    same = info["bundled PA"][1] == info["GenAI default (PA)"][1]
    print(f"bundled PA text == GenAI default text: {same}; "
          f"bundled SDPA text == GenAI SDPA text: {info['bundled SDPA'][1] == info['GenAI SDPA'][1]}")


if __name__ == "__main__":
    main()
