"""Whisper encoder and stateful decoder as OpenVINO models, built with the graph API from a CTranslate2
``WhisperSpec`` (:class:`~ovgenai_c_tools.ct2_model.CT2Model`), in the layout optimum-intel exports and
``openvino_genai.WhisperPipeline`` loads:

``openvino_encoder_model``
    input ``input_features`` f32 [batch, n_mels, 3000] -> output ``last_hidden_state`` f32 [batch, 1500, d_model]

``openvino_decoder_model`` (stateful)
    inputs ``input_ids`` i64 [batch, seq], ``encoder_hidden_states`` f32 [batch, 1500, d_model],
    ``cache_position`` i64 [seq] (absolute positions of the new tokens: past length .. past length + seq - 1),
    ``beam_idx`` i32 [batch] (row of the previous step's state each row continues; all states are gathered
    with it) -> output ``logits`` f32 [batch, seq, vocab] (a MatMul feeding the Result, so GenAI can slice it).
    Per layer ``i`` four variables, f32 [batch, heads, length, head_dim]:
    ``past_key_values.{i}.decoder.key`` / ``.value`` (self-attention; grow by ``seq`` per call) and
    ``past_key_values.{i}.encoder.key`` / ``.value`` (cross-attention: the projections of the encoder frames the
    cache lacks are appended — all 1500 on the first call after ``reset_state()``, none after — so they are
    computed once per audio window; all variables start empty). ``encoder_hidden_states`` must be given on
    every call (its batch as ``input_ids``'), as GenAI does; after the first call its values are not read.
    (Not a ReadValue with an initialiser subgraph: with bf16 inference the CPU plugin then gave wrong results,
    and once heap corruption, after a batch change and ``reset_state()``.)
    The cross-attention ScaledDotProductAttention nodes have ``encoder_attn`` in their names (GenAI's word
    timestamps look for that).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np
import openvino as ov
from openvino import opset13 as ops
from openvino import op as ov_op
from openvino.op.util import Variable, VariableInfo

from .ct2_model import CT2FormatError, CT2Model

WHISPER_SPEC = "WhisperSpec"
LAYER_NORM_EPS = 1e-5
# CTranslate2's ActivationType codes
_GELU = 3


@dataclass(frozen=True)
class WhisperDims:
    """The sizes of a Whisper model, read from the variables' shapes."""

    n_mels: int
    d_model: int
    encoder_layers: int
    decoder_layers: int
    encoder_heads: int
    decoder_heads: int
    encoder_ffn: int
    decoder_ffn: int
    vocab_size: int
    max_source_positions: int
    max_target_positions: int


def _count_layers(model: CT2Model, prefix: str) -> int:
    n = 0
    while model.has(f"{prefix}/layer_{n}/ffn/linear_0/weight"):
        n += 1
    if n == 0:
        raise CT2FormatError(f"{model.path}: no {prefix} layers ({prefix}/layer_0/ffn/linear_0/weight missing)")
    return n


def whisper_dims(model: CT2Model) -> WhisperDims:
    """The model's sizes; raises :class:`CT2FormatError` when it is not a Whisper spec or a shape is off."""
    if model.spec_name != WHISPER_SPEC:
        raise CT2FormatError(f"{model.path}: the spec is {model.spec_name!r}, not {WHISPER_SPEC!r}")
    conv1 = model.get("encoder/conv1/weight")
    emb = model.get("decoder/embeddings/weight")
    if conv1.ndim != 3 or emb.ndim != 2 or conv1.shape[0] != emb.shape[1]:
        raise CT2FormatError(f"{model.path}: encoder/conv1/weight {conv1.shape} and decoder/embeddings/weight "
                             f"{emb.shape} do not fit together")
    activation = model.scalar("decoder/activation") if model.has("decoder/activation") else _GELU
    if activation != _GELU:
        raise CT2FormatError(f"{model.path}: activation code {activation} is not GELU ({_GELU})")
    return WhisperDims(
        n_mels=conv1.shape[1], d_model=conv1.shape[0],
        encoder_layers=_count_layers(model, "encoder"), decoder_layers=_count_layers(model, "decoder"),
        encoder_heads=model.scalar("encoder/num_heads"), decoder_heads=model.scalar("decoder/num_heads"),
        encoder_ffn=model.get("encoder/layer_0/ffn/linear_0/weight").shape[0],
        decoder_ffn=model.get("decoder/layer_0/ffn/linear_0/weight").shape[0],
        vocab_size=emb.shape[0],
        max_source_positions=model.get("encoder/position_encodings/encodings").shape[0],
        max_target_positions=model.get("decoder/position_encodings/encodings").shape[0])


