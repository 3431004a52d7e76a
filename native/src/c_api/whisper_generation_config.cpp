// whisper_generation_config.h over ovgc::WhisperGenerationConfig. Setters store values unchecked (as upstream);
// validate() applies upstream's rules; an unset optional string reads as NOT_FOUND.
#include "c_api/whisper_handles.hpp"

using ovgc::guard;
using ovgc::null_arg;

#define OVGC_WHISPER_FIELD(NAME, TYPE, FIELD)                                                               \
    ov_status_e ov_genai_whisper_generation_config_set_##NAME(ov_genai_whisper_generation_config* config,  \
                                                              TYPE value) {                                \
        if (!config)                                                                                       \
            return null_arg(__func__, "config", INVALID_C_PARAM);                                          \
        config->cfg.FIELD = value;                                                                         \
        return OK;                                                                                         \
    }                                                                                                      \
    ov_status_e ov_genai_whisper_generation_config_get_##NAME(const ov_genai_whisper_generation_config* config, \
                                                              TYPE* value) {                               \
        if (!config)                                                                                       \
            return null_arg(__func__, "config", INVALID_C_PARAM);                                          \
        if (!value)                                                                                        \
            return null_arg(__func__, #NAME, INVALID_C_PARAM);                                             \
        *value = config->cfg.FIELD;                                                                        \
        return OK;                                                                                         \
    }

#define OVGC_WHISPER_STRING(NAME, FIELD, SIZE_ARG)                                                          \
    ov_status_e ov_genai_whisper_generation_config_set_##NAME(ov_genai_whisper_generation_config* config,  \
                                                              const char* value) {                         \
        if (!config)                                                                                       \
            return null_arg(__func__, "config", INVALID_C_PARAM);                                          \
        return guard(__func__, UNKNOW_EXCEPTION, [&] {                                                     \
            if (value)                                                                                     \
                config->cfg.FIELD = std::string(value);                                                    \
            else                                                                                           \
                config->cfg.FIELD.reset();                                                                 \
            return OK;                                                                                     \
        });                                                                                                \
    }                                                                                                      \
    ov_status_e ov_genai_whisper_generation_config_get_##NAME(const ov_genai_whisper_generation_config* config, \
                                                              char* value, size_t* value_size) {           \
        if (!config)                                                                                       \
            return null_arg(__func__, "config", INVALID_C_PARAM);                                          \
        if (!value_size)                                                                                   \
            return null_arg(__func__, SIZE_ARG, INVALID_C_PARAM);                                          \
        return guard(__func__, UNKNOW_EXCEPTION, [&] {                                                     \
            if (!config->cfg.FIELD) {                                                                      \
                ovgc::set_last_error(std::string(__func__) + ": '" #FIELD "' is not set");                 \
                return NOT_FOUND;                                                                          \
            }                                                                                              \
            return ovgc::string_out(__func__, *config->cfg.FIELD, value, value_size);                      \
        });                                                                                                \
    }

#define OVGC_WHISPER_TOKENS(NAME, FIELD)                                                                    \
    ov_status_e ov_genai_whisper_generation_config_set_##NAME(ov_genai_whisper_generation_config* config,  \
                                                              const int64_t* tokens, size_t tokens_count) { \
        if (!config)                                                                                       \
            return null_arg(__func__, "config", INVALID_C_PARAM);                                          \
        return guard(__func__, UNKNOW_EXCEPTION, [&] {                                                     \
            config->cfg.FIELD.clear();                                                                     \
            if (tokens && tokens_count > 0)                                                                \
                config->cfg.FIELD.assign(tokens, tokens + tokens_count);                                   \
            return OK;                                                                                     \
        });                                                                                                \
    }                                                                                                      \
    ov_status_e ov_genai_whisper_generation_config_get_##NAME##_count(                                     \
        const ov_genai_whisper_generation_config* config, size_t* tokens_count) {                          \
        if (!config)                                                                                       \
            return null_arg(__func__, "config", INVALID_C_PARAM);                                          \
        if (!tokens_count)                                                                                 \
            return null_arg(__func__, "tokens_count", INVALID_C_PARAM);                                    \
        *tokens_count = config->cfg.FIELD.size();                                                          \
        return OK;                                                                                         \
    }                                                                                                      \
    ov_status_e ov_genai_whisper_generation_config_get_##NAME(const ov_genai_whisper_generation_config* config, \
                                                              int64_t* tokens, size_t tokens_count) {      \
        if (!config)                                                                                       \
            return null_arg(__func__, "config", INVALID_C_PARAM);                                          \
        if (!tokens)                                                                                       \
            return null_arg(__func__, "tokens", INVALID_C_PARAM);                                          \
        if (tokens_count < config->cfg.FIELD.size()) {                                                     \
            ovgc::set_last_error(std::string(__func__) + ": room for " + std::to_string(tokens_count) +    \
                                 " tokens, need " + std::to_string(config->cfg.FIELD.size()));             \
            return OUT_OF_BOUNDS;                                                                          \
        }                                                                                                  \
        std::copy(config->cfg.FIELD.begin(), config->cfg.FIELD.end(), tokens);                             \
        return OK;                                                                                         \
    }

