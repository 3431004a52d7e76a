"""OpenVINO's own C API (libopenvino_c), 1:1 and thin: core, models, compiled models, infer requests, tensors.

The GenAI C ABI has no tokenizer and no tensor type of its own; OpenVINO's C API has both. libopenvino_c is the one
of the OpenVINO the loaded GenAI library runs on (found by :func:`ovgenai_c._loader.openvino_c_library`), opened with
the shared cffi declarations of ``cdefs/openvino/``. Every handle is freed by ``ffi.gc`` and keeps what it depends on
(the library, the core, a weights buffer, a host array) alive. Objects here are not thread-safe: callers serialise.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _ffi, _loader, errors

# ov_element_type_e values (openvino/c/ov_common.h) <-> numpy dtypes
_DTYPES: Dict[str, Any] = {
    "BOOLEAN": np.bool_, "F16": np.float16, "F32": np.float32, "F64": np.float64, "I8": np.int8, "I16": np.int16,
    "I32": np.int32, "I64": np.int64, "U8": np.uint8, "U16": np.uint16, "U32": np.uint32, "U64": np.uint64,
}

_lock = threading.Lock()
_library: Optional["OpenVINOLibrary"] = None


class OpenVINOLibrary:
    """libopenvino_c opened with cffi, plus the openvino_tokenizers extension path of the loaded GenAI library."""

    def __init__(self, path: Path, tokenizers_path: Optional[str]) -> None:
        self.ffi = _ffi.get_ffi()
        self.path = str(path)
        self.tokenizers_path = tokenizers_path
        try:
            self.lib = self.ffi.dlopen(self.path)
        except OSError as exc:
            raise errors.LibraryNotFoundError(f"cannot open OpenVINO's C API {self.path}: {exc}") from None
        missing = [name for name in _ffi.openvino_functions() if not _ffi.has_symbol(self.lib, name)]
        if missing:
            raise errors.MissingSymbolError(f"{self.path} lacks OpenVINO C functions: {', '.join(missing)}")
        self.element_types = {name: int(getattr(self.lib, name)) for name in (*_DTYPES, "STRING")}
        self.dtype_of = {self.element_types[name]: np.dtype(dt) for name, dt in _DTYPES.items()}
        self.element_type_of = {np.dtype(dt): self.element_types[name] for name, dt in _DTYPES.items()}

    def last_error(self) -> Optional[str]:
        ptr = self.lib.ov_get_last_err_msg()
        if ptr == self.ffi.NULL:
            return None
        return self.ffi.string(ptr).decode("utf-8", "replace").strip() or None

    def check(self, status: int, function: str, what: str = "") -> None:
        """Raise the typed error for a failing ``ov_status_e``, with OpenVINO's own message."""
        if status != 0:
            raise errors.error_for(status, function, errors.STATUS_ENUM, what or None, self.last_error)

    def version(self) -> str:
        v = self.ffi.new("ov_version_t*")
        self.check(self.lib.ov_get_openvino_version(v), "ov_get_openvino_version")
        try:
            return self.ffi.string(v.buildNumber).decode()
        finally:
            self.lib.ov_version_free(v)


def get_openvino() -> OpenVINOLibrary:
    """The process-wide libopenvino_c (loads the GenAI library first if needed)."""
    global _library
    if _library is not None:
        return _library
    with _lock:
        if _library is None:
            path, tokenizers = _loader.openvino_c_library()
            _library = OpenVINOLibrary(path, tokenizers)
    return _library


class Shape:
    """An ``ov_shape_t`` in Python-owned memory (a plain struct: no C call to make or free it)."""

    def __init__(self, ov: OpenVINOLibrary, dims: Sequence[int]) -> None:
        self._dims = ov.ffi.new("int64_t[]", [int(d) for d in dims]) if dims else ov.ffi.NULL
        self.c = ov.ffi.new("ov_shape_t*", {"rank": len(dims), "dims": self._dims})


