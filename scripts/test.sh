#!/usr/bin/env bash
# The test command (README, .ci/run): install the package with its test extras (this builds the bundled
# backend), build the ASan/UBSan variant of the backend for the sanitizer part of the reliability battery,
# then run the whole suite. Set OVGENAI_C_NO_ASAN=1 to skip the sanitizer build.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check '.[test]'
if [[ "${OVGENAI_C_NO_ASAN:-0}" != "1" ]]; then
    if bash scripts/build_backend.sh --sanitize >/tmp/ovgenai_c_asan_build.log 2>&1; then
        export OVGENAI_C_ASAN_LIB="$PWD/native/build-asan/libovgenai_c_bundled.so"
    else
        echo "warning: ASan build of the backend failed (see /tmp/ovgenai_c_asan_build.log); sanitizer tests skip" >&2
    fi
fi
# 1. everything, with the bundled backend's default engine (PagedAttention, like the official library)
python3 -m pytest -q -p no:cacheprovider tests "$@"
# 2. the backend and conformance suites again on its stateful SDPA engine (token-exact to GenAI's SDPA path)
OVGENAI_C_BUNDLED_ATTENTION_BACKEND=SDPA python3 -m pytest -q -p no:cacheprovider tests/backend \
    tests/binding/test_conformance.py "$@"
