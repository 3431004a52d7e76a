#!/usr/bin/env bash
# Fetch and unpack the official OpenVINO GenAI archive (it contains libopenvino_genai_c.so) so that
# ovgenai_c can use the official C library instead of its bundled backend.
set -euo pipefail

VERSION="2026.4.1.0"
SERIES="2026.4.1"
BASE_URL="https://storage.openvinotoolkit.org/repositories/openvino_genai/packages/${SERIES}/linux"

prog=$(basename "$0")

usage() {
    cat <<EOF
Usage: $prog [--from FILE] [--sha256 HEX] [--os NAME] [--print-url] [--help]

Download the official OpenVINO GenAI ${VERSION} archive for this machine, verify its sha256,
unpack it and point the 'current' link at it, so ovgenai_c finds libopenvino_genai_c.so in
  <home>/genai-archive/current/runtime/lib/intel64/

Options
  --from FILE     use an archive obtained elsewhere instead of downloading it
  --sha256 HEX    expected sha256 of the archive (default: the .sha256 file published beside the
                  archive; with --from also FILE.sha256 next to FILE)
  --os NAME       archive flavour: ubuntu20, ubuntu22, ubuntu24 or rhel8 (default: from /etc/os-release)
  --print-url     print the archive URL for this machine and exit
  -h, --help      this help

Environment
  OVGENAI_C_HOME         install home (default \${XDG_DATA_HOME:-\$HOME/.local/share}/ovgenai_c)
  OVGENAI_C_ARCHIVE_URL  override the archive URL (its checksum is looked up at URL.sha256)

Installs into <home>/genai-archive/<its version>/ (the archive's root: runtime/, setupvars.sh, ...; the
version its libopenvino_genai_c.so.* names, ${VERSION} when downloaded) and links <home>/genai-archive/current to it.
Without network access to storage.openvinotoolkit.org it fails within ~10 s; then download the
archive elsewhere and use --from, or set OVGENAI_C_LIBRARY to an existing libopenvino_genai_c.so,
or simply use the bundled backend (the default).
EOF
}

die() {
    printf '%s: error: %s\n' "$prog" "$*" >&2
    exit 1
}

say() {
    printf '%s: %s\n' "$prog" "$*" >&2
}

offline_help() {
    cat >&2 <<EOF
$prog: could not reach $1
What to do instead:
  - download the archive on a machine that can reach storage.openvinotoolkit.org:
      $2
    (and its checksum: $2.sha256), copy it here and run:
      $prog --from /path/to/$(basename "$2") [--sha256 HEX]
  - or set OVGENAI_C_LIBRARY=/path/to/libopenvino_genai_c.so from an OpenVINO GenAI install you already have,
  - or do nothing: ovgenai_c uses its bundled backend by default.
EOF
    exit 2
}

from=""
want_sha=""
os_name="${OVGENAI_C_ARCHIVE_OS:-}"
print_url=0
while [ $# -gt 0 ]; do
    case "$1" in
        -h | --help)
            usage
            exit 0
            ;;
        --from)
            [ $# -ge 2 ] || die "--from needs a FILE"
            from="$2"
            shift 2
            ;;
        --from=*)
            from="${1#--from=}"
            shift
            ;;
        --sha256)
            [ $# -ge 2 ] || die "--sha256 needs a HEX digest"
            want_sha="$2"
            shift 2
            ;;
        --sha256=*)
            want_sha="${1#--sha256=}"
            shift
            ;;
        --os)
            [ $# -ge 2 ] || die "--os needs a NAME"
            os_name="$2"
            shift 2
            ;;
        --os=*)
            os_name="${1#--os=}"
            shift
            ;;
        --print-url)
            print_url=1
            shift
            ;;
        *)
            usage >&2
            die "unknown argument: $1"
            ;;
    esac
done

if [ -n "$want_sha" ]; then
    want_sha=$(printf '%s' "$want_sha" | tr 'A-F' 'a-f')
    [[ "$want_sha" =~ ^[0-9a-f]{64}$ ]] || die "--sha256 must be 64 hex digits"