extern "C" {

ov_status_e ov_genai_whisper_generation_config_create(ov_genai_whisper_generation_config** config) {
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        auto c = std::make_unique<ov_genai_whisper_generation_config_opaque>();
        c->cfg.max_length = 448;  // as upstream's C create
        *config = c.release();
        return OK;
    });
}

ov_status_e ov_genai_whisper_generation_config_create_from_json(const char* json_path,
                                                                ov_genai_whisper_generation_config** config) {
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    if (!json_path)
        return null_arg(__func__, "json_path", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        auto c = std::make_unique<ov_genai_whisper_generation_config_opaque>();
        c->cfg = ovgc::WhisperGenerationConfig::from_json_file(json_path);
        *config = c.release();
        return OK;
    });
}

void ov_genai_whisper_generation_config_free(ov_genai_whisper_generation_config* config) { delete config; }

ov_status_e ov_genai_whisper_generation_config_get_generation_config(const ov_genai_whisper_generation_config* config,
                                                                     ov_genai_generation_config** generation_config) {
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    if (!generation_config)
        return null_arg(__func__, "generation_config", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        auto g = std::make_unique<ov_genai_generation_config_opaque>();
        g->cfg = static_cast<const ovgc::GenerationConfig&>(config->cfg);
        *generation_config = g.release();
        return OK;
    });
}

OVGC_WHISPER_FIELD(decoder_start_token_id, int64_t, decoder_start_token_id)
OVGC_WHISPER_FIELD(pad_token_id, int64_t, pad_token_id)
OVGC_WHISPER_FIELD(translate_token_id, int64_t, translate_token_id)
OVGC_WHISPER_FIELD(transcribe_token_id, int64_t, transcribe_token_id)
OVGC_WHISPER_FIELD(prev_sot_token_id, int64_t, prev_sot_token_id)
OVGC_WHISPER_FIELD(no_timestamps_token_id, int64_t, no_timestamps_token_id)
OVGC_WHISPER_FIELD(max_initial_timestamp_index, size_t, max_initial_timestamp_index)
OVGC_WHISPER_FIELD(is_multilingual, bool, is_multilingual)
OVGC_WHISPER_FIELD(return_timestamps, bool, return_timestamps)

OVGC_WHISPER_STRING(language, language, "language_size")
OVGC_WHISPER_STRING(task, task, "task_size")
OVGC_WHISPER_STRING(initial_prompt, initial_prompt, "prompt_size")
OVGC_WHISPER_STRING(hotwords, hotwords, "hotwords_size")

OVGC_WHISPER_TOKENS(begin_suppress_tokens, begin_suppress_tokens)
OVGC_WHISPER_TOKENS(suppress_tokens, suppress_tokens)

ov_status_e ov_genai_whisper_generation_config_validate(ov_genai_whisper_generation_config* config) {
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        config->cfg.validate();
        return OK;
    });
}

}  // extern "C"
