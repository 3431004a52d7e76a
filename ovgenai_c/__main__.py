"""``python -m ovgenai_c`` — the ``ovgenai-c`` command line."""
from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