fi

# ---------------------------------------------------------------- platform
detect_os() {
    local id="" like="" ver=""
    if [ -r /etc/os-release ]; then
        # shellcheck disable=SC1091
        id=$(. /etc/os-release && printf '%s' "${ID:-}")
        # shellcheck disable=SC1091
        like=$(. /etc/os-release && printf '%s' "${ID_LIKE:-}")
        # shellcheck disable=SC1091
        ver=$(. /etc/os-release && printf '%s' "${VERSION_ID:-}")
    fi
    local major="${ver%%.*}"
    case "$id" in
        ubuntu)
            case "$major" in
                18 | 20) echo ubuntu20 ;;
                22) echo ubuntu22 ;;
                *) echo ubuntu24 ;;
            esac
            ;;
        debian)
            # bookworm (12) has glibc 2.36: the ubuntu22 build; trixie and later: ubuntu24
            if [[ "$major" =~ ^[0-9]+$ ]] && [ "$major" -le 11 ]; then
                echo ubuntu20
            elif [[ "$major" =~ ^[0-9]+$ ]] && [ "$major" -le 12 ]; then
                echo ubuntu22
            else
                echo ubuntu24
            fi
            ;;
        rhel | centos | rocky | almalinux | ol | fedora | amzn) echo rhel8 ;;
        *)
            case " $like " in
                *" rhel "* | *" fedora "* | *" centos "*) echo rhel8 ;;
                *) echo ubuntu24 ;;
            esac
            ;;
    esac
}

[ -n "$os_name" ] || os_name=$(detect_os)
case "$os_name" in
    ubuntu20 | ubuntu22 | ubuntu24 | rhel8) ;;
    *) die "unsupported --os '$os_name' (use ubuntu20, ubuntu22, ubuntu24 or rhel8)" ;;
esac

machine=$(uname -m)
case "$machine" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "no OpenVINO GenAI archive for CPU architecture '$machine'" ;;
esac

url="${OVGENAI_C_ARCHIVE_URL:-${BASE_URL}/openvino_genai_${os_name}_${VERSION}_${arch}.tar.gz}"

if [ "$print_url" = 1 ]; then
    echo "$url"
    exit 0
fi

# ---------------------------------------------------------------- places
home="${OVGENAI_C_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/ovgenai_c}"
base="$home/genai-archive"
mkdir -p "$base"
work=$(mktemp -d "$base/.fetch.XXXXXX")
cleanup() {
    rm -rf "$work"
}
trap cleanup EXIT

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    elif command -v shasum >/dev/null 2>&1; then
        shasum -a 256 "$1" | cut -d' ' -f1
    else
        python3 -c 'import hashlib,sys;h=hashlib.sha256();f=open(sys.argv[1],"rb");[h.update(b) for b in iter(lambda:f.read(1<<20),b"")];print(h.hexdigest())' "$1"
    fi
}

first_hex64() {
    # the first 64-hex-digit word of a .sha256 file ("HEX  name" or just "HEX")
    tr 'A-F' 'a-f' <"$1" | grep -oE '[0-9a-f]{64}' | head -n1 || true
}

fetch() { # URL OUT MAX_TIME
    command -v curl >/dev/null 2>&1 || die "curl is needed to download (or use --from FILE)"
    curl -fL --proto '=https,http' --connect-timeout 5 --max-time "$3" --retry 0 -sS -o "$2" "$1"
}

# ---------------------------------------------------------------- checksum
if [ -z "$want_sha" ] && [ -n "$from" ] && [ -f "$from.sha256" ]; then
    want_sha=$(first_hex64 "$from.sha256")
    [ -n "$want_sha" ] || die "$from.sha256 holds no sha256 digest"
    say "expected sha256 from $from.sha256"
