"""Build the GenAI C ABI test double (abi_double.c) into a shared library.

    from tests.abi_double.build import build_double   (or load this file by path)
    so_path = build_double(pathlib.Path(out_dir))

Shell:  python3 tests/abi_double/build.py OUTDIR   (prints the .so path)

Uses $CC if set, else the first of cc, gcc, clang on PATH.  Rebuilds only when abi_double.c (or this
file) is newer than the library.  The library is written under a temporary name and renamed into place,
so concurrent builders never load a half-written file.
"""
from __future__ import annotations

import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE / "abi_double.c"
CONTROLS_H = HERE / "controls.h"
LIB_NAME = "libovgenai_abi_double.so"
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-shared", "-fPIC", "-O1", "-g", "-pthread"]


class CompilerNotFound(RuntimeError):
    """No C compiler is available to build the ABI double."""


def find_compiler() -> list[str]:
    env = os.environ.get("CC")
    if env:
        parts = shlex.split(env)
        if parts and shutil.which(parts[0]):
            return parts
        raise CompilerNotFound(f"$CC={env!r} is not an executable C compiler")
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return [path]
    raise CompilerNotFound(
        "no C compiler found (tried $CC, cc, gcc, clang); install one (e.g. apt-get install gcc) "
        "to build the GenAI C ABI test double")


def build_double(out_dir: pathlib.Path) -> pathlib.Path:
    """Compile abi_double.c into out_dir (if needed) and return the path of the shared library."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    lib = out_dir / LIB_NAME
    newest_input = max(SOURCE.stat().st_mtime, pathlib.Path(__file__).stat().st_mtime)
    if lib.exists() and lib.stat().st_mtime >= newest_input:
        return lib
    cc = find_compiler()
    fd, tmp = tempfile.mkstemp(prefix=".abi_double.", suffix=".so", dir=out_dir)
    os.close(fd)
    try:
        cmd = [*cc, *CFLAGS, "-o", tmp, str(SOURCE), "-lm", "-ldl"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(
                f"building the ABI double failed ({shlex.join(cmd)}):\n{proc.stdout}{proc.stderr}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, lib)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return lib


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} OUTDIR", file=sys.stderr)
        return 2
    try:
        print(build_double(pathlib.Path(argv[1])))
    except (CompilerNotFound, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