class Tensor:
    """An ``ov_tensor_t``. ``owner`` is kept alive as long as the tensor (host memory, the request it came from)."""

    def __init__(self, ov: OpenVINOLibrary, handle: Any, owner: Any = None) -> None:
        self._ov = ov
        self.c = ov.ffi.gc(handle, ov.lib.ov_tensor_free)
        self._owner = owner

    @classmethod
    def from_array(cls, ov: OpenVINOLibrary, array: np.ndarray) -> "Tensor":
        """A tensor over ``array``'s memory (no copy; the array is made C-contiguous and kept alive)."""
        array = np.ascontiguousarray(array)
        element_type = ov.element_type_of.get(array.dtype)
        if element_type is None:
            raise errors.InvalidParameterError(f"no OpenVINO element type for numpy dtype {array.dtype}")
        shape = Shape(ov, array.shape)
        out = ov.ffi.new("ov_tensor_t**")
        if array.size == 0:
            ov.check(ov.lib.ov_tensor_create(element_type, shape.c[0], out), "ov_tensor_create")
        else:
            ov.check(ov.lib.ov_tensor_create_from_host_ptr(element_type, shape.c[0],
                                                           ov.ffi.cast("void*", array.ctypes.data), out),
                     "ov_tensor_create_from_host_ptr")
        return cls(ov, out[0], owner=array)

    @classmethod
    def from_strings(cls, ov: OpenVINOLibrary, texts: Sequence[bytes]) -> "Tensor":
        """A 1-D STRING tensor (OpenVINO copies the strings; a NUL byte would end a string, so it is refused)."""
        for t in texts:
            if b"\0" in t:
                raise errors.InvalidParameterError("a string passed to OpenVINO's C API cannot contain a NUL character")
        shape = Shape(ov, [len(texts)])
        out = ov.ffi.new("ov_tensor_t**")
        if not texts:
            ov.check(ov.lib.ov_tensor_create(ov.element_types["STRING"], shape.c[0], out), "ov_tensor_create")
            return cls(ov, out[0])
        keep = [ov.ffi.new("char[]", t) for t in texts]
        arr = ov.ffi.new("const char*[]", keep)
        ov.check(ov.lib.ov_tensor_create_from_string_array(arr, len(texts), shape.c[0], out),
                 "ov_tensor_create_from_string_array")
        return cls(ov, out[0])

    def shape(self) -> Tuple[int, ...]:
        s = self._ov.ffi.new("ov_shape_t*")
        self._ov.check(self._ov.lib.ov_tensor_get_shape(self.c, s), "ov_tensor_get_shape")
        try:
            return tuple(int(s.dims[i]) for i in range(s.rank))
        finally:
            self._ov.lib.ov_shape_free(s)

    def element_type(self) -> int:
        t = self._ov.ffi.new("ov_element_type_e*")
        self._ov.check(self._ov.lib.ov_tensor_get_element_type(self.c, t), "ov_tensor_get_element_type")
        return int(t[0])

    def to_numpy(self) -> np.ndarray:
        """A copy of the tensor's data as a numpy array of its shape and element type."""
        et = self.element_type()
        if et not in self._ov.dtype_of:
            raise errors.NotSupportedError(f"reading an OpenVINO tensor of element type {et} into numpy")
        dtype = self._ov.dtype_of[et]
        shape = self.shape()
        n = int(np.prod(shape)) if shape else 1
        if n == 0:
            return np.zeros(shape, dtype=dtype)
        p = self._ov.ffi.new("void**")
        self._ov.check(self._ov.lib.ov_tensor_data(self.c, p), "ov_tensor_data")
        buf = self._ov.ffi.buffer(p[0], n * dtype.itemsize)
        return np.frombuffer(buf, dtype=dtype).reshape(shape).copy()


class Model:
    """An ``ov_model_t`` read from IR (keeps the weights buffer it shares memory with)."""

    def __init__(self, ov: OpenVINOLibrary, handle: Any, keep: Any = None) -> None:
        self._ov = ov
        self.c = ov.ffi.gc(handle, ov.lib.ov_model_free)
        self._keep = keep


