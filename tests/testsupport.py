"""Helpers shared by the test folders (importable: tests/ is on sys.path via tests/conftest.py)."""
from __future__ import annotations

import gc
import json
import os
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple


from ovgenai_c._interpreter import REFCOUNTED  # whether a dropped object goes at once (not at the next GC)


def settle_garbage() -> None:
    """On an interpreter without reference counting (PyPy), run the GC until what was dropped is freed: its
    finalizers run at a collection, and whatever a finalizable object kept alive waits for the next one (a dropped
    pipeline's results, then the pipeline). On CPython nothing: what the tests drop is freed at once, as they check."""
    if not REFCOUNTED:
        for _ in range(4):
            gc.collect()
            time.sleep(0.01)  # (a finalizer may hand work to an owner thread)


def nlohmann_include() -> Path:
    """The include folder of the nlohmann-json pip package (native/src/json parses with it), for tests that compile
    native sources with g++."""
    import importlib.util

    spec = importlib.util.find_spec("nlohmann_json")
    inc = Path(spec.submodule_search_locations[0]) / "include" if spec else None
    if inc is None or not (inc / "nlohmann" / "json.hpp").is_file():
        raise RuntimeError("the nlohmann-json headers are missing: pip install nlohmann-json==3.12.0")
    return inc