class _Builder:
    """Graph helpers over one CT2 model's weights (float16 weights stay float16 constants with a Convert,
    as optimum's compressed FP16 export does)."""

    def __init__(self, model: CT2Model) -> None:
        self.model = model

    def weight(self, name: str, expect_shape: Tuple[int, ...], rows: Optional[slice] = None) -> ov.Output:
        """The variable ``name`` (checked to have ``expect_shape``) as a constant, or its ``rows`` slice."""
        value = self.model.get(name)
        if tuple(value.shape) != tuple(expect_shape):
            raise CT2FormatError(f"{self.model.path}: variable {name!r} has shape {tuple(value.shape)}, "
                                 f"expected {tuple(expect_shape)}")
        if value.dtype == np.float16:
            part = value if rows is None else value[rows]
            return ops.convert(ops.constant(np.ascontiguousarray(part), dtype=np.float16), np.float32).output(0)
        value = self.model.float32(name)
        return ops.constant(np.ascontiguousarray(value if rows is None else value[rows]), dtype=np.float32).output(0)

    def linear(self, x: ov.Output, prefix: str, n_out: int, n_in: int, part: int = 0, parts: int = 1) -> ov.Output:
        """``x @ W.T + b`` with the variables ``prefix/weight`` [parts * n_out, n_in] and ``prefix/bias``; of a
        fused projection (CTranslate2 fuses q/k/v) only the rows of ``part`` (separate MatMuls, as in the
        unfused original)."""
        rows = slice(part * n_out, (part + 1) * n_out)
        y = ops.matmul(x, self.weight(f"{prefix}/weight", (parts * n_out, n_in), rows), False, True)
        if self.model.has(f"{prefix}/bias"):
            bias = self.model.get(f"{prefix}/bias")[rows]
            if np.any(bias != 0):  # (Whisper's key projections have no bias: CTranslate2 stores zeros)
                y = ops.add(y, self.weight(f"{prefix}/bias", (parts * n_out,), rows))
        return y.output(0)

    def layer_norm(self, x: ov.Output, prefix: str, d: int) -> ov.Output:
        axes = ops.constant(np.array([-1], dtype=np.int64))
        y = ops.mvn(x, axes, True, LAYER_NORM_EPS, "inside_sqrt")
        y = ops.multiply(y, self.weight(f"{prefix}/gamma", (d,)))
        return ops.add(y, self.weight(f"{prefix}/beta", (d,))).output(0)


def _i64(values: List[int]) -> ov.Output:
    return ops.constant(np.array(values, dtype=np.int64)).output(0)


def _split_heads(x: ov.Output, heads: int, head_dim: int) -> ov.Output:
    """[B, S, H*D] -> [B, H, S, D]"""
    y = ops.reshape(x, _i64([0, 0, heads, head_dim]), True)
    return ops.transpose(y, _i64([0, 2, 1, 3])).output(0)


def _merge_heads(x: ov.Output, d_model: int) -> ov.Output:
    """[B, H, S, D] -> [B, S, H*D]"""
    y = ops.transpose(x, _i64([0, 2, 1, 3]))
    return ops.reshape(y, _i64([0, 0, d_model]), True).output(0)


def build_encoder(model: CT2Model) -> ov.Model:
    """The encoder: ``input_features`` [batch, n_mels, 2 * max_source_positions] -> ``last_hidden_state``."""
    dims = whisper_dims(model)
    b = _Builder(model)
    d, heads = dims.d_model, dims.encoder_heads
    frames = 2 * dims.max_source_positions
    features = ops.parameter([-1, dims.n_mels, frames], np.float32, name="input_features")
    features.output(0).get_tensor().set_names({"input_features"})

    def conv(x: ov.Output, name: str, c_in: int, stride: int) -> ov.Output:
        w = b.weight(f"encoder/{name}/weight", (d, c_in, 3))
        y = ops.convolution(x, w, [stride], [1], [1], [1])
        bias = ops.reshape(b.weight(f"encoder/{name}/bias", (d,)), _i64([1, d, 1]), False)
        return ops.gelu(ops.add(y, bias), "erf").output(0)

    x = conv(features.output(0), "conv1", dims.n_mels, 1)
    x = conv(x, "conv2", d, 2)
    x = ops.transpose(x, _i64([0, 2, 1])).output(0)
    x = ops.add(x, b.weight("encoder/position_encodings/encodings", (dims.max_source_positions, d))).output(0)
    head_dim = d // heads
    for i in range(dims.encoder_layers):
        p = f"encoder/layer_{i}"
        h = b.layer_norm(x, f"{p}/self_attention/layer_norm", d)
        q, k, v = (_split_heads(b.linear(h, f"{p}/self_attention/linear_0", d, d, j, 3), heads, head_dim)
                   for j in range(3))
        att = ops.scaled_dot_product_attention(q, k, v, causal=False,
                                               name=f"model.encoder.layers.{i}.self_attn/ScaledDotProductAttention")
        x = ops.add(x, b.linear(_merge_heads(att.output(0), d), f"{p}/self_attention/linear_1", d, d)).output(0)
        x = _ffn(b, x, f"{p}/ffn", d, dims.encoder_ffn)
    x = b.layer_norm(x, "encoder/layer_norm", d)
    out = ops.result(x, name="last_hidden_state")
    out.output(0).get_tensor().set_names({"last_hidden_state"})
    x.get_tensor().set_names({"last_hidden_state"})
    return ov.Model([out], [features], "whisper_encoder")


