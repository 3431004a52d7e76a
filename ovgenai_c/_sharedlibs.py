"""Shared libraries, without loading them: ELF dynamic sections, the dependency closure the dynamic linker
would resolve, and what this process has mapped (``/proc/self/maps``).

The loader uses this to check a candidate library *before* anything of it is mapped (a missing dependency, a
file that is not a shared library for this machine, a second OpenVINO version), because a library that was
mapped cannot always be unmapped again (libopenvino carries unique symbols: glibc never unloads it).
"""
from __future__ import annotations

import glob
import mmap
import os
import re
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple

_DT_NEEDED, _DT_STRTAB, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = 1, 5, 14, 15, 29
_PT_LOAD, _PT_DYNAMIC = 1, 2
_ET_DYN = 3
OPENVINO_CORE = re.compile(r"^libopenvino\.so(\.[0-9.]+)?$")


class NotLoadable(Exception):
    """The file is not a shared library this process could load (the text says why)."""


@dataclass(frozen=True)
class ElfInfo:
    """The dynamic-linking facts of one shared library."""

    path: Path
    machine: int
    soname: Optional[str]
    needed: Tuple[str, ...]
    rpath: Tuple[str, ...]  # DT_RPATH entries, $ORIGIN expanded
    runpath: Tuple[str, ...]  # DT_RUNPATH entries, $ORIGIN expanded

    @property
    def name(self) -> str:
        """The name the dynamic linker knows it by: the soname, else the file name."""
        return self.soname or self.path.name


_elf_cache: Dict[Tuple[str, int, int], ElfInfo] = {}


def read_elf(path: Path) -> ElfInfo:
    """Read the dynamic section of ``path``; raises :class:`NotLoadable` for anything but an ELF shared object."""
    path = Path(path)
    try:
        st = path.stat()
    except OSError as exc:
        raise NotLoadable(f"cannot read it ({exc.strerror or exc})") from None
    key = (str(path), st.st_ino, int(st.st_mtime_ns))
    if key in _elf_cache:
        return _elf_cache[key]
    try:
        with open(path, "rb") as f:
            if st.st_size < 64:
                raise NotLoadable("not an ELF shared library (file too short)")
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                info = _parse(path, m)
    except OSError as exc:
        raise NotLoadable(f"cannot read it ({exc.strerror or exc})") from None
    _elf_cache[key] = info
    return info


def _parse(path: Path, m: mmap.mmap) -> ElfInfo:
    if m[:4] != b"\x7fELF":
        raise NotLoadable("not an ELF shared library")
    is64 = m[4] == 2
    end = "<" if m[5] == 1 else ">"
    if is64:
        e_type, e_machine = struct.unpack_from(end + "HH", m, 16)
        e_phoff, = struct.unpack_from(end + "Q", m, 32)
        e_phentsize, e_phnum = struct.unpack_from(end + "HH", m, 54)
    else:
        e_type, e_machine = struct.unpack_from(end + "HH", m, 16)
        e_phoff, = struct.unpack_from(end + "I", m, 28)
        e_phentsize, e_phnum = struct.unpack_from(end + "HH", m, 42)
    if e_type != _ET_DYN:
        raise NotLoadable("an ELF file but not a shared library")
    loads: List[Tuple[int, int, int]] = []  # (vaddr, offset, filesz)
    dyn: Optional[Tuple[int, int]] = None
    for i in range(e_phnum):
        off = e_phoff + i * e_phentsize
        if is64:
            p_type, _fl, p_offset, p_vaddr, _pa, p_filesz = struct.unpack_from(end + "IIQQQQ", m, off)
        else:
            p_type, p_offset, p_vaddr, _pa, p_filesz = struct.unpack_from(end + "IIIII", m, off)
        if p_type == _PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == _PT_DYNAMIC:
            dyn = (p_offset, p_filesz)
    if dyn is None:
        raise NotLoadable("an ELF file without a dynamic section")
    entry = struct.Struct(end + ("qQ" if is64 else "iI"))
    tags: List[Tuple[int, int]] = []
    for off in range(dyn[0], dyn[0] + dyn[1], entry.size):
        tag, val = entry.unpack_from(m, off)
        if tag == 0:
            break
        tags.append((tag, val))
    strtab_vaddr = next((v for t, v in tags if t == _DT_STRTAB), None)
    strtab = None
    for vaddr, offset, filesz in loads:
        if strtab_vaddr is not None and vaddr <= strtab_vaddr < vaddr + filesz:
            strtab = strtab_vaddr - vaddr + offset
    if strtab is None:
        raise NotLoadable("an ELF file whose dynamic string table cannot be found")

    def string(off: int) -> str:
        start = strtab + off
        stop = m.find(b"\0", start)
        return m[start:stop].decode("utf-8", "replace")

    origin = str(path.parent)

    def dirs(val: int) -> Tuple[str, ...]:
        return tuple(d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)
                     for d in string(val).split(":") if d)

    soname = next((string(v) for t, v in tags if t == _DT_SONAME), None)
    return ElfInfo(path=path, machine=e_machine, soname=soname,
                   needed=tuple(string(v) for t, v in tags if t == _DT_NEEDED),
                   rpath=tuple(d for t, v in tags if t == _DT_RPATH for d in dirs(v)),
                   runpath=tuple(d for t, v in tags if t == _DT_RUNPATH for d in dirs(v)))


