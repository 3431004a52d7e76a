"""The bundled backend under AddressSanitizer + UBSan (opt-in, it takes minutes): with ``OVGENAI_C_ASAN_LIB`` set to
an ASan/UBSan build of the backend (``cmake -S native -B build-asan -DOVGENAI_C_SANITIZE=address,undefined``), run
the bundled part of this battery against it in a child pytest with libasan preloaded; any sanitizer report fails.

oneTBB (inside OpenVINO) dlopens libtbbbind with RTLD_DEEPBIND, which the ASan runtime refuses; a tiny preloaded
shim (built here) drops that flag so the run can proceed."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
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
    logs = tmp_path / "sanitizer"
    env = dict(os.environ)
    env.update({
        "OVGENAI_C_BUNDLED": lib,
        "LD_PRELOAD": " ".join(preload),
        # Python "leaks" by design at exit; OpenVINO's plugins bring their own allocators and duplicate symbols
        "ASAN_OPTIONS": f"verify_asan_link_order=0:detect_leaks=0:exitcode=99:detect_odr_violation=0:"
                        f"alloc_dealloc_mismatch=0:log_path={logs}",
        "UBSAN_OPTIONS": f"print_stacktrace=1:log_path={logs}",
    })
    STATS.case("sanitizer")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUBSET], cwd=str(ROOT),
                          env=env, capture_output=True, text=True, timeout=900)
    reports = sorted(tmp_path.glob("sanitizer*"))
    text = "\n".join(r.read_text(errors="replace")[:4000] for r in reports)
    assert not reports, f"sanitizer reports:\n{text}"
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    last = [line for line in proc.stdout.splitlines() if line.strip()][-1]
    assert " passed" in last and "skipped" not in last, f"the bundled tests did not all run under ASan: {last}"
