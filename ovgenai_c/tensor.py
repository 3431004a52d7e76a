"""A numpy-backed stand-in for ``openvino.Tensor`` (what ``TokenizedInputs`` holds), without importing openvino."""
from __future__ import annotations

from typing import Any, Iterable, Optional

import numpy as np

# OpenVINO's element type names for numpy dtypes (as openvino.Type.get_type_name() spells them)
_TYPE_NAMES = {np.dtype(np.int64): "i64", np.dtype(np.int32): "i32", np.dtype(np.int16): "i16",
               np.dtype(np.int8): "i8", np.dtype(np.uint64): "u64", np.dtype(np.uint32): "u32",
               np.dtype(np.uint16): "u16", np.dtype(np.uint8): "u8", np.dtype(np.float32): "f32",
               np.dtype(np.float64): "f64", np.dtype(np.float16): "f16", np.dtype(np.bool_): "boolean"}


class Shape(tuple):
    """A tensor shape: a tuple of ints that also compares equal to a list (``openvino.Shape`` does)."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple)) or hasattr(other, "__iter__") and not isinstance(other, (str, bytes)):
            try:
                return tuple(int(d) for d in other) == tuple(self)  # type: ignore[union-attr]
            except (TypeError, ValueError):
                return False
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__

    def __repr__(self) -> str:
        return "[" + ",".join(str(d) for d in self) + "]"

    def to_string(self) -> str:
        return repr(self)


class ElementType:
    """An element type by OpenVINO name (``i64``); equal to that name, to the numpy dtype, or to openvino.Type.i64."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = np.dtype(dtype)
        self.name = _TYPE_NAMES.get(self.dtype, str(self.dtype))

    def get_type_name(self) -> str:
        return self.name

    def to_dtype(self) -> np.dtype:
        return self.dtype

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ElementType):
            return self.dtype == other.dtype
        if isinstance(other, str):
            return other in (self.name, str(self.dtype))
        get_name = getattr(other, "get_type_name", None)
        if callable(get_name):  # openvino.Type
            return get_name() == self.name
        try:
            return self.dtype == np.dtype(other)  # type: ignore[arg-type]
        except TypeError:
            return False

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"<Type: '{self.name}'>"


class Tensor:
    """An n-dimensional array with ``openvino.Tensor``'s read API: ``data`` (the numpy array itself, shared),
    ``shape`` / ``get_shape()``, ``size`` / ``get_size()``, ``element_type`` / ``get_element_type()``, ``byte_size``;
    ``np.array(tensor)`` works. ``Tensor(array)`` shares the array's memory like ``openvino.Tensor(array)``."""

    __slots__ = ("_array",)

    def __init__(self, array: Any, shape: Optional[Iterable[int]] = None) -> None:
        if isinstance(array, Tensor):
            array = array.data
        elif not isinstance(array, np.ndarray) and hasattr(array, "data") and isinstance(array.data, np.ndarray):
            array = array.data  # an openvino.Tensor
        arr = np.asarray(array)
        if shape is not None:
            arr = arr.reshape(tuple(int(d) for d in shape))
        self._array = arr

    @property
    def data(self) -> np.ndarray:
        return self._array

    @property
    def shape(self) -> Shape:
        return Shape(int(d) for d in self._array.shape)

    def get_shape(self) -> Shape:
        return self.shape

    @property
    def size(self) -> int:
        return int(self._array.size)

    def get_size(self) -> int:
        return self.size

    @property
    def byte_size(self) -> int:
        return int(self._array.nbytes)

    def get_byte_size(self) -> int:
        return self.byte_size

    @property
    def element_type(self) -> ElementType:
        return ElementType(self._array.dtype)

    def get_element_type(self) -> ElementType:
        return self.element_type

    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> np.ndarray:
        if dtype is not None and np.dtype(dtype) != self._array.dtype:
            return self._array.astype(dtype)
        return self._array.copy() if copy else self._array

    def __repr__(self) -> str:
        return f"<Tensor: shape{self.shape!r} type: {self.element_type.name}>"

