#include "engine/gguf/gguf_model.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include <openvino/core/type/float16.hpp>
#include <openvino/op/ops.hpp>
#include <openvino/op/util/variable.hpp>

#include "engine/gguf/gguf_weights.hpp"

namespace ovgc::gguf {

namespace {

using ov::Output;
using ov::Node;
namespace op = ov::op;
using Out = Output<Node>;

// ---------------------------------------------------------------- configuration

struct Config {
    std::string arch;
    int layers = 0, heads = 0, kv_heads = 0, head_size = 0, hidden = 0;
    float rms_eps = 0.f, rope_base = 10000.f;
    bool low_precision_file = false;  // general.file_type ALL_F32 (0) or MOSTLY_F16 (1)
};

// GenAI reads these as 32-bit values; so does this.
int int32_key(const GgufFile& f, const std::string& key) { return static_cast<int>(static_cast<int32_t>(f.get_int(key))); }

Config read_config(const GgufFile& f) {
    Config c;
    c.arch = f.get_string("general.architecture");
    if (c.arch != "llama" && c.arch != "qwen2" && c.arch != "qwen3")
        throw std::runtime_error("GGUF file '" + f.path() + "' holds a '" + c.arch +
                                 "' model; GGUF files are read for the architectures llama, qwen2 and qwen3 (as "
                                 "OpenVINO GenAI reads them)");
    const std::string a = c.arch + ".";
    c.layers = int32_key(f, a + "block_count");
    c.heads = int32_key(f, a + "attention.head_count");
    c.hidden = int32_key(f, a + "embedding_length");
    if (c.layers <= 0 || c.heads <= 0 || c.hidden <= 0)
        throw std::runtime_error("GGUF file '" + f.path() + "': " + a + "block_count, " + a +
                                 "attention.head_count and " + a + "embedding_length must be positive");
    c.head_size = f.has(a + "attention.key_length") ? int32_key(f, a + "attention.key_length") : c.hidden / c.heads;
    c.kv_heads = f.has(a + "attention.head_count_kv") ? int32_key(f, a + "attention.head_count_kv") : c.heads;
    if (c.head_size <= 0 || c.head_size % 2 != 0 || c.kv_heads <= 0 || c.heads % c.kv_heads != 0)
        throw std::runtime_error("GGUF file '" + f.path() + "': head size " + std::to_string(c.head_size) + " with " +
                                 std::to_string(c.heads) + " heads and " + std::to_string(c.kv_heads) +
                                 " key/value heads is not a model this reader builds");
    c.rms_eps = static_cast<float>(f.get_float(a + "attention.layer_norm_rms_epsilon"));
    c.rope_base = static_cast<float>(f.get_float_or(a + "rope.freq_base", 10000.0));
    const int64_t file_type = f.get_int_or("general.file_type", -1);
    c.low_precision_file = file_type == 0 || file_type == 1;
    return c;
}

// ---------------------------------------------------------------- shapes

const TensorInfo& tensor(const GgufFile& f, const std::string& name) {
    const TensorInfo* t = f.find_tensor(name);
    if (!t)
        throw std::runtime_error("GGUF file '" + f.path() + "' lacks the tensor '" + name + "'");
    return *t;
}

std::string dims_text(const std::vector<uint64_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i)
        s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
}

// Every tensor the model uses has the shape the metadata gives it (GGUF order: input size first), checked before
// anything is decoded or built: a file whose tensors disagree with its metadata is refused naming the tensor, instead
// of failing inside OpenVINO's shape inference or allocating what the metadata claims.
void check_shapes(const GgufFile& f, const Config& c) {
    const uint64_t hidden = static_cast<uint64_t>(c.hidden);
    const uint64_t q_size = static_cast<uint64_t>(c.heads) * static_cast<uint64_t>(c.head_size);
    const uint64_t kv_size = static_cast<uint64_t>(c.kv_heads) * static_cast<uint64_t>(c.head_size);
    auto want = [&](const std::string& name, std::vector<uint64_t> dims, bool required = true) {
        const TensorInfo* t = required ? &tensor(f, name) : f.find_tensor(name);
        if (!t)
            return;
        for (size_t i = 0; i < dims.size(); ++i)
            if (dims[i] == 0)  // (0: any size)
                dims[i] = i < t->dims.size() ? t->dims[i] : 0;
        if (t->dims != dims)
            throw std::runtime_error("GGUF tensor '" + name + "' has the shape " + dims_text(t->dims) +
                                     "; the model's metadata (" + c.arch + ": hidden size " + std::to_string(c.hidden) +
                                     ", " + std::to_string(c.heads) + " heads and " + std::to_string(c.kv_heads) +
                                     " key/value heads of " + std::to_string(c.head_size) + ") needs " +
                                     dims_text(dims));
    };
    want("token_embd.weight", {hidden, 0});
    want("output_norm.weight", {hidden});
    want("output.weight", {hidden, 0}, false);
    for (int layer = 0; layer < c.layers; ++layer) {
        const std::string blk = "blk." + std::to_string(layer) + ".";
        want(blk + "attn_norm.weight", {hidden});
        want(blk + "ffn_norm.weight", {hidden});
        want(blk + "attn_q.weight", {hidden, q_size});
        want(blk + "attn_k.weight", {hidden, kv_size});
        want(blk + "attn_v.weight", {hidden, kv_size});
        want(blk + "attn_output.weight", {q_size, hidden});
        for (const char* b : {"attn_q.bias", "attn_k.bias", "attn_v.bias"})
            want(blk + b, {std::string(b) == "attn_q.bias" ? q_size : kv_size}, false);
        want(blk + "attn_output.bias", {hidden}, false);
        want(blk + "attn_q_norm.weight", {static_cast<uint64_t>(c.head_size)}, false);
        want(blk + "attn_k_norm.weight", {static_cast<uint64_t>(c.head_size)}, false);
        const TensorInfo& gate = tensor(f, blk + "ffn_gate.weight");
        const uint64_t ffn = gate.dims.size() == 2 ? gate.dims[1] : 0;
        want(blk + "ffn_gate.weight", {hidden, ffn});
        want(blk + "ffn_up.weight", {hidden, ffn});
        want(blk + "ffn_down.weight", {ffn, hidden});
        for (const char* b : {"ffn_gate.bias", "ffn_up.bias"})
            want(blk + b, {ffn}, false);
        want(blk + "ffn_down.bias", {hidden}, false);
    }
}

// ---------------------------------------------------------------- small constructors

std::shared_ptr<op::v0::Constant> i64s(ov::Shape shape, std::vector<int64_t> v) {
    return std::make_shared<op::v0::Constant>(ov::element::i64, std::move(shape), v);
}
std::shared_ptr<op::v0::Constant> i64(int64_t v) { return i64s({}, {v}); }
std::shared_ptr<op::v0::Constant> i64_1(int64_t v) { return i64s({1}, {v}); }
std::shared_ptr<op::v0::Constant> i32s(ov::Shape shape, std::vector<int32_t> v) {
    return std::make_shared<op::v0::Constant>(ov::element::i32, std::move(shape), v);
}
std::shared_ptr<op::v0::Constant> i32(int32_t v) { return i32s({}, {v}); }
std::shared_ptr<op::v0::Constant> f32(ov::Shape shape, float v) {
    return std::make_shared<op::v0::Constant>(ov::element::f32, std::move(shape), std::vector<float>{v});
}
Out convert(const Out& x, ov::element::Type t) { return std::make_shared<op::v0::Convert>(x, t); }
Out gather(const Out& data, const Out& indices, const Out& axis) {
    return std::make_shared<op::v8::Gather>(data, indices, axis);
}
Out unsqueeze(const Out& x, const Out& axes) { return std::make_shared<op::v0::Unsqueeze>(x, axes); }
Out reshape(const Out& x, const Out& shape, bool special_zero) {
    return std::make_shared<op::v1::Reshape>(x, shape, special_zero);
}
Out concat(const ov::OutputVector& parts, int64_t axis) { return std::make_shared<op::v0::Concat>(parts, axis); }
Out slice(const Out& x, const Out& start, const Out& stop, const Out& step, const Out& axes) {
    return std::make_shared<op::v8::Slice>(x, start, stop, step, axes);
}
Out mul(const Out& a, const Out& b) { return std::make_shared<op::v1::Multiply>(a, b); }
Out add(const Out& a, const Out& b) { return std::make_shared<op::v1::Add>(a, b); }
Out transpose(const Out& x, std::vector<int32_t> order) {
    const size_t n = order.size();
    return std::make_shared<op::v1::Transpose>(x, i32s({n}, std::move(order)));
}

// ---------------------------------------------------------------- weights as subgraphs

// The Hugging Face name GenAI gives a weight constant ("blk.3.attn_q.weight" -> "model.layers[3].self_attn.q_proj.weight")
std::string hf_name(const std::string& gguf_name) {
    static const std::pair<const char*, const char*> kParts[] = {
        {"attn_q", "self_attn.q_proj"},   {"attn_k", "self_attn.k_proj"}, {"attn_v", "self_attn.v_proj"},
        {"attn_output", "self_attn.o_proj"}, {"ffn_gate", "mlp.gate_proj"}, {"ffn_up", "mlp.up_proj"},
        {"ffn_down", "mlp.down_proj"}};
    if (gguf_name == "token_embd.weight")
        return "model.embed_tokens.weight";
    if (gguf_name == "output.weight")
        return "lm_head.weight";
    const size_t dot1 = gguf_name.find('.'), dot2 = gguf_name.find('.', dot1 + 1), dot3 = gguf_name.rfind('.');
    if (gguf_name.rfind("blk.", 0) == 0 && dot2 != std::string::npos && dot3 > dot2)
        for (const auto& [from, to] : kParts)
            if (gguf_name.compare(dot2 + 1, dot3 - dot2 - 1, from) == 0)
                return "model.layers[" + gguf_name.substr(dot1 + 1, dot2 - dot1 - 1) + "]." + to + gguf_name.substr(dot3);
    return gguf_name;
}

// A decoded weight as the f32 matrix [rows, cols] it stands for.
Out weight_subgraph(const Weight& w, const std::string& name) {
    if (!w.quantized()) {
        auto c = std::make_shared<op::v0::Constant>(w.values);
        c->set_friendly_name(hf_name(name));
        return convert(c, ov::element::f32);
    }
    auto codes = std::make_shared<op::v0::Constant>(w.values);
    auto zero_points = std::make_shared<op::v0::Constant>(w.zero_points);
    auto scales = std::make_shared<op::v0::Constant>(w.scales);
    Out shifted = std::make_shared<op::v1::Subtract>(convert(codes, ov::element::f16),
                                                     convert(zero_points, ov::element::f16));
    Out scaled = mul(shifted, scales);
    return convert(reshape(scaled, i64s({2}, {static_cast<int64_t>(w.rows), static_cast<int64_t>(w.cols)}), false),
                   ov::element::f32);
}

// A projection's weight: F16 or one of the quantized types (GenAI refuses F32 and BF16 projections).
Out projection_weight(const TensorInfo& t, size_t qk_reorder_head_size) {
    if (t.type != static_cast<uint32_t>(GgmlType::F16) && !is_quantized_type(t.type))
        throw std::runtime_error(std::string("GGUF tensor '") + t.name + "' is " + ggml_type_name(t.type) +
                                 "; projection weights are read as F16, Q4_0, Q4_1, Q8_0, Q4_K or Q6_K (as OpenVINO "
                                 "GenAI reads them)");
    return weight_subgraph(read_weight(t, qk_reorder_head_size), t.name);
}

// The embedding table or the output head: a quantized type, else the values as stored (F16, BF16 or F32).
Out table_weight(const TensorInfo& t) {
    return weight_subgraph(read_weight(t), t.name);
}

// x @ W^T (+ bias): `name` is the GGUF tensor prefix, e.g. "blk.0.attn_q".
Out linear(const GgufFile& f, const std::string& name, const Out& x, size_t qk_reorder_head_size = 0) {
    Out y = std::make_shared<op::v0::MatMul>(x, projection_weight(tensor(f, name + ".weight"), qk_reorder_head_size),
                                             false, true);
    if (const TensorInfo* b = f.find_tensor(name + ".bias"))
        y = add(y, convert(std::make_shared<op::v0::Constant>(read_plain(*b)), ov::element::f32));
    return y;
}

bool all_ones(const ov::Tensor& t, const std::string& name) {
    if (t.get_element_type() == ov::element::f32) {
        const float* p = t.data<const float>();
        for (size_t i = 0; i < t.get_size(); ++i)
            if (p[i] != 1.0f)
                return false;
        return true;
    }
    if (t.get_element_type() == ov::element::f16) {
        const auto* p = static_cast<const uint16_t*>(t.data());
        for (size_t i = 0; i < t.get_size(); ++i)
            if (p[i] != 0x3C00)
                return false;
        return true;
    }
    throw std::runtime_error("GGUF tensor '" + name + "' is " + t.get_element_type().get_type_name() +
                             "; norm weights are read as F32 or F16");
}

// RMS norm over the last axis: x / sqrt(mean(x^2) + eps), times the weight unless it is all ones. `rank` is the
// rank of the constants (3 for the hidden states, 4 for qwen3's per-head q/k norms, whose exponent and numerator
// constants are scalars, as GenAI builds them).
Out rms_norm(const GgufFile& f, const std::string& weight_name, const Out& x, float eps, size_t rank) {
    const ov::Shape const_shape(rank, 1);
    const bool per_head = rank == 4;
    auto eps_c = f32(const_shape, eps);
    Out square = std::make_shared<op::v1::Power>(x, f32(per_head ? ov::Shape{} : const_shape, 2.0f));
    Out mean = std::make_shared<op::v1::ReduceMean>(square, i32s({1}, {-1}), true);
    Out root = std::make_shared<op::v0::Sqrt>(add(mean, eps_c));
    Out inverse = std::make_shared<op::v1::Divide>(f32(per_head ? ov::Shape{} : const_shape, 1.0f), root);
    Out y = mul(inverse, x);
    ov::Tensor w = read_plain(tensor(f, weight_name));
    if (!all_ones(w, weight_name)) {
        ov::Shape shape(rank, 1);
        shape.back() = w.get_size();
        w.set_shape(shape);
        y = mul(y, convert(std::make_shared<op::v0::Constant>(w), ov::element::f32));
    }
    return y;
}

// ---------------------------------------------------------------- attention pieces

// [1, head/2, 1] inverse frequencies 1 / base^(2i / head), computed in float.
Out rope_frequencies(int head_size, float base) {
    const size_t n = static_cast<size_t>(head_size / 2);
    std::vector<float> inv(n);
    for (size_t i = 0; i < n; ++i)
        inv[i] = 1.0f / std::pow(base, static_cast<float>(2 * i) / static_cast<float>(head_size));
    return std::make_shared<op::v0::Constant>(ov::element::f32, ov::Shape{1, n, 1}, inv);
}

// cos and sin of position * frequency, [batch, seq, head] (the frequencies repeated for both halves)
std::pair<Out, Out> rope_tables(const Out& frequencies, const Out& position_ids, const Out& batch) {
    Out positions = convert(unsqueeze(position_ids, i64(1)), ov::element::f32);
    Out target = concat({batch, i64_1(1), i64_1(1)}, 0);
    Out inv = std::make_shared<op::v3::Broadcast>(frequencies, target, op::BroadcastType::BIDIRECTIONAL);
    Out angles = transpose(std::make_shared<op::v0::MatMul>(inv, positions, false, false), {0, 2, 1});
    Out both = concat({angles, angles}, -1);
    return {std::make_shared<op::v0::Cos>(both), std::make_shared<op::v0::Sin>(both)};
}

// [-x2, x1] for x = [x1, x2] split at half the head on `axis`
Out rotate_half(const Out& x, int head_size, const Out& axis) {
    Out second = slice(x, i64_1(head_size / 2), i64_1(std::numeric_limits<int64_t>::max()), i64_1(1), axis);
    Out negated = mul(second, f32({1, 1, 1, 1}, -1.0f));
    Out first = slice(x, i64_1(0), i64_1(head_size / 2), i64_1(1), axis);
    return concat({negated, first}, -1);
}

// The additive attention mask [batch, 1, seq, past + seq]: -65504 above the diagonal (causal) and where
// attention_mask is 0, else 0. `keys` are the cache read for layer 0 (their length is the past length).
Out causal_mask(const Out& attention_mask, const Out& keys, const Out& last_axis, const Out& hidden_shape) {
    Out total = gather(std::make_shared<op::v3::ShapeOf>(attention_mask, ov::element::i64), i64(1), i64(0));
    auto one_1d = i64_1(1);
    Out total_1d = reshape(total, one_1d, false);
    Out seq = gather(hidden_shape, i64(1), i64(0));
    Out seq_1d = reshape(seq, one_1d, false);
    Out square_shape = std::make_shared<op::v1::Maximum>(i64s({2}, {1, 1}), concat({seq_1d, total_1d}, 0));
    Out full = std::make_shared<op::v3::Broadcast>(f32({}, -65504.0f), square_shape, op::BroadcastType::NUMPY);

    Out full_shape = std::make_shared<op::v3::ShapeOf>(full, ov::element::i32);
    auto step_i32 = i32(1);
    Out cols = std::make_shared<op::v4::Range>(i32(0), gather(full_shape, i64(1), i64(0)), step_i32, ov::element::i32);
    Out col_row = unsqueeze(cols, i64_1(0));
    auto one_i32 = i32(1);
    Out rows_end = add(gather(full_shape, i32(0), i32(0)), one_i32);
    Out rows = unsqueeze(std::make_shared<op::v4::Range>(one_i32, rows_end, step_i32, ov::element::i32), step_i32);
    Out upper = std::make_shared<op::v1::GreaterEqual>(col_row, rows);
    Out triangle = std::make_shared<op::v1::Select>(upper, full, f32({}, 0.0f));

    Out key_positions = convert(
        convert(std::make_shared<op::v4::Range>(i32(0), total, i32(1), ov::element::f32), ov::element::i64),
        ov::element::f32);
    Out past = gather(std::make_shared<op::v3::ShapeOf>(keys, ov::element::i64), i64(2), i64(0));
    Out query_positions = reshape(
        std::make_shared<op::v4::Range>(past, add(past, seq), i32(1), ov::element::f32), i64s({2}, {-1, 1}), false);
    Out later = convert(std::make_shared<op::v1::Greater>(key_positions, query_positions), ov::element::f32);
    auto axis1 = i64(1);
    Out mask4 = unsqueeze(unsqueeze(mul(triangle, later), i64(0)), axis1);

    Out batch_1d = gather(hidden_shape, i64_1(0), i64(0));
    Out batched = std::make_shared<op::v3::Broadcast>(mask4, concat({batch_1d, i64_1(1), i64_1(1), i64_1(1)}, 0),
                                                      op::BroadcastType::BIDIRECTIONAL);
    Out flat = reshape(batched, i64_1(-1), false);
    auto zero = i64(0);
    Out batched_shape = std::make_shared<op::v3::ShapeOf>(batched, ov::element::i64);
    Out count = std::make_shared<op::v1::ReduceProd>(batched_shape, zero, false);
    Out index_grid = reshape(std::make_shared<op::v4::Range>(zero, count, i64(1), ov::element::i64), batched_shape,
                             false);
    Out indices = reshape(slice(index_grid, i64_1(0), total_1d, i64_1(1), last_axis), i64s({2}, {-1, 1}), false);
    Out window = slice(batched, i64_1(0), total_1d, i64_1(1), last_axis);

    Out padding = convert(unsqueeze(unsqueeze(attention_mask, axis1), i64(2)), ov::element::f32);
    Out padded = add(window, padding);
    Out masked = std::make_shared<op::v1::Select>(
        std::make_shared<op::v1::Equal>(padded, f32({1, 1, 1, 1}, 0.0f)), f32({}, -65504.0f), window);
    Out masked_full = std::make_shared<op::v3::Broadcast>(
        masked, std::make_shared<op::v3::ShapeOf>(window, ov::element::i64), op::BroadcastModeSpec(op::BroadcastType::NUMPY));
    Out updated = std::make_shared<op::v15::ScatterNDUpdate>(flat, indices, reshape(masked_full, i64_1(-1), false));
    Out restored = reshape(updated, batched_shape, false);
    Out end = add(reshape(past, i64_1(1), false), seq_1d);
    return slice(restored, i64_1(0), end, i64_1(1), last_axis);
}

struct Shared {  // nodes made once and used by every layer
    Out attention_mask, position_ids, beam_idx, batch, last_axis, rope;
    Out mask;                 // from layer 0
    Out cos, sin;             // unsqueezed, from layer 0
    Out output_shape;         // [batch, seq, -1], from layer 0
};

// [batch, seq, heads * head] -> [batch, heads, seq, head], with qwen3's per-head RMS norm when the GGUF has one
Out split_heads(const GgufFile& f, const Out& x, int heads, int head_size, float eps, const std::string& norm) {
    Out y = reshape(x, i64s({4}, {0, 0, heads, head_size}), true);
    if (!norm.empty() && f.find_tensor(norm))
        y = rms_norm(f, norm, y, eps, 4);
    return transpose(y, {0, 2, 1, 3});
}

// One layer's attention block; appends its two cache assignments to `sinks`.
Out attention(const GgufFile& f, const Config& c, int layer, const Out& normed, const Out& q, const Out& k,
              const Out& v, Shared& s, ov::SinkVector& sinks) {
    const std::string blk = "blk." + std::to_string(layer) + ".";
    Out qh = split_heads(f, q, c.heads, c.head_size, c.rms_eps, blk + "attn_q_norm.weight");
    Out kh = split_heads(f, k, c.kv_heads, c.head_size, c.rms_eps, blk + "attn_k_norm.weight");
    Out vh = split_heads(f, v, c.kv_heads, c.head_size, c.rms_eps, "");  // no value norm (GenAI reads none)

    if (!s.cos.get_node()) {
        auto [cos, sin] = rope_tables(s.rope, s.position_ids, s.batch);
        s.cos = unsqueeze(cos, i64(1));
        s.sin = unsqueeze(sin, i64(1));
    }
    Out q_rot = add(mul(qh, s.cos), mul(rotate_half(qh, c.head_size, s.last_axis), s.sin));
    Out k_rot = add(mul(kh, s.cos), mul(rotate_half(kh, c.head_size, s.last_axis), s.sin));

    // the caches: [batch, kv_heads, past, head], empty at first, reordered by beam_idx
    auto zero = f32({}, 0.0f);
    auto empty_cache = [&] {
        return std::make_shared<op::v3::Broadcast>(
            zero, concat({s.batch, i64_1(c.kv_heads), i64_1(0), i64_1(c.head_size)}, 0));
    };
    auto cache = [&](const std::string& id, const Out& init) {
        auto var = std::make_shared<op::util::Variable>(
            op::util::VariableInfo{ov::PartialShape{-1, c.kv_heads, -1, c.head_size}, ov::element::f32, id});
        Out read = std::make_shared<op::v6::ReadValue>(init, var);
        return std::make_pair(var, gather(read, s.beam_idx, i64(0)));
    };
    const std::string n = std::to_string(layer);
    Out zeros_k = empty_cache(), zeros_v = empty_cache();
    auto [k_var, past_k] = cache("past_key_values." + n + ".keypresent." + n + ".key", zeros_k);
    auto [v_var, past_v] = cache("past_key_values." + n + ".valuepresent." + n + ".key", zeros_v);
    Out keys = concat({past_k, k_rot}, 2);
    Out values = concat({past_v, vh}, 2);
    sinks.push_back(std::make_shared<op::v6::Assign>(keys, k_var));
    sinks.push_back(std::make_shared<op::v6::Assign>(values, v_var));

    if (c.heads != c.kv_heads) {  // grouped-query attention: repeat each key/value head for its query heads
        auto repeat = [&](const Out& x) {
            Out target = concat({s.batch, i64_1(c.kv_heads), i64_1(c.heads / c.kv_heads), i64_1(0), i64_1(c.head_size)}, 0);
            Out widened = std::make_shared<op::v3::Broadcast>(unsqueeze(x, i64(2)), target,
                                                              op::BroadcastType::BIDIRECTIONAL);
            return reshape(widened, i64s({4}, {0, c.heads, -1, c.head_size}), true);
        };
        keys = repeat(keys);
        values = repeat(values);
    }

    if (!s.mask.get_node())
        s.mask = causal_mask(s.attention_mask, past_k, s.last_axis, std::make_shared<op::v3::ShapeOf>(normed));
    Out context = std::make_shared<op::v13::ScaledDotProductAttention>(q_rot, keys, values, s.mask, false);
    return reshape(transpose(context, {0, 2, 1, 3}), s.output_shape, false);
}

Out decoder_layer(const GgufFile& f, const Config& c, int layer, const Out& hidden, Shared& s, ov::SinkVector& sinks) {
    const std::string blk = "blk." + std::to_string(layer) + ".";
    Out normed = rms_norm(f, blk + "attn_norm.weight", hidden, c.rms_eps, 3);
    // llama.cpp stores a llama model's q and k rows interleaved for its rotary form; qwen2/qwen3 as they are
    const size_t reorder = c.arch == "llama" ? static_cast<size_t>(c.head_size) : 0;
    Out q = linear(f, blk + "attn_q", normed, reorder);
    Out k = linear(f, blk + "attn_k", normed, reorder);
    Out v = linear(f, blk + "attn_v", normed);
    if (!s.output_shape.get_node())
        s.output_shape = concat({gather(std::make_shared<op::v3::ShapeOf>(normed), i64s({2}, {0, 1}), i64(0)), i64_1(-1)}, 0);
    Out attended = attention(f, c, layer, normed, q, k, v, s, sinks);
    Out residual = add(hidden, linear(f, blk + "attn_output", attended));
    residual.get_node()->set_friendly_name("model.layers.self_attn.add0.layer" + std::to_string(layer));

    Out normed2 = rms_norm(f, blk + "ffn_norm.weight", residual, c.rms_eps, 3);
    Out gate = std::make_shared<op::v4::Swish>(linear(f, blk + "ffn_gate", normed2));
    Out product = mul(gate, linear(f, blk + "ffn_up", normed2));
    product.get_node()->set_friendly_name("model.layers.self_attn.mlp.mul.layer" + std::to_string(layer));
    Out out = add(residual, linear(f, blk + "ffn_down", product));
    out.get_node()->set_friendly_name("model.layers.self_attn.add1.layer" + std::to_string(layer));
    return out;
}

template <typename N>
void name_output(const std::shared_ptr<N>& node, const std::string& name) {
    node->output(0).set_names({name});
    node->set_friendly_name(name);
}

}  // namespace

