"""``Tokenizer`` and ``TokenizedInputs``: openvino_genai's tokenizer API over OpenVINO's own C API (no pybind).

The model folder's openvino_tokenizer / openvino_detokenizer IR run through libopenvino_c with the
openvino_tokenizers extension, on whichever GenAI C library is loaded (official or bundled). GenAI sets
add_special_tokens / skip_special_tokens / padding side through model states that OpenVINO's C API cannot reach;
ovgenai_c compiles one variant of the IR per value instead (see :mod:`ovgenai_c._tokenizer_ir`), on first use.
Special tokens and the chat template are read as GenAI reads them: config.json, special_tokens_map.json,
tokenizer_config.json, the chat-template files, then the tokenizer IR's rt_info (which wins).

Thread safety: one compiled model (and infer request) per variant per Tokenizer; every call holds the
Tokenizer's lock, so a Tokenizer can be shared between threads (calls are serialised).
"""
from __future__ import annotations

import operator
import os
import threading
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _tokenizer_ir as ir
from . import errors
from .ir_folder import DETOKENIZER_XML, TOKENIZER_XML
from .special_tokens import read_special_tokens
from .tensor import Tensor

# Compile properties GenAI passes on to the tokenizer models (tokenizer_impl.cpp: filter_properties); others dropped.
_ALLOWED_PROPERTIES = ("PERFORMANCE_HINT", "PERFORMANCE_HINT_NUM_REQUESTS", "ENABLE_CPU_PINNING", "NUM_STREAMS",
                       "INFERENCE_NUM_THREADS", "EXECUTION_MODE_HINT", "COMPILED_BLOB", "ENABLE_HYPER_THREADING",
                       "ENABLE_CPU_RESERVATION", "PERF_COUNT")


_INPUT_NAMES = tuple(n.encode() for n in ir.INPUT_NAMES)
_OUTPUT_NAMES = tuple(n.encode() for n in ir.OUTPUT_NAMES)


class TokenizedInputs:
    """``input_ids`` and ``attention_mask`` (int64 :class:`~ovgenai_c.tensor.Tensor` of shape [batch, length])."""

    def __init__(self, input_ids: Any, attention_mask: Any) -> None:
        self.input_ids = input_ids if isinstance(input_ids, Tensor) else Tensor(input_ids)
        self.attention_mask = attention_mask if isinstance(attention_mask, Tensor) else Tensor(attention_mask)

    def __repr__(self) -> str:
        return f"TokenizedInputs(input_ids={self.input_ids.data!r}, attention_mask={self.attention_mask.data!r})"


def _property_text(value: Any) -> str:
    if isinstance(value, bool):
        return "YES" if value else "NO"
    name = getattr(value, "name", None)  # enums (openvino.properties.hint.PerformanceMode.LATENCY, ...)
    if isinstance(name, str) and not isinstance(value, (str, int, float)):
        return name
    return str(value)


def _bool_arg(value: Any, name: str) -> bool:
    if isinstance(value, (bool, np.bool_)) or isinstance(value, int):
        return bool(value)
    raise TypeError(f"{name} must be a bool, not {type(value).__name__}")


def _prompt_bytes(value: Any, where: str) -> bytes:
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise errors.InvalidParameterError(f"{where} is not encodable as UTF-8: {exc}") from None
    if isinstance(value, bytes):
        return value
    raise TypeError(f"{where} must be a str, not {type(value).__name__}")


def _token_row(tokens: Any, where: str) -> List[int]:
    if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__iter__"):
        raise TypeError(f"{where} must be a sequence of token ids, not {type(tokens).__name__}")
    row = []
    for i, t in enumerate(tokens):
        try:
            v = operator.index(t)
        except TypeError:
            raise TypeError(f"{where}[{i}] must be an int token id, not {type(t).__name__}") from None
        if not -(2 ** 63) <= v < 2 ** 63:
            raise TypeError(f"{where}[{i}] = {v} does not fit in int64")
        row.append(v)
    return row


