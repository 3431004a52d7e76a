// GenAI's Whisper logit rules on one row of logits: suppress_tokens / begin_suppress_tokens, and the timestamp
// rules (no <|notimestamps|>, timestamps in pairs, non-decreasing, max_initial_timestamp_index on the first
// step, text masked when the timestamps' total probability beats every text token).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/whisper/whisper_generation_config.hpp"

namespace ovgc {

void suppress_tokens(float* logits, size_t vocab, const std::vector<int64_t>& tokens);

void apply_timestamp_rules(float* logits, size_t vocab, const WhisperGenerationConfig& cfg,
                           const std::vector<int64_t>& generated, bool initial_step);

// All of the above for one decoding step, in GenAI's order.
void process_whisper_logits(float* logits, size_t vocab, const WhisperGenerationConfig& cfg, bool return_timestamps,
                            const std::vector<int64_t>& generated, bool initial_step);

}  // namespace ovgc
