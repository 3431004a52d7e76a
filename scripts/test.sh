#!/usr/bin/env bash
# The test command (README, .ci/run). Every step says what it does and how long it took:
#   1. pip install '.[test]' (verbose: pip's progress and the CMake build of the bundled backend);
#   2. two lanes, one per core, take the test parts from one queue (the biggest first) until it is empty:
#      - the foreground lane (its pytest progress on the terminal) starts with the first part at once;
#      - the background lane first builds the ASan/UBSan variant of the backend (reused from
#        ~/.cache/ovgenai_c/asan-build/<key>/ while native/, the flags, the compiler and the openvino wheel are
#        unchanged; the builds of other keys are removed) and runs the sanitizer part on it, then takes parts too
#        (its steps are told on the terminal, its output goes to background.log).
#      The parts: the whole suite on the default engine (PagedAttention) in seven pytest runs (tests/backend in two
#      by its engine_explicit marker, the other folders in groups, tests/whisper alone), and the backend and
#      conformance suites on the stateful SDPA engine, and the PyPy part (ovgenai_c installed for pypy3 by
#      scripts/install_pypy.sh, tests/binding, reliability, provider, cli and serve run by PyPy, then PyPy's answers
#      checked against this interpreter's).
#      So the queue balances itself whether the ASan build is cached (a minute of sanitizer part) or not (a few
#      minutes of build first).
# Between 1 and 2, espeak-ng and sox (the Whisper tests' speech) are apt-get installed when missing, where apt is;
# the PyPy part gets pypy3 the same way (skipped, saying so, where it cannot).
# A one-line summary per part at the end; the exit status is non-zero when any part fails (or runs no tests).
# Extra arguments go to the suite and SDPA parts; with extra arguments the suite runs as one part (as a filter such as
# -k could leave a folder part with no test, which counts as a failure). OVGENAI_C_NO_ASAN=1 skips the sanitizer
# build and part.
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

# pytest's last line ("12 passed, 1 skipped in 3.4s"); exit status 5 means no tests ran, which is a failure here.
# The part's summary line goes to $SUMMARY and to PART_LINE (of this lane).
PART_LINE=""
pytest_part() {  # name logfile pytest-args... (PYTEST_PYTHON: the interpreter, default python3)
    local name=$1 log=$2 t=$SECONDS rc last
    shift 2
    "${PYTEST_PYTHON:-python3}" -m pytest -q -p no:cacheprovider --durations=15 "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    last=$(grep -E '[0-9]+ (passed|failed|error|errors|skipped)|no tests ran' "$log" | tail -n 1 | tr -d '=' | xargs)
    if [[ $rc -eq 0 ]]; then
        PART_LINE="$name: ok in $((SECONDS - t)) s ($last)"
    elif [[ $rc -eq 5 ]]; then
        PART_LINE="$name: FAILED, no tests ran ($*)"
    else
        PART_LINE="$name: FAILED (pytest exit $rc) in $((SECONDS - t)) s (${last:-no summary line}; log $log)"
    fi
    echo "$PART_LINE" >>"$SUMMARY"
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

# ---- system packages: apt-get, where it is there and usable (root); never fails the run ----------------------------
apt_usable() { command -v apt-get >/dev/null 2>&1 && [[ $(id -u) -eq 0 ]]; }
apt_get_install() {  # PKG... : install quietly; refresh the package lists only when the first try fails
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 ||
        { apt-get update -qq >/dev/null 2>&1 &&
          DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1; }
}

# ---- the speech tools tests/whisper synthesizes its test audio with ------------------------------------------------
speech_tools_missing() { ! command -v espeak-ng >/dev/null 2>&1 || ! command -v sox >/dev/null 2>&1; }
if speech_tools_missing; then
    if apt_usable; then
        t=$SECONDS
        say "installing espeak-ng and sox with apt-get (the speech the Whisper tests transcribe)"
        apt_get_install espeak-ng sox
        if speech_tools_missing; then
            say "    espeak-ng / sox could not be installed; the speech tests of tests/whisper will skip"
        else
            say "    installed in $((SECONDS - t)) s"
        fi
    else
        say "espeak-ng / sox are missing and apt-get is not usable here; the speech tests of tests/whisper will skip"
    fi
fi

# ---- the parts and the lanes ------------------------------------------------------------------------------------
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

# The suite on the default engine is split into parts that the two lanes share: tests/backend by the
# engine_explicit marker (each backend test is in exactly one of the two), the other folders in groups. Every folder
# of tests/ with tests must be in SPLIT_FOLDERS (checked below); the sanitizer module is the sanitizer part's.
SPLIT_FOLDERS="tests/backend tests/reliability tests/binding tests/abi_double tests/fixtures tests/bench
    tests/chat_template tests/cli tests/provider tests/serve tests/models tests/whisper"
suite_part() {  # label log-suffix pytest-args...
    local label=$1 suffix=$2
    shift 2
    pytest_part "suite (PA engine): $label" "$LOGS/pytest-pa-$suffix.log" "$@"
}

# PyPy: ovgenai_c installed for it with the server's extra (scripts/install_pypy.sh, into this run's log folder),
# tests/binding, reliability, provider, cli and serve (Ray aside) run by it, then this interpreter's
# tests/binding/test_other_interpreter.py against it. pypy3 comes from apt-get where it is missing and apt is usable
# (as the speech tools); without it the part is skipped, saying so.
pypy_part() {
    local t=$SECONDS venv="$LOGS/pypy-venv" rc=0
    if ! command -v pypy3 >/dev/null 2>&1 && apt_usable; then
        lane_note "PyPy part: installing pypy3 with apt-get"
        apt_get_install pypy3
    fi
    if ! command -v pypy3 >/dev/null 2>&1; then
        PART_LINE="PyPy: skipped (no pypy3, and apt-get could not install it)"
        echo "$PART_LINE" >>"$SUMMARY"
        return 0
    fi
    if ! bash scripts/install_pypy.sh "$venv" pypy3 '[serve]' pytest hypothesis httpx \
            >"$LOGS/pypy-install.log" 2>&1; then
        PART_LINE="PyPy: FAILED to install ovgenai_c for pypy3 after $((SECONDS - t)) s (log $LOGS/pypy-install.log)"
        echo "$PART_LINE" >>"$SUMMARY"
        return 1
    fi
    lane_note "PyPy part: ovgenai_c installed for $("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])') in $((SECONDS - t)) s"
    PYTEST_PYTHON="$venv/bin/python" pytest_part "tests/binding, reliability, provider, cli, serve on PyPy" \
        "$LOGS/pytest-pypy.log" tests/binding tests/reliability tests/provider tests/cli tests/serve \
        --ignore=tests/reliability/test_rel_sanitizers.py --ignore=tests/serve/test_serve_ray.py -rs || rc=1
    OVGENAI_C_OTHER_PYTHON="$venv/bin/python" pytest_part "PyPy against CPython (test_other_interpreter)" \
        "$LOGS/pytest-pypy-cross.log" tests/binding/test_other_interpreter.py -rs || rc=1
    if [[ $rc -eq 0 ]]; then
        rm -rf "$venv"  # ~320 MB a run; kept when the part failed, to run the failing tests again with it
    fi
    return $rc
}

