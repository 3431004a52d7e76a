"""Measurements of the host, outside the engines: memory read bandwidth (the decode speed bound), the import
footprint of ovgenai_c and openvino_genai (a fresh interpreter per sample) and the load average."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

from .stats import median


def loadavg() -> Optional[List[float]]:
    """The 1/5/15-minute load averages (None where the platform has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None



# --- physical limit ------------------------------------------------------------------------------------------------
def measure_bandwidth(mbytes: int, reps: int, threads: int) -> Dict[str, Any]:
    """Memory read bandwidth (GB/s): numpy sum over a float64 array, best of ``reps``; one thread and ``threads``."""
    import numpy as np

    n = mbytes * 1024 * 1024 // 8
    a = np.ones(n, dtype=np.float64)
    a.sum()  # fault the pages in
    nbytes = a.nbytes
    best1 = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        a.sum()
        best1 = min(best1, time.perf_counter() - t)
    res: Dict[str, Any] = {"array_bytes": nbytes, "reps": reps, "single_thread_gbps": nbytes / best1 / 1e9}
    if threads > 1:
        parts = np.array_split(a, threads)
        bestn = float("inf")
        for _ in range(reps):
            ths = [threading.Thread(target=p.sum) for p in parts]
            t = time.perf_counter()
            for th in ths:
                th.start()
            for th in ths:
                th.join()
            bestn = min(bestn, time.perf_counter() - t)
        res[f"{threads}_threads_gbps"] = nbytes / bestn / 1e9
    res["gbps"] = max(v for k, v in res.items() if k.endswith("_gbps"))
    del a
    return res


# --- import footprint ----------------------------------------------------------------------------------------------
_IMPORT_PROBE = r"""
import json, sys, time
def kb(f):
    for line in open('/proc/self/status'):
        if line.startswith(f + ':'):
            return int(line.split()[1])
r0 = kb('VmRSS')
t = time.perf_counter()
mod = sys.argv[1]
if mod != '-':
    __import__(mod)
dt = time.perf_counter() - t
out = {'import_s': dt, 'rss_before_kb': r0, 'rss_kb': kb('VmRSS'), 'hwm_kb': kb('VmHWM')}
if len(sys.argv) > 2 and sys.argv[2] == 'load':
    t = time.perf_counter()
    try:
        sys.modules[mod].load_library()
        out['first_use_load_s'] = time.perf_counter() - t
        out['rss_after_load_kb'] = kb('VmRSS')
    except Exception as exc:
        out['first_use_error'] = repr(exc)
print(json.dumps(out))
"""


def measure_imports(reps: int, env: Dict[str, str], with_genai: bool, load_lib: Optional[str],
                    stop: Any = lambda rep: False) -> Dict[str, Any]:
    """Import time and RSS of each module in fresh interpreters (``load_lib``: also ovgenai_c's first
    load_library()), rotating the modules over ``reps`` repetitions until ``stop(rep)``."""
    mods = ["-", "ovgenai_c"] + (["openvino_genai"] if with_genai else [])
    samples: Dict[str, List[Dict[str, Any]]] = {m: [] for m in mods}
    walls: Dict[str, List[float]] = {m: [] for m in mods}
    for rep in range(reps):
        if stop(rep):
            reps = rep
            break
        order = mods[rep % len(mods):] + mods[:rep % len(mods)]
        for m in order:
            args = [sys.executable, "-c", _IMPORT_PROBE, m]
            e = dict(env)
            if m == "ovgenai_c" and load_lib:
                args.append("load")
                e["OVGENAI_C_LIBRARY"] = load_lib
            t = time.perf_counter()
            proc = subprocess.run(args, env=e, capture_output=True, text=True, timeout=300)
            wall = time.perf_counter() - t
            if proc.returncode != 0:
                samples[m].append({"error": proc.stderr.strip()[-300:]})
                continue
            samples[m].append(json.loads(proc.stdout.strip().splitlines()[-1]))
            walls[m].append(wall)
    out: Dict[str, Any] = {"reps": reps, "modules": {}}
    base_rss = median([s.get("rss_kb") for s in samples["-"] if "rss_kb" in s])
    base_wall = median(walls["-"])
    for m in mods:
        ok = [s for s in samples[m] if "import_s" in s]
        if not ok:
            out["modules"][m] = {"error": samples[m][0].get("error") if samples[m] else "no sample"}
            continue
        entry = {
            "import_s": median([s["import_s"] for s in ok]),
            "import_s_min": min(s["import_s"] for s in ok),
            "rss_kb": median([s["rss_kb"] for s in ok]),
            "rss_delta_kb": (median([s["rss_kb"] for s in ok]) or 0) - (base_rss or 0),
            "process_wall_s": median(walls[m]),
            "process_wall_delta_s": (median(walls[m]) or 0) - (base_wall or 0),
        }
        loads = [s["first_use_load_s"] for s in ok if "first_use_load_s" in s]
        if loads:
            entry["first_use_load_library_s"] = median(loads)
            entry["rss_after_load_library_kb"] = median([s["rss_after_load_kb"] for s in ok if "rss_after_load_kb" in s])
        errs = [s["first_use_error"] for s in ok if "first_use_error" in s]
        if errs:
            entry["first_use_error"] = errs[0]
        out["modules"][m if m != "-" else "(nothing)"] = entry
    return out

