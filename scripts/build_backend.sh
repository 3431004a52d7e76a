#!/usr/bin/env bash
# Configure + build the bundled backend (native/) and copy its .so and the relay helper into ovgenai_c/_bundled/ for
# in-tree use.
#   scripts/build_backend.sh             -> native/build/
#   scripts/build_backend.sh --sanitize  -> native/build-asan/libovgenai_c_bundled.so (address,undefined; not copied)
#                                           ($OVGENAI_C_BUILD_DIR instead of native/build-asan when set)
# Needs cmake, a C++17 compiler and, for the python3 that CMake finds, the pip packages openvino and nlohmann-json.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="$here/native/build"
dest="$here/ovgenai_c/_bundled/libovgenai_c_bundled.so"
extra=()
if [[ "${1:-}" == "--sanitize" ]]; then
    build="${OVGENAI_C_BUILD_DIR:-$here/native/build-asan}"
    extra=(-DOVGENAI_C_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo)
    # the sanitizer build stays in native/build-asan/ (it needs libasan preloaded, and nothing under
    # ovgenai_c/ may pick it up or package it)
    dest=""
fi
if ! cmake -S "$here/native" -B "$build" -DCMAKE_BUILD_TYPE=Release "${extra[@]}" >/dev/null; then
    echo "build_backend.sh: configuring native/ failed (see above); its build requirements are pyproject.toml's" \
         "[build-system] requires: pip install 'openvino==2026.4.1' 'nlohmann-json==3.12.0'" >&2
    exit 1
fi
cmake --build "$build" -j2
so="$build/libovgenai_c_bundled.so"
if [[ -z "$dest" ]]; then
    echo "built: $so"
    exit 0
fi
mkdir -p "$here/ovgenai_c/_bundled"
# atomic replace: never rewrite a .so in place while another process has it mapped
cp -f "$so" "$dest.tmp.$$"
mv -f "$dest.tmp.$$" "$dest"
relay="$here/ovgenai_c/_bundled/libovgenai_c_relay.so"
cp -f "$build/libovgenai_c_relay.so" "$relay.tmp.$$"
mv -f "$relay.tmp.$$" "$relay"
echo "built: $dest $relay"
