"""VLMPipeline: images and text in, text out, through the GenAI C API's vlm_pipeline.h.

The same machinery as :class:`~ovgenai_c.LLMPipeline` (one owner thread per pipeline, the generation call with its
deadline and native cancellation, the streamer bridge, config materialisation, the error model, ``close()`` /
context manager / finalizer); only the C header differs, and the inputs carry images.

Images: numpy arrays of uint8 RGB pixels, HWC (one image) or NHWC (a batch), as openvino_genai takes them; an
:class:`ovgenai_c.Tensor` or an ``openvino.Tensor`` over such data; a PIL image; or an image file path (read with
Pillow, the optional ``vision`` extra: ``pip install 'ovgenai_c[vision]'``). Each is checked here, then **copied
once** on the caller's thread into a private C-contiguous array, and C gets an ``ov_tensor_t`` made with
``ov_tensor_create_from_host_ptr`` over that copy (kept alive until C has returned). The copy is what lets the
caller reuse or change its own array as soon as ``generate()`` / ``stream()`` returns control — a stream goes on
on the owner thread meanwhile — and it makes any strided or non-contiguous input valid; the host pointer then
spares libopenvino_c a second copy.

The bundled backend does not implement VLMs (no small VLM that GenAI supports is available to build and test it
against): its ``ov_genai_vlm_pipeline_create`` answers NOT_IMPLEMENTED and this class raises
:class:`~ovgenai_c.errors.NotSupportedError` saying that the official GenAI C library is needed.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Dict, List, Optional, Tuple, Union

from . import _ffi, _loader, chat as _chat, errors
from ._call import check_timeout
from ._capi import vlm_pipeline
from .chat import ChatHistory
from .config import GenerationConfig
from .pipeline import LLMPipeline, TextStream, _check_text, _Input, resolve_library
from .results import VLMDecodedResults
from .streamers import TextParserStreamer

Prompt = Union[str, ChatHistory, List[Dict[str, Any]]]
VISION_EXTRA = "vision"


def _pillow() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise errors.NotSupportedError(
            f"reading image files needs Pillow, the optional '{VISION_EXTRA}' extra: pip install "
            f"'ovgenai_c[{VISION_EXTRA}]' (or pass the pixels as a uint8 numpy array, HWC RGB)") from None
    return Image


def _as_array(item: Any, where: str) -> Any:
    """One image input as a numpy array (not yet checked), reading a file with Pillow."""
    import numpy as np

    if isinstance(item, (str, os.PathLike)):
        path = Path(os.fspath(item))
        if not path.is_file():
            raise errors.InvalidParameterError(f"{where}: no such image file: {path}")
        image_mod = _pillow()
        try:
            with image_mod.open(path) as img:
                return np.asarray(img.convert("RGB"))
        except OSError as exc:
            raise errors.InvalidParameterError(f"{where}: {path} is not an image Pillow can read: {exc}") from None
    module = type(item).__module__ or ""
    if module.startswith("PIL.") and hasattr(item, "convert"):
        return np.asarray(item.convert("RGB"))
    if isinstance(item, np.ndarray):
        return item
    if module.startswith("openvino") and hasattr(item, "data"):  # an openvino.Tensor (never imported here)
        return np.asarray(item.data)
    if hasattr(item, "__array__") and hasattr(item, "shape"):  # ovgenai_c.Tensor and other array-likes
        return np.asarray(item)
    raise errors.InvalidParameterError(
        f"{where}: an image must be a uint8 numpy array (HWC or NHWC, RGB), a Tensor, a PIL image or an image file "
        f"path, not {type(item).__name__}")


def check_image(item: Any, where: str = "image") -> Any:
    """``item`` as a private, C-contiguous uint8 array of 3 (HWC) or 4 (NHWC) dims with 3 channels, non-empty."""
    import numpy as np

    arr = _as_array(item, where)
    if arr.dtype != np.uint8:
        raise errors.InvalidParameterError(f"{where}: image pixels must be uint8 (0..255 RGB), got {arr.dtype}")
    if arr.ndim not in (3, 4):
        raise errors.InvalidParameterError(
            f"{where}: an image must have 3 dims (height, width, 3) or 4 (batch, height, width, 3), got shape "
            f"{list(arr.shape)}")
    if arr.shape[-1] != 3:
        raise errors.InvalidParameterError(
            f"{where}: an image must have 3 channels (RGB) in its last dim, got shape {list(arr.shape)}")
    if arr.size == 0:
        raise errors.InvalidParameterError(f"{where}: the image is empty (shape {list(arr.shape)})")
    return np.array(arr, dtype=np.uint8, order="C", copy=True)


def image_list(images: Any = None, image: Any = None) -> Tuple[Any, ...]:
    """The checked private arrays of ``images`` (one image or a list of them) or ``image`` (one), in order."""
    if images is not None and image is not None:
        raise errors.InvalidParameterError("pass images=[...] or image=..., not both")
    if image is not None:
        if isinstance(image, (list, tuple)):
            raise errors.InvalidParameterError("image= takes one image; pass a list as images=[...]")
        return (check_image(image, "image"),)
    if images is None:
        return ()
    if isinstance(images, (list, tuple)):
        return tuple(check_image(x, f"images[{i}]") for i, x in enumerate(images))
    return (check_image(images, "images"),)


def missing_functions(lib: _loader.LoadedLibrary) -> List[str]:
    """The vlm_pipeline.h functions ``lib`` does not export."""
    return [name for name in _ffi.vlm_functions() if not lib.has_extra(name)]


class VLMPipelineBase:
    """The base class of :class:`VLMPipeline`, as openvino_genai's (which adds nothing to it): for ``isinstance``
    checks written against openvino_genai."""


class VLMPipeline(LLMPipeline, VLMPipelineBase):
    """A visual-language pipeline over the GenAI C API (openvino_genai.VLMPipeline's names).

    ``VLMPipeline(models_path, device="CPU", **properties)``; ``generate(prompt, images=None,
    generation_config=None, streamer=None, *, image=None, timeout=None, **config_fields)`` — positional order as
    pybind's (images, then the config, then the streamer; ``image=`` by keyword) —, ``stream()`` / ``astream()``,
    ``start_chat()`` / ``finish_chat()``, a ChatHistory as the prompt, ``get/set_generation_config()``.
    """

    _native = vlm_pipeline
    _decoded_results = VLMDecodedResults

    def __init__(self, models_path: Union[str, os.PathLike], device: str = "CPU",
                 config: Optional[Dict[str, Any]] = None, *,
                 library: Union[None, str, os.PathLike, _loader.LoadedLibrary] = None, **properties: Any) -> None:
        self._state = None
        lib = resolve_library(library)
        missing = missing_functions(lib)
        if missing:
            raise errors.NotSupportedError(
                f"the {lib.kind} GenAI C library {lib.path} has no VLM support: it does not export "
                f"{', '.join(missing)}")
        try:
            super().__init__(models_path, device, config, library=lib, **properties)
        except errors.NotImplementedGenAIError as exc:
            if lib.kind != "bundled" or isinstance(exc, errors.NotSupportedError):
                raise
            raise errors.NotSupportedError(
                f"VLMPipeline needs the official GenAI C library: the bundled backend does not implement VLMs "
                f"({exc})") from None

    def _check_model_path(self, models_path: Any, lib: _loader.LoadedLibrary) -> str:
        if not isinstance(models_path, (str, os.PathLike)):
            raise errors.InvalidParameterError(
                f"models_path must be a str or os.PathLike, not {type(models_path).__name__}")
        path = os.fsdecode(os.fspath(models_path))
        _check_text(path, "models_path")
        if not Path(path).exists():
            raise errors.ModelNotFoundError(f"model path does not exist: {path}")
        if not Path(path).is_dir():
            raise errors.ModelNotFoundError(f"{path} is a file; a VLM is an OpenVINO IR model folder")
        return path

    def set_chat_template(self, chat_template: str) -> None:
        """openvino_genai's VLMPipeline.set_chat_template: vlm_pipeline.h has no such function, so this refuses."""
        raise errors.NotSupportedError(
            "VLMPipeline.set_chat_template: vlm_pipeline.h has no function for it; through the GenAI C API the "
            "pipeline uses the model's own chat template")

    # --- inputs --------------------------------------------------------------------------------------
    def _vlm_input(self, prompt: Prompt, images: Any, image: Any, kwargs: Dict[str, Any]) -> _Input:
        if "videos" in kwargs or "video" in kwargs:
            raise errors.NotSupportedError("videos cannot pass through the GenAI C API (vlm_pipeline.h takes images)")
        arrays = image_list(images, image)
        if isinstance(prompt, str):
            return _Input(prompt=_check_text(prompt, "the prompt"), images=arrays)
        if isinstance(prompt, (ChatHistory, list)):
            if isinstance(prompt, list) and prompt and all(isinstance(x, str) for x in prompt):
                raise errors.NotSupportedError("VLMPipeline takes one prompt (a str or a ChatHistory), not a list "
                                               "of prompts")
            history = _chat.as_chat_history(prompt)
            if history.empty():
                raise errors.InvalidParameterError("empty input: give a prompt, a list of prompts or a chat history with "
                                                   "at least one message")
            return _Input(history=history.copy(), images=arrays)
        if isinstance(prompt, bytes):
            raise errors.InvalidParameterError("the prompt must be a str, not bytes (decode it first)")
        raise errors.InvalidParameterError(
            f"the prompt must be a str or a ChatHistory (or a list of message dicts), not {type(prompt).__name__}")

    def _check_streamer(self, streamer: Any) -> Tuple[Optional[Callable[[str], Any]], Any, Any]:
        if isinstance(streamer, TextParserStreamer):
            return streamer.write_text, None, None  # (the library's text chunks: VLM calls stream text only)
        on_text, on_tokens, token_streamer = super()._check_streamer(streamer)
        if on_tokens is not None:
            raise errors.NotSupportedError(
                f"{type(streamer).__name__} is a token-level streamer: VLMPipeline streams decoded text through the "
                "GenAI C API; pass a callable taking text, or a TextStreamer")
        return on_text, on_tokens, token_streamer

    # --- generation ----------------------------------------------------------------------------------
    def generate(self, prompt: Prompt, images: Any = None,  # type: ignore[override]
                 generation_config: Optional[GenerationConfig] = None, streamer: Optional[Callable[[str], Any]] = None,
                 *, image: Any = None, timeout: Optional[float] = None, **kwargs: Any) -> VLMDecodedResults:
        """Generate an answer for ``prompt`` (a str or a ChatHistory) about ``images`` (a list) or ``image``.

        ``streamer(text)``, ``timeout`` and keyword GenerationConfig fields as :meth:`LLMPipeline.generate`.
        Returns :class:`~ovgenai_c.VLMDecodedResults` (a DecodedResults, for a str prompt too, as openvino_genai).
        ``GenerationConfig.parsers`` and a :class:`~ovgenai_c.TextParserStreamer` fill ``parsed`` as for
        LLMPipeline (openvino_genai 2026.4's VLMPipeline leaves it empty)."""
        on_text, _, _ = self._check_streamer(streamer)
        check_timeout(timeout)
        request = self._vlm_input(prompt, images, image, kwargs)
        parser_streamer = streamer if isinstance(streamer, TextParserStreamer) else None
        if parser_streamer is not None:
            parser_streamer.reset()
        call = self._start_generate(request, generation_config, on_text, kwargs, timeout)
        call.parser_streamer = parser_streamer
        call.wait()
        return call.parsed(call.outcome())

    __call__ = generate

    def stream(self, prompt: Prompt, images: Any = None,  # type: ignore[override]
               generation_config: Optional[GenerationConfig] = None, *, image: Any = None,
               timeout: Optional[float] = None, **kwargs: Any) -> TextStream:
        """Iterate over the answer's text pieces (as :meth:`LLMPipeline.stream`); ``.result`` at the end."""
        check_timeout(timeout)
        request = self._vlm_input(prompt, images, image, kwargs)
        return super().stream(request, generation_config, timeout=timeout, **kwargs)

    def astream(self, prompt: Prompt, images: Any = None,  # type: ignore[override]
                generation_config: Optional[GenerationConfig] = None, *, image: Any = None,
                timeout: Optional[float] = None, **kwargs: Any) -> AsyncIterator[str]:
        """Async iterator of text pieces (as :meth:`LLMPipeline.astream`); the inputs are checked at once."""
        check_timeout(timeout)
        return super().astream(self._vlm_input(prompt, images, image, kwargs), generation_config, timeout=timeout,
                               **kwargs)


__all__ = ["VLMPipeline", "check_image", "image_list", "missing_functions"]
