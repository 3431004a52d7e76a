#include "engine/gguf/gguf_weights.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <openvino/core/type/float16.hpp>

namespace ovgc::gguf {

namespace {

using f16 = ov::float16;

f16 half_at(const uint8_t* p) {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return f16::from_bits(bits);
}

// GenAI computes a group's zero point as (uint8_t)std::round(-bias / scale) in float: the float is converted to a
// 32-bit integer by truncation (x86's cvttss2si, which gives INT32_MIN for NaN and out-of-range values) and its low
// byte kept. The same here, without the undefined behaviour of the C++ cast.
uint8_t zero_point_byte(f16 bias, f16 scale) {
    const float v = std::round(-1.f * static_cast<float>(bias) / static_cast<float>(scale));
    int32_t i = INT32_MIN;
    if (!std::isnan(v) && v >= -2147483648.f && v < 2147483648.f)
        i = static_cast<int32_t>(v);
    return static_cast<uint8_t>(static_cast<uint32_t>(i) & 0xFFu);
}

struct BlockFormat {
    size_t block_elements;  // weights per GGUF block
    size_t block_bytes;
    size_t group;           // weights per scale / zero point
    bool four_bit;          // codes stored as u4 (else u8)
};

BlockFormat block_format(uint32_t type) {
    switch (static_cast<GgmlType>(type)) {
    case GgmlType::Q4_0: return {32, 18, 32, true};
    case GgmlType::Q4_1: return {32, 20, 32, true};
    case GgmlType::Q8_0: return {32, 34, 32, false};
    case GgmlType::Q4_K: return {256, 144, 32, true};
    case GgmlType::Q6_K: return {256, 210, 16, false};
    default: throw std::logic_error("not a quantized type");
    }
}

// Puts code `v` (0..15) at element `index` of a u4 buffer (element 2k in the low half of byte k).
inline void put4(uint8_t* out, size_t index, uint8_t v) {
    uint8_t& b = out[index / 2];
    b = (index & 1) ? static_cast<uint8_t>((b & 0x0F) | (v << 4)) : static_cast<uint8_t>((b & 0xF0) | (v & 0x0F));
}

// Decodes one GGUF block into codes (element offset `first` of the row-major code buffer), scales and biases
// (index `group0` onwards), as GenAI's reader does.
void decode_block(uint32_t type, const uint8_t* b, uint8_t* codes, size_t first, f16* scales, f16* biases,
                  size_t group0) {
    switch (static_cast<GgmlType>(type)) {
    case GgmlType::Q4_0:
    case GgmlType::Q4_1: {
        const f16 d = half_at(b);
        scales[group0] = d;
        // Q4_0: value = (q - 8) * d;  Q4_1: value = q * d + m
        biases[group0] = type == static_cast<uint32_t>(GgmlType::Q4_0) ? f16(-8.f * static_cast<float>(d)) : half_at(b + 2);
        const uint8_t* qs = b + (type == static_cast<uint32_t>(GgmlType::Q4_0) ? 2 : 4);
        for (size_t j = 0; j < 16; ++j) {  // weight j in the low nibble of byte j, weight 16 + j in the high one
            put4(codes, first + j, qs[j] & 0x0F);
            put4(codes, first + 16 + j, qs[j] >> 4);
        }
        break;
    }
    case GgmlType::Q8_0: {
        const f16 d = half_at(b);
        scales[group0] = d;
        biases[group0] = f16(-128.f * static_cast<float>(d));
        for (size_t j = 0; j < 32; ++j)  // int8 q as the u8 code q + 128
            codes[first + j] = static_cast<uint8_t>(b[2 + j] ^ 0x80);
        break;
    }
    case GgmlType::Q4_K: {
        // f16 d, f16 dmin, 12 bytes of 6-bit scales and mins for 8 groups of 32, 128 bytes of nibbles
        const float d = static_cast<float>(half_at(b));
        const float dmin = static_cast<float>(half_at(b + 2));
        const uint8_t* q = b + 4;
        for (size_t g = 0; g < 8; ++g) {
            uint8_t sc, m;
            if (g < 4) {
                sc = q[g] & 63;
                m = q[g + 4] & 63;
            } else {
                sc = static_cast<uint8_t>((q[g + 4] & 0x0F) | ((q[g - 4] >> 6) << 4));
                m = static_cast<uint8_t>((q[g + 4] >> 4) | ((q[g] >> 6) << 4));
            }
            scales[group0 + g] = f16(d * static_cast<float>(sc));
            biases[group0 + g] = f16(-1.f * dmin * static_cast<float>(m));
        }
        const uint8_t* qs = b + 16;
        for (size_t chunk = 0; chunk < 4; ++chunk)  // 32 bytes: 32 weights in the low nibbles, the next 32 high
            for (size_t j = 0; j < 32; ++j) {
                put4(codes, first + chunk * 64 + j, qs[chunk * 32 + j] & 0x0F);
                put4(codes, first + chunk * 64 + 32 + j, qs[chunk * 32 + j] >> 4);
            }
        break;
    }
    case GgmlType::Q6_K: {
        // 128 bytes low 4 bits, 64 bytes high 2 bits, 16 int8 scales (groups of 16), f16 d
        const uint8_t* ql = b;
        const uint8_t* qh = b + 128;
        const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
        const float d = static_cast<float>(half_at(b + 208));
        for (size_t g = 0; g < 16; ++g) {
            scales[group0 + g] = f16(d * static_cast<float>(sc[g]));
            biases[group0 + g] = f16(-32.f * static_cast<float>(scales[group0 + g]));
        }
        for (size_t half = 0; half < 2; ++half) {
            const uint8_t* l = ql + 64 * half;
            const uint8_t* h = qh + 32 * half;
            uint8_t* out = codes + first + 128 * half;
            for (size_t j = 0; j < 32; ++j) {
                out[j] = static_cast<uint8_t>((l[j] & 0x0F) | ((h[j] & 3) << 4));
                out[j + 32] = static_cast<uint8_t>((l[j + 32] & 0x0F) | (((h[j] >> 2) & 3) << 4));
                out[j + 64] = static_cast<uint8_t>((l[j] >> 4) | (((h[j] >> 4) & 3) << 4));
                out[j + 96] = static_cast<uint8_t>((l[j + 32] >> 4) | (((h[j] >> 6) & 3) << 4));
            }
        }
        break;
    }
    default: throw std::logic_error("not a quantized type");
    }
}

// The row order that undoes llama.cpp's q/k interleaving: destination row i takes source row source_row(i).
size_t source_row(size_t i, size_t head) {
    const size_t r = i % head;
    const size_t base = i - r;
    return base + (r < head / 2 ? 2 * r : 2 * (r - head / 2) + 1);
}

// Copies rows of `bytes_per_row` bytes from src to dst in the reordered order (or as they are).
void copy_rows(const uint8_t* src, uint8_t* dst, size_t rows, size_t bytes_per_row, size_t head) {
    for (size_t i = 0; i < rows; ++i)
        std::memcpy(dst + i * bytes_per_row, src + (head ? source_row(i, head) : i) * bytes_per_row, bytes_per_row);
}

ov::Shape openvino_shape(const TensorInfo& t) {
    return ov::Shape(t.dims.rbegin(), t.dims.rend());
}

std::runtime_error tensor_error(const TensorInfo& t, const std::string& what) {
    return std::runtime_error("GGUF tensor '" + t.name + "' (" + ggml_type_name(t.type) + "): " + what);
}

}  // namespace

bool is_quantized_type(uint32_t type) {
    switch (static_cast<GgmlType>(type)) {
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q8_0:
    case GgmlType::Q4_K:
    case GgmlType::Q6_K: return true;
    default: return false;
    }
}

ov::Tensor read_plain(const TensorInfo& t) {
    ov::element::Type et;
    switch (static_cast<GgmlType>(t.type)) {
    case GgmlType::F32: et = ov::element::f32; break;
    case GgmlType::F16: et = ov::element::f16; break;
    case GgmlType::BF16: et = ov::element::bf16; break;
    default:
        throw tensor_error(t, "this tensor type is read as F32, F16 or BF16 only");
    }
    // a private copy: the mapping is read-only and OpenVINO constants may outlive the file
    ov::Tensor out(et, openvino_shape(t));
    std::memcpy(out.data(), t.data, t.n_bytes);
    return out;
}

Weight read_weight(const TensorInfo& t, size_t head) {
    Weight w;
    if (t.dims.size() != 2)
        throw tensor_error(t, "a weight matrix has 2 dimensions, this one " + std::to_string(t.dims.size()));
    w.cols = static_cast<size_t>(t.dims[0]);
    w.rows = static_cast<size_t>(t.dims[1]);
    if (head && (w.rows % head != 0 || head % 2 != 0))
        throw tensor_error(t, std::to_string(w.rows) + " rows do not split into heads of " + std::to_string(head));
    if (!is_quantized_type(t.type)) {
        ov::Tensor plain = read_plain(t);
        if (head) {
            ov::Tensor reordered(plain.get_element_type(), plain.get_shape());
            copy_rows(static_cast<const uint8_t*>(plain.data()), static_cast<uint8_t*>(reordered.data()), w.rows,
                      plain.get_byte_size() / w.rows, head);
            plain = reordered;
        }
        w.values = plain;
        return w;
    }
    const BlockFormat f = block_format(t.type);
    if (w.cols % f.block_elements != 0)
        throw tensor_error(t, "rows of " + std::to_string(w.cols) + " weights are not whole blocks of " +
                                  std::to_string(f.block_elements));
    w.group = f.group;
    w.kind = f.four_bit ? Weight::Kind::Codes4 : Weight::Kind::Codes8;
    const size_t groups = w.cols / f.group;
    const size_t blocks_per_row = w.cols / f.block_elements;
    const size_t groups_per_block = f.block_elements / f.group;

    // decode in the file's row order, then reorder whole rows
    const size_t code_row_bytes = f.four_bit ? w.cols / 2 : w.cols;
    std::vector<uint8_t> codes(w.rows * code_row_bytes, 0);
    std::vector<f16> scales(w.rows * groups), biases(w.rows * groups);
    for (size_t r = 0; r < w.rows; ++r)
        for (size_t k = 0; k < blocks_per_row; ++k) {
            const size_t block = r * blocks_per_row + k;
            decode_block(t.type, t.data + block * f.block_bytes, codes.data(), block * f.block_elements,
                         scales.data(), biases.data(), block * groups_per_block);
        }

    w.values = ov::Tensor(f.four_bit ? ov::element::u4 : ov::element::u8, ov::Shape{w.rows, groups, f.group});
    w.scales = ov::Tensor(ov::element::f16, ov::Shape{w.rows, groups, 1});
    w.zero_points = ov::Tensor(f.four_bit ? ov::element::u4 : ov::element::u8, ov::Shape{w.rows, groups, 1});
    copy_rows(codes.data(), static_cast<uint8_t*>(w.values.data()), w.rows, code_row_bytes, head);
    copy_rows(reinterpret_cast<const uint8_t*>(scales.data()), static_cast<uint8_t*>(w.scales.data()), w.rows,
              groups * sizeof(f16), head);
    // zero points from the reordered scales and biases
    std::vector<f16> ordered_biases(biases.size());
    copy_rows(reinterpret_cast<const uint8_t*>(biases.data()), reinterpret_cast<uint8_t*>(ordered_biases.data()),
              w.rows, groups * sizeof(f16), head);
    const f16* s = w.scales.data<f16>();
    auto* zp = static_cast<uint8_t*>(w.zero_points.data());
    const size_t n = w.rows * groups;
    if (f.four_bit) {
        std::memset(zp, 0, w.zero_points.get_byte_size());
        for (size_t i = 0; i < n; ++i)
            put4(zp, i, zero_point_byte(ordered_biases[i], s[i]) & 0x0F);
    } else {
        for (size_t i = 0; i < n; ++i)
            zp[i] = zero_point_byte(ordered_biases[i], s[i]);
    }
    return w;
}

}  // namespace ovgc::gguf