def _ffn(b: _Builder, x: ov.Output, prefix: str, d: int, ffn: int) -> ov.Output:
    h = b.layer_norm(x, f"{prefix}/layer_norm", d)
    h = ops.gelu(b.linear(h, f"{prefix}/linear_0", ffn, d), "erf").output(0)
    return ops.add(x, b.linear(h, f"{prefix}/linear_1", d, ffn)).output(0)


def _read_state(init: ov.Output, variable_id: str, beam_idx: ov.Output,
                shape: List[int]) -> Tuple[Variable, ov.Output]:
    """ReadValue(variable, init) -> Gather(beam_idx): the cached rows each new row continues (``shape``: the
    variable's)."""
    info = VariableInfo()
    info.variable_id = variable_id
    info.data_type = ov.Type.f32
    info.data_shape = ov.PartialShape(shape)
    variable = Variable(info)
    past = ov_op.read_value(init.get_node() if init.get_index() == 0 else init, variable)
    past.set_friendly_name(f"{variable_id}/ReadValue")
    gathered = ops.gather(past, beam_idx, ops.constant(np.int64(0)), name=f"{variable_id}/beam_gather")
    return variable, gathered.output(0)


def _append_state(variable: Variable, past: ov.Output, new: ov.Output, sinks: list) -> ov.Output:
    """Concat(past, new) along the length axis -> Assign; returns the whole."""
    value = ops.concat([past, new], 2).output(0)
    assign = ov_op.assign(value.get_node(), variable)
    assign.set_friendly_name(f"{variable.get_info().variable_id}/Assign")
    sinks.append(assign)
    return value


def _prepend_state(variable: Variable, past: ov.Output, new: ov.Output, sinks: list) -> ov.Output:
    """Concat(new, past) along the length axis -> Assign (one of the two is empty). The order is on purpose:
    the CPU plugin fuses ReadValue -> Gather -> Concat(past, new) -> SDPA into its KV-cache attention, which
    expects as many new keys as queries (true of self-attention only)."""
    value = ops.concat([new, past], 2).output(0)
    assign = ov_op.assign(value.get_node(), variable)
    assign.set_friendly_name(f"{variable.get_info().variable_id}/Assign")
    sinks.append(assign)
    return value


