// whisper_extras.h: the bundled backend's Whisper extras (features for tests and tools, the result's language,
// Whisper's own durations, cancellation, streaming, word timestamps, the config's base fields) over the engine.
#include <algorithm>

#include "c_api/pipeline_call.hpp"
#include "c_api/whisper_handles.hpp"
#include "engine/whisper/feature_extractor.hpp"

#pragma GCC visibility push(default)
extern "C" {
#include "c_api/whisper_extras.h"
}
#pragma GCC visibility pop

using ovgc::guard;
using ovgc::null_arg;

struct ovgenai_c_whisper_cancel_opaque {
    std::shared_ptr<ovgc::WhisperCancelSwitch> target;
};

extern "C" {

ov_status_e ovgenai_c_bundled_whisper_features(const char* preprocessor_config_json, const float* pcm, size_t n,
                                               float* out, size_t* feature_size, size_t* n_frames) {
    if (!preprocessor_config_json)
        return null_arg(__func__, "preprocessor_config_json", INVALID_C_PARAM);
    if (!pcm)
        return null_arg(__func__, "pcm", INVALID_C_PARAM);
    if (!feature_size)
        return null_arg(__func__, "feature_size", INVALID_C_PARAM);
    if (!n_frames)
        return null_arg(__func__, "n_frames", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        const ovgc::WhisperFeatureExtractor fx(preprocessor_config_json);
        const ovgc::WhisperFeatures f = fx.extract(pcm, n);
        if (out) {
            if (*feature_size * *n_frames < f.data.size()) {
                ovgc::set_last_error(std::string(__func__) + ": the buffer holds " +
                                     std::to_string(*feature_size * *n_frames) + " floats, need " +
                                     std::to_string(f.data.size()));
                return OUT_OF_BOUNDS;
            }
            std::copy(f.data.begin(), f.data.end(), out);
        }
        *feature_size = f.feature_size;
        *n_frames = f.n_frames;
        return OK;
    });
}

ov_status_e ovgenai_c_bundled_whisper_decoded_results_get_language(const ov_genai_whisper_decoded_results* results,
                                                                   char* language, size_t* language_size) {
    if (!results)
        return null_arg(__func__, "results", INVALID_C_PARAM);
    if (!language_size)
        return null_arg(__func__, "language_size", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION,
                 [&] { return ovgc::string_out(__func__, results->r.language, language, language_size); });
}

ov_status_e ovgenai_c_bundled_whisper_decoded_results_get_durations(const ov_genai_whisper_decoded_results* results,
                                                                    const char* which, float* durations,
                                                                    size_t* count) {
    if (!results)
        return null_arg(__func__, "results", INVALID_C_PARAM);
    if (!which)
        return null_arg(__func__, "which", INVALID_C_PARAM);
    if (!count)
        return null_arg(__func__, "count", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        const std::string w = which;
        const auto& p = results->r.whisper_perf;
        const std::vector<float>* v = w == "features_extraction" ? &p.features_extraction_us
                                      : w == "encode_inference"  ? &p.encode_inference_us
                                      : w == "decode_inference"  ? &p.decode_inference_us
                                      : w == "word_level_timestamps_processing" ? &p.word_level_timestamps_us
                                                                                : nullptr;
        if (!v) {
            ovgc::set_last_error(std::string(__func__) + ": unknown durations '" + w +
                                 "' (features_extraction, encode_inference, decode_inference or "
                                 "word_level_timestamps_processing)");
            return INVALID_C_PARAM;
        }
        if (durations) {
            if (*count < v->size()) {
                ovgc::set_last_error(std::string(__func__) + ": room for " + std::to_string(*count) + ", need " +
                                     std::to_string(v->size()));
                return OUT_OF_BOUNDS;
            }
            std::copy(v->begin(), v->end(), durations);
        }
        *count = v->size();
        return OK;
    });
}

ov_status_e ovgenai_c_bundled_whisper_pipeline_get_cancel(ov_genai_whisper_pipeline* pipeline,
                                                          ovgenai_c_whisper_cancel** handle) {
    if (!pipeline)
        return null_arg(__func__, "pipeline", INVALID_C_PARAM);
    if (!handle)
        return null_arg(__func__, "handle", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        ovgc::WhisperPipeLock lock(pipeline);
        *handle = new ovgenai_c_whisper_cancel_opaque{pipeline->engine->cancel_switch()};
        return OK;
    });
}

ov_status_e ovgenai_c_bundled_whisper_cancel(ovgenai_c_whisper_cancel* handle, int* was_running) {
    if (!handle)
        return null_arg(__func__, "handle", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        const bool running = handle->target->request();
        if (was_running)
            *was_running = running ? 1 : 0;
        return OK;
    });
}

void ovgenai_c_bundled_whisper_cancel_free(ovgenai_c_whisper_cancel* handle) {
    delete handle;
}

