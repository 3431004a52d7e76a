// The language model of a GGUF file as a stateful OpenVINO model: inputs input_ids, attention_mask, position_ids,
// beam_idx; output logits; one key and one value cache variable per layer. Built node for node as OpenVINO GenAI
// builds it from a GGUF (architectures llama, qwen2, qwen3), so the bundled engine runs it as GenAI does —
// including what GenAI writes as openvino_model.xml with enable_save_ov_model.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <openvino/core/model.hpp>

#include "engine/gguf/gguf_file.hpp"

namespace ovgc::gguf {

// Throws std::runtime_error naming the problem: an architecture other than llama / qwen2 / qwen3, a missing
// metadata key or tensor, a tensor type GenAI's reader does not take for that tensor.
std::shared_ptr<ov::Model> build_language_model(const GgufFile& file);

// The model's context length (<arch>.context_length; 0 when absent).
size_t context_length(const GgufFile& file);

}  // namespace ovgc::gguf
