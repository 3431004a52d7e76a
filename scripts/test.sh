#!/usr/bin/env bash
# The test command (README, .ci/run). Every step says what it does and how long it took:
#   1. pip install '.[test]' (verbose: pip's progress and the CMake build of the bundled backend);
#   2. in the background: the ASan/UBSan variant of the backend (reused from ~/.cache/ovgenai_c/asan-build/<key>/
#      while native/, the flags, the compiler and the openvino wheel are unchanged), then the sanitizer part, then
#      -- when the ASan build was cached -- the backend and conformance suites on the stateful SDPA engine;
#   3. meanwhile in the foreground: the whole suite on the default engine (PagedAttention), then (when the ASan
#      build had to be made) the SDPA part.
# A one-line summary per part at the end; the exit status is non-zero when any part fails (or runs no tests).
# Extra arguments go to the two pytest parts. OVGENAI_C_NO_ASAN=1 skips the sanitizer build and part.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1  # pip's and pytest's progress shows as it happens, also through the pipes below
ROOT="$PWD"
T0=$SECONDS
say() { printf '[test.sh %3dm%02ds] %s\n' $(((SECONDS - T0) / 60)) $(((SECONDS - T0) % 60)) "$*"; }
CACHE="${OVGENAI_C_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ovgenai_c}"
LOGS="$(mktemp -d "${TMPDIR:-/tmp}/ovgenai_c_test.XXXXXX")"
SUMMARY="$LOGS/summary"
: >"$SUMMARY"

# pytest's last line ("12 passed, 1 skipped in 3.4s"); exit status 5 means no tests ran, which is a failure here
pytest_part() {  # name logfile pytest-args...
    local name=$1 log=$2 t=$SECONDS rc last
    shift 2
    python3 -m pytest -q -p no:cacheprovider --durations=15 "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    last=$(grep -E '[0-9]+ (passed|failed|error|errors|skipped)|no tests ran' "$log" | tail -n 1 | tr -d '=' | xargs)
    if [[ $rc -eq 0 ]]; then
        echo "$name: ok in $((SECONDS - t)) s ($last)" >>"$SUMMARY"
    elif [[ $rc -eq 5 ]]; then
        echo "$name: FAILED, no tests ran ($*)" >>"$SUMMARY"
    else
        echo "$name: FAILED (pytest exit $rc) in $((SECONDS - t)) s (${last:-no summary line}; log $log)" >>"$SUMMARY"
    fi
    return "$rc"
}

# ---- 1. install ----------------------------------------------------------------------------------------------
say "1/3 installing the package with its test extras: python3 -m pip install -v '.[test]'"
say "    (pip resolves and downloads the dependencies, then scikit-build-core builds the bundled C++ backend with CMake)"
t=$SECONDS
python3 -m pip install -v --disable-pip-version-check --progress-bar off '.[test]' 2>&1 |
    grep --line-buffered -v -E '^ *(Link requires a different Python|Skipping link)'
if [[ ${PIPESTATUS[0]} -ne 0 ]]; then
    say "install FAILED after $((SECONDS - t)) s"
    echo "install: FAILED after $((SECONDS - t)) s" >>"$SUMMARY"
    cat "$SUMMARY"
    exit 1
fi
echo "install: ok in $((SECONDS - t)) s" >>"$SUMMARY"
say "installed in $((SECONDS - t)) s"

# ---- 2. sanitizer lane (background) ---------------------------------------------------------------------------
asan_key() {
    {
        (git ls-files -co --exclude-standard -- native 2>/dev/null || find native -path 'native/build*' -prune -o -type f -print) |
            grep -v -E '^native/build' | LC_ALL=C sort | xargs -d '\n' sha256sum
        echo "flags: -DOVGENAI_C_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo"
        "${CXX:-c++}" --version 2>&1 | head -n 1
        python3 -c 'import openvino, os; print(os.path.dirname(openvino.__file__), openvino.get_version())'
    } | sha256sum | cut -c1-16
}

sdpa_part() {
    OVGENAI_C_BUNDLED_ATTENTION_BACKEND=SDPA pytest_part "backend+conformance (SDPA engine)" "$LOGS/pytest-sdpa.log" \
        tests/backend tests/binding/test_conformance.py -m "not engine_explicit" "$@"
}