run_part() {  # part-id extra-args...: one queued part
    local id=$1
    shift
    case $id in
        sdpa) sdpa_part "$@" ;;
        suite) pytest_part "suite (PA engine)" "$LOGS/pytest-pa.log" tests --ignore=tests/reliability/test_rel_sanitizers.py "$@" ;;
        backend-explicit)
            suite_part "tests/backend, modules that pick their engines" backend-explicit tests/backend -m engine_explicit "$@" ;;
        backend-rest)
            suite_part "tests/backend, the rest" backend-rest tests/backend -m "not engine_explicit" "$@" ;;
        reliability)
            suite_part "tests/reliability" reliability tests/reliability --ignore=tests/reliability/test_rel_sanitizers.py "$@" ;;
        binding)
            suite_part "tests/binding, abi_double, fixtures, bench" binding \
                tests/binding tests/abi_double tests/fixtures tests/bench "$@" ;;
        frontends)
            suite_part "tests/chat_template, cli, provider, serve, models" frontends \
                tests/chat_template tests/cli tests/provider tests/serve tests/models "$@" ;;
        whisper)  # the converter, the Whisper models (fetched and converted once) and the speech tests
            suite_part "tests/whisper" whisper tests/whisper "$@" ;;
        pypy) pypy_part ;;
        *) echo "unknown part $id" >&2; return 2 ;;
    esac
}

QUEUE="$LOGS/queue"
take_part() {  # prints the next part of the queue and removes it (nothing when the queue is empty)
    until mkdir "$QUEUE.lock" 2>/dev/null; do sleep 0.1; done  # the two lanes take turns
    head -n 1 "$QUEUE"
    sed -i '1d' "$QUEUE"
    rmdir "$QUEUE.lock"
}

run_queue() {  # lane-name extra-args...: takes parts until the queue is empty; non-zero when one failed
    local lane=$1 id rc=0
    shift
    while id=$(take_part) && [[ -n $id ]]; do
        lane_note "$lane: starting part $id"
        run_part "$id" "$@" || rc=1
        lane_note "$lane: $PART_LINE"
    done
    return $rc
}