ov_status_e ovgenai_c_bundled_whisper_pipeline_generate_with_streamer(
    ov_genai_whisper_pipeline* pipeline, const float* raw_speech, size_t raw_speech_size,
    const ov_genai_whisper_generation_config* config, const streamer_callback* streamer,
    ov_genai_whisper_decoded_results** results) {
    const ovgc::TokenStreamer tokens = ovgc::token_streamer();
    if (!tokens.callback && pipeline && raw_speech && results) {  // (those three: checked by whisper_generate)
        if (!streamer)
            return null_arg(__func__, "streamer (and no token streamer is set on this thread)", INVALID_C_PARAM);
        if (!streamer->callback_func)
            return null_arg(__func__, "streamer->callback_func", INVALID_C_PARAM);
    }
    return guard(__func__, UNKNOW_EXCEPTION, [&] {  // (making the callbacks may throw too)
        ovgc::WhisperStreamTarget target;
        if (tokens.callback) {
            auto f = tokens.callback;
            void* args = tokens.args;
            target.tokens = [f, args](const int64_t* ids, size_t n) { return ovgc::to_stream_status(f(ids, n, args)); };
        } else if (streamer && streamer->callback_func) {
            target.text = ovgc::make_callback(streamer);
        }
        return ovgc::whisper_generate(__func__, pipeline, raw_speech, raw_speech_size, config, &target, results);
    });
}

ov_status_e ovgenai_c_bundled_whisper_generation_config_set_word_timestamps(ov_genai_whisper_generation_config* config,
                                                                           bool word_timestamps) {
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    config->cfg.word_timestamps = word_timestamps;
    return OK;
}

ov_status_e ovgenai_c_bundled_whisper_generation_config_get_word_timestamps(
    const ov_genai_whisper_generation_config* config, bool* word_timestamps) {
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    if (!word_timestamps)
        return null_arg(__func__, "word_timestamps", INVALID_C_PARAM);
    *word_timestamps = config->cfg.word_timestamps;
    return OK;
}

ov_status_e ovgenai_c_bundled_whisper_generation_config_set_generation_config(
    ov_genai_whisper_generation_config* config, const ov_genai_generation_config* base) {
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    if (!base)
        return null_arg(__func__, "base", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        static_cast<ovgc::GenerationConfig&>(config->cfg) = base->cfg;
        return OK;
    });
}

ov_status_e ovgenai_c_bundled_whisper_decoded_results_get_words_count(const ov_genai_whisper_decoded_results* results,
                                                                      size_t* count) {
    if (!results)
        return null_arg(__func__, "results", INVALID_C_PARAM);
    if (!count)
        return null_arg(__func__, "count", INVALID_C_PARAM);
    if (!results->r.words) {
        ovgc::set_last_error(std::string(__func__) + ": the transcription has no words (word_timestamps was not set)");
        return NOT_FOUND;
    }
    *count = results->r.words->size();
    return OK;
}

namespace {

// Word `index` of `results`, or an error status (set_last_error'd) in *status.
const ovgc::WhisperWord* word_at(const char* fn, const ov_genai_whisper_decoded_results* results, size_t index,
                                 ov_status_e* status) {
    if (!results->r.words) {
        ovgc::set_last_error(std::string(fn) + ": the transcription has no words (word_timestamps was not set)");
        *status = NOT_FOUND;
        return nullptr;
    }
    if (index >= results->r.words->size()) {
        ovgc::set_last_error(std::string(fn) + ": word " + std::to_string(index) + " of " +
                             std::to_string(results->r.words->size()));
        *status = OUT_OF_BOUNDS;
        return nullptr;
    }
    return &(*results->r.words)[index];
}

}  // namespace

ov_status_e ovgenai_c_bundled_whisper_decoded_results_get_word(const ov_genai_whisper_decoded_results* results,
                                                               size_t index, float* start_ts, float* end_ts,
                                                               char* word, size_t* word_size) {
    if (!results)
        return null_arg(__func__, "results", INVALID_C_PARAM);
    if (!word_size)
        return null_arg(__func__, "word_size", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        ov_status_e status = OK;
        const ovgc::WhisperWord* w = word_at(__func__, results, index, &status);
        if (!w)
            return status;
        status = ovgc::string_out(__func__, w->word, word, word_size);
        if (status == OK) {
            if (start_ts)
                *start_ts = w->start_ts;
            if (end_ts)
                *end_ts = w->end_ts;
        }
        return status;
    });
}

ov_status_e ovgenai_c_bundled_whisper_decoded_results_get_word_token_ids(
    const ov_genai_whisper_decoded_results* results, size_t index, int64_t* token_ids, size_t* token_ids_count) {
    if (!results)
        return null_arg(__func__, "results", INVALID_C_PARAM);
    if (!token_ids_count)
        return null_arg(__func__, "token_ids_count", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        ov_status_e status = OK;
        const ovgc::WhisperWord* w = word_at(__func__, results, index, &status);
        if (!w)
            return status;
        if (token_ids) {
            if (*token_ids_count < w->token_ids.size()) {
                ovgc::set_last_error(std::string(__func__) + ": room for " + std::to_string(*token_ids_count) +
                                     ", need " + std::to_string(w->token_ids.size()));
                return OUT_OF_BOUNDS;
            }
            std::copy(w->token_ids.begin(), w->token_ids.end(), token_ids);
        }
        *token_ids_count = w->token_ids.size();
        return OK;
    });
}

}  // extern "C"
