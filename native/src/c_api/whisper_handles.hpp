// The opaque structs of whisper_generation_config.h and whisper_pipeline.h (shared by their two translation units)
// and the two-call string helper for optional strings.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

#include "c_api/capi.hpp"
#include "engine/whisper/whisper_engine.hpp"
#include "engine/whisper/whisper_generation_config.hpp"

struct ov_genai_whisper_generation_config_opaque {
    ovgc::WhisperGenerationConfig cfg;
    ovgc::Counted<ovgc::HandleKind::Config> counted_;
};
struct ov_genai_whisper_decoded_result_chunk_opaque {  // counted as "results"
    ovgc::WhisperChunk chunk;
    ovgc::Counted<ovgc::HandleKind::Results> counted_;
};
struct ov_genai_whisper_decoded_results_opaque {
    ovgc::WhisperResults r;
    ovgc::Counted<ovgc::HandleKind::Results> counted_;
};
struct ov_genai_whisper_pipeline_opaque {
    std::unique_ptr<ovgc::WhisperEngine> engine;
    std::mutex mu;  // calls from several threads are serialised
    std::atomic<std::thread::id> owner{};  // the thread inside a call (a streamer calling back in is refused)
    ovgc::Counted<ovgc::HandleKind::Pipeline> counted_;
};

namespace ovgc {

using WhisperPipeLock = BusyLock<ov_genai_whisper_pipeline_opaque>;

// The shared body of ov_genai_whisper_pipeline_generate and the streaming extra: argument checks, the pipeline's
// lock, the engine call and the results hand-off, inside the guard. stream: NULL, or where the call streams to.
inline ov_status_e whisper_generate(const char* fn, ov_genai_whisper_pipeline* pipeline, const float* raw_speech,
                                    size_t raw_speech_size, const ov_genai_whisper_generation_config* config,
                                    const WhisperStreamTarget* stream, ov_genai_whisper_decoded_results** results) {
    if (!pipeline || !pipeline->engine)
        return null_arg(fn, "pipeline", INVALID_C_PARAM);
    if (!raw_speech)
        return null_arg(fn, "raw_speech", INVALID_C_PARAM);
    if (!results)
        return null_arg(fn, "results", INVALID_C_PARAM);
    return guard(fn, UNKNOW_EXCEPTION, [&] {
        WhisperPipeLock lock(pipeline);
        auto r = std::make_unique<ov_genai_whisper_decoded_results_opaque>();
        r->r = pipeline->engine->generate(raw_speech, raw_speech_size, config ? &config->cfg : nullptr, stream);
        *results = r.release();
        return OK;
    });
}

// The two-call string protocol for `fn`'s string `s`: NULL buffer -> size; too small -> OUT_OF_BOUNDS.
inline ov_status_e string_out(const char* fn, const std::string& s, char* out, size_t* size) {
    if (copy_out_string(s, out, size) != 0) {
        set_last_error(std::string(fn) + ": buffer of " + std::to_string(*size) + " bytes is too small, need " +
                       std::to_string(s.size() + 1));
        return OUT_OF_BOUNDS;
    }
    return OK;
}

}  // namespace ovgc