std::shared_ptr<ov::Model> build_language_model(const GgufFile& f) {
    const Config c = read_config(f);
    check_shapes(f, c);
    auto parameter = [](ov::element::Type t, ov::PartialShape shape, const char* name) {
        auto p = std::make_shared<op::v0::Parameter>(t, std::move(shape));
        name_output(p, name);
        return p;
    };
    auto input_ids = parameter(ov::element::i64, {-1, -1}, "input_ids");
    auto attention_mask = parameter(ov::element::i64, {-1, -1}, "attention_mask");
    auto position_ids = parameter(ov::element::i64, {-1, -1}, "position_ids");
    auto beam_idx = parameter(ov::element::i32, {-1}, "beam_idx");

    const TensorInfo& embedding_tensor = tensor(f, "token_embd.weight");
    Out table = table_weight(embedding_tensor);
    Out hidden = gather(table, convert(input_ids, ov::element::i32), i32(0));

    Shared s;
    s.attention_mask = attention_mask;
    s.position_ids = position_ids;
    s.beam_idx = beam_idx;
    s.rope = rope_frequencies(c.head_size, c.rope_base);
    auto axis0 = i64_1(0);
    s.batch = gather(std::make_shared<op::v3::ShapeOf>(input_ids), axis0, axis0);
    s.last_axis = i64_1(3);

    ov::SinkVector sinks;
    for (int layer = 0; layer < c.layers; ++layer)
        hidden = decoder_layer(f, c, layer, hidden, s, sinks);

    Out normed = rms_norm(f, "output_norm.weight", hidden, c.rms_eps, 3);
    const TensorInfo* head = f.find_tensor("output.weight");  // absent: tied to the embedding table
    Out logits_value = std::make_shared<op::v0::MatMul>(normed, head ? table_weight(*head) : table, false, true);
    auto logits = std::make_shared<op::v0::Result>(logits_value);
    name_output(logits, "logits");

    auto model = std::make_shared<ov::Model>(ov::ResultVector{logits}, sinks,
                                             ov::ParameterVector{input_ids, attention_mask, position_ids, beam_idx});
    if (c.low_precision_file)
        model->set_rt_info(ov::element::f16, {"runtime_options", "KV_CACHE_PRECISION"});
    model->set_rt_info(8.0f, {"runtime_options", "ACTIVATIONS_SCALE_FACTOR"});
    return model;
}

size_t context_length(const GgufFile& f) {
    const std::string arch = f.get_string_or("general.architecture", "");
    const int64_t n = arch.empty() ? 0 : f.get_int_or(arch + ".context_length", 0);
    return n > 0 ? static_cast<size_t>(n) : 0;
}

}  // namespace ovgc::gguf
