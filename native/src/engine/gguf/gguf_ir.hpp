// What is built from a GGUF, written as OpenVINO IR: GenAI's enable_save_ov_model, and the bundled backend's
// GGUF -> IR conversion (ovgenai_c_bundled_convert_gguf).
#pragma once

#include <memory>
#include <string>

#include <openvino/core/model.hpp>

#include "engine/gguf/gguf_tokenizer.hpp"

namespace ovgc::gguf {

// Writes into the existing folder `folder`: openvino_model.xml/.bin when `model` is given (weights compressed to f16,
// as GenAI writes it) and openvino_tokenizer / openvino_detokenizer .xml/.bin when `tokenizers` is given (as they
// are). Throws std::runtime_error naming the folder when writing fails.
void save_ir(const std::string& folder, const std::shared_ptr<ov::Model>& model, const TokenizerModels* tokenizers);

// Reads the GGUF at `gguf_path` and writes the parts asked for into `folder` (see save_ir), without compiling
// anything. The openvino_tokenizers extension must be loaded (load_tokenizers_extension) for the tokenizers.
void convert_to_ir(const std::string& gguf_path, const std::string& folder, bool model, bool tokenizers);

}  // namespace ovgc::gguf
