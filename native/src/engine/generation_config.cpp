#include "engine/generation_config.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "json/json.hpp"

namespace ovgc {

namespace {
[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument("invalid generation config: " + msg); }
}  // namespace

void GenerationConfig::check_prompt_length(size_t prompt_len) const {
    if (max_length != kUnlimited && max_length <= prompt_len)
        fail("'max_length' (" + std::to_string(max_length) + ") must be greater than the number of prompt tokens (" +
             std::to_string(prompt_len) + ")");
}

void GenerationConfig::validate() const {
    if (num_return_sequences == 0)
        fail("num_return_sequences must be greater than 0");
    if (eos_token_id != -1 && stop_token_ids.find(eos_token_id) == stop_token_ids.end())
        fail("'stop_token_ids' must contain 'eos_token_id' (" + std::to_string(eos_token_id) +
             "); set eos_token_id together with stop_token_ids");
    for (int64_t id : stop_token_ids)
        if (id < 0)
            fail("'stop_token_ids' must be non-negative, got " + std::to_string(id));
    if (ignore_eos && max_new_tokens == kUnlimited && max_length == kUnlimited)
        fail("'ignore_eos' is true but neither 'max_new_tokens' nor 'max_length' is set: generation would never end");
    if (eos_token_id == -1 && stop_token_ids.empty() && stop_strings.empty() && max_new_tokens == kUnlimited &&
        max_length == kUnlimited)
        fail("none of 'eos_token_id', 'stop_token_ids', 'stop_strings', 'max_new_tokens', 'max_length' is set: "
             "generation would never end");
    if (max_new_tokens == 0 && !echo)
        fail("'max_new_tokens' must be greater than 0 (unless 'echo' is set)");
    if (min_new_tokens > max_new_tokens)
        fail("'min_new_tokens' (" + std::to_string(min_new_tokens) + ") must not exceed 'max_new_tokens' (" +
             std::to_string(max_new_tokens) + ")");
    if (num_return_sequences > 1 && !do_sample && num_beams == 1)
        fail("'num_return_sequences' > 1 needs sampling ('do_sample') or beam search ('num_beams' > 1)");
    if (!is_beam_search()) {
        if (frequency_penalty < -2.0f || frequency_penalty > 2.0f)
            fail("'frequency_penalty' must be within [-2, 2]");
        if (presence_penalty < -2.0f || presence_penalty > 2.0f)
            fail("'presence_penalty' must be within [-2, 2]");
        if (!(repetition_penalty > 0.0f))
            fail("'repetition_penalty' must be greater than 0");
    }
    if (is_multinomial()) {
        if (!(top_p > 0.0f && top_p <= 1.0f))
            fail("'top_p' must be within (0, 1]");
        if (!(temperature > 0.0f))
            fail("'temperature' must be greater than 0 when sampling");
        if (!(min_p >= 0.0f && min_p < 1.0f))
            fail("'min_p' must be within [0, 1)");
    }
    if (is_beam_search()) {
        if (num_beam_groups == 0 || num_beams % num_beam_groups != 0)
            fail("'num_beams' must be divisible by 'num_beam_groups'");
        if (num_beams < num_return_sequences)
            fail("'num_beams' must be at least 'num_return_sequences'");
        if (do_sample)
            fail("beam search with sampling ('do_sample') is not supported");
        if (no_repeat_ngram_size == 0)
            fail("'no_repeat_ngram_size' must be greater than 0 with beam search");
        if (frequency_penalty != 0.0f || presence_penalty != 0.0f || repetition_penalty != 1.0f)
            fail("'frequency_penalty', 'presence_penalty' and 'repetition_penalty' are not supported with beam search");
        if (num_beam_groups > 1 && diversity_penalty == 0.0f)
            fail("'diversity_penalty' must be set when 'num_beam_groups' > 1");
        if (num_beam_groups == 1 && diversity_penalty != 0.0f)
            fail("'diversity_penalty' needs 'num_beam_groups' > 1");
    }
    if (num_assistant_tokens > 0 && assistant_confidence_threshold > 0.0f)
        fail("'num_assistant_tokens' and 'assistant_confidence_threshold' are mutually exclusive");
    if ((num_assistant_tokens > 0 || assistant_confidence_threshold > 0.0f) &&
        (is_beam_search() || num_return_sequences != 1))
        fail("beam search and parallel sampling are not compatible with assisted generation (num_assistant_tokens)");
    if (num_assistant_tokens == 0 && max_ngram_size != 0)
        fail("'max_ngram_size' should be set to default value 0 when prompt lookup is disabled");
}

namespace {
std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f)
        throw std::runtime_error("cannot open '" + path + "'");
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}
size_t as_size(const JsonValue& v) {
    if (v.is_int()) {
        int64_t i = v.as_int();
        return i < 0 ? kUnlimited : static_cast<size_t>(i);
    }
    double d = v.as_number();
    return d < 0 ? kUnlimited : static_cast<size_t>(d);
}
}  // namespace

