"""Helpers shared by the test folders (importable: tests/ is on sys.path via tests/conftest.py)."""
from __future__ import annotations

import os
from pathlib import Path


def bundled_library_path() -> "Path | None":
    """The bundled backend to test: $OVGENAI_C_BUNDLED_LIB / $OVGENAI_C_BUNDLED, else where the binding's own
    loader finds it (the package's _bundled/ — also the installed copy when tests run from a source tree —
    then native/build/)."""
    for var in ("OVGENAI_C_BUNDLED_LIB", "OVGENAI_C_BUNDLED"):
        if os.environ.get(var):
            return Path(os.environ[var])
    from ovgenai_c import _loader

    return next((p for p in _loader.bundled_candidates() if p.is_file()), None)