def build_decoder(model: CT2Model) -> ov.Model:
    """The stateful decoder (see the module docstring for its inputs, output and variables)."""
    dims = whisper_dims(model)
    b = _Builder(model)
    d, heads = dims.d_model, dims.decoder_heads
    head_dim = d // heads

    def param(name: str, shape: List[int], dtype: type) -> ov.Node:
        node = ops.parameter(shape, dtype, name=name)
        node.output(0).get_tensor().set_names({name})
        return node

    input_ids = param("input_ids", [-1, -1], np.int64)
    encoder_hidden_states = param("encoder_hidden_states", [-1, -1, d], np.float32)
    cache_position = param("cache_position", [-1], np.int64)
    beam_idx = param("beam_idx", [-1], np.int32)

    embeddings = b.weight("decoder/embeddings/weight", (dims.vocab_size, d))
    axis0 = ops.constant(np.int64(0))
    x = ops.gather(embeddings, input_ids, axis0).output(0)
    positions = b.weight("decoder/position_encodings/encodings", (dims.max_target_positions, d))
    x = ops.add(x, ops.gather(positions, cache_position, axis0)).output(0)

    # an empty self-attention cache [batch, heads, 0, head_dim] for the first call after reset_state()
    batch = ops.gather(ops.shape_of(input_ids, "i64"), _i64([0]), axis0)
    empty_shape = ops.concat([batch, _i64([heads, 0, head_dim])], 0)
    empty_cache = ops.broadcast(ops.constant(np.float32(0.0)), empty_shape).output(0)
    kv_shape = [-1, heads, -1, head_dim]
    zero_mask = ops.constant(np.float32(0.0)).output(0)

    sinks: list = []
    mask = None
    for i in range(dims.decoder_layers):
        p = f"decoder/layer_{i}"
        # self-attention over the cached and the new tokens
        h = b.layer_norm(x, f"{p}/self_attention/layer_norm", d)
        q, k, v = (_split_heads(b.linear(h, f"{p}/self_attention/linear_0", d, d, j, 3), heads, head_dim)
                   for j in range(3))
        k_var, k_past = _read_state(empty_cache, f"past_key_values.{i}.decoder.key", beam_idx, kv_shape)
        v_var, v_past = _read_state(empty_cache, f"past_key_values.{i}.decoder.value", beam_idx, kv_shape)
        k_all = _append_state(k_var, k_past, k, sinks)
        v_all = _append_state(v_var, v_past, v, sinks)
        if mask is None:  # new token t (0-based) at absolute position past+t sees keys 0..past+t
            seq = ops.gather(ops.shape_of(q, "i64"), _i64([2]), axis0)
            total = ops.gather(ops.shape_of(k_all, "i64"), _i64([2]), axis0)
            past = ops.subtract(total, seq)
            one, zero = ops.constant(np.int64(1)), ops.constant(np.int64(0))
            rows = ops.add(ops.range(zero, ops.squeeze(seq, axis0), one, "i64"), past)
            cols = ops.range(zero, ops.squeeze(total, axis0), one, "i64")
            mask = ops.less_equal(ops.unsqueeze(cols, axis0), ops.unsqueeze(rows, ops.constant(np.int64(1))))
            mask = mask.output(0)
        att = ops.scaled_dot_product_attention(q, k_all, v_all, mask, causal=False,
                                               name=f"model.decoder.layers.{i}.self_attn/ScaledDotProductAttention")
        x = ops.add(x, b.linear(_merge_heads(att.output(0), d), f"{p}/self_attention/linear_1", d, d)).output(0)

        # cross-attention over the encoder output; its keys/values are projected from the encoder frames the
        # cache lacks: all of them on the first call after reset_state(), none after (a zero-row MatMul)
        h = b.layer_norm(x, f"{p}/attention/layer_norm", d)
        q = _split_heads(b.linear(h, f"{p}/attention/linear_0", d, d), heads, head_dim)
        ek_var, ek_past = _read_state(empty_cache, f"past_key_values.{i}.encoder.key", beam_idx, kv_shape)
        ev_var, ev_past = _read_state(empty_cache, f"past_key_values.{i}.encoder.value", beam_idx, kv_shape)
        cached = ops.gather(ops.shape_of(ek_past, "i64"), _i64([2]), axis0)
        frames = ops.slice(encoder_hidden_states, cached, _i64([np.iinfo(np.int64).max]), _i64([1]), _i64([1]))
        ek_new, ev_new = (_split_heads(b.linear(frames.output(0), f"{p}/attention/linear_1", d, d, j, 2),
                                       heads, head_dim) for j in range(2))
        ek = _prepend_state(ek_var, ek_past, ek_new, sinks)
        ev = _prepend_state(ev_var, ev_past, ev_new, sinks)
        att = ops.scaled_dot_product_attention(q, ek, ev, zero_mask, causal=False,
                                               name=f"model.decoder.layers.{i}.encoder_attn/ScaledDotProductAttention")
        x = ops.add(x, b.linear(_merge_heads(att.output(0), d), f"{p}/attention/linear_2", d, d)).output(0)
        x = _ffn(b, x, f"{p}/ffn", d, dims.decoder_ffn)

    x = b.layer_norm(x, "decoder/layer_norm", d)
    projection = "decoder/projection/weight" if model.has("decoder/projection/weight") else "decoder/embeddings/weight"
    proj = embeddings if projection == "decoder/embeddings/weight" or model.aliases.get(projection) == \
        "decoder/embeddings/weight" else b.weight(projection, (dims.vocab_size, d))
    logits = ops.matmul(x, proj, False, True, name="logits/MatMul")
    out = ops.result(logits, name="logits")
    out.output(0).get_tensor().set_names({"logits"})
    logits.output(0).get_tensor().set_names({"logits"})
    return ov.Model([out], sinks, [input_ids, encoder_hidden_states, cache_position, beam_idx], "whisper_decoder")


__all__ = ["WHISPER_SPEC", "WhisperDims", "build_decoder", "build_encoder", "whisper_dims"]