class CompiledModel:
    """An ``ov_compiled_model_t`` (keeps its model's weights alive)."""

    def __init__(self, ov: OpenVINOLibrary, handle: Any, keep: Any = None) -> None:
        self._ov = ov
        self.c = ov.ffi.gc(handle, ov.lib.ov_compiled_model_free)
        self._keep = keep

    def inputs_size(self) -> int:
        n = self._ov.ffi.new("size_t*")
        self._ov.check(self._ov.lib.ov_compiled_model_inputs_size(self.c, n), "ov_compiled_model_inputs_size")
        return int(n[0])

    def create_infer_request(self) -> "InferRequest":
        out = self._ov.ffi.new("ov_infer_request_t**")
        self._ov.check(self._ov.lib.ov_compiled_model_create_infer_request(self.c, out),
                       "ov_compiled_model_create_infer_request")
        return InferRequest(self._ov, out[0], self)


class InferRequest:
    """An ``ov_infer_request_t``; input tensors set on it stay alive until replaced."""

    def __init__(self, ov: OpenVINOLibrary, handle: Any, compiled: CompiledModel) -> None:
        self._ov = ov
        self.c = ov.ffi.gc(handle, ov.lib.ov_infer_request_free)
        self._compiled = compiled
        self._inputs: Dict[Any, Tensor] = {}

    def inputs_size(self) -> int:
        return self._compiled.inputs_size()

    def set_input_tensor(self, index: int, tensor: Tensor) -> None:
        self._ov.check(self._ov.lib.ov_infer_request_set_input_tensor_by_index(self.c, index, tensor.c),
                       "ov_infer_request_set_input_tensor_by_index")
        self._inputs[index] = tensor

    def set_tensor(self, name: Union[str, bytes], tensor: Tensor) -> None:
        key = name if isinstance(name, bytes) else name.encode()
        status = self._ov.lib.ov_infer_request_set_tensor(self.c, key, tensor.c)
        if status:
            self._ov.check(status, "ov_infer_request_set_tensor", f"tensor {key.decode()!r}")
        self._inputs[name] = tensor

    def infer(self) -> None:
        self._ov.check(self._ov.lib.ov_infer_request_infer(self.c), "ov_infer_request_infer")

    def get_tensor(self, name: str) -> Tensor:
        out = self._ov.ffi.new("ov_tensor_t**")
        self._ov.check(self._ov.lib.ov_infer_request_get_tensor(self.c, name.encode(), out),
                       "ov_infer_request_get_tensor", f"tensor {name!r}")
        return Tensor(self._ov, out[0], owner=self)

    def read_tensor_bytes(self, name: bytes) -> bytes:
        """A copy of the raw data of the tensor named ``name`` (the fast path: 3 C calls, no wrapper kept)."""
        ov, ffi = self._ov, self._ov.ffi
        out = ffi.new("ov_tensor_t**")
        ov.check(ov.lib.ov_infer_request_get_tensor(self.c, name, out), "ov_infer_request_get_tensor",
                 f"tensor {name.decode()!r}")
        try:
            size = ffi.new("size_t*")
            ov.check(ov.lib.ov_tensor_get_byte_size(out[0], size), "ov_tensor_get_byte_size")
            if size[0] == 0:
                return b""
            data = ffi.new("void**")
            ov.check(ov.lib.ov_tensor_data(out[0], data), "ov_tensor_data")
            return ffi.buffer(data[0], size[0])[:]
        finally:
            ov.lib.ov_tensor_free(out[0])

    def get_output_tensor(self, index: int = 0) -> Tensor:
        out = self._ov.ffi.new("ov_tensor_t**")
        self._ov.check(self._ov.lib.ov_infer_request_get_output_tensor_by_index(self.c, index, out),
                       "ov_infer_request_get_output_tensor_by_index")
        return Tensor(self._ov, out[0], owner=self)


