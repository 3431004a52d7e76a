"""Edits of openvino_tokenizers IR (XML + weights) that stand in for GenAI's tokenizer graph passes.

GenAI turns add_special_tokens / skip_special_tokens / padding side into model *states* with C++ graph passes
(make_tokenizer_stateful.cpp) and sets them per call. OpenVINO's C API can neither run passes nor set states, so
ovgenai_c compiles one variant of the IR per flag value instead, made by editing the XML the same way the pass would
resolve for that value:

* add_special_tokens=False: the "end" inputs of CombineSegments' special-token segments become 0 (GenAI: Select(flag,
  end, 0)); segments whose end comes from Add/Truncate (or begin from Subtract) hold the text and stay.
* skip_special_tokens: VocabDecoder's skip-token list (input 4) is sliced to [0:INT_MAX] (skip all, GenAI's default)
  or to nothing (skip none).
* padding_side: the pad_right attribute of every RaggedToDense.
* max_length / truncation / pad_to_max_length: the length-limit Const becomes the requested limit (or "no limit"
  without truncation, GenAI's default), the IR's own "truncation" state a constant, and RaggedToDense's width
  max(longest, max_length) when padding to max length.

Two structural edits make strings cross the C API as plain arrays (no std::string layout, NUL bytes allowed): the
tokenizer's string Parameter + StringTensorUnpack become three Parameters (begins, ends, chars) and the detokenizer's
StringTensorPack + Result become three Results. Everything here is pure Python over xml.etree; nothing is loaded.
"""
from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .special_tokens import rt_info_of

INPUT_NAMES = ("ovgc_prompt_begins", "ovgc_prompt_ends", "ovgc_prompt_chars")
OUTPUT_NAMES = ("ovgc_text_begins", "ovgc_text_ends", "ovgc_text_chars")
_INT32_MAX = 2147483647
_PRECISION_DTYPE = {"i32": np.int32, "i64": np.int64, "u8": np.uint8, "boolean": np.bool_, "f32": np.float32,
                    "u32": np.uint32, "u64": np.uint64, "i8": np.int8, "u16": np.uint16, "i16": np.int16}


