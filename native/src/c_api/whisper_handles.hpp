// The opaque structs of whisper_generation_config.h and whisper_pipeline.h (shared by their two translation units)
// and the two-call string helper for optional strings.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <stdexcept>
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

// Exclusive use of a Whisper pipeline for one call: other threads wait; the same thread (a streamer callback calling
// back into its pipeline) gets an error instead of a deadlock.
class WhisperPipeLock {
public:
    explicit WhisperPipeLock(ov_genai_whisper_pipeline_opaque* p) : p_(p) {
        if (p_->owner.load() == std::this_thread::get_id())
            throw std::runtime_error("re-entrant call: this Whisper pipeline is busy in a generate call on this "
                                     "thread (called from its streamer callback?)");
        lock_ = std::unique_lock<std::mutex>(p_->mu);
        p_->owner.store(std::this_thread::get_id());
    }
    ~WhisperPipeLock() { p_->owner.store(std::thread::id{}); }
    WhisperPipeLock(const WhisperPipeLock&) = delete;
    WhisperPipeLock& operator=(const WhisperPipeLock&) = delete;

private:
    ov_genai_whisper_pipeline_opaque* p_;
    std::unique_lock<std::mutex> lock_;
};

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