def native_unit(name: str, gxx_args: List[str], inputs: List[Path], salt: str = "") -> Path:
    """An executable that ``g++ gxx_args -o EXE`` builds from native sources for a unit test, cached under
    ``<cache>/native_units/<name>-<hash>`` by a hash of ``salt`` and the bytes of ``inputs`` (the sources and headers
    it is built from); skips the test when g++ is missing, fails it with the compiler's output when the build does."""
    import hashlib
    import shutil
    import subprocess

    import pytest

    if shutil.which("g++") is None:
        pytest.skip("g++ not available")
    h = hashlib.sha256(salt.encode())
    for p in inputs:
        h.update(p.read_bytes())
    cache = Path(os.environ.get("OVGENAI_C_CACHE", Path.home() / ".cache" / "ovgenai_c")) / "native_units"
    exe = cache / f"{name}-{h.hexdigest()[:16]}"
    if not exe.exists():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = exe.with_suffix(f".tmp{os.getpid()}")
        res = subprocess.run(["g++", *gxx_args, "-o", str(tmp)], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr[-3000:]
        os.replace(tmp, exe)
    return exe


def bundled_library_path() -> "Path | None":
    """The bundled backend to test: $OVGENAI_C_BUNDLED_LIB / $OVGENAI_C_BUNDLED, else where the binding's own
    loader finds it (the package's _bundled/ — also the installed copy when tests run from a source tree —
    then native/build/)."""
    for var in ("OVGENAI_C_BUNDLED_LIB", "OVGENAI_C_BUNDLED"):
        if os.environ.get(var):
            return Path(os.environ[var])
    from ovgenai_c import _loader

    return next((p for p in _loader.bundled_candidates() if p.is_file()), None)


def open_bundled_or_skip(hint: str = "") -> Any:
    """The real bundled backend as a LoadedLibrary (opened beside the process default), or the test skipped."""
    import pytest

    from ovgenai_c import _loader

    p = bundled_library_path()
    if p is not None and p.is_file():
        return _loader.open_library(str(p))
    pytest.skip("the bundled backend is not built" + hint)


def kept_native_objects(library_path: Any) -> Dict[str, int]:
    """The native objects of the library at ``library_path`` that open pipelines keep between calls without any
    being leaked, by live-handle kind: "config", the native form of a pipeline's last per-call config (one at most
    each, freed with the pipeline), "results", the decoded results behind LLM results still alive whose perf
    metrics, scores and finish reasons were not read yet, and "perf_metrics", the copies behind VLM results whose
    perf metrics were not read yet (both freed when read, when the results go, at the latest when their pipeline
    closes)."""
    from ovgenai_c import pipeline

    path = os.path.realpath(str(library_path))
    states = [st for st in list(pipeline._live_states) if os.path.realpath(st.lib.path) == path]
    unread = [getattr(load, "native_kind", "perf_metrics") for st in states for load in list(st.unread_perf)
              if getattr(load, "pending", True)]  # (a read one may outlive its read for a moment: it holds nothing)
    return {"config": sum(1 for st in states if st.config_cache.holds),
            "results": unread.count("results"), "perf_metrics": unread.count("perf_metrics")}


def transient_native_objects(library: Any, kinds: Any) -> Dict[str, int]:
    """Live handles of ``library`` (a LoadedLibrary with the bundled counter, or the double) by kind, minus what
    :func:`kept_native_objects` accounts for: all zero when nothing leaked. Both are read with the cyclic GC off:
    a collection between the two reads (any allocation can start one) would free results that only a garbage cycle
    still held — counted as kept by the first read, gone from the second (a false "-4 results" seen here). On PyPy
    what was dropped is collected first (settle_garbage): a collection that has already cleared a dropped result's
    weak reference (no longer "kept") may not have run its native free yet (a "+1 results" seen on an AMD EPYC,
    whose cache sizes set PyPy's nursery, and so when collections happen)."""
    settle_garbage()
    enabled = gc.isenabled()
    gc.disable()
    try:
        kept = kept_native_objects(library.path if hasattr(library, "path") else library.library.path)
        count = library.live_handles if hasattr(library, "live_handles") else library.live
        return {k: count(k) - kept.get(k, 0) for k in kinds}
    finally:
        if enabled:
            gc.enable()


# ---- model folders the ABI double accepts ------------------------------------------------------------------------
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def write_tokenizer_xml(path: Path, template: Optional[str]) -> None:
    """An openvino_tokenizer.xml with no layers and rt_info holding `template` (when given) and eos_token_id 2."""
    net = ET.Element("net", name="tokenizer", version="11")
    ET.SubElement(net, "layers")
    ET.SubElement(net, "edges")
    rt = ET.SubElement(net, "rt_info")
    if template is not None:
        ET.SubElement(rt, "chat_template", value=template)
    ET.SubElement(rt, "eos_token_id", value="2")
    ET.ElementTree(net).write(path, encoding="utf-8", xml_declaration=True)


def make_ir(folder: Path, template: Optional[str] = CHATML, profile: Optional[Dict[str, Any]] = None,
            profile_text: Optional[str] = None) -> Path:
    """An IR-shaped folder the double accepts (empty model files) with a real chat template in rt_info, and an
    ovgenai_c.profile.json from `profile` (a dict) or `profile_text` (verbatim) when given."""
    from ovgenai_c.pipeline import IR_FILES

    folder.mkdir(parents=True, exist_ok=True)
    for name in IR_FILES:
        (folder / name).write_text("")
    write_tokenizer_xml(folder / "openvino_tokenizer.xml", template)
    if profile is not None:
        (folder / "ovgenai_c.profile.json").write_text(json.dumps(profile))
    if profile_text is not None:
        (folder / "ovgenai_c.profile.json").write_text(profile_text)
    return folder


# ---- Ctrl-C in children ---------------------------------------------------------------------------------------------
def default_sigint() -> None:
    """preexec_fn for a child that must get Ctrl-C (SIGINT) even when the suite runs with SIGINT ignored (nohup, CI,
    the test command's background lane): an ignored signal stays ignored across exec, and Python then installs no
    KeyboardInterrupt handler."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


# ---- threads ------------------------------------------------------------------------------------------------------
class Threads:
    """n threads running target(0) ... target(n-1), started at once; join() collects what they raised."""

    def __init__(self, target: Callable[[int], Any], n: int, on_hang: Optional[Callable[[], None]] = None) -> None:
        self.failures: List[Tuple[int, str]] = []
        self._on_hang = on_hang
        lock = threading.Lock()

        def run(i: int) -> None:
            try:
                target(i)
            except BaseException as exc:  # reported by join()
                with lock:
                    self.failures.append((i, repr(exc)))

        self.threads = [threading.Thread(target=run, args=(i,), name=f"w{i}") for i in range(n)]
        for t in self.threads:
            t.start()

    def join(self, timeout: float = 60.0) -> List[Tuple[int, str]]:
        """Waits `timeout` s in all; a thread still running then fails the test (on_hang() is called first).
        Returns [(i, repr(exception))] of the calls that raised."""
        import pytest

        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(deadline - time.monotonic(), 0.01))
        alive = [t.name for t in self.threads if t.is_alive()]
        if alive:
            if self._on_hang is not None:
                self._on_hang()
            pytest.fail(f"threads still running after {timeout} s: {alive}")
        return self.failures


def run_threads(target: Callable[[int], Any], n: int, timeout: float = 60.0,
                on_hang: Optional[Callable[[], None]] = None) -> List[Tuple[int, str]]:
    """target(i) on n threads at once, joined (Threads.join); returns [(i, repr(exception))] of those that raised."""
    return Threads(target, n, on_hang).join(timeout)


# ---- inference precision ---------------------------------------------------------------------------------------
# OpenVINO's CPU plugin infers in bf16 by default on CPUs with AMX / avx512_bf16 and in f32 elsewhere. bf16 results
# differ from f32 ones (and GenAI's are not even reproducible call to call under bf16), so every golden file records
# the precision it was made under and every comparison runs both sides under that precision, set explicitly.
GOLDEN_PRECISION = "f32"
PRECISION_HINT = {"INFERENCE_PRECISION_HINT": GOLDEN_PRECISION}  # for LLMPipeline(..., **PRECISION_HINT) / compile_model


def precision_hint(precision: str = GOLDEN_PRECISION) -> dict:
    """The properties that pin the CPU plugin's inference precision (e.g. a golden file's "precision")."""
    return {"INFERENCE_PRECISION_HINT": precision}


def cpu_flags() -> "set[str]":
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_has_bf16() -> bool:
    """True on CPUs where OpenVINO's CPU plugin defaults to bf16 (AMX or avx512_bf16)."""
    return bool(cpu_flags() & {"amx_bf16", "avx512_bf16"})