class IRGraph:
    """An IR's layers and edges, editable; ``weights`` is the .bin plus constants added by edits."""

    def __init__(self, xml: bytes, weights: bytes) -> None:
        self.root = ET.fromstring(xml)
        self.weights = bytearray(weights)
        self._layers_el = self.root.find("layers")
        self._edges_el = self.root.find("edges")
        if self._layers_el is None or self._edges_el is None:
            raise ValueError("not an OpenVINO IR (no <layers>/<edges>)")
        self.layers: Dict[str, ET.Element] = {el.get("id", ""): el for el in self._layers_el.findall("layer")}

    def copy(self) -> "IRGraph":
        other = IRGraph.__new__(IRGraph)
        other.root = copy.deepcopy(self.root)
        other.weights = bytearray(self.weights)
        other._layers_el = other.root.find("layers")
        other._edges_el = other.root.find("edges")
        other.layers = {el.get("id", ""): el for el in other._layers_el.findall("layer")}
        return other

    def to_xml(self) -> bytes:
        return ET.tostring(self.root, encoding="utf-8")

    # ---------------------------------------------------------------- queries
    def of_type(self, layer_type: str) -> List[ET.Element]:
        return [el for el in self._layers_el.findall("layer") if el.get("type") == layer_type]

    def edges(self) -> List[ET.Element]:
        return self._edges_el.findall("edge")

    def source(self, layer_id: str, port: int) -> Optional[Tuple[str, str]]:
        """(from-layer, from-port) feeding input ``port`` of ``layer_id``."""
        for e in self.edges():
            if e.get("to-layer") == layer_id and e.get("to-port") == str(port):
                return e.get("from-layer", ""), e.get("from-port", "")
        return None

    def source_type(self, layer_id: str, port: int) -> Optional[str]:
        src = self.source(layer_id, port)
        return self.layers[src[0]].get("type") if src and src[0] in self.layers else None

    def consumers(self, layer_id: str, port: Optional[str] = None) -> List[ET.Element]:
        return [e for e in self.edges() if e.get("from-layer") == layer_id and (port is None or e.get("from-port") == port)]

    def input_count(self, layer: ET.Element) -> int:
        inp = layer.find("input")
        return 0 if inp is None else len(inp.findall("port"))

    def out_port(self, layer_id: str, port: str) -> Optional[ET.Element]:
        out = self.layers[layer_id].find("output")
        if out is None:
            return None
        for p in out.findall("port"):
            if p.get("id") == port:
                return p
        return None

    def const_value(self, layer: ET.Element) -> np.ndarray:
        """The value of a Const layer, read from the weights."""
        data = layer.find("data")
        dtype = np.dtype(_PRECISION_DTYPE[data.get("element_type", "")])
        offset, size = int(data.get("offset", "0")), int(data.get("size", "0"))
        shape = [int(d) for d in data.get("shape", "").split(",") if d.strip()]
        return np.frombuffer(bytes(self.weights[offset:offset + size]), dtype=dtype).reshape(shape)

    def rt_info(self) -> Dict[str, Any]:
        """The model's rt_info: name -> value string, or a dict for nested entries (``<chat_template><default/>``)."""
        return rt_info_of(self.root)

    # ---------------------------------------------------------------- edits
    def _new_id(self) -> str:
        return str(max((int(i) for i in self.layers if i.lstrip("-").isdigit()), default=-1) + 1)

    def _add_layer(self, el: ET.Element) -> str:
        lid = self._new_id()
        el.set("id", lid)
        self._layers_el.append(el)
        self.layers[lid] = el
        return lid

    def add_const(self, value: np.ndarray) -> str:
        """A Const layer holding ``value`` (appended to the weights, 8-byte aligned)."""
        pad = (-len(self.weights)) % 8
        self.weights.extend(b"\0" * pad)
        offset = len(self.weights)
        raw = np.ascontiguousarray(value).tobytes()
        self.weights.extend(raw)
        et = {np.dtype(v): k for k, v in _PRECISION_DTYPE.items()}[value.dtype]
        el = ET.Element("layer", {"name": f"ovgc_const_{self._new_id()}", "type": "Const", "version": "opset1"})
        ET.SubElement(el, "data", {"element_type": et, "shape": ",".join(str(d) for d in value.shape),
                                   "offset": str(offset), "size": str(len(raw))})
        precision = "BOOL" if et == "boolean" else et.upper()
        port = ET.SubElement(ET.SubElement(el, "output"), "port", {"id": "0", "precision": precision})
        for d in value.shape:
            ET.SubElement(port, "dim").text = str(d)
        return self._add_layer(el)

    def add_edge(self, from_layer: str, from_port: str, to_layer: str, to_port: str) -> None:
        ET.SubElement(self._edges_el, "edge", {"from-layer": from_layer, "from-port": from_port,
                                               "to-layer": to_layer, "to-port": to_port})

    def redirect(self, to_layer: str, to_port: int, from_layer: str, from_port: str = "0") -> None:
        """Feed input ``to_port`` of ``to_layer`` from (from_layer, from_port) instead of its current source."""
        for e in self.edges():
            if e.get("to-layer") == to_layer and e.get("to-port") == str(to_port):
                e.set("from-layer", from_layer)
                e.set("from-port", from_port)
                return
        self.add_edge(from_layer, from_port, to_layer, str(to_port))

    def remove_layer(self, layer_id: str) -> None:
        for e in list(self.edges()):
            if layer_id in (e.get("from-layer"), e.get("to-layer")):
                self._edges_el.remove(e)
        self._layers_el.remove(self.layers.pop(layer_id))


def _name_port(port: ET.Element, name: str) -> None:
    names = [n for n in (port.get("names") or "").split(",") if n]
    port.set("names", ",".join(names + [name]))


