"""The bundled backend under AddressSanitizer + UBSan (opt-in, it takes minutes): with ``OVGENAI_C_ASAN_LIB`` set to
an ASan/UBSan build of the backend (``cmake -S native -B build-asan -DOVGENAI_C_SANITIZE=address,undefined``), run
the bundled part of this battery against it in a child pytest with libasan preloaded; any sanitizer report fails.

oneTBB (inside OpenVINO) dlopens libtbbbind with RTLD_DEEPBIND, which the ASan runtime refuses; a tiny preloaded
shim (built here) drops that flag so the run can proceed.

One known crash of the sanitizer runtime itself is retried once: GCC 12's libasan sometimes dies tearing a thread
down (SEGV in ``__asan::AsanThread::Destroy`` called from glibc's ``__nptl_deallocate_tsd``, thread "T-1", no frame
outside the runtime and glibc; seen twice in ~15 runs, both with other tests loading the machine). A report with any other frame, or the same crash
twice in a row, fails the test."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from relsupport import ROOT, STATS

SUBSET = ["tests/reliability/test_rel_bundled.py",
          "tests/reliability/test_rel_leaks.py::test_bundled_create_generate_close_cycles",
          "tests/reliability/test_rel_crashprone.py::test_bundled_bad_generate_inputs",
          "tests/reliability/test_rel_crashprone.py::test_bundled_bad_model_files_devices_properties",
          "tests/reliability/test_rel_shutdown.py::test_bundled_exit_with_generation_in_flight",
          "tests/reliability/test_rel_shutdown.py::test_bundled_exit_with_idle_live_pipelines"]

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
typedef void* (*dlopen_fn)(const char*, int);
void* dlopen(const char* file, int flags) {
    static dlopen_fn next_dlopen = NULL;
    if (!next_dlopen) next_dlopen = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
    return next_dlopen(file, flags & ~RTLD_DEEPBIND);
}
"""


_FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ in (\S+)", re.M)


def _is_runtime_teardown_crash(report: str) -> bool:
    """Whether a sanitizer report is the ASan runtime's own crash at a thread's teardown (see the module docstring):
    a SEGV whose every frame is in the runtime's AsanThread, glibc's thread-exit path or clone."""
    frames = _FRAME.findall(report)
    return ("ERROR: AddressSanitizer: SEGV" in report and "in __asan::AsanThread::" in report and bool(frames)
            and all(f.startswith("__asan::AsanThread::") or f.endswith("__nptl_deallocate_tsd")
                    or f in ("start_thread", "clone", "clone3") for f in frames))


def _runtime(cc: str, name: str):
    out = subprocess.run([cc, f"-print-file-name={name}"], capture_output=True, text=True, timeout=30)
    p = out.stdout.strip()
    return p if p and os.path.isabs(p) and os.path.exists(p) else None


def test_bundled_backend_under_asan_and_ubsan(tmp_path):
    lib = os.environ.get("OVGENAI_C_ASAN_LIB")
    if not lib:
        pytest.skip("opt-in: set OVGENAI_C_ASAN_LIB to an ASan/UBSan build of libovgenai_c_bundled.so")
    assert Path(lib).is_file(), f"OVGENAI_C_ASAN_LIB={lib} does not exist"
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to find libasan and build the RTLD_DEEPBIND shim")
    asan = _runtime(cc, "libasan.so")
    if asan is None:
        pytest.skip("libasan.so not found")
    shim = tmp_path / "libnodeepbind.so"
    (tmp_path / "shim.c").write_text(SHIM)
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(shim), str(tmp_path / "shim.c"), "-ldl"], check=True,
                   timeout=120)
    preload = [str(shim), asan] + [p for p in (_runtime(cc, "libubsan.so"),) if p]
    STATS.case("sanitizer")
    proc, reports = _run_subset(tmp_path / "first", preload, lib)
    if reports and all(_is_runtime_teardown_crash(r) for r in reports):
        warnings.warn("the ASan runtime crashed tearing a thread down (no frame outside it); the subset ran again:\n"
                      + reports[0][:1500])
        proc, reports = _run_subset(tmp_path / "again", preload, lib)
    text = "\n".join(r[:4000] for r in reports)
    assert not reports, f"sanitizer reports:\n{text}"
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    last = [line for line in proc.stdout.splitlines() if line.strip()][-1]
    assert " passed" in last and "skipped" not in last, f"the bundled tests did not all run under ASan: {last}"


