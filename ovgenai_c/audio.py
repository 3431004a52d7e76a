"""Audio input of WhisperPipeline: raw PCM arrays and WAV files as the 16 kHz mono float32 samples the GenAI C ABI
takes (``ov_genai_whisper_pipeline_generate``: samples near [-1, 1]).

Rules for arrays (numpy arrays, lists or tuples of numbers, anything numpy turns into a 1-D numeric array):

* float32 is used as it is; float16 and float64 are converted to float32 (values unchanged);
* integer PCM is scaled by its full scale, as WAV readers do: int8 / 128, int16 / 32768, int32 / 2**31, uint8
  (offset binary, as 8-bit WAV) (x - 128) / 128; other integer types, bools and complex numbers are refused;
* one dimension only (mono); a 2-D array is refused with the mix-down to use; empty input and NaN / infinite
  samples are refused. The array is assumed to be 16 kHz already (as openvino_genai assumes).

WAV files (stdlib :mod:`wave`): 8-, 16-, 24- and 32-bit integer PCM, any channel count (mixed down by averaging),
any rate: a rate other than 16 kHz is resampled with soxr (if installed) or ``scipy.signal.resample_poly`` — the
optional ``audio`` extra, ``pip install 'ovgenai_c[audio]'`` — never by hand. Float WAV (format 3) is not something
:mod:`wave` reads; convert it to integer PCM first.
"""
from __future__ import annotations

import math
import os
import wave
from pathlib import Path
from typing import Any, BinaryIO, Tuple, Union

from . import _interpreter, errors

SAMPLE_RATE = 16000  # what Whisper's feature extractor takes
AUDIO_EXTRA = "audio"
_INT_SCALE = {"int8": 128.0, "int16": 32768.0, "int32": 2147483648.0}


def as_samples(raw: Any, where: str = "raw_speech_input") -> Any:
    """``raw`` (see the module's rules) as a private, C-contiguous float32 numpy array of 16 kHz mono samples."""
    import numpy as np

    if isinstance(raw, (str, bytes, os.PathLike)):
        if isinstance(raw, bytes):
            raise errors.InvalidParameterError(f"{where}: bytes are not samples; pass a numpy array or a WAV path")
        return read_wav(raw)
    if isinstance(raw, (list, tuple)):
        bad = [x for x in raw if isinstance(x, bool) or not isinstance(x, (int, float, np.number))]
        if bad:
            raise errors.InvalidParameterError(
                f"{where}: a list of samples must hold numbers, found {type(bad[0]).__name__}")
        arr = np.asarray(raw, dtype=np.float64)
    else:
        try:
            arr = np.asarray(raw)
        except Exception as exc:  # a foreign object numpy cannot read
            raise errors.InvalidParameterError(f"{where}: cannot read samples from {type(raw).__name__}: {exc}") \
                from None
    arr = _as_float32(arr, where)
    if arr.ndim != 1:
        hint = " (mix stereo down with x.mean(axis=1) for (samples, channels))" if arr.ndim == 2 else ""
        raise errors.InvalidParameterError(
            f"{where}: samples must be one-dimensional (mono), got shape {list(arr.shape)}{hint}")
    if arr.size == 0:
        raise errors.InvalidParameterError(f"{where}: no samples (the audio is empty)")
    finite = np.isfinite(arr)
    if not finite.all():
        i = int(np.argmin(finite))
        raise errors.InvalidParameterError(f"{where}: sample {i} is {arr[i]} (samples must be finite numbers)")
    return np.array(arr, dtype=np.float32, order="C", copy=True)


def _as_float32(arr: Any, where: str) -> Any:
    import numpy as np

    kind, name = arr.dtype.kind, arr.dtype.name
    if kind == "f":
        return arr.astype(np.float32, copy=False)
    if name in _INT_SCALE:
        return (arr.astype(np.float64) / _INT_SCALE[name]).astype(np.float32)
    if name == "uint8":
        return ((arr.astype(np.float64) - 128.0) / 128.0).astype(np.float32)
    raise errors.InvalidParameterError(
        f"{where}: samples of type {arr.dtype} are not audio this binding reads: pass float32 samples near [-1, 1] "
        "(float16/float64 are converted; int8/int16/int32/uint8 PCM is scaled by its full scale)")


