"""``python -m ovgenai_c_tools.bench``: the benchmark's command line."""
import sys

from .cli import main

sys.exit(main(sys.argv[1:]))