def _run_subset(folder: Path, preload: list, lib: str):
    """The bundled subset in a child pytest under the sanitizers: (the finished process, the reports' texts)."""
    folder.mkdir()
    logs = folder / "sanitizer"
    env = dict(os.environ)
    env.update({
        "OVGENAI_C_BUNDLED": lib,
        "LD_PRELOAD": " ".join(preload),
        # Python "leaks" by design at exit; OpenVINO's plugins bring their own allocators and duplicate symbols
        "ASAN_OPTIONS": f"verify_asan_link_order=0:detect_leaks=0:exitcode=99:detect_odr_violation=0:"
                        f"alloc_dealloc_mismatch=0:log_path={logs}",
        "UBSAN_OPTIONS": f"print_stacktrace=1:log_path={logs}",
    })
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUBSET], cwd=str(ROOT),
                          env=env, capture_output=True, text=True, timeout=900)
    return proc, [r.read_text(errors="replace") for r in sorted(folder.glob("sanitizer*"))]


_TEARDOWN_CRASH = """=================================================================
==2903==ERROR: AddressSanitizer: SEGV on unknown address 0x7fbb19e08000 (pc 0x7fbb242c6291 bp 0x7fbb233f3a88 sp 0x7fbb1a795df0 T-1)
==2903==The signal is caused by a READ memory access.
    #0 0x7fbb242c6291 in __asan::AsanThread::tid() ../../../../src/libsanitizer/asan/asan_thread.h:77
    #1 0x7fbb242c6291 in __asan::AsanThread::Destroy() ../../../../src/libsanitizer/asan/asan_thread.cpp:100
    #2 0x7fbb232a44d0 in __GI___nptl_deallocate_tsd nptl/nptl_deallocate_tsd.c:73
    #3 0x7fbb232a44d0 in __GI___nptl_deallocate_tsd nptl/nptl_deallocate_tsd.c:22
    #4 0x7fbb232a7034 in start_thread nptl/pthread_create.c:453
    #5 0x7fbb233278eb in clone3 ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81

AddressSanitizer can not provide additional info.
SUMMARY: AddressSanitizer: SEGV ../../../../src/libsanitizer/asan/asan_thread.h:77 in __asan::AsanThread::tid()
==2903==ABORTING
"""  # (the report of the CI run of 2026-12-05 that this retry is for)


def test_only_the_runtime_teardown_crash_is_retried():
    assert _is_runtime_teardown_crash(_TEARDOWN_CRASH)
    # the same crash reached from a frame of ours (a TSD destructor of the backend) is a finding
    ours = _TEARDOWN_CRASH.replace("    #4 0x7fbb232a7034 in start_thread",
                                   "    #4 0x7fbb20000000 in ovgenai::ThreadCache::~ThreadCache() src/x.cpp:9\n"
                                   "    #5 0x7fbb232a7034 in start_thread")
    assert not _is_runtime_teardown_crash(ours)
    # any other kind of report is a finding
    use_after_free = _TEARDOWN_CRASH.replace("SEGV on unknown address", "heap-use-after-free on address")
    assert not _is_runtime_teardown_crash(use_after_free)
    assert not _is_runtime_teardown_crash("src/engine.cpp:10:5: runtime error: signed integer overflow")
    assert not _is_runtime_teardown_crash(_TEARDOWN_CRASH.split("    #0")[0])  # no frames at all
