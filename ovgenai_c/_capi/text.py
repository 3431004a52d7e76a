"""Text out of a C buffer filled by a two-call string getter (``*output_size`` = the length + 1)."""
from __future__ import annotations

from typing import Any


def buffer_text(ffi: Any, buf: Any, size: int) -> str:
    """The text of ``buf``'s first ``size`` bytes (the NUL included). A NUL inside the text is kept, as GenAI's
    C++ string holds it (the bundled backend copies the whole string); NULs at its end are dropped: the official
    library copies with ``strncpy``, which stops at the first NUL and pads the rest with NULs."""
    if size <= 0:
        return ""
    return ffi.unpack(buf, size).rstrip(b"\0").decode("utf-8", "replace")
