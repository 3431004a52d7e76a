// GenerationConfig with upstream's defaults, validation rules and generation_config.json reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

namespace ovgc {

constexpr size_t kUnlimited = std::numeric_limits<size_t>::max();

struct GenerationConfig {
    size_t max_new_tokens = kUnlimited;
    size_t max_length = kUnlimited;
    bool ignore_eos = false;
    size_t min_new_tokens = 0;
    bool echo = false;
    size_t logprobs = 0;
    std::set<std::string> stop_strings;
    bool include_stop_str_in_output = false;
    std::set<int64_t> stop_token_ids;

    size_t num_beam_groups = 1;
    size_t num_beams = 1;
    float diversity_penalty = 0.0f;
    float length_penalty = 1.0f;
    size_t num_return_sequences = 1;
    size_t no_repeat_ngram_size = kUnlimited;
    int stop_criteria = 1;  // HEURISTIC

    float temperature = 1.0f;
    float top_p = 1.0f;
    size_t top_k = kUnlimited;
    float min_p = 0.0f;
    bool do_sample = false;
    float repetition_penalty = 1.0f;
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    size_t rng_seed = 0;

    float assistant_confidence_threshold = 0.0f;
    size_t num_assistant_tokens = 0;
    size_t max_ngram_size = 0;

    int64_t eos_token_id = -1;
    bool apply_chat_template = true;

    void set_eos_token_id(int64_t id) {
        eos_token_id = id;
        stop_token_ids.insert(id);
    }
    size_t get_max_new_tokens(size_t prompt_len) const {
        if (max_new_tokens != kUnlimited)
            return max_new_tokens;
        if (max_length == kUnlimited)
            return kUnlimited;
        return max_length > prompt_len ? max_length - prompt_len : 0;
    }
    bool is_beam_search() const { return num_beams > 1; }
    bool is_greedy() const { return num_beams == 1 && !do_sample; }
    bool is_multinomial() const { return num_beams == 1 && do_sample; }
    bool is_prompt_lookup() const { return max_ngram_size > 0 && num_assistant_tokens > 0; }

    // Throws std::invalid_argument naming the broken rule.
    void validate() const;
    // GenAI's rule for a request of prompt_len tokens: a set max_length leaves room for at least one new token.
    void check_prompt_length(size_t prompt_len) const;

    // Reads a Hugging Face / GenAI generation_config.json; unknown keys are ignored.
    static GenerationConfig from_json_file(const std::string& path);
    // Updates this config from the keys present in the JSON file (used for the model folder's file).
    void update_from_json_file(const std::string& path);
};

}  // namespace ovgc
