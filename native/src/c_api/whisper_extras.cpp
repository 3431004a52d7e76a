// whisper_extras.h: the bundled backend's Whisper extras (features for tests and tools, the result's language,
// Whisper's own durations, cancellation, streaming) over the engine.
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
                                                                 : nullptr;
        if (!v) {
            ovgc::set_last_error(std::string(__func__) + ": unknown durations '" + w +
                                 "' (features_extraction, encode_inference or decode_inference)");
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

}  // extern "C"