# ---- native crashes in a child -----------------------------------------------------------------------------------
# Known crashes inside OpenVINO (not in this project) that a test may hit on some CPUs: (signal, needs a bf16 CPU,
# cause). A child that dies this way skips the test with the cause named; any other crash fails it.
KNOWN_OPENVINO_CRASHES = [
    (8, True, "OpenVINO CPU plugin SIGFPE under bf16 when compiling with PERFORMANCE_HINT=THROUGHPUT, "
              "INFERENCE_NUM_THREADS=1 or NUM_STREAMS=2 (known OpenVINO issue; use INFERENCE_PRECISION_HINT=f32)"),
]


def child_outcome(proc, what: str) -> None:
    """Turns a finished child (subprocess.CompletedProcess) into the test's outcome: passes when it exited 0,
    skips on a known OpenVINO crash of this CPU, fails with its output otherwise."""
    import signal

    import pytest

    out = ((proc.stdout or "") + (proc.stderr or "")) if isinstance(proc.stdout, (str, type(None))) else \
        ((proc.stdout or b"") + (proc.stderr or b"")).decode("utf-8", "replace")
    if proc.returncode == 0:
        return
    if proc.returncode < 0:
        sig = -proc.returncode
        for known_sig, needs_bf16, cause in KNOWN_OPENVINO_CRASHES:
            if sig == known_sig and (cpu_has_bf16() or not needs_bf16):
                pytest.skip(f"{what}: {cause}")
        pytest.fail(f"{what}: the child died by {signal.Signals(sig).name}\n{out[-4000:]}")
    pytest.fail(f"{what}: the child exited {proc.returncode}\n{out[-4000:]}")
