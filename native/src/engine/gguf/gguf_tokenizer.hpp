// The tokenizer and detokenizer of a GGUF file as openvino_tokenizers models, built the way OpenVINO GenAI
// (2026.4) builds them when it opens a .gguf: the same operations in the same order with the same attributes and
// constants, and the rt_info GenAI writes when it saves them (enable_save_ov_model) — pad/bos/eos_token_id,
// chat_template (with GenAI's Qwen2.5 / Qwen3 template patches) and openvino_genai_version (ours: its value names
// this backend; GenAI only checks that the key is there).
//
// Supported as in GenAI: tokenizer.ggml.model "gpt2" (byte-level BPE). Tokenizer:
//   StringTensorUnpack -> a ragged batch dimension -> SpecialTokensSplit (control / user-defined tokens) ->
//   RegexSplit per pre-tokenizer expression (tokenizer.ggml.pre: "qwen2", "smollm", else GenAI's default set) ->
//   BPETokenizer (byte fallback) -> keep the last 8192 ids -> RaggedToDense (left padding) -> i64
//   input_ids / attention_mask.
// Detokenizer: VocabDecoder (skipping the special ids, through a Slice GenAI can make stateful) -> FuzeRagged ->
//   UTF8Validate -> StringTensorPack (string_output).
// Like GenAI's, the tokenizer adds no BOS/EOS (tokenizer.ggml.add_bos_token is not used) and truncates nothing
// else; there is no CombineSegments, so add_special_tokens changes nothing.
//
// The operations come from the openvino_tokenizers extension's node factory (create_tokenizer_node), looked up in
// the extension the shared Core loads (openvino_core.hpp); the models are for that Core.
#pragma once

#include <memory>

#include <openvino/core/model.hpp>

#include "engine/gguf/gguf_file.hpp"

namespace ovgc::gguf {

struct TokenizerModels {
    std::shared_ptr<ov::Model> tokenizer, detokenizer;
};

// Throws std::runtime_error naming the GGUF key and problem for an unsupported tokenizer kind (any
// tokenizer.ggml.model but "gpt2") or missing / malformed tokenizer metadata, and when the extension or its
// factory is missing.
TokenizerModels build_tokenizer_models(const GgufFile& file);

}  // namespace ovgc::gguf