class _Model:
    """One IR (tokenizer or detokenizer): its editable graph, and compiled variants by key, made on first use
    (the most recently used MAX_VARIANTS are kept: a loop over max_length values must not grow memory forever)."""

    MAX_VARIANTS = 8

    def __init__(self, xml_path: Path, graph: ir.IRGraph) -> None:
        self.xml_path = xml_path
        self.graph = graph
        self.variants: "OrderedDict[Any, Any]" = OrderedDict()  # key -> InferRequest


class Tokenizer:
    """Encodes prompts and decodes tokens with a model folder's openvino_tokenizer / openvino_detokenizer IR.

    ``Tokenizer(tokenizer_path, properties=None, **kwargs)``: ``tokenizer_path`` is the folder (not an .xml file).
    Compile properties are filtered like GenAI's (PERFORMANCE_HINT, NUM_STREAMS, INFERENCE_NUM_THREADS, ...).
    Chat template precedence (later wins): tokenizer_config.json, processor_config.json, chat_template.json,
    chat_template.jinja, the tokenizer IR's rt_info.
    """

    def __init__(self, tokenizer_path: Union[str, bytes, "os.PathLike[str]"],
                 properties: Optional[Mapping[str, Any]] = None, *args: Any, **kwargs: Any) -> None:
        self._lock = threading.RLock()
        self._core: Any = None
        if args or (properties is not None and not isinstance(properties, Mapping)):
            self._init_from_memory(tokenizer_path, properties, args, kwargs)
            return
        if isinstance(tokenizer_path, bytes):
            tokenizer_path = os.fsdecode(tokenizer_path)
        if not isinstance(tokenizer_path, (str, os.PathLike)):
            raise TypeError(f"tokenizer_path must be a path, not {type(tokenizer_path).__name__}")
        path = Path(tokenizer_path)
        if path.suffix == ".xml":
            raise errors.InvalidParameterError(
                f"'tokenizer_path' should be a path to a folder, not an .xml file: {path}")
        if not path.is_dir():
            raise errors.ModelNotFoundError(f"tokenizer folder not found: {path}")
        props: Dict[str, Any] = dict(kwargs)
        if properties:
            warnings.warn("'properties' parameters is deprecated, please use kwargs to pass config properties instead.",
                          DeprecationWarning, stacklevel=2)
            props.update(properties)
        self._properties = {str(k): _property_text(v) for k, v in props.items() if str(k) in _ALLOWED_PROPERTIES}
        self.path = path
        self._tok = self._read_ir(path / TOKENIZER_XML)
        self._detok = self._read_ir(path / DETOKENIZER_XML)
        if self._tok is None and self._detok is None:
            raise errors.ModelNotFoundError(
                f"{path} holds neither {TOKENIZER_XML} nor {DETOKENIZER_XML} (convert the tokenizer with "
                "openvino_tokenizers / optimum-cli)")
        rt = (self._tok or self._detok).graph.rt_info()  # type: ignore[union-attr]
        # GenAI sets tokenizer flags only for IR from openvino_tokenizers >= 24.5 (which record their version)
        self._flags_settable = "openvino_genai_version" in rt or "openvino_tokenizers_version" in rt
        self._read_special_tokens(path)

    def _init_from_memory(self, tokenizer_model: Any, tokenizer_weights: Any, args: Tuple[Any, ...],
                          kwargs: Dict[str, Any]) -> None:
        """``Tokenizer(tokenizer_model, tokenizer_weights, detokenizer_model, detokenizer_weights, **properties)``:
        IR XML text and weights (a uint8 Tensor / array / bytes) in memory; special tokens come from rt_info."""
        if len(args) != 2:
            raise TypeError("Tokenizer() takes a folder, or tokenizer_model, tokenizer_weights, detokenizer_model, "
                            "detokenizer_weights")
        self._properties = {str(k): _property_text(v) for k, v in kwargs.items() if str(k) in _ALLOWED_PROPERTIES}
        self.path = None  # type: ignore[assignment]
        self._tok, tok_bytes = self._ir_from_memory(tokenizer_model, tokenizer_weights, "tokenizer_model")
        self._detok, detok_bytes = self._ir_from_memory(args[0], args[1], "detokenizer_model")
        # the IR as given (a pipeline made with this tokenizer hands it to the C API in a model folder)
        self._memory_ir = [(TOKENIZER_XML, tok_bytes[0]), ("openvino_tokenizer.bin", tok_bytes[1]),
                           (DETOKENIZER_XML, detok_bytes[0]), ("openvino_detokenizer.bin", detok_bytes[1])]
        rt = self._tok.graph.rt_info()
        self._flags_settable = "openvino_genai_version" in rt or "openvino_tokenizers_version" in rt
        self._read_special_tokens(None)

    def memory_ir_files(self) -> List[Tuple[str, bytes]]:
        """The IR files (name, bytes) of a tokenizer made from memory, as given; empty for one read from a folder."""
        return list(getattr(self, "_memory_ir", ()))

    @staticmethod
    def _ir_from_memory(xml: Any, weights: Any, what: str) -> Tuple[_Model, Tuple[bytes, bytes]]:
        if not isinstance(xml, str):
            raise TypeError(f"{what} must be the IR's XML text (str), not {type(xml).__name__}")
        if isinstance(weights, (bytes, bytearray)):
            raw = bytes(weights)
        else:
            data = weights.data if hasattr(weights, "data") and not isinstance(weights, np.ndarray) else weights
            try:
                raw = np.ascontiguousarray(np.asarray(data)).tobytes()
            except Exception:
                raise TypeError(f"the weights of {what} must be a uint8 Tensor, array or bytes, "
                                f"not {type(weights).__name__}") from None
        text = xml.encode("utf-8")
        try:
            graph = ir.IRGraph(text, raw)
        except Exception as exc:
            raise errors.NetworkNotReadError(f"cannot read {what}: {exc}") from None
        return _Model(Path(f"<{what}>"), graph), (text, raw)

    # ---------------------------------------------------------------- set-up
    @staticmethod
    def _read_ir(xml_path: Path) -> Optional[_Model]:
        if not xml_path.is_file():
            return None
        bin_path = xml_path.with_suffix(".bin")
        if not bin_path.is_file():
            raise errors.ModelNotFoundError(f"{bin_path.name} is missing beside {xml_path}")
        try:
            graph = ir.IRGraph(xml_path.read_bytes(), bin_path.read_bytes())
        except Exception as exc:  # xml.etree.ElementTree.ParseError, ValueError
            raise errors.NetworkNotReadError(f"cannot read {xml_path}: {exc}") from None
        return _Model(xml_path, graph)

    def _read_special_tokens(self, path: Optional[Path]) -> None:
        """Special tokens and chat template in GenAI's order (:mod:`ovgenai_c.special_tokens`); token strings still
        missing are decoded from their ids on first use."""
        rt = self._tok.graph.rt_info() if self._tok is not None else {}
        t = read_special_tokens(path, rt)
        self._pad_id, self._bos_id, self._eos_id = t.pad_id, t.bos_id, t.eos_id
        self._pad, self._bos, self._eos = t.pad, t.bos, t.eos
        self._chat_template = t.chat_template
        self._original_chat_template = t.chat_template
        self._token_strings_done = False

    def _token_strings(self) -> None:
        """bos/eos/pad strings not found in the JSON files: decoded from their ids (GenAI does the same)."""
        with self._lock:
            if self._token_strings_done:
                return
            if self._detok is not None:
                for key in ("pad", "bos", "eos"):
                    tid = getattr(self, f"_{key}_id")
                    if tid != -1 and not getattr(self, "_" + key):
                        setattr(self, "_" + key, self.decode_bytes([[tid]], False)[0].decode("utf-8", "replace"))
            self._token_strings_done = True

    def _request(self, model: _Model, key: Any, edit: Any) -> Any:
        """The infer request of ``model``'s variant ``key`` (compiled on first use; ``edit(graph)`` makes it)."""
        request = model.variants.get(key)
        if request is not None:
            model.variants.move_to_end(key)
            return request
        from . import _openvino

        if self._core is None:
            self._core = _openvino.Core(_openvino.get_openvino(), with_tokenizers=True)
        graph = model.graph.copy()
        edit(graph)
        ov_model = self._core.read_model_from_memory(graph.to_xml(), np.frombuffer(bytes(graph.weights), np.uint8),
                                                     str(model.xml_path))
        request = self._core.compile_model(ov_model, "CPU", self._properties).create_infer_request()
        model.variants[key] = request
        while len(model.variants) > model.MAX_VARIANTS:
            model.variants.popitem(last=False)
        return request

    # ---------------------------------------------------------------- encode
    def encode(self, prompts: Any, add_special_tokens: Any = True, pad_to_max_length: bool = False,
               max_length: Optional[int] = None, padding_side: Optional[str] = None, truncation: bool = False
               ) -> TokenizedInputs:
        """Tokenize a prompt (str) or a batch (list of str) into ``TokenizedInputs`` (int64 [batch, length]).

        ``padding_side`` ('left' / 'right'), ``pad_to_max_length``, ``max_length`` and ``truncation`` act where
        GenAI's tokenizer passes make them settable (IR with a CombineSegments node); elsewhere, as in GenAI, the
        IR's own padding and length limit apply. Paired input (two lists, or a list of [a, b] pairs) is not
        supported.
        """
        if isinstance(add_special_tokens, (list, tuple)) or (
                isinstance(prompts, (list, tuple)) and prompts and all(isinstance(p, (list, tuple)) for p in prompts)):
            raise errors.NotSupportedError("paired input (prompts_1, prompts_2 or [[a, b], ...]) is not supported by "
                                           "ovgenai_c's Tokenizer")
        if isinstance(prompts, (str, bytes)):
            texts = [_prompt_bytes(prompts, "prompt")]
        elif isinstance(prompts, (list, tuple)):
            texts = [_prompt_bytes(p, f"prompts[{i}]") for i, p in enumerate(prompts)]
        else:
            raise TypeError(f"prompts must be a str or a list of str, not {type(prompts).__name__}")
        add = _bool_arg(add_special_tokens, "add_special_tokens")
        pad_max = _bool_arg(pad_to_max_length, "pad_to_max_length")
        trunc = _bool_arg(truncation, "truncation")
        if max_length is not None:
            try:
                max_length = operator.index(max_length)
            except TypeError:
                raise TypeError(f"max_length must be an int or None, not {type(max_length).__name__}") from None
            if max_length < 0:
                raise TypeError("max_length must be a non-negative int")
        if padding_side is not None and not isinstance(padding_side, str):
            raise TypeError(f"padding_side must be a str or None, not {type(padding_side).__name__}")
        if self._tok is None:
            raise errors.ModelNotFoundError(
                f"{TOKENIZER_XML} was not found in {self.path}; Tokenizer.encode is not available")
        if not self._flags_settable:
            add, pad_max, trunc, max_length, padding_side = True, False, False, None, None
        elif padding_side is not None and padding_side not in ("left", "right"):
            raise errors.InvalidParameterError(
                f"padding_side should be either 'left' or 'right', but got: {padding_side}")
        g = self._tok.graph
        drop_special = not add and bool(ir.special_token_segment_ports(g))
        pad_right = None
        if padding_side is not None and ir.padding_side_settable(g):
            pad_right = padding_side == "right"
        lengths = None
        if ir.length_hook(g) is not None:  # GenAI: no truncation unless asked, whatever the IR's own default
            lengths = (add, max_length, trunc, pad_max)

        def edit(graph: ir.IRGraph) -> None:
            ir.split_string_input(graph)
            if lengths is not None:
                ir.set_lengths(graph, *lengths)
            if drop_special:
                ir.drop_special_tokens(graph)
            if pad_right is not None:
                ir.set_pad_right(graph, pad_right)

        with self._lock:
            request = self._request(self._tok, ("encode", drop_special, pad_right, lengths), edit)
            self._set_prompts(request, texts)
            request.infer()
            ids = request.get_tensor("input_ids").to_numpy()
            mask = request.get_tensor("attention_mask").to_numpy()
        return TokenizedInputs(Tensor(ids), Tensor(mask))

    def _set_prompts(self, request: Any, texts: List[bytes]) -> None:
        from . import _openvino

        ov = _openvino.get_openvino()
        if self._split_input():
            lengths = np.fromiter((len(t) for t in texts), dtype=np.int32, count=len(texts))
            ends = np.cumsum(lengths, dtype=np.int64)
            if ends.size and ends[-1] > np.iinfo(np.int32).max:
                raise errors.InvalidParameterError("prompts longer than 2 GiB in total cannot be tokenized")
            begins = (ends - lengths).astype(np.int32)
            chars = np.frombuffer(b"".join(texts), dtype=np.uint8)
            for name, arr in zip(_INPUT_NAMES, (begins, ends.astype(np.int32), chars)):
                request.set_tensor(name, _openvino.Tensor.from_array(ov, arr))
        else:  # IR whose string input is not a plain Parameter -> StringTensorUnpack: strings (no NUL)
            request.set_input_tensor(0, _openvino.Tensor.from_strings(ov, texts))
            if request.inputs_size() > 1:  # a paired-input IR: the second input empty, as GenAI sets it
                request.set_input_tensor(1, _openvino.Tensor.from_strings(ov, []))

    def _split_input(self) -> bool:
        if not hasattr(self, "_input_split"):
            self._input_split = ir.split_string_input(self._tok.graph.copy())  # type: ignore[union-attr]
        return self._input_split

    # ---------------------------------------------------------------- decode
    def decode(self, tokens: Any, skip_special_tokens: Any = True) -> Union[str, List[str]]:
        """Detokenize token ids: a list of ints gives a str; a list of lists, a 2-D array or a Tensor gives a list
        of str. Rows of a batch are padded with the pad token id, as GenAI does."""
        skip = _bool_arg(skip_special_tokens, "skip_special_tokens")
        single = False
        if isinstance(tokens, Tensor) or (not isinstance(tokens, np.ndarray) and hasattr(tokens, "data")
                                          and hasattr(tokens, "get_shape")):
            arr = tokens.data if isinstance(tokens, Tensor) else np.asarray(tokens.data)
            if arr.dtype != np.int64:
                raise errors.InvalidParameterError(f"tokens tensor element type should be an i64, not {arr.dtype}")
            if arr.ndim != 2:
                raise errors.InvalidParameterError(
                    f"tokens tensor should be of rank 2 with shape [batch_size, seq_len], got shape {arr.shape}")
            rows: List[List[int]] = arr.tolist()
        elif isinstance(tokens, np.ndarray):
            if tokens.ndim == 1:
                rows, single = [_token_row(tokens.tolist(), "tokens")], True
            elif tokens.ndim == 2:
                rows = [_token_row(r, f"tokens[{i}]") for i, r in enumerate(tokens.tolist())]
            else:
                raise TypeError(f"tokens must be 1-D or 2-D, got an array of shape {tokens.shape}")
        elif isinstance(tokens, (list, tuple)) and tokens and all(
                not isinstance(t, (str, bytes)) and hasattr(t, "__iter__") for t in tokens):
            rows = [_token_row(r, f"tokens[{i}]") for i, r in enumerate(tokens)]
        elif isinstance(tokens, (list, tuple)):
            rows, single = [_token_row(tokens, "tokens")], True
        else:
            raise TypeError(f"tokens must be a list of ints, a list of lists of ints or a Tensor, "
                            f"not {type(tokens).__name__}")
        texts = [t.decode("utf-8", "replace") for t in self.decode_bytes(rows, skip)]
        return texts[0] if single else texts

    def decode_bytes(self, rows: Sequence[Sequence[int]], skip_special_tokens: bool = True) -> List[bytes]:
        """Detokenize rows of ids to raw UTF-8 bytes (what GenAI's decode returns as std::string; a streamer
        decodes with it, cutting the text only at whole characters)."""
        if self._detok is None:
            raise errors.ModelNotFoundError(
                f"{DETOKENIZER_XML} was not found in {self.path}; Tokenizer.decode is not available")
        if not rows:
            return []
        width = max(len(r) for r in rows)
        matrix = np.full((len(rows), width), self._pad_id, dtype=np.int64)
        for i, r in enumerate(rows):
            matrix[i, :len(r)] = r
        skip = skip_special_tokens if self._flags_settable else None
        settable = skip is not None and ir.skip_tokens_settable(self._detok.graph)

        def edit(graph: ir.IRGraph) -> None:
            if not ir.split_string_output(graph):
                raise errors.NotSupportedError(
                    f"{DETOKENIZER_XML} does not end in StringTensorPack -> Result; ovgenai_c cannot read its "
                    "strings through OpenVINO's C API")
            if settable:
                ir.set_skip_special_tokens(graph, bool(skip))

        from . import _openvino

        with self._lock:
            request = self._request(self._detok, ("decode", skip if settable else None), edit)
            request.set_input_tensor(0, _openvino.Tensor.from_array(_openvino.get_openvino(), matrix))
            request.infer()
            begins, ends, raw = (request.read_tensor_bytes(n) for n in _OUTPUT_NAMES)
        fmt = "q" if len(begins) == 8 * len(rows) else "i"  # i32 from openvino_tokenizers; i64 tolerated
        return [raw[b:e] for b, e in zip(memoryview(begins).cast(fmt), memoryview(ends).cast(fmt))]

    # ---------------------------------------------------------------- special tokens
    def get_bos_token_id(self) -> int:
        return self._bos_id

    def get_eos_token_id(self) -> int:
        return self._eos_id

    def get_pad_token_id(self) -> int:
        return self._pad_id

    def get_bos_token(self) -> str:
        self._token_strings()
        return self._bos

    def get_eos_token(self) -> str:
        self._token_strings()
        return self._eos

    def get_pad_token(self) -> str:
        self._token_strings()
        return self._pad

    # ---------------------------------------------------------------- vocabulary
    def get_vocab(self) -> Dict[bytes, int]:
        """The vocabulary as {token bytes: id} (bytes: not every entry is valid UTF-8)."""
        return {token: i for i, token in enumerate(self._vocab())}

    def get_vocab_vector(self) -> List[str]:
        """The vocabulary as a list of str (position = token id; invalid UTF-8 replaced)."""
        return [t.decode("utf-8", "replace") for t in self._vocab()]

    def _vocab(self) -> List[bytes]:
        with self._lock:
            vocab = getattr(self, "_vocab_cache", None)
            if vocab is None:
                vocab = ir.vocab(self._detok.graph) if self._detok is not None else None
                self._vocab_cache = vocab
        if vocab is None:
            raise errors.NotSupportedError("the vocabulary cannot be read: the detokenizer IR has no VocabDecoder "
                                           "with constant inputs")
        return vocab

    def supports_paired_input(self) -> bool:
        """False: ovgenai_c's Tokenizer encodes single prompts only (paired input is refused)."""
        return False

    # ---------------------------------------------------------------- chat template
    @property
    def chat_template(self) -> str:
        return self.get_chat_template()

    @chat_template.setter
    def chat_template(self, value: str) -> None:
        self.set_chat_template(value)

    def get_chat_template(self) -> str:
        with self._lock:
            return self._chat_template

    def get_original_chat_template(self) -> str:
        with self._lock:
            return self._original_chat_template

    def set_chat_template(self, chat_template: str) -> None:
        """Override the chat template read from the model folder."""
        if not isinstance(chat_template, str):
            raise TypeError(f"chat_template must be a str, not {type(chat_template).__name__}")
        with self._lock:
            self._chat_template = chat_template
            self._original_chat_template = chat_template

    def apply_chat_template(self, history: Any, add_generation_prompt: bool, chat_template: str = "",
                            tools: Optional[List[Dict[str, Any]]] = None,
                            extra_context: Optional[Dict[str, Any]] = None) -> str:
        """Render a ChatHistory (or a list of message dicts) with the chat template into a prompt string.

        ``tools`` / ``extra_context`` default to the history's own. The context has messages,
        add_generation_prompt, tools (when not empty), bos_token, eos_token, pad_token, then extra_context.
        Rendering: the bundled backend's C++ Jinja engine (Hugging Face semantics) when the loaded library has it;
        otherwise Python's jinja2 if installed, configured like transformers (sandboxed, trim_blocks,
        lstrip_blocks, loopcontrols, raise_exception, strftime_now, tojson without ASCII escaping). GenAI renders
        with its own engine (minja); the three agree on ordinary templates, and may differ where minja adds its
        polyfills or deviates from jinja2. With neither engine, NotSupportedError.
        """
        if isinstance(history, (list, tuple)):
            for i, m in enumerate(history):
                if not isinstance(m, dict):
                    raise TypeError(f"history[{i}] must be a dict, not {type(m).__name__}")
            messages, own_tools, own_extra = [dict(m) for m in history], [], {}
        elif hasattr(history, "get_messages"):  # ovgenai_c.ChatHistory (or openvino_genai's)
            messages = list(history.get_messages())
            own_tools = list(history.get_tools()) if hasattr(history, "get_tools") else []
            own_extra = dict(history.get_extra_context()) if hasattr(history, "get_extra_context") else {}
        else:
            raise TypeError(f"history must be a ChatHistory or a list of dicts, not {type(history).__name__}")
        add = _bool_arg(add_generation_prompt, "add_generation_prompt")
        if not isinstance(chat_template, str):
            raise TypeError(f"chat_template must be a str, not {type(chat_template).__name__}")
        resolved_tools = own_tools if tools is None else tools
        resolved_extra = own_extra if extra_context is None else extra_context
        if not isinstance(resolved_tools, (list, tuple)):
            raise errors.InvalidParameterError(f"tools should be a list of dicts, got {type(resolved_tools).__name__}")
        if not isinstance(resolved_extra, dict):
            raise errors.InvalidParameterError(
                f"extra_context should be a dict, got {type(resolved_extra).__name__}")
        template = chat_template or self.get_chat_template()
        if not template:
            raise errors.GeneralError(
                "Chat template wasn't found. This may indicate that the model wasn't trained for chat scenario. "
                "Please add 'chat_template' to tokenizer_config.json to use the model in chat scenario.")
        self._token_strings()
        context: Dict[str, Any] = {"bos_token": self._bos, "eos_token": self._eos, "pad_token": self._pad}
        context.update(resolved_extra)
        from . import _chat_render

        text = _chat_render.render(template, messages, list(resolved_tools), context, add)
        if not text:
            raise errors.GeneralError(
                "Applied chat template resulted in an empty string. Please check the chat template or apply the "
                "template manually to your prompt before calling generate.")
        return text

    def __repr__(self) -> str:
        return f"Tokenizer({str(self.path)!r})"