void GenerationConfig::update_from_json_file(const std::string& path) {
    JsonValue j = json_parse(read_file(path));
    if (!j.is_object())
        throw std::runtime_error("'" + path + "' does not hold a JSON object");
    auto num = [&](const char* k, float& dst) {
        if (auto* v = j.find(k); v && v->is_number())
            dst = static_cast<float>(v->as_number());
    };
    auto sz = [&](const char* k, size_t& dst) {
        if (auto* v = j.find(k); v && v->is_number())
            dst = as_size(*v);
    };
    auto bl = [&](const char* k, bool& dst) {
        if (auto* v = j.find(k); v && v->is_bool())
            dst = v->as_bool();
    };
    sz("max_new_tokens", max_new_tokens);
    sz("max_length", max_length);
    bl("ignore_eos", ignore_eos);
    sz("min_new_tokens", min_new_tokens);
    bl("echo", echo);
    sz("logprobs", logprobs);
    bl("include_stop_str_in_output", include_stop_str_in_output);
    sz("num_beam_groups", num_beam_groups);
    sz("num_beams", num_beams);
    num("diversity_penalty", diversity_penalty);
    num("length_penalty", length_penalty);
    sz("num_return_sequences", num_return_sequences);
    sz("no_repeat_ngram_size", no_repeat_ngram_size);
    num("temperature", temperature);
    num("top_p", top_p);
    sz("top_k", top_k);
    num("min_p", min_p);
    bl("do_sample", do_sample);
    num("repetition_penalty", repetition_penalty);
    num("presence_penalty", presence_penalty);
    num("frequency_penalty", frequency_penalty);
    sz("rng_seed", rng_seed);
    num("assistant_confidence_threshold", assistant_confidence_threshold);
    sz("num_assistant_tokens", num_assistant_tokens);
    sz("max_ngram_size", max_ngram_size);
    bl("apply_chat_template", apply_chat_template);
    if (auto* v = j.find("early_stopping")) {
        if (v->is_bool())
            stop_criteria = v->as_bool() ? 0 : 1;
        else if (v->is_string() && v->as_string() == "never")
            stop_criteria = 2;
    }
    if (auto* v = j.find("stop_strings"); v && v->is_array()) {
        stop_strings.clear();
        for (auto& s : v->as_array())
            if (s.is_string())
                stop_strings.insert(s.as_string());
    }
    if (auto* v = j.find("stop_token_ids"); v && v->is_array()) {
        stop_token_ids.clear();
        for (auto& s : v->as_array())
            if (s.is_int())
                stop_token_ids.insert(s.as_int());
    }
    if (auto* v = j.find("eos_token_id")) {
        if (v->is_int()) {
            set_eos_token_id(v->as_int());
        } else if (v->is_array() && v->size() > 0) {
            for (auto& s : v->as_array())
                if (s.is_int())
                    stop_token_ids.insert(s.as_int());
            if (v->as_array()[0].is_int())
                set_eos_token_id(v->as_array()[0].as_int());
        }
    }
}

GenerationConfig GenerationConfig::from_json_file(const std::string& path) {
    GenerationConfig c;
    c.update_from_json_file(path);
    return c;
}

}  // namespace ovgc