# -------------------------------------------------------------------- structural edits
def split_string_input(g: IRGraph) -> bool:
    """Parameter(string) -> StringTensorUnpack  becomes  three Parameters named INPUT_NAMES. False if not that shape."""
    params = g.of_type("Parameter")
    if len(params) != 1:
        return False
    pid = params[0].get("id", "")
    uses = g.consumers(pid)
    if len(uses) != 1:
        return False
    unpack = g.layers.get(uses[0].get("to-layer", ""))
    if unpack is None or unpack.get("type") != "StringTensorUnpack":
        return False
    data = unpack.find("data")
    if data is not None and data.get("mode", "begins_ends") != "begins_ends":
        return False
    uid = unpack.get("id", "")
    out_ports = unpack.find("output").findall("port")
    if len(out_ports) != 3:
        return False
    new_ids = []
    for port, name in zip(out_ports, INPUT_NAMES):
        precision = port.get("precision", "I32")
        el = ET.Element("layer", {"name": name, "type": "Parameter", "version": "opset1"})
        ET.SubElement(el, "data", {"shape": "?", "element_type": precision.lower()})
        p = ET.SubElement(ET.SubElement(el, "output"), "port", {"id": "0", "precision": precision, "names": name})
        ET.SubElement(p, "dim").text = "-1"
        new_ids.append((port.get("id", ""), g._add_layer(el)))
    for old_port, new_id in new_ids:
        for e in g.consumers(uid, old_port):
            e.set("from-layer", new_id)
            e.set("from-port", "0")
    g.remove_layer(uid)
    g.remove_layer(pid)
    return True


def split_string_output(g: IRGraph) -> bool:
    """StringTensorPack -> Result  becomes  three Results named OUTPUT_NAMES. False if not that shape."""
    results = g.of_type("Result")
    if len(results) != 1:
        return False
    rid = results[0].get("id", "")
    src = g.source(rid, 0)
    if src is None or g.layers[src[0]].get("type") != "StringTensorPack":
        return False
    pack = g.layers[src[0]]
    data = pack.find("data")
    if data is not None and data.get("mode", "begins_ends") != "begins_ends":
        return False
    sid = pack.get("id", "")
    sources = [g.source(sid, i) for i in range(3)]
    if any(s is None for s in sources) or g.input_count(pack) != 3:
        return False
    g.remove_layer(rid)
    g.remove_layer(sid)
    for (from_layer, from_port), name in zip(sources, OUTPUT_NAMES):
        port = g.out_port(from_layer, from_port)
        precision = port.get("precision", "I32") if port is not None else "I32"
        if port is not None:
            _name_port(port, name)
        el = ET.Element("layer", {"name": f"{name}_result", "type": "Result", "version": "opset1",
                                  "output_names": name})
        p = ET.SubElement(ET.SubElement(el, "input"), "port", {"id": "0", "precision": precision})
        ET.SubElement(p, "dim").text = "-1"
        g.add_edge(from_layer, from_port, g._add_layer(el), "0")
    return True


# -------------------------------------------------------------------- flag edits (GenAI's passes, resolved)
def _combine_segments(g: IRGraph) -> Optional[ET.Element]:
    found = g.of_type("CombineSegments")
    return found[-1] if found else None


