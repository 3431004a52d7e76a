// GGUF tensors as OpenVINO weights, decoded the way OpenVINO GenAI's GGUF reader decodes them so that the model
// built from them computes what GenAI's does, bit for bit:
//   F16 / BF16 / F32        -> the values as they are (a constant converted to f32 where used);
//   Q4_0, Q4_1, Q4_K        -> u4 codes in groups of 32, an f16 scale and a u4 zero point per group;
//   Q8_0 (groups of 32), Q6_K (groups of 16) -> u8 codes, an f16 scale and a u8 zero point per group.
// Each quantized group dequantizes as (code - zero_point) * scale, the zero point being the GGUF block's offset
// over its scale, rounded (GenAI's rounding and its 8-bit / 4-bit truncation included: a Q4_1 or Q4_K offset
// that does not fit 4 bits wraps as it does there).
#pragma once

#include <cstddef>
#include <string>

#include <openvino/runtime/tensor.hpp>

#include "engine/gguf/gguf_file.hpp"

namespace ovgc::gguf {

struct Weight {
    enum class Kind { Plain, Codes4, Codes8 };
    Kind kind = Kind::Plain;
    ov::Tensor values;       // Plain: f16 / bf16 / f32, OpenVINO shape ([rows, cols] for a matrix);
                             // Codes4 / Codes8: u4 / u8 codes [rows, cols / group, group]
    ov::Tensor scales;       // quantized: f16 [rows, cols / group, 1]
    ov::Tensor zero_points;  // quantized: u4 / u8 [rows, cols / group, 1]
    size_t rows = 0, cols = 0, group = 0;
    bool quantized() const { return kind != Kind::Plain; }
};

// True for the types read_weight() decodes as quantized (Q4_0, Q4_1, Q8_0, Q4_K, Q6_K).
bool is_quantized_type(uint32_t ggml_type);

// A tensor decoded (see above). `qk_reorder_head_size` > 0 undoes llama.cpp's interleaving of the rotary halves in a
// llama q/k projection: rows regrouped per head of that size (row 2r of a head becomes row r, row 2r+1 row
// head/2 + r). Throws std::runtime_error naming the tensor for a type outside the list above or a shape that does
// not fit its blocks.
Weight read_weight(const TensorInfo& tensor, size_t qk_reorder_head_size = 0);

// A non-quantized tensor (F32, F16, BF16) as an OpenVINO tensor of that element type and the OpenVINO shape (the
// GGUF dimensions reversed), sharing the file's bytes (valid while the GgufFile lives): norms and biases.
ov::Tensor read_plain(const TensorInfo& tensor);

}  // namespace ovgc::gguf
