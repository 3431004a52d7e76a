#!/usr/bin/env python3
"""Benchmarks of ovgenai_c against openvino_genai, side by side in one run (see ovgenai_c_tools/bench/).

    python scripts/bench.py [--model DIR] [--out FILE] [--quick] [--help]
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ovgenai_c_tools.bench import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
