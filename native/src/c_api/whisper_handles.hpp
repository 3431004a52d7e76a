// The opaque structs of whisper_generation_config.h and whisper_pipeline.h (shared by their two translation units)
// and the two-call string helper for optional strings.
#pragma once

#include <mutex>
#include <optional>

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
    ovgc::Counted<ovgc::HandleKind::Pipeline> counted_;
};

namespace ovgc {

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