_MACHINE_NAMES = {3: "x86 (32-bit)", 62: "x86-64", 183: "aarch64", 40: "arm", 243: "riscv"}
_own_machine: Optional[int] = None


def own_machine() -> Optional[int]:
    """The ELF machine of this interpreter."""
    global _own_machine
    if _own_machine is None:
        for exe in ("/proc/self/exe", sys.executable):
            try:
                with open(exe, "rb") as f:
                    head = f.read(20)
                if head[:4] == b"\x7fELF":
                    _own_machine = struct.unpack_from("<H" if head[5] == 1 else ">H", head, 18)[0]
                    break
            except OSError:
                continue
    return _own_machine


def check_loadable(path: Path) -> ElfInfo:
    """The library's ELF facts, or :class:`NotLoadable` if it cannot be a library for this process."""
    info = read_elf(path)
    mine = own_machine()
    if mine is not None and info.machine != mine:
        raise NotLoadable(f"built for {_MACHINE_NAMES.get(info.machine, info.machine)}, this Python runs on "
                          f"{_MACHINE_NAMES.get(mine, mine)}")
    return info


# ------------------------------------------------------------------------------------------- process state

def mapped_libraries() -> List[str]:
    """Real paths of every shared library this process has mapped, in first-mapped order."""
    seen: Dict[str, None] = {}
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and ".so" in parts[5]:
                    p = parts[5].strip()
                    if p.endswith(" (deleted)"):
                        continue
                    seen.setdefault(p, None)
    except OSError:
        return []
    return list(seen)


def mapped_sonames() -> Dict[str, str]:
    """soname (or file name) -> real path, for every mapped library."""
    out: Dict[str, str] = {}
    for p in mapped_libraries():
        try:
            name = read_elf(Path(p)).name
        except NotLoadable:
            name = os.path.basename(p)
        out.setdefault(name, p)
    return out


def mapped_openvino() -> List[str]:
    """Real paths of every libopenvino (the core library) mapped in this process."""
    return [p for p in mapped_libraries() if OPENVINO_CORE.match(os.path.basename(p))]


# --------------------------------------------------------------------------------------------- versions

def openvino_version_of_file(path: Path) -> str:
    """An OpenVINO version for a libopenvino file, without loading it: the full version when the real file
    name carries it (archives: ``libopenvino.so.2026.3.0``), else the build number stored in it, else the
    soname's (``libopenvino.so.2641``)."""
    real = Path(os.path.realpath(path))
    m = re.search(r"\.so\.(\d{4}\.\d+\.\d+(?:\.\d+)?)$", real.name)
    if m:
        return m.group(1)
    build = _build_number_in(real)
    if build:
        return build
    try:
        soname = read_elf(real).name
    except NotLoadable:
        soname = real.name
    m = re.search(r"\.so\.(\d+)$", soname)
    return f"soversion {m.group(1)}" if m else "unknown"