prune_asan_builds() {  # keep: the other ASan builds (older native/ sources, ~140 MB each) go, unless in use
    local d
    for d in "$(dirname "$1")"/*/; do
        d=${d%/}
        [[ $d == "$1" ]] && continue
        # a build another run holds its lock on (building or about to use it) stays
        (flock -n 8 && rm -rf "$d" && rm -f "$d.lock") 8>"$d.lock" 2>/dev/null || true
    done
}

sanitizer_part() {  # dir: the ASan build (made or reused), then the sanitizer part on it
    local dir=$1 t=$SECONDS
    mkdir -p "$CACHE/asan-build"
    exec 9>"$dir.lock"
    flock 9 2>/dev/null || true
    if [[ -f "$dir/ok" && -f "$dir/libovgenai_c_bundled.so" ]]; then
        lane_note "ASan build: reusing $dir (native/ sources unchanged)"
        echo "asan build: reused $dir" >>"$SUMMARY"
    else
        rm -rf "$dir"
        lane_note "ASan build: building the ASan/UBSan variant of the backend into $dir (a few minutes on 2 cores)"
        if ! OVGENAI_C_BUILD_DIR="$dir" nice -n 5 bash scripts/build_backend.sh --sanitize; then
            lane_note "ASan build FAILED after $((SECONDS - t)) s (log: $LOGS/background.log)"
            echo "asan build: FAILED after $((SECONDS - t)) s (log $LOGS/background.log)" >>"$SUMMARY"
            return 1
        fi
        find "$dir" -name '*.o' -delete  # only the library is reused
        touch "$dir/ok"
        lane_note "ASan build: done in $((SECONDS - t)) s"
        echo "asan build: built in $((SECONDS - t)) s ($dir)" >>"$SUMMARY"
    fi
    flock -s 9 2>/dev/null || true  # shared while the part runs: no other run prunes this build meanwhile
    prune_asan_builds "$dir"
    lane_note "sanitizer part: the bundled reliability subset under ASan + UBSan (log: $LOGS/pytest-asan.log)"
    OVGENAI_C_ASAN_LIB="$dir/libovgenai_c_bundled.so" \
        pytest_part "sanitizers (ASan+UBSan)" "$LOGS/pytest-asan.log" tests/reliability/test_rel_sanitizers.py -rs
    local rc=$?
    flock -u 9 2>/dev/null || true
    lane_note "$PART_LINE"
    return $rc
}

background_lane() {  # with-asan(0/1) extra-args...: stdout is background.log, fd 3 the terminal
    local with_asan=$1 rc=0
    shift
    lane_note() { say "$@"; say "$@" >&3; }
    if [[ $with_asan == 1 ]]; then
        sanitizer_part "$CACHE/asan-build/$(asan_key)" || rc=1
    fi
    run_queue "background lane" "$@" || rc=1
    return $rc
}

# ---- 2. the queue of parts (biggest first) and the background lane ------------------------------------------------
if [[ $# -gt 0 ]]; then
    printf '%s\n' suite sdpa >"$QUEUE"
else
    covered=" $(echo $SPLIT_FOLDERS) "
    for d in tests/*/; do
        d=${d%/}
        if [[ $covered != *" $d "* && -n $(find "$d" -maxdepth 1 -name 'test_*.py' -print -quit) ]]; then
            say "test.sh: the folder $d is in no part (SPLIT_FOLDERS)"
            echo "parts: FAILED, $d is in no part" >>"$SUMMARY"
        fi
    done
    # biggest first (seconds with both lanes busy on 2 cores, a fresh clone on the AMX Xeon, 2026-12-06:
    # backend-explicit 610, whisper 249, sdpa 218, frontends 166, binding 162, backend-rest 120, reliability 46;
    # pypy ~130 before it took reliability, provider and cli too, plus its ~70 s install)
    printf '%s\n' backend-explicit pypy sdpa whisper frontends backend-rest binding reliability >"$QUEUE"
fi

say "2/3 the queue of test parts: $(tr '\n' ' ' <"$QUEUE")"
if [[ "${OVGENAI_C_NO_ASAN:-0}" == "1" ]]; then
    say "2/3 sanitizer part skipped (OVGENAI_C_NO_ASAN=1); the background lane takes test parts at once (log: $LOGS/background.log)"
    echo "sanitizers: skipped (OVGENAI_C_NO_ASAN=1)" >>"$SUMMARY"
    with_asan=0
else
    say "2/3 in the background: the ASan build (reused when cached), the sanitizer part, then test parts (log: $LOGS/background.log)"
    with_asan=1
fi
background_lane "$with_asan" "$@" 3>&1 >"$LOGS/background.log" 2>&1 &
bg_pid=$!

# ---- 3. the foreground lane --------------------------------------------------------------------------------------
lane_note() { say "$@"; }
say "3/3 pytest in the foreground: test parts from the queue (the suite on the bundled backend's default engine, PagedAttention like the official library; SDPA: the stateful engine)"
rc_all=0
run_queue "foreground lane" "$@" || rc_all=1

if kill -0 "$bg_pid" 2>/dev/null; then
    say "waiting for the background lane (progress: tail -f $LOGS/background.log)"
fi
if ! wait "$bg_pid"; then  # its steps were told as they happened; on failure, the end of its log
    rc_all=1
    tail -n 40 "$LOGS/background.log"
fi

echo
say "summary (logs in $LOGS):"
sed 's/^/  /' "$SUMMARY"
if grep -q 'FAILED' "$SUMMARY" || [[ $rc_all -ne 0 ]]; then
    say "FAILED"
    exit 1
fi
say "all parts passed"
