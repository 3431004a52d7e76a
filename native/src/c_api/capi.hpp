// Shared by the C API translation units: the C declarations (from ../cdefs, exported with default
// visibility), the opaque handle structs, the exception guard, last-error text and live-handle counters.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <atomic>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#pragma GCC visibility push(default)
extern "C" {
#include "00_ov_common.h"
#include "01_json_container.h"
#include "02_chat_history.h"
#include "03_generation_config.h"
#include "04_perf_metrics.h"
#include "05_llm_pipeline.h"
#include "06_vlm_pipeline.h"   // declared and exported; the bundled backend does not implement VLMs (vlm_pipeline.cpp)
#include "07_whisper_generation_config.h"  // whisper_generation_config.cpp
#include "08_whisper_pipeline.h"           // whisper_pipeline.cpp
#include "90_ovgenai_c_bundled.h"  // ovgenai_c extras
}
#pragma GCC visibility pop

#include "engine/errors.hpp"
#include "engine/generation_config.hpp"
#include "engine/llm_engine.hpp"
#include "engine/perf_metrics.hpp"
#include "json/json.hpp"

namespace ovgc {

enum class HandleKind {
    Pipeline = 0,
    Config,
    Results,
    PerfMetrics,
    ChatHistory,
    JsonContainer,
    BatchingPipeline,  // cdefs/93 (batching.cpp)
    GenerationHandle,
    Count_
};
void handle_created(HandleKind k);
void handle_destroyed(HandleKind k);

// RAII counter member: every opaque struct holds one, so live_handles() is exact.
template <HandleKind K>
struct Counted {
    Counted() { handle_created(K); }
    Counted(const Counted&) { handle_created(K); }
    Counted& operator=(const Counted&) = default;
    ~Counted() { handle_destroyed(K); }
};

void set_last_error(const std::string& text);
bool cancel_only_streaming();  // ovgenai_c_bundled_set_cancel_only_streaming on this thread
struct TokenStreamer {
    ovgenai_c_bundled_token_callback callback = nullptr;
    void* args = nullptr;
};
TokenStreamer token_streamer();  // ovgenai_c_bundled_set_token_streamer on this thread

// Runs f (returning the status type) and maps any escaping exception to a status.
// E is ov_status_e, ov_genai_chat_history_status_e or ov_genai_json_container_status_e.
template <typename E, typename F>
E guard(const char* fn, E on_exception, F&& f) noexcept {
    try {
        return f();
    } catch (const StatusError& e) {
        set_last_error(std::string(fn) + ": " + e.what());
        return static_cast<E>(e.status());
    } catch (const std::exception& e) {
        set_last_error(std::string(fn) + ": " + e.what());
    } catch (...) {
        set_last_error(std::string(fn) + ": unknown exception");
    }
    return on_exception;
}

template <typename E>
E null_arg(const char* fn, const char* arg, E status) noexcept {
    try {
        set_last_error(std::string(fn) + ": argument '" + arg + "' is NULL");
    } catch (...) {
    }
    return status;
}

// The key/value pairs of a pipeline create's variadic properties (property_args_size counts keys and values).
struct CreateProperties {
    std::vector<std::pair<std::string, std::string>> pairs;
    bool has_null = false;  // a NULL key or value: each create refuses it inside its guard
};

inline CreateProperties read_create_properties(size_t property_args_size, va_list ap) {
    CreateProperties out;
    for (size_t i = 0; i + 1 < property_args_size; i += 2) {
        const char* k = va_arg(ap, const char*);
        const char* v = va_arg(ap, const char*);
        if (!k || !v)
            out.has_null = true;
        else
            out.pairs.emplace_back(k, v);
    }
    return out;
}

// Two-call string protocol shared by results and JSON containers. Returns 0 OK, 1 out of bounds.
inline int copy_out_string(const std::string& s, char* output, size_t* output_size) {
    const size_t need = s.size() + 1;
    if (!output) {
        *output_size = need;
        return 0;
    }
    if (*output_size < need)
        return 1;
    std::memcpy(output, s.c_str(), need);
    *output_size = need;
    return 0;
}

// Exclusive use of a pipeline (any opaque struct with `std::mutex mu` and `std::atomic<std::thread::id> owner`) for
// one call: other threads wait; the same thread (a streamer callback calling back into its pipeline) gets an error
// instead of a deadlock or corrupted state.
template <typename Pipeline>
class BusyLock {
public:
    explicit BusyLock(Pipeline* p) : p_(p) {
        if (p_->owner.load() == std::this_thread::get_id())
            throw std::runtime_error("re-entrant call: this pipeline is busy in a generate call on this thread "
                                     "(called from its streamer callback?)");
        lock_ = std::unique_lock<std::mutex>(p_->mu);
        p_->owner.store(std::this_thread::get_id());
    }
    ~BusyLock() { p_->owner.store(std::thread::id{}); }
    BusyLock(const BusyLock&) = delete;
    BusyLock& operator=(const BusyLock&) = delete;

private:
    Pipeline* p_;
    std::unique_lock<std::mutex> lock_;
};

}  // namespace ovgc

