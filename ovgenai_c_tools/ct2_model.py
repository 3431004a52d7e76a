"""Reader for CTranslate2's ``model.bin`` (the binary model format of CTranslate2 models, binary version 6).

Layout (little endian)::

    u32 binary_version            (this reader knows 6)
    string spec_name              (u16 length counting a trailing NUL, then the bytes)
    u32 spec_revision
    u32 variable_count
    variable_count times:
        string name
        u8 rank, u32 dims[rank]
        u8 dtype                  (0 f32, 1 i8, 2 i16, 3 i32, 4 f16, 5 bf16)
        u32 byte_count, byte_count raw bytes (row major)
    u32 alias_count
    alias_count times: string alias, string target

Every defect of the file (short, wrong version, a name or dtype that does not fit) raises
:class:`CT2FormatError` naming the file and the offset; nothing else is assumed about its content.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple, Union

import numpy as np

SUPPORTED_BINARY_VERSION = 6

# dtype code -> numpy dtype (bf16 is read as its raw 16 bits and widened on request)
_DTYPES: Dict[int, np.dtype] = {
    0: np.dtype("<f4"),
    1: np.dtype("i1"),
    2: np.dtype("<i2"),
    3: np.dtype("<i4"),
    4: np.dtype("<f2"),
    5: np.dtype("<u2"),
}
DTYPE_NAMES = {0: "float32", 1: "int8", 2: "int16", 3: "int32", 4: "float16", 5: "bfloat16"}


class CT2FormatError(ValueError):
    """``model.bin`` is not a CTranslate2 model this reader understands; the message says why and where."""


@dataclass
class CT2Model:
    """A parsed ``model.bin``: spec name and revision, and its variables by name (aliases resolved)."""

    path: Path
    binary_version: int
    spec_name: str
    spec_revision: int
    variables: Dict[str, np.ndarray] = field(default_factory=dict)
    dtypes: Dict[str, str] = field(default_factory=dict)
    aliases: Dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> np.ndarray:
        """The variable ``name`` (or the variable an alias of that name points to); raises
        :class:`CT2FormatError` naming the missing variable."""
        target = self.aliases.get(name, name)
        try:
            return self.variables[target]
        except KeyError:
            raise CT2FormatError(
                f"{self.path}: the {self.spec_name} model has no variable {name!r}"
                + (f" (alias of {target!r})" if target != name else "")) from None

    def has(self, name: str) -> bool:
        return self.aliases.get(name, name) in self.variables

    def scalar(self, name: str) -> int:
        """A rank-0 integer variable (CTranslate2 stores flags and head counts this way) as a Python int."""
        value = self.get(name)
        if value.size != 1:
            raise CT2FormatError(f"{self.path}: variable {name!r} should be a scalar, has shape {value.shape}")
        return int(value.reshape(-1)[0])

    def float32(self, name: str) -> np.ndarray:
        """A floating-point variable as float32 (bf16 widened exactly)."""
        value = self.get(name)
        if self.dtypes[self.aliases.get(name, name)] == "bfloat16":
            return (value.astype(np.uint32) << 16).view(np.float32)
        if value.dtype.kind != "f":
            raise CT2FormatError(f"{self.path}: variable {name!r} is {value.dtype}, not floating point")
        return value.astype(np.float32)


class _Cursor:
    def __init__(self, path: Path, data: Union[bytes, memoryview]) -> None:
        self.path = path
        self.data = data
        self.offset = 0

    def take(self, count: int, what: str) -> memoryview:
        end = self.offset + count
        if count < 0 or end > len(self.data):
            raise CT2FormatError(f"{self.path}: truncated: {what} needs {count} bytes at offset {self.offset}, "
                                 f"the file has {len(self.data)} bytes")
        view = memoryview(self.data)[self.offset:end]
        self.offset = end
        return view

    def unpack(self, fmt: str, what: str) -> Tuple[int, ...]:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))

    def u8(self, what: str) -> int:
        return self.unpack("<B", what)[0]

    def u32(self, what: str) -> int:
        return self.unpack("<I", what)[0]

    def string(self, what: str) -> str:
        length = self.unpack("<H", what + " length")[0]
        raw = bytes(self.take(length, what))
        if length == 0 or raw[-1:] != b"\0":
            raise CT2FormatError(f"{self.path}: {what} at offset {self.offset - length} is not NUL-terminated")
        try:
            return raw[:-1].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CT2FormatError(f"{self.path}: {what} at offset {self.offset - length} is not UTF-8") from exc


def parse_ct2_model(data: bytes, path: Union[str, Path] = "<bytes>") -> CT2Model:
    """Parse the bytes of a ``model.bin``."""
    cur = _Cursor(Path(path), data)
    version = cur.u32("the binary version")
    if version != SUPPORTED_BINARY_VERSION:
        raise CT2FormatError(f"{cur.path}: CTranslate2 binary version {version} is not supported "
                             f"(this reader knows version {SUPPORTED_BINARY_VERSION})")
    spec = cur.string("the spec name")
    revision = cur.u32("the spec revision")
    model = CT2Model(Path(path), version, spec, revision)
    count = cur.u32("the variable count")
    for index in range(count):
        name = cur.string(f"the name of variable {index}")
        rank = cur.u8(f"the rank of {name!r}")
        dims: List[int] = [cur.u32(f"dimension {d} of {name!r}") for d in range(rank)]
        code = cur.u8(f"the dtype of {name!r}")
        if code not in _DTYPES:
            raise CT2FormatError(f"{cur.path}: variable {name!r} has unknown dtype code {code}")
        nbytes = cur.u32(f"the byte count of {name!r}")
        expected = int(np.prod(dims, dtype=np.int64)) * _DTYPES[code].itemsize
        if nbytes != expected:
            raise CT2FormatError(f"{cur.path}: variable {name!r} of shape {dims} and dtype {DTYPE_NAMES[code]} "
                                 f"should have {expected} bytes, the file says {nbytes}")
        raw = cur.take(nbytes, f"the data of {name!r}")
        model.variables[name] = np.frombuffer(raw, dtype=_DTYPES[code]).reshape(dims)
        model.dtypes[name] = DTYPE_NAMES[code]
    alias_count = cur.u32("the alias count")
    for index in range(alias_count):
        alias = cur.string(f"alias {index}")
        target = cur.string(f"the target of alias {alias!r}")
        if target not in model.variables:
            raise CT2FormatError(f"{cur.path}: alias {alias!r} points to the missing variable {target!r}")
        model.aliases[alias] = target
    if cur.offset != len(data):
        raise CT2FormatError(f"{cur.path}: {len(data) - cur.offset} unexpected bytes after the aliases "
                             f"(offset {cur.offset})")
    return model


def read_ct2_model(path: Union[str, Path]) -> CT2Model:
    """Read and parse a CTranslate2 ``model.bin`` (the arrays are views of the file's bytes)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CT2FormatError(f"cannot read the CTranslate2 model {path}: {exc}") from exc
    return parse_ct2_model(data, path)


def write_ct2_model(path: Union[str, Path], spec_name: str, spec_revision: int,
                    variables: Dict[str, np.ndarray], aliases: Dict[str, str]) -> None:
    """Write ``variables`` (numpy arrays of the supported dtypes; no bf16) as a ``model.bin`` — used by the
    tests and the tiny random model."""
    codes = {np.dtype(v): k for k, v in _DTYPES.items() if k != 5}

    def string(text: str) -> bytes:
        raw = text.encode("utf-8") + b"\0"
        return struct.pack("<H", len(raw)) + raw

    parts = [struct.pack("<I", SUPPORTED_BINARY_VERSION), string(spec_name), struct.pack("<II", spec_revision,
                                                                                         len(variables))]
    for name, array in variables.items():
        array = np.asarray(array)  # (not ascontiguousarray: it makes scalars 1-d)
        code = codes[array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype]
        parts += [string(name), struct.pack("<B", array.ndim), struct.pack(f"<{array.ndim}I", *array.shape),
                  struct.pack("<BI", code, array.nbytes), array.tobytes()]
    parts.append(struct.pack("<I", len(aliases)))
    for alias, target in aliases.items():
        parts += [string(alias), string(target)]
    Path(path).write_bytes(b"".join(parts))


__all__ = ["CT2FormatError", "CT2Model", "SUPPORTED_BINARY_VERSION", "parse_ct2_model", "read_ct2_model",
           "write_ct2_model"]