def _build_number_in(path: Path) -> Optional[str]:
    """OpenVINO's build number (``2026.4.1-22982-e213a147257``) as stored in libopenvino (~15 ms for 20 MB)."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            found = re.search(rb"(20\d\d\.\d+\.\d+)-\d+-[0-9a-f]{6,}", m)
            return bytes(found.group(0)).decode() if found else None
    except (OSError, ValueError):
        return None


def openvino_soname(path: Path) -> str:
    """The soname of a libopenvino file: what tells two OpenVINO versions apart."""
    try:
        return read_elf(Path(os.path.realpath(path))).name
    except NotLoadable:
        return os.path.basename(path)


def runtime_version(openvino_c: str) -> Optional[str]:
    """``ov_get_openvino_version()`` of a mapped libopenvino_c (its build number), or None."""
    import ctypes

    class _Version(ctypes.Structure):
        _fields_ = [("buildNumber", ctypes.c_char_p), ("description", ctypes.c_char_p)]

    try:
        lib = ctypes.CDLL(openvino_c, mode=ctypes.RTLD_GLOBAL)  # already mapped: only takes a reference
        get, free = lib.ov_get_openvino_version, lib.ov_version_free
    except (OSError, AttributeError):
        return None
    get.argtypes = free.argtypes = [ctypes.POINTER(_Version)]
    get.restype, free.restype = ctypes.c_int, None
    v = _Version()
    if get(ctypes.byref(v)) != 0 or not v.buildNumber:
        return None
    try:
        return v.buildNumber.decode("utf-8", "replace")
    finally:
        free(ctypes.byref(v))


# ------------------------------------------------------------------------------ dependency resolution

_system_dirs: Optional[List[str]] = None
_ldconfig: Optional[Dict[str, str]] = None


def _ld_conf_dirs(conf: str, depth: int = 0) -> List[str]:
    out: List[str] = []
    try:
        with open(conf) as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for ln in lines:
        ln = ln.split("#", 1)[0].strip()
        if not ln:
            continue
        if ln.startswith("include") and depth < 4:
            for inc in sorted(glob.glob(ln.split(None, 1)[1] if " " in ln else "")):
                out += _ld_conf_dirs(inc, depth + 1)
        else:
            out.append(ln)
    return out


def system_dirs() -> List[str]:
    """The dynamic linker's default folders (ld.so.conf and the built-in ones)."""
    global _system_dirs
    if _system_dirs is None:
        dirs = _ld_conf_dirs("/etc/ld.so.conf")
        dirs += ["/lib64", "/usr/lib64", "/lib", "/usr/lib"]
        _system_dirs = list(dict.fromkeys(d for d in dirs if os.path.isdir(d)))
    return _system_dirs


def _in_ld_cache(name: str) -> Optional[str]:
    global _ldconfig
    if _ldconfig is None:
        import subprocess

        _ldconfig = {}
        for exe in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
            try:
                out = subprocess.run([exe, "-p"], capture_output=True, text=True, timeout=10).stdout
            except (OSError, subprocess.SubprocessError):
                continue
            for ln in out.splitlines():
                m = re.match(r"\s*(\S+) \(.*\) => (\S+)", ln)
                if m:
                    _ldconfig.setdefault(m.group(1), m.group(2))
            break
    return _ldconfig.get(name)


@dataclass
class Closure:
    """What loading a set of libraries in order would map: new files by soname, and what is missing."""

    new: Dict[str, Path]
    reused: Dict[str, str]  # soname -> the already-mapped real path that would serve it
    missing: List[Tuple[str, str, Tuple[str, ...]]]  # (name, needed by, folders looked in)

    def openvino(self) -> Optional[Tuple[str, str]]:
        """(soname, path) of the libopenvino this closure brings or reuses."""
        for name, p in list(self.new.items()) + list(self.reused.items()):
            if name.startswith("libopenvino.so"):
                return name, str(p)
        return None


def resolve(load_order: Iterable[Path], extra_dirs: Iterable[Path] = ()) -> Closure:
    """Walk the dependencies the dynamic linker would resolve when ``load_order`` is dlopened by path, one
    after the other, in this process. Libraries found in the system folders are not descended into."""
    mapped = mapped_sonames()
    env_dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    extra = [str(d) for d in extra_dirs]
    new: Dict[str, Path] = {}
    reused: Dict[str, str] = {}
    missing: List[Tuple[str, str, Tuple[str, ...]]] = []
    pending: List[ElfInfo] = []
    for p in load_order:
        info = check_loadable(p)
        if info.name in mapped:
            reused[info.name] = mapped[info.name]
            continue
        if info.name not in new:
            new[info.name] = p
            pending.append(info)
    seen: Set[str] = set(new)
    while pending:
        obj = pending.pop(0)
        for name in obj.needed:
            if name in mapped:
                reused.setdefault(name, mapped[name])
                continue
            if name in new or name in seen:
                continue
            search = (list(obj.rpath) if not obj.runpath else []) + env_dirs + list(obj.runpath)
            found = next((Path(d) / name for d in search if (Path(d) / name).exists()), None)
            system = False
            if found is None:
                found = next((Path(d) / name for d in system_dirs() if (Path(d) / name).exists()), None)
                if found is None and _in_ld_cache(name):
                    found = Path(_in_ld_cache(name) or name)
                system = found is not None
            if found is None:
                missing.append((name, obj.name, tuple(dict.fromkeys(search + extra))))
                seen.add(name)
                continue
            seen.add(name)
            if system:
                continue
            try:
                info = check_loadable(found)
            except NotLoadable as exc:
                missing.append((name, obj.name, (f"{found}: {exc}",)))
                continue
            new[name] = found
            pending.append(info)
    return Closure(new=new, reused=reused, missing=missing)
