// One generate call on a pipeline, shared by llm_pipeline.cpp (the upstream generate functions) and
// bundled_extras.cpp (generate from token ids): argument checks, the streamer bridges (text callback, or the
// thread's token streamer), the per-pipeline lock, the engine call and the results hand-off, inside the guard.
#pragma once

#include "c_api/capi.hpp"

namespace ovgc {

inline StreamStatus to_stream_status(ov_genai_streaming_status_e st) {
    switch (st) {
    case OV_GENAI_STREAMING_STATUS_STOP:
        return StreamStatus::Stop;
    case OV_GENAI_STREAMING_STATUS_CANCEL:
        return StreamStatus::Cancel;
    default:
        return StreamStatus::Running;
    }
}

// Bridges the C streamer callback.
inline StreamCallback make_callback(const streamer_callback* s) {
    auto fn = s->callback_func;
    void* args = s->args;
    return [fn, args](const std::string& text) -> StreamStatus { return to_stream_status(fn(text.c_str(), args)); };
}

inline ov_status_e deliver(DecodedResults&& r, ov_genai_decoded_results** results) {
    if (results) {
        auto p = std::make_unique<ov_genai_decoded_results_opaque>();
        p->r = std::move(r);
        *results = p.release();
    }
    return OK;
}

using PipeLock = BusyLock<ov_genai_llm_pipeline_opaque>;

// The engine's per-call streaming settings, cleared when the call ends (also on an exception).
class StreamSettings {
public:
    StreamSettings(LLMEngine& e, bool text, TokenCallback tokens) : e_(e) {
        e_.set_stream_text(text);
        e_.set_token_streamer(std::move(tokens));
    }
    ~StreamSettings() {
        e_.set_stream_text(true);
        e_.set_token_streamer(nullptr);
    }

private:
    LLMEngine& e_;
};

// The shared body of the generate functions. With a token streamer set on this thread
// (ovgenai_c_bundled_set_token_streamer) the call streams token ids to it, and `streamer` may be NULL.
template <typename Input, typename Call>
ov_status_e run_generate(const char* fn, ov_genai_llm_pipeline* pipe, const Input* input, const char* input_name,
                         const ov_genai_generation_config* config, const streamer_callback* streamer,
                         ov_genai_decoded_results** results, Call&& call) {
    if (!pipe || !pipe->engine)
        return null_arg(fn, "pipe", INVALID_C_PARAM);
    if (!input)
        return null_arg(fn, input_name, INVALID_C_PARAM);
    const TokenStreamer tokens = token_streamer();
    if (!streamer && !results && !tokens.callback)
        return null_arg(fn, "streamer and results", INVALID_C_PARAM);
    if (streamer && !streamer->callback_func)
        return null_arg(fn, "streamer->callback_func", INVALID_C_PARAM);
    return guard(fn, UNKNOW_EXCEPTION, [&] {
        StreamCallback cb;
        TokenCallback token_cb;
        if (tokens.callback) {
            auto f = tokens.callback;
            void* args = tokens.args;
            token_cb = [f, args](const int64_t* ids, size_t n) { return to_stream_status(f(ids, n, args)); };
            cb = [](const std::string&) { return StreamStatus::Running; };  // unused: marks the call as streaming
        } else if (streamer) {
            cb = make_callback(streamer);
        }
        PipeLock lock(pipe);
        StreamSettings settings(*pipe->engine, !cancel_only_streaming(), std::move(token_cb));
        auto r = call(*pipe->engine, config ? &config->cfg : nullptr, (streamer || tokens.callback) ? &cb : nullptr);
        return deliver(std::move(r), results);
    });
}

}  // namespace ovgc
