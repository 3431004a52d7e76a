"""What a run needs from its surroundings: the paths of this source tree, the workers' environment, the
comparison engine (``openvino_genai``, fetched privately when missing), the GenAI C libraries ovgenai_c can
use, the default model, and the progress messages on stderr."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .official import OFFICIAL

TOOLS_PARENT = Path(__file__).resolve().parents[2]  # the folder holding ovgenai_c_tools (and, in a checkout, ovgenai_c)
SOURCE_ROOT = TOOLS_PARENT if (TOOLS_PARENT / "tests" / "abi_double" / "build.py").is_file() else None


def say(msg: str) -> None:
    """A progress line on stderr (stdout carries the report)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)



def worker_env(oracle_dir: Optional[Path]) -> Dict[str, str]:
    """The environment of a worker: this tree (and the private oracle folder, if any) first on PYTHONPATH."""
    env = dict(os.environ)
    paths = [str(TOOLS_PARENT)]
    if oracle_dir is not None:
        paths.insert(0, str(oracle_dir))
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env



def cache_dir() -> Path:
    """The benchmark's own cache folder (the private oracle, the ABI double's build)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ovgenai_c" / "bench"


def ensure_oracle(allow_fetch: bool) -> Tuple[Optional[Path], Optional[str]]:
    """Make ``openvino_genai`` importable for the comparison workers.

    Returns (extra sys.path folder or None, reason it is unavailable or None). When it is not installed, it is
    fetched once with pip (same version as the installed ``openvino``, no dependencies) into a private folder
    of the cache, never into the environment.
    """
    env = worker_env(None)
    probe = subprocess.run([sys.executable, "-c", "import openvino_genai"], env=env, capture_output=True, text=True)
    if probe.returncode == 0:
        return None, None
    target = cache_dir() / "oracle"
    env2 = worker_env(target)
    if target.is_dir():
        probe = subprocess.run([sys.executable, "-c", "import openvino_genai"], env=env2, capture_output=True, text=True)
        if probe.returncode == 0:
            return target, None
    if not allow_fetch:
        return None, "openvino_genai is not importable (and --no-fetch was given)"
    try:
        from importlib.metadata import version

        ov_version = version("openvino")
    except Exception:
        return None, "openvino_genai is not importable and the openvino version is unknown"
    genai_version = ov_version if ov_version.count(".") >= 3 else ov_version + ".0"
    say(f"fetching the comparison engine openvino-genai=={genai_version} into {target}")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                           f"openvino-genai=={genai_version}"], capture_output=True, text=True)
    if proc.returncode != 0:
        return None, f"openvino_genai is not importable and pip could not fetch it: {proc.stderr.strip()[-300:]}"
    probe = subprocess.run([sys.executable, "-c", "import openvino_genai"], env=env2, capture_output=True, text=True)
    if probe.returncode != 0:
        return None, f"fetched openvino-genai does not import: {probe.stderr.strip()[-300:]}"
    return target, None


BUNDLED = "ovgenai_c[bundled]"


def find_libraries(explicit: Optional[str], official: Dict[str, Any]) -> List[Tuple[str, str]]:
    """(engine label, library path) of the GenAI C libraries ovgenai_c runs over here: ``--library`` alone when
    given, else the bundled backend (its first built copy) and the official library ``official`` names
    (official.discover()); paths only, nothing is loaded in this process."""
    if explicit:
        p = Path(explicit)
        label = OFFICIAL if p.name.startswith("libopenvino_genai_c") else BUNDLED
        return [(label, str(p.resolve()))]
    sys.path.insert(0, str(TOOLS_PARENT)) if str(TOOLS_PARENT) not in sys.path else None
    from ovgenai_c import _loader

    out: List[Tuple[str, str]] = []
    bundled = next((p for p in _loader.bundled_candidates() if p.is_file()), None)
    if bundled is not None:
        out.append((BUNDLED, str(bundled.resolve())))
    if official.get("found"):
        out.append((OFFICIAL, str(Path(official["path"]).resolve())))
    return out


def default_model() -> Path:
    """The default model's IR folder (/tmp/smol when it holds one, else ovgenai_c's cache, fetched if needed)."""
    smol = Path("/tmp/smol")
    if (smol / "openvino_model.xml").is_file() and (smol / "openvino_tokenizer.xml").is_file():
        return smol
    sys.path.insert(0, str(TOOLS_PARENT)) if str(TOOLS_PARENT) not in sys.path else None
    from ovgenai_c import models

    return Path(models.ensure_default_model("ir"))

