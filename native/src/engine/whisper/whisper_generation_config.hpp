// WhisperGenerationConfig: GenAI's GenerationConfig plus the Whisper fields, with upstream's defaults, its
// generation_config.json reader (create_from_json) and its validate() rules and messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/generation_config.hpp"

namespace ovgc {

struct WhisperGenerationConfig : GenerationConfig {
    int64_t decoder_start_token_id = 50258;
    int64_t pad_token_id = 50257;
    int64_t translate_token_id = 50358;
    int64_t transcribe_token_id = 50359;
    int64_t prev_sot_token_id = 50361;
    int64_t no_timestamps_token_id = 50363;
    size_t max_initial_timestamp_index = 50;
    bool is_multilingual = true;
    std::optional<std::string> language;
    std::map<std::string, int64_t> lang_to_id;  // "<|en|>" -> token id
    std::optional<std::string> task;
    bool return_timestamps = false;
    bool word_timestamps = false;
    std::vector<std::pair<size_t, size_t>> alignment_heads;
    std::optional<std::string> initial_prompt;
    std::optional<std::string> hotwords;
    std::vector<int64_t> begin_suppress_tokens;
    std::vector<int64_t> suppress_tokens;

    WhisperGenerationConfig() { apply_chat_template = false; }

    // The base fields as GenerationConfig reads them, then the Whisper ones (task_to_id.* only when multilingual).
    static WhisperGenerationConfig from_json_file(const std::string& path);

    // Throws std::invalid_argument with upstream's message.
    void validate() const;
};

// The token id of a language given as "en" or "<|en|>" (throws when lang_to_id lacks it).
int64_t language_token_id(const std::map<std::string, int64_t>& lang_to_id, const std::string& language);
// The language of a token id, e.g. "<|en|>" (throws when absent).
std::string language_of_token(const std::map<std::string, int64_t>& lang_to_id, int64_t token_id);
// "<|en|>" -> "en"
std::string plain_language(const std::string& language);

// GenAI's per-generate config: `per_call` with the base's stop ids, eos and lang_to_id where it lacks them, validated.
WhisperGenerationConfig merge_with_base(const WhisperGenerationConfig& base, const WhisperGenerationConfig& per_call);

}  // namespace ovgc
