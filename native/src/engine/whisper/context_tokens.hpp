// initial_prompt / hotwords as decoder context: " " + text tokenized without special tokens (GenAI also drops
// decoder_start, eos and no_timestamps ids the tokenizer may still add), placed after <|startofprev|>;
// initial_prompt only before the first window, hotwords before every window.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/tokenizer.hpp"
#include "engine/whisper/whisper_generation_config.hpp"

namespace ovgc {

struct WhisperContextTokens {
    std::vector<int64_t> initial_prompt;
    std::vector<int64_t> hotwords;
};

// Also returns the tokenization time in microseconds.
WhisperContextTokens prepare_context_tokens(const WhisperGenerationConfig& cfg, Tokenizer& tokenizer, float& us);

std::vector<int64_t> context_prompt(const WhisperContextTokens& ctx, const WhisperGenerationConfig& cfg,
                                    size_t window_offset);

}  // namespace ovgc