fi
if [ -z "$want_sha" ]; then
    say "fetching checksum $url.sha256"
    if ! fetch "$url.sha256" "$work/archive.sha256" 15; then
        if [ -n "$from" ]; then
            die "no checksum for $from: give --sha256 HEX (the content of $(basename "$url").sha256 published beside the archive)"
        fi
        offline_help "$url.sha256" "$url"
    fi
    want_sha=$(first_hex64 "$work/archive.sha256")
    [ -n "$want_sha" ] || die "$url.sha256 holds no sha256 digest"
fi

# ---------------------------------------------------------------- archive
if [ -n "$from" ]; then
    [ -f "$from" ] || die "--from $from: no such file"
    archive="$from"
else
    archive="$work/$(basename "$url")"
    say "downloading $url"
    fetch "$url" "$archive" 3600 || offline_help "$url" "$url"
fi

got_sha=$(sha256_of "$archive")
if [ "$got_sha" != "$want_sha" ]; then
    die "sha256 mismatch for $archive: got $got_sha, expected $want_sha; refusing to install it"
fi
say "sha256 OK ($got_sha)"

# ---------------------------------------------------------------- unpack
mkdir "$work/x"
tar -xzf "$archive" -C "$work/x" || die "cannot unpack $archive (not a .tar.gz?)"
root=""
if [ -f "$work/x/setupvars.sh" ] || [ -d "$work/x/runtime" ]; then
    root="$work/x"
else
    for d in "$work/x"/*/; do
        if [ -f "$d/setupvars.sh" ] || [ -d "$d/runtime" ]; then
            root="${d%/}"
            break
        fi
    done
fi
[ -n "$root" ] || die "$archive does not look like an OpenVINO GenAI archive (no setupvars.sh or runtime/)"
found=0
for lib in "$root"/runtime/lib/*/libopenvino_genai_c.so*; do
    [ -e "$lib" ] && found=1 && break
done
[ "$found" = 1 ] || die "$archive has no runtime/lib/*/libopenvino_genai_c.so"
# TBB: ovgenai_c looks beside the library, then in runtime/3rdparty/tbb/lib (the archive's own layout)
tbb=0
for lib in "$root"/runtime/lib/*/libtbb.so* "$root"/runtime/3rdparty/tbb/lib/libtbb.so*; do
    [ -e "$lib" ] && tbb=1 && break
done
[ "$tbb" = 1 ] || say "warning: $archive has no libtbb.so in runtime/lib/*/ nor runtime/3rdparty/tbb/lib/; loading will fail"

# the archive's own version (an archive given with --from may be another release than the pinned one): the full
# version of its libopenvino_genai_c.so.<major>.<minor>.<patch>.<tweak>, else its folder's name, else the pinned one
have=""
for lib in "$root"/runtime/lib/*/libopenvino_genai_c.so.*.*.*.*; do
    [ -e "$lib" ] || continue
    v="${lib##*/libopenvino_genai_c.so.}"
    if [[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
        have="$v"
        break
    fi
done
if [ -z "$have" ] && [[ "$(basename "$root")" =~ _([0-9]+\.[0-9]+\.[0-9]+\.[0-9]+)_ ]]; then
    have="${BASH_REMATCH[1]}"
fi
have="${have:-$VERSION}"
[ "$have" = "$VERSION" ] || say "note: $archive is OpenVINO GenAI $have, not the pinned $VERSION; installing it as $have"

dest="$base/$have"
if [ -e "$dest" ] || [ -L "$dest" ]; then
    mv "$dest" "$work/old"
fi
mv "$root" "$dest"
ln -s "$have" "$work/current"
mv -Tf "$work/current" "$base/current"

libdir="$base/current/runtime/lib/intel64"
[ -d "$libdir" ] || libdir=$(dirname "$(find "$base/current/runtime/lib" -name 'libopenvino_genai_c.so*' -print -quit)")
say "installed OpenVINO GenAI $have ($os_name, $arch) into $dest"
say "current -> $have; the C library is in $libdir"
say "check it with: ovgenai-c doctor   (it names the library, its OpenVINO version and libopenvino path)"
echo "$dest"
