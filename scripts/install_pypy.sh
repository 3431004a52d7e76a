#!/usr/bin/env bash
# Install ovgenai_c for PyPy (or another Python that is not CPython) into a new virtual environment:
#
#   bash scripts/install_pypy.sh VENV [PYTHON] [EXTRA_PACKAGES...]     (PYTHON: default pypy3)
#
# An EXTRA_PACKAGES argument in brackets names ovgenai_c's own extras: `[serve]` installs the server's too.
#
# ovgenai_c itself is cffi in ABI mode and runs on PyPy as it is; what PyPy cannot install is its dependency
# `openvino`, whose wheels are CPython builds (a pybind11 module beside the native libraries). The bundled backend
# needs only those native libraries (and openvino_tokenizers' extension, a py3-none wheel): this script puts the
# CPython wheels' files into the venv's site-packages with `pip --target` — the libraries, CMake files and
# metadata are the same for every Python; their pybind module stays unused — then builds and installs ovgenai_c
# from this source tree with the venv's own interpreter. The versions are pyproject.toml's.
#
# The GGUF -> OpenVINO IR conversion of the default model runs here too (the bundled backend does it:
# ovgenai_c.gguf_ir). The Whisper models' conversion needs openvino_tokenizers' and transformers' Python side,
# CPython extensions: point OVGENAI_C_CONVERT_PYTHON at a CPython that has them (`python3 -m pip install
# '.[convert]'`), once per model.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [[ $# -lt 1 ]]; then
    sed -n '2,4p' "$0" >&2
    exit 2
fi
VENV=$1
PY_BASE=${2:-pypy3}
shift $(($# >= 2 ? 2 : 1))
say() { printf '[install_pypy] %s\n' "$*"; }

if ! command -v "$PY_BASE" >/dev/null 2>&1; then
    say "no $PY_BASE on PATH (Debian/Ubuntu: apt-get install pypy3; else pypy.org)" >&2
    exit 3
fi
# the pinned versions of pyproject.toml's dependencies
pin() { grep -o "\"$1==[^\";]*" "$ROOT/pyproject.toml" | head -n 1 | cut -d'"' -f2; }
OPENVINO=$(pin openvino)
TOKENIZERS=$(pin openvino-tokenizers)
NLOHMANN=$(pin nlohmann-json)
[[ -n $OPENVINO && -n $TOKENIZERS && -n $NLOHMANN ]] || { say "cannot read the pins from pyproject.toml" >&2; exit 4; }

say "venv $VENV with $("$PY_BASE" -c 'import sys; print(sys.version.split()[0], sys.implementation.name)')"
"$PY_BASE" -m venv "$VENV"
PY="$VENV/bin/python"
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
PIP=("$PY" -m pip --disable-pip-version-check)

ARCH=$(uname -m)
PLATFORMS=()
for glibc in 35 34 31 28 27 17; do PLATFORMS+=(--platform "manylinux_2_${glibc}_${ARCH}"); done
say "the native libraries of $OPENVINO and $TOKENIZERS (CPython wheels, unpacked into $SITE)"
"${PIP[@]}" install -q --no-deps --ignore-requires-python --only-binary=:all: --implementation cp \
    --python-version 3.12 --abi cp312 --abi abi3 --abi none "${PLATFORMS[@]}" --target "$SITE" \
    "$OPENVINO" "$TOKENIZERS"

EXTRAS=""
PACKAGES=()
for arg in "$@"; do
    if [[ $arg == \[*\] ]]; then EXTRAS=$arg; else PACKAGES+=("$arg"); fi
done
say "build requirements, then ovgenai_c$EXTRAS from $ROOT (the bundled backend is built with CMake)"
# (numpy, telemetry: openvino's own requirements)
"${PIP[@]}" install -q scikit-build-core "$NLOHMANN" numpy openvino-telemetry ${PACKAGES[@]+"${PACKAGES[@]}"}
"${PIP[@]}" install -q --no-build-isolation "$ROOT$EXTRAS"
"$PY" -c 'import ovgenai_c, sys; print("[install_pypy] ovgenai_c", ovgenai_c.__version__, "on", sys.implementation.name, sys.version.split()[0])'