struct ov_genai_generation_config_opaque {
    ovgc::GenerationConfig cfg;
    ovgc::Counted<ovgc::HandleKind::Config> counted_;
};
struct ov_genai_perf_metrics_opaque {
    ovgc::PerfMetrics m;
    ovgc::Counted<ovgc::HandleKind::PerfMetrics> counted_;
};
struct ov_genai_json_container_opaque {
    ovgc::JsonValue v;
    ovgc::Counted<ovgc::HandleKind::JsonContainer> counted_;
};
struct ov_genai_chat_history_opaque {
    ovgc::ChatHistoryData h;
    ovgc::Counted<ovgc::HandleKind::ChatHistory> counted_;
};
struct ov_genai_decoded_results_opaque {
    ovgc::DecodedResults r;
    ovgc::Counted<ovgc::HandleKind::Results> counted_;
};
struct ov_genai_vlm_decoded_results_opaque {  // counted as "results"
    ovgc::DecodedResults r;
    ovgc::Counted<ovgc::HandleKind::Results> counted_;
};
struct ov_genai_llm_pipeline_opaque {
    std::unique_ptr<ovgc::LLMEngine> engine;
    // Calls from several threads are serialised; a re-entrant call from a streamer callback fails.
    std::mutex mu;
    std::atomic<std::thread::id> owner{};
    ovgc::Counted<ovgc::HandleKind::Pipeline> counted_;
};

namespace ovgc {

// The decoded-results getters of llm_pipeline.h and vlm_pipeline.h: both result types hold one DecodedResults.
template <typename Results>
ov_status_e results_get_perf_metrics(const char* fn, const Results* results, ov_genai_perf_metrics** metrics) {
    if (!results)
        return null_arg(fn, "results", INVALID_C_PARAM);
    if (!metrics)
        return null_arg(fn, "metrics", INVALID_C_PARAM);
    return guard(fn, UNKNOW_EXCEPTION, [&] {
        auto p = std::make_unique<ov_genai_perf_metrics_opaque>();
        p->m = results->r.perf;
        *metrics = p.release();
        return OK;
    });
}

// The two-call string of a DecodedResults: output == NULL asks for the size; a too-small buffer is OUT_OF_BOUNDS.
template <typename Results>
ov_status_e results_get_string(const char* fn, const Results* results, char* output, size_t* output_size) {
    if (!results)
        return null_arg(fn, "results", INVALID_C_PARAM);
    if (!output_size)
        return null_arg(fn, "output_size", INVALID_C_PARAM);
    return guard(fn, UNKNOW_EXCEPTION, [&] {
        std::string s = results->r.to_string();
        if (copy_out_string(s, output, output_size) != 0) {
            set_last_error(std::string(fn) + ": buffer of " + std::to_string(*output_size) + " bytes is too small, need " +
                           std::to_string(s.size() + 1));
            return OUT_OF_BOUNDS;
        }
        return OK;
    });
}

}  // namespace ovgc
