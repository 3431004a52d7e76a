// Tokenizer / detokenizer over openvino_tokenizers IR models, plus the special tokens and the
// chat template taken from the tokenizer's rt_info.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <openvino/openvino.hpp>

namespace ovgc {

class Tokenizer {
public:
    // openvino_tokenizer.xml / openvino_detokenizer.xml of the folder `dir`
    Tokenizer(ov::Core& core, const std::string& dir);
    // Models built in memory (a GGUF's); `dir`, when not empty, is where Hugging Face files may hold the chat
    // template when the models' rt_info lacks it. The models are not changed (variants are made from clones).
    Tokenizer(ov::Core& core, const std::shared_ptr<ov::Model>& tokenizer, const std::shared_ptr<ov::Model>& detokenizer,
              const std::string& dir = {});

    // add_special_tokens=false drops what the tokenizer adds around the text (e.g. BOS), like GenAI's
    // stateful CombineSegments switch; used for templated prompts and stop strings.
    std::vector<int64_t> encode(const std::string& text, bool add_special_tokens = true);
    std::string decode(const int64_t* ids, size_t n);  // skips special tokens (GenAI's default)
    std::string decode(const std::vector<int64_t>& ids) { return decode(ids.data(), ids.size()); }
    // Several sequences in one detokenizer inference, each decoded as decode() decodes it alone: the rows are
    // right-padded with a token the detokenizer skips (one of its special tokens), which adds no text. Without such
    // a token (can_decode_batch() false) the rows are decoded one by one.
    std::vector<std::string> decode_batch(const std::vector<const std::vector<int64_t>*>& rows);
    bool can_decode_batch() const { return skipped_id_ >= 0; }

    int64_t bos_token_id() const { return bos_id_; }
    int64_t eos_token_id() const { return eos_id_; }
    int64_t pad_token_id() const { return pad_id_; }
    const std::string& bos_token() const { return bos_; }
    const std::string& eos_token() const { return eos_; }
    const std::string& chat_template() const { return chat_template_; }

private:
    ov::InferRequest tok_;
    ov::InferRequest tok_plain_;  // without special tokens (same as tok_ when the model adds none)
    bool has_plain_ = false;
    ov::InferRequest detok_;
    int64_t skipped_id_ = -1;  // an id the detokenizer skips (the batch padding), -1: none known
    int64_t bos_id_ = -1, eos_id_ = -1, pad_id_ = -1;
    std::string bos_, eos_, chat_template_;
};

}  // namespace ovgc