sanitizer_lane() {  # runs in the background: its steps are told on fd 3 (the terminal), the rest goes to asan.log
    local dir=$1 with_sdpa=$2 t=$SECONDS rc=0
    shift 2
    note() { say "$@"; say "$@" >&3; }
    mkdir -p "$CACHE/asan-build"
    exec 9>"$dir.lock"
    flock 9 2>/dev/null || true
    if [[ -f "$dir/ok" && -f "$dir/libovgenai_c_bundled.so" ]]; then
        note "ASan build: reusing $dir (native/ sources unchanged)"
        echo "asan build: reused $dir" >>"$SUMMARY"
    else
        rm -rf "$dir"
        note "ASan build: building the ASan/UBSan variant of the backend into $dir (a few minutes on 2 cores)"
        if ! OVGENAI_C_BUILD_DIR="$dir" nice -n 5 bash scripts/build_backend.sh --sanitize; then
            note "ASan build FAILED after $((SECONDS - t)) s (log: $LOGS/asan.log)"
            echo "asan build: FAILED after $((SECONDS - t)) s (log $LOGS/asan.log)" >>"$SUMMARY"
            return 1
        fi
        find "$dir" -name '*.o' -delete  # only the library is reused
        touch "$dir/ok"
        note "ASan build: done in $((SECONDS - t)) s"
        echo "asan build: built in $((SECONDS - t)) s ($dir)" >>"$SUMMARY"
    fi
    flock -u 9 2>/dev/null || true
    note "sanitizer part: the bundled reliability subset under ASan + UBSan (log: $LOGS/pytest-asan.log)"
    OVGENAI_C_ASAN_LIB="$dir/libovgenai_c_bundled.so" \
        pytest_part "sanitizers (ASan+UBSan)" "$LOGS/pytest-asan.log" tests/reliability/test_rel_sanitizers.py -rs ||
        rc=1
    if [[ $with_sdpa == 1 ]]; then
        note "pytest (background): the backend and conformance suites on the stateful SDPA engine (log: $LOGS/pytest-sdpa.log)"
        sdpa_part "$@" || rc=1
        note "$(grep "^backend+conformance" "$SUMMARY" | tail -n 1)"
    fi
    return $rc
}

asan_pid=""
sdpa_in_background=0
if [[ "${OVGENAI_C_NO_ASAN:-0}" == "1" ]]; then
    say "2/3 sanitizer part skipped (OVGENAI_C_NO_ASAN=1)"
    echo "sanitizers: skipped (OVGENAI_C_NO_ASAN=1)" >>"$SUMMARY"
else
    asan_dir="$CACHE/asan-build/$(asan_key)"
    if [[ -f "$asan_dir/ok" ]]; then
        sdpa_in_background=1  # no build to wait for: the background lane also takes the SDPA part
        say "2/3 in the background: the sanitizer part on the cached ASan build, then the SDPA part (log: $LOGS/asan.log)"
    else
        say "2/3 in the background: ASan build (not cached yet), then the sanitizer part (log: $LOGS/asan.log)"
    fi
    sanitizer_lane "$asan_dir" "$sdpa_in_background" "$@" 3>&1 >"$LOGS/asan.log" 2>&1 &
    asan_pid=$!
fi

# ---- 3. the suite (foreground) --------------------------------------------------------------------------------
rc_all=0
say "3/3 pytest: everything on the bundled backend's default engine (PagedAttention, like the official library)"
pytest_part "suite (PA engine)" "$LOGS/pytest-pa.log" tests --ignore=tests/reliability/test_rel_sanitizers.py "$@" ||
    rc_all=1
if [[ $sdpa_in_background == 0 ]]; then
    say "pytest: the backend and conformance suites on the stateful SDPA engine (token-exact to GenAI's SDPA path)"
    sdpa_part "$@" || rc_all=1
fi

if [[ -n "$asan_pid" ]]; then
    if kill -0 "$asan_pid" 2>/dev/null; then
        say "waiting for the sanitizer lane (progress: tail -f $LOGS/asan.log)"
    fi
    if ! wait "$asan_pid"; then  # its steps were told as they happened; on failure, the end of its log
        rc_all=1
        tail -n 40 "$LOGS/asan.log"
    fi
fi

echo
say "summary (logs in $LOGS):"
sed 's/^/  /' "$SUMMARY"
if grep -q 'FAILED' "$SUMMARY" || [[ $rc_all -ne 0 ]]; then
    say "FAILED"
    exit 1
fi
say "all parts passed"
