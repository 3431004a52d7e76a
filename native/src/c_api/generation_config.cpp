// generation_config.h over ovgc::GenerationConfig. Setters store values unchecked (as upstream);
// validate() applies upstream's rules.
#include "c_api/capi.hpp"

using ovgc::guard;
using ovgc::null_arg;

#define OVGC_SETTER(NAME, TYPE, FIELD)                                                      \
    ov_status_e ov_genai_generation_config_set_##NAME(ov_genai_generation_config* config,  \
                                                      const TYPE value) {                  \
        if (!config)                                                                       \
            return null_arg(__func__, "config", INVALID_C_PARAM);                          \
        config->cfg.FIELD = value;                                                         \
        return OK;                                                                         \
    }

extern "C" {

ov_status_e ov_genai_generation_config_create(ov_genai_generation_config** config) {
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        *config = new ov_genai_generation_config_opaque();
        return OK;
    });
}

ov_status_e ov_genai_generation_config_create_from_json(const char* json_path, ov_genai_generation_config** config) {
    if (!json_path)
        return null_arg(__func__, "json_path", INVALID_C_PARAM);
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        auto c = std::make_unique<ov_genai_generation_config_opaque>();
        c->cfg = ovgc::GenerationConfig::from_json_file(json_path);
        *config = c.release();
        return OK;
    });
}

void ov_genai_generation_config_free(ov_genai_generation_config* handle) { delete handle; }

OVGC_SETTER(max_new_tokens, size_t, max_new_tokens)
OVGC_SETTER(max_length, size_t, max_length)
OVGC_SETTER(ignore_eos, bool, ignore_eos)
OVGC_SETTER(min_new_tokens, size_t, min_new_tokens)
OVGC_SETTER(echo, bool, echo)
OVGC_SETTER(logprobs, size_t, logprobs)
OVGC_SETTER(include_stop_str_in_output, bool, include_stop_str_in_output)
OVGC_SETTER(num_beam_groups, size_t, num_beam_groups)
OVGC_SETTER(num_beams, size_t, num_beams)
OVGC_SETTER(diversity_penalty, float, diversity_penalty)
OVGC_SETTER(length_penalty, float, length_penalty)
OVGC_SETTER(num_return_sequences, size_t, num_return_sequences)
OVGC_SETTER(no_repeat_ngram_size, size_t, no_repeat_ngram_size)
OVGC_SETTER(temperature, float, temperature)
OVGC_SETTER(top_p, float, top_p)
OVGC_SETTER(top_k, size_t, top_k)
OVGC_SETTER(min_p, float, min_p)
OVGC_SETTER(do_sample, bool, do_sample)
OVGC_SETTER(repetition_penalty, float, repetition_penalty)
OVGC_SETTER(presence_penalty, float, presence_penalty)
OVGC_SETTER(frequency_penalty, float, frequency_penalty)
OVGC_SETTER(rng_seed, size_t, rng_seed)
OVGC_SETTER(assistant_confidence_threshold, float, assistant_confidence_threshold)
OVGC_SETTER(num_assistant_tokens, size_t, num_assistant_tokens)
OVGC_SETTER(max_ngram_size, size_t, max_ngram_size)

ov_status_e ov_genai_generation_config_set_stop_criteria(ov_genai_generation_config* config, const StopCriteria value) {
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    config->cfg.stop_criteria = static_cast<int>(value);
    return OK;
}

ov_status_e ov_genai_generation_config_set_eos_token_id(ov_genai_generation_config* config, const int64_t id) {
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    config->cfg.eos_token_id = id;
    return OK;
}

ov_status_e ov_genai_generation_config_set_stop_strings(ov_genai_generation_config* config, const char** strings,
                                                        const size_t count) {
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    if (!strings)
        return null_arg(__func__, "strings", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        std::set<std::string> s;
        for (size_t i = 0; i < count; ++i)
            if (strings[i])
                s.insert(strings[i]);
        config->cfg.stop_strings = std::move(s);
        return OK;
    });
}

ov_status_e ov_genai_generation_config_set_stop_token_ids(ov_genai_generation_config* config, const int64_t* token_ids,
                                                          const size_t token_ids_num) {
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    if (!token_ids && token_ids_num > 0)
        return null_arg(__func__, "token_ids", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        std::set<int64_t> s;
        for (size_t i = 0; i < token_ids_num; ++i)
            s.insert(token_ids[i]);
        config->cfg.stop_token_ids = std::move(s);
        return OK;
    });
}

ov_status_e ov_genai_generation_config_get_max_new_tokens(const ov_genai_generation_config* config,
                                                          size_t* max_new_tokens) {
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    if (!max_new_tokens)
        return null_arg(__func__, "max_new_tokens", INVALID_C_PARAM);
    *max_new_tokens = config->cfg.max_new_tokens;
    return OK;
}

ov_status_e ov_genai_generation_config_validate(ov_genai_generation_config* config) {
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        config->cfg.validate();
        return OK;
    });
}

}  // extern "C"