def read_wav(path: Union[str, os.PathLike, BinaryIO], rate: int = SAMPLE_RATE) -> Any:
    """A WAV file's samples (a path or a binary file object) as float32 mono at ``rate`` Hz (mixed down, resampled
    when needed)."""
    samples, file_rate = read_wav_native(path)
    if file_rate != rate:
        samples = resample(samples, file_rate, rate)
    return samples


def read_wav_native(path: Union[str, os.PathLike, BinaryIO]) -> Tuple[Any, int]:
    """(float32 mono samples, sample rate) of a WAV file (a path or a binary file object), at its own rate."""
    import numpy as np

    if hasattr(path, "read"):
        source: Any = path
        p = Path(getattr(path, "name", None) or "the uploaded audio")
    else:
        p = Path(os.fspath(path))  # type: ignore[arg-type]
        if not p.is_file():
            raise errors.InvalidParameterError(f"no such audio file: {p}")
        source = str(p)
    try:
        with wave.open(source, "rb") as w:
            channels, width, file_rate, frames = w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()
            data = w.readframes(frames)
    except (wave.Error, EOFError) as exc:
        raise errors.InvalidParameterError(
            f"{p} is not a WAV file the stdlib wave module reads (integer PCM only; convert float or compressed "
            f"audio to 16-bit PCM first): {exc}") from None
    if width == 1:
        ints = np.frombuffer(data, dtype=np.uint8).astype(np.float64)
        x = (ints - 128.0) / 128.0
    elif width == 2:
        x = np.frombuffer(data, dtype="<i2").astype(np.float64) / 32768.0
    elif width == 3:
        b = np.frombuffer(data, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
        v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        v = np.where(v >= 1 << 23, v - (1 << 24), v)
        x = v.astype(np.float64) / float(1 << 23)
    elif width == 4:
        x = np.frombuffer(data, dtype="<i4").astype(np.float64) / 2147483648.0
    else:  # pragma: no cover - wave refuses other widths itself
        raise errors.InvalidParameterError(f"{p}: {8 * width}-bit samples are not supported")
    if channels > 1:
        x = x[: len(x) - len(x) % channels].reshape(-1, channels).mean(axis=1)
    if x.size == 0:
        raise errors.InvalidParameterError(f"{p}: the WAV file holds no samples")
    return np.ascontiguousarray(x, dtype=np.float32), int(file_rate)


def resample(samples: Any, from_rate: int, to_rate: int = SAMPLE_RATE) -> Any:
    """``samples`` resampled from ``from_rate`` to ``to_rate`` Hz with soxr, else scipy (the ``audio`` extra)."""
    import numpy as np

    if from_rate == to_rate:
        return samples
    try:
        import soxr
    except ImportError:
        soxr = None
    if soxr is not None:
        out = soxr.resample(np.asarray(samples, dtype=np.float32), from_rate, to_rate)
        return np.ascontiguousarray(out, dtype=np.float32)
    try:
        from scipy.signal import resample_poly
    except ImportError:
        if not _interpreter.REFCOUNTED:  # (neither publishes wheels for PyPy)
            raise errors.NotSupportedError(
                f"the audio is {from_rate} Hz and Whisper takes {to_rate} Hz: resampling needs soxr or scipy, which "
                f"{_interpreter.NAME} cannot install: resample it to {to_rate} Hz first (e.g. `sox in.wav -r "
                f"{to_rate} out.wav`)") from None
        raise errors.NotSupportedError(
            f"the audio is {from_rate} Hz and Whisper takes {to_rate} Hz: resampling needs soxr or scipy, the "
            f"optional '{AUDIO_EXTRA}' extra: pip install 'ovgenai_c[{AUDIO_EXTRA}]' (or resample it to {to_rate} Hz "
            "yourself)") from None
    g = math.gcd(int(from_rate), int(to_rate))
    out = resample_poly(np.asarray(samples, dtype=np.float64), to_rate // g, from_rate // g)
    return np.ascontiguousarray(out, dtype=np.float32)


__all__ = ["SAMPLE_RATE", "as_samples", "read_wav", "read_wav_native", "resample"]