class Core:
    """An ``ov_core_t`` with the openvino_tokenizers extension added when ``with_tokenizers`` is set."""

    def __init__(self, ov: Optional[OpenVINOLibrary] = None, with_tokenizers: bool = False) -> None:
        self._ov = ov = ov or get_openvino()
        out = ov.ffi.new("ov_core_t**")
        ov.check(ov.lib.ov_core_create(out), "ov_core_create")
        self.c = ov.ffi.gc(out[0], ov.lib.ov_core_free)
        if with_tokenizers:
            if not ov.tokenizers_path:
                raise errors.LibraryNotFoundError(
                    "the openvino_tokenizers extension was not found (not beside the GenAI library, not in the "
                    "openvino-tokenizers wheel, OPENVINO_TOKENIZERS_PATH_GENAI unset)")
            ov.check(ov.lib.ov_core_add_extension(self.c, ov.tokenizers_path.encode()), "ov_core_add_extension",
                     ov.tokenizers_path)

    def read_model(self, xml_path: str, bin_path: Optional[str] = None) -> Model:
        out = self._ov.ffi.new("ov_model_t**")
        self._ov.check(self._ov.lib.ov_core_read_model(self.c, str(xml_path).encode(),
                                                       str(bin_path).encode() if bin_path else self._ov.ffi.NULL, out),
                       "ov_core_read_model", str(xml_path))
        return Model(self._ov, out[0])

    def read_model_from_memory(self, xml: bytes, weights: np.ndarray, what: str = "") -> Model:
        """Read IR from its XML text and its weights (a uint8 array the model shares; kept alive by the Model)."""
        weights = np.ascontiguousarray(weights, dtype=np.uint8)
        wt = Tensor.from_array(self._ov, weights) if weights.size else self._ov.ffi.NULL
        out = self._ov.ffi.new("ov_model_t**")
        self._ov.check(self._ov.lib.ov_core_read_model_from_memory_buffer(
            self.c, xml, len(xml), wt.c if isinstance(wt, Tensor) else wt, out),
            "ov_core_read_model_from_memory_buffer", what)
        return Model(self._ov, out[0], keep=(weights, wt))

    def available_devices(self) -> List[str]:
        """The devices this OpenVINO's plugins report (``ov::Core::get_available_devices``)."""
        ffi = self._ov.ffi
        devs = ffi.new("ov_available_devices_t*")
        self._ov.check(self._ov.lib.ov_core_get_available_devices(self.c, devs), "ov_core_get_available_devices")
        try:
            return [ffi.string(devs.devices[i]).decode("utf-8", "replace") for i in range(devs.size)]
        finally:
            self._ov.lib.ov_available_devices_free(devs)

    def get_property(self, device: str, key: str) -> str:
        """A device property as OpenVINO's C API prints it (e.g. ``INFERENCE_PRECISION_HINT`` -> ``bf16``)."""
        ffi = self._ov.ffi
        out = ffi.new("char**")
        self._ov.check(self._ov.lib.ov_core_get_property(self.c, device.encode(), key.encode(), out),
                       "ov_core_get_property", f"{device} {key}")
        try:
            return ffi.string(out[0]).decode("utf-8", "replace")
        finally:
            self._ov.lib.ov_free(out[0])

    def compile_model(self, model: Model, device: str = "CPU", properties: Optional[Mapping[str, str]] = None
                      ) -> CompiledModel:
        """Compile for ``device`` with string-valued properties (passed as key, value pairs)."""
        ffi = self._ov.ffi
        args: List[Any] = []
        for key, value in (properties or {}).items():
            args += [ffi.new("char[]", str(key).encode()), ffi.new("char[]", str(value).encode())]
        out = ffi.new("ov_compiled_model_t**")
        self._ov.check(self._ov.lib.ov_core_compile_model(self.c, model.c, device.encode(), len(args), out, *args),
                       "ov_core_compile_model", device)
        return CompiledModel(self._ov, out[0], keep=(model, self))


def openvino_devices() -> Dict[str, Any]:
    """The OpenVINO the loaded GenAI library runs on, asked through its own libopenvino_c (an official archive brings
    its own OpenVINO, whose version and plugins can differ from the openvino wheel's): ``version``, ``devices``,
    ``cpu_inference_precision`` (the CPU plugin's default ``INFERENCE_PRECISION_HINT``, None without a CPU) and
    ``through`` (the libopenvino_c asked). Loads the GenAI library first if needed."""
    ov = get_openvino()
    core = Core(ov)
    devices = core.available_devices()
    precision = None
    if "CPU" in devices:
        try:
            precision = core.get_property("CPU", "INFERENCE_PRECISION_HINT") or None
        except errors.GenAIError:
            pass
    return {"version": ov.version(), "devices": devices, "cpu_inference_precision": precision, "through": ov.path}
