"""scripts/fetch_genai_archive.sh: help, --from with checksum, refusal on mismatch, fast offline failure."""
from __future__ import annotations

import hashlib
import io
import os
import pathlib
import shutil
import subprocess
import tarfile
import time

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "fetch_genai_archive.sh"
VERSION = "2026.4.1.0"
ROOT = f"openvino_genai_ubuntu24_{VERSION}_x86_64"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def run(*args, env_extra=None, timeout=60):
    env = dict(os.environ)
    env.pop("OVGENAI_C_ARCHIVE_URL", None)
    env.update(env_extra or {})
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout)


def make_archive(path: pathlib.Path, with_lib=True) -> str:
    files = {
        f"{ROOT}/setupvars.sh": b"# fake setupvars\n",
        f"{ROOT}/runtime/lib/intel64/libopenvino.so.2026.4.1": b"\x7fELF fake core",
    }
    if with_lib:
        files[f"{ROOT}/runtime/lib/intel64/libopenvino_genai_c.so.2026.4.1.0"] = b"\x7fELF fake genai c"
    with tarfile.open(path, "w:gz") as tf:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
        link = tarfile.TarInfo(f"{ROOT}/runtime/lib/intel64/libopenvino_genai_c.so")
        link.type = tarfile.SYMTYPE
        link.linkname = "libopenvino_genai_c.so.2026.4.1.0"
        if with_lib:
            tf.addfile(link)
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def test_help():
    r = run("--help")
    assert r.returncode == 0
    for word in ("--from", "--sha256", "genai-archive", "current", "OVGENAI_C_LIBRARY", VERSION):
        assert word in r.stdout


def test_unknown_argument():
    r = run("--bogus")
    assert r.returncode != 0 and "unknown argument" in r.stderr


def test_print_url_naming():
    r = run("--print-url", "--os", "ubuntu24")
    assert r.returncode == 0
    url = r.stdout.strip()
    assert url.startswith("https://storage.openvinotoolkit.org/repositories/openvino_genai/packages/2026.4.1/linux/")
    assert url.endswith(f"/openvino_genai_ubuntu24_{VERSION}_" + ("arm64" if os.uname().machine in ("aarch64", "arm64") else "x86_64") + ".tar.gz")
    assert "rhel8" in run("--print-url", "--os", "rhel8").stdout
    assert run("--print-url", "--os", "windows").returncode != 0


def test_from_archive_installs_and_links_current(tmp_path, home):
    arc = tmp_path / f"{ROOT}.tar.gz"
    sha = make_archive(arc)
    r = run("--from", str(arc), "--sha256", sha.upper(), env_extra={"OVGENAI_C_HOME": str(home)})
    assert r.returncode == 0, r.stderr
    base = home / "genai-archive"
    dest = base / VERSION
    assert r.stdout.strip() == str(dest)
    assert (dest / "setupvars.sh").is_file()
    assert (base / "current").is_symlink() and os.readlink(base / "current") == VERSION
    lib = base / "current" / "runtime" / "lib" / "intel64" / "libopenvino_genai_c.so"
    assert lib.read_bytes() == b"\x7fELF fake genai c"
    assert [p.name for p in base.iterdir() if p.name.startswith(".")] == [], "temp dirs cleaned"
    # re-install over an existing one works and keeps the link
    r = run("--from", str(arc), "--sha256", sha, env_extra={"OVGENAI_C_HOME": str(home)})
    assert r.returncode == 0, r.stderr
    assert lib.is_file() and os.readlink(base / "current") == VERSION


def test_from_archive_of_another_release_installs_under_its_own_version(tmp_path, home):
    """An archive given with --from may be another release than the pinned one: it goes under the version its
    libopenvino_genai_c.so.<version> names (library_info() reports the archive release from there), with a note."""
    arc = tmp_path / f"{ROOT}.tar.gz"
    other = "2026.3.0.0"
    with tarfile.open(arc, "w:gz") as tf:
        for name, data in {f"{ROOT}/setupvars.sh": b"# fake\n",
                           f"{ROOT}/runtime/lib/intel64/libopenvino_genai_c.so.{other}": b"\x7fELF fake"}.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    sha = hashlib.sha256(arc.read_bytes()).hexdigest()
    r = run("--from", str(arc), "--sha256", sha, env_extra={"OVGENAI_C_HOME": str(home)})
    assert r.returncode == 0, r.stderr
    base = home / "genai-archive"
    assert r.stdout.strip() == str(base / other) and os.readlink(base / "current") == other
    assert not (base / VERSION).exists()
    assert f"is OpenVINO GenAI {other}, not the pinned {VERSION}" in r.stderr