def special_token_segment_ports(g: IRGraph) -> List[int]:
    """Input ports of CombineSegments that add special tokens (GenAI's MakeAddSpecialTokensSatateful rule)."""
    cs = _combine_segments(g)
    if cs is None:
        return []
    cid = cs.get("id", "")
    ports = []
    for i in range((g.input_count(cs) - 1) // 3):
        begin_t, end_t = g.source_type(cid, 3 * i), g.source_type(cid, 3 * i + 1)
        if end_t != "Add" and begin_t != "Subtract" and end_t != "Truncate":
            ports.append(3 * i + 1)
    return ports


def drop_special_tokens(g: IRGraph) -> bool:
    """add_special_tokens=False: special-token segments end at 0 (empty)."""
    ports = special_token_segment_ports(g)
    if not ports:
        return False
    cid = _combine_segments(g).get("id", "")
    zero = g.add_const(np.array(0, dtype=np.int32))
    for port in ports:
        g.redirect(cid, port, zero)
    return True


class LengthHook:
    """Where GenAI's MakePaddingSatateful makes max_length / truncation / pad_to_max_length settable."""

    def __init__(self, const_id: str, select_id: Optional[str], num_added: int, default_max_length: int) -> None:
        self.const_id = const_id            # the Const holding max_length - num_added
        self.select_id = select_id          # Select(ReadValue("truncation"), const, disabled), when the IR has it
        self.num_added = num_added          # special tokens CombineSegments adds
        self.default_max_length = default_max_length


def length_hook(g: IRGraph) -> Optional[LengthHook]:
    """GenAI's rule: a CombineSegments with one or two text segments, whose length limit is a Const reached
    through Add/Subtract -> Minimum, a legacy Truncate, or Truncate <- Select(ReadValue("truncation"), Const, ...)."""
    cs = _combine_segments(g)
    if cs is None:
        return None
    cid = cs.get("id", "")
    segments = (g.input_count(cs) - 1) // 3
    main, add_or_sub, trunc = 0, None, None
    for i in range(segments):
        begin, end = g.source(cid, 3 * i), g.source(cid, 3 * i + 1)
        begin_t = g.layers[begin[0]].get("type") if begin else None
        end_t = g.layers[end[0]].get("type") if end else None
        if end_t == "Add":
            main, add_or_sub = main + 1, end[0]
        elif begin_t == "Subtract":
            main, add_or_sub = main + 1, begin[0]
        elif end_t == "Truncate":
            main, trunc = main + 1, end[0]
    if main not in (1, 2):
        return None
    select_id = None
    if add_or_sub is not None:
        minimum = g.source(add_or_sub, 1)
        if minimum is None or g.layers[minimum[0]].get("type") != "Minimum":
            return None
        const = g.source(minimum[0], 1)
    elif trunc is not None:
        const = g.source(trunc, main * 3)
        if const is not None and g.layers[const[0]].get("type") == "Select":
            select_id = const[0]
            rv = g.source(select_id, 0)
            rv_el = g.layers.get(rv[0]) if rv else None
            if rv_el is None or rv_el.get("type") != "ReadValue" or \
                    (rv_el.find("data") is None or rv_el.find("data").get("variable_id") != "truncation"):
                return None
            const = g.source(select_id, 1)
    else:
        return None
    if const is None or g.layers[const[0]].get("type") != "Const":
        return None
    value = g.const_value(g.layers[const[0]])
    if value.dtype != np.int32 or value.size != 1:
        return None
    num_added = segments - main
    return LengthHook(const[0], select_id, num_added, int(value.reshape(-1)[0]) + num_added)


def _freeze_state(g: IRGraph, read_value_id: str, const_id: str) -> None:
    """Replace a ReadValue (and its Assign) by a constant: what the state holds once GenAI has set it."""
    for e in g.consumers(read_value_id):
        target = e.get("to-layer", "")
        if g.layers[target].get("type") == "Assign":
            g.remove_layer(target)
        else:
            e.set("from-layer", const_id)
            e.set("from-port", "0")
    g.remove_layer(read_value_id)


def _pad_sides(g: IRGraph) -> set:
    return {(r.find("data").get("pad_right", "true") if r.find("data") is not None else "true")
            for r in g.of_type("RaggedToDense")}


def padding_side_settable(g: IRGraph) -> bool:
    """Whether GenAI makes the padding side a runtime choice for this IR: a length hook, and RaggedToDense nodes
    that agree on their pad side."""
    return length_hook(g) is not None and len(_pad_sides(g)) == 1


def set_lengths(g: IRGraph, add_special_tokens: bool, max_length: Optional[int], truncation: bool,
                pad_to_max_length: bool) -> bool:
    """max_length / truncation / pad_to_max_length resolved as GenAI's states would be (False if not settable)."""
    hook = length_hook(g)
    if hook is None:
        return False
    target = hook.default_max_length if max_length is None else int(max_length)
    text_limit = target - (hook.num_added if add_special_tokens else 0)
    const_el = g.layers[hook.const_id]
    shape = tuple(g.const_value(const_el).shape)
    if hook.select_id is not None:
        # the IR's own Select(truncation, limit, disabled): the limit becomes ours, the state a constant
        limit_id = g.add_const(np.full(shape, text_limit, dtype=np.int32))
        _freeze_state(g, g.source(hook.select_id, 0)[0], g.add_const(np.array(bool(truncation))))
    else:
        limit = text_limit if truncation else _INT32_MAX - 64
        limit_id = g.add_const(np.full(shape, limit, dtype=np.int32))
    for e in g.consumers(hook.const_id, "0"):
        e.set("from-layer", limit_id)
    if pad_to_max_length and len(_pad_sides(g)) == 1:
        width = g.add_const(np.array(target, dtype=np.int32))
        for r in g.of_type("RaggedToDense"):
            rid = r.get("id", "")
            src = g.source(rid, 3)
            if src is None:
                continue
            el = ET.Element("layer", {"name": f"ovgc_pad_to_max_length_{rid}", "type": "Maximum", "version": "opset1"})
            ET.SubElement(el, "data", {"auto_broadcast": "numpy"})
            inp = ET.SubElement(el, "input")
            ET.SubElement(inp, "port", {"id": "0", "precision": "I32"})
            ET.SubElement(inp, "port", {"id": "1", "precision": "I32"})
            ET.SubElement(ET.SubElement(el, "output"), "port", {"id": "2", "precision": "I32"})
            mid = g._add_layer(el)
            g.add_edge(src[0], src[1], mid, "0")
            g.add_edge(width, "0", mid, "1")
            g.redirect(rid, 3, mid, "2")
    return True


def set_pad_right(g: IRGraph, pad_right: bool) -> None:
    for r in g.of_type("RaggedToDense"):
        data = r.find("data")
        if data is None:
            data = ET.SubElement(r, "data")
        data.set("pad_right", "true" if pad_right else "false")


def default_pad_right(g: IRGraph) -> Optional[bool]:
    found = g.of_type("RaggedToDense")
    if not found:
        return None
    data = found[0].find("data")
    return (data.get("pad_right", "true") if data is not None else "true") == "true"


def skip_tokens_settable(g: IRGraph) -> bool:
    """GenAI's MakeVocabDecoderSatateful applies: VocabDecoder input 4 is an integer Const or a Slice."""
    found = g.of_type("VocabDecoder")
    if not found:
        return False
    vd = found[-1]
    if g.input_count(vd) < 5:
        return False
    port = vd.find("input").findall("port")[4]
    if port.get("precision", "").upper() not in ("I32", "I64", "U8", "U32", "U64", "I8", "I16", "U16"):
        return False
    return g.source_type(vd.get("id", ""), 4) in ("Const", "Slice")


def set_skip_special_tokens(g: IRGraph, skip: bool) -> bool:
    """Slice VocabDecoder's skip-token list to [0:INT_MAX] (skip) or [0:0] (keep every special token)."""
    if not skip_tokens_settable(g):
        return False
    vd = g.of_type("VocabDecoder")[-1]
    vid = vd.get("id", "")
    src_layer, src_port = g.source(vid, 4)
    stop = np.array([_INT32_MAX if skip else 0], dtype=np.int32)
    if g.layers[src_layer].get("type") == "Slice":
        g.redirect(src_layer, 2, g.add_const(stop))
        return True
    if skip:
        return True  # a plain list: all of it is skipped already
    tokens = g.const_value(g.layers[src_layer])
    g.redirect(vid, 4, g.add_const(np.zeros([0], dtype=tokens.dtype)))
    return True


def vocab(g: IRGraph) -> Optional[List[bytes]]:
    """The detokenizer's vocabulary (VocabDecoder's begins/ends/chars constants), or None if not found."""
    found = g.of_type("VocabDecoder")
    if not found:
        return None
    vid = found[-1].get("id", "")
    parts = []
    for port in (1, 2, 3):
        src = g.source(vid, port)
        if src is None or g.layers[src[0]].get("type") != "Const":
            return None
        parts.append(g.const_value(g.layers[src[0]]))
    begins, ends, chars = parts
    raw = chars.tobytes()
    return [raw[int(b):int(e)] for b, e in zip(begins, ends)]
