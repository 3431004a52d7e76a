"""Side-by-side benchmarks: binding overhead, backend parity, streaming cost, import footprint, the memory-bandwidth
limit and concurrency — in one run, one process tree, with interleaved repetitions.

    python scripts/bench.py [--model DIR] [--out FILE] [--quick]
    python -m ovgenai_c_tools.bench [...]
    ovgenai-c bench --compare [...]          (the CLI calls ovgenai_c_tools.bench.main(argv))

Each engine lives in its own worker process, loaded once, and the parent sends it one request at a time over a
pipe; repetitions rotate over the engines so machine drift hits them all alike.
Engines:
  ovgenai_c[bundled]   ovgenai_c over the bundled backend (libovgenai_c_bundled.so, our engine over OpenVINO core)
  ovgenai_c[official]  ovgenai_c over libopenvino_genai_c.so, when one is discoverable (pure binding cost)
  genai[PA]            openvino_genai pybind, default configuration (PagedAttention / continuous batching on CPU)
  genai[SDPA]          openvino_genai pybind with ATTENTION_BACKEND="SDPA" (stateful model)
  double               ovgenai_c over the C ABI test double (engine time ~0: isolates the binding's streaming cost)

Whenever ovgenai_c's own discovery reaches an official library (OVGENAI_C_LIBRARY, OPENVINO_GENAI_DIR, the fetched
archive), the "official" section compares ovgenai_c over it with openvino_genai pybind — its archive's own, when
it ships one (genai[archive]) — with and without a streamer, and says when the two are not the same release.

Modules: engines (what a worker serves) and worker (the process protocol); stats (medians, paired ratios, geometric
means with 95 % intervals), probes (bandwidth, import footprint), run (settings and one method per section),
official (the official library and its pybind), ratios (the ratio lines against their targets); render (the text
report); environment (oracle, libraries, model); cli (the argument parser and main).

Only the standard library is imported at module level; ``openvino_genai`` is imported only inside its worker
processes (never by ovgenai_c itself), ``numpy`` only for the bandwidth measurement. Benchmarks are not tests:
nothing here asserts a timing; the exit status is 0 whenever the run completes.
"""
from .cli import build_parser, main
from .environment import ensure_oracle, find_libraries
from .render import render
from .run import SECTIONS, Bench

__all__ = ["main", "build_parser", "render", "SECTIONS", "Bench", "ensure_oracle", "find_libraries"]