def test_from_uses_sha256_file_beside_archive(tmp_path, home):
    arc = tmp_path / f"{ROOT}.tar.gz"
    sha = make_archive(arc)
    (tmp_path / f"{ROOT}.tar.gz.sha256").write_text(f"{sha}  {ROOT}.tar.gz\n")
    r = run("--from", str(arc), env_extra={"OVGENAI_C_HOME": str(home)})
    assert r.returncode == 0, r.stderr
    assert (home / "genai-archive" / "current" / "setupvars.sh").is_file()


def test_default_home_is_xdg_data(tmp_path):
    arc = tmp_path / f"{ROOT}.tar.gz"
    sha = make_archive(arc)
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "h")}
    env_clean = {k: v for k, v in os.environ.items() if k != "OVGENAI_C_HOME"}
    env_clean.update(env)
    r = subprocess.run(["bash", str(SCRIPT), "--from", str(arc), "--sha256", sha], capture_output=True, text=True,
                       env=env_clean, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "xdg" / "ovgenai_c" / "genai-archive" / "current" / "setupvars.sh").is_file()


def test_wrong_sha_refuses(tmp_path, home):
    arc = tmp_path / f"{ROOT}.tar.gz"
    make_archive(arc)
    r = run("--from", str(arc), "--sha256", "0" * 64, env_extra={"OVGENAI_C_HOME": str(home)})
    assert r.returncode != 0
    assert "mismatch" in r.stderr and "refusing" in r.stderr
    base = home / "genai-archive"
    assert not (base / VERSION).exists() and not (base / "current").exists()


def test_bad_sha_syntax(tmp_path, home):
    arc = tmp_path / f"{ROOT}.tar.gz"
    make_archive(arc)
    r = run("--from", str(arc), "--sha256", "abc", env_extra={"OVGENAI_C_HOME": str(home)})
    assert r.returncode != 0 and "64 hex" in r.stderr


def test_archive_without_c_library_is_refused(tmp_path, home):
    arc = tmp_path / f"{ROOT}.tar.gz"
    sha = make_archive(arc, with_lib=False)
    r = run("--from", str(arc), "--sha256", sha, env_extra={"OVGENAI_C_HOME": str(home)})
    assert r.returncode != 0 and "libopenvino_genai_c.so" in r.stderr
    assert not (home / "genai-archive" / "current").exists()


def test_unreachable_url_fails_fast_with_guidance(home):
    t = time.monotonic()
    r = run(env_extra={"OVGENAI_C_HOME": str(home), "OVGENAI_C_ARCHIVE_URL": "http://127.0.0.1:9/x.tar.gz"}, timeout=30)
    assert time.monotonic() - t < 15
    assert r.returncode != 0
    for word in ("could not reach", "--from", "OVGENAI_C_LIBRARY", "bundled backend"):
        assert word in r.stderr
    assert not (home / "genai-archive" / "current").exists()


def test_unreachable_with_explicit_sha_still_fails_fast(home):
    t = time.monotonic()
    r = run("--sha256", "a" * 64,
            env_extra={"OVGENAI_C_HOME": str(home), "OVGENAI_C_ARCHIVE_URL": "http://127.0.0.1:9/x.tar.gz"}, timeout=30)
    assert time.monotonic() - t < 15
    assert r.returncode != 0 and "could not reach http://127.0.0.1:9/x.tar.gz" in r.stderr


def test_shellcheck_clean():
    sc = shutil.which("shellcheck")
    if sc is None:
        pytest.skip("shellcheck not installed")
    r = subprocess.run([sc, str(SCRIPT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
