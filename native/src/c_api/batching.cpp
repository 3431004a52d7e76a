// cdefs/93_ovgenai_c_batching.h: the continuous-batching pipeline over ovgc::BatchingEngine and its
// generation handles (each holds the request's shared RequestOutput, so it outlives the pipeline safely).
#include <algorithm>
#include <chrono>

#include "c_api/capi.hpp"
#include "engine/batching_engine.hpp"

#pragma GCC visibility push(default)
extern "C" {
#include "93_ovgenai_c_batching.h"
}
#pragma GCC visibility pop

using ovgc::guard;
using ovgc::null_arg;

struct ovgenai_c_bundled_batching_pipeline_opaque {
    std::unique_ptr<ovgc::BatchingEngine> engine;
    ovgc::Counted<ovgc::HandleKind::BatchingPipeline> counted_;
};

struct ovgenai_c_bundled_generation_handle_opaque {
    std::shared_ptr<ovgc::RequestOutput> out;
    ovgc::Counted<ovgc::HandleKind::GenerationHandle> counted_;
};

namespace {

// The two-call copy of `n` items (need: n + extra); OUT_OF_BOUNDS when the buffer is too small.
template <typename T>
ov_status_e copy_out(const char* fn, const T* src, size_t n, size_t extra, T* dst, size_t* size) {
    const size_t need = n + extra;
    if (!dst) {
        *size = need;
        return OK;
    }
    if (*size < need) {
        ovgc::set_last_error(std::string(fn) + ": buffer of " + std::to_string(*size) + " is too small, need " +
                             std::to_string(need));
        return OUT_OF_BOUNDS;
    }
    std::copy(src, src + n, dst);
    if (extra)
        dst[n] = T{};
    *size = need;
    return OK;
}

ov_status_e make_handle(std::shared_ptr<ovgc::RequestOutput> out, ovgenai_c_bundled_generation_handle** handle) {
    auto h = std::make_unique<ovgenai_c_bundled_generation_handle_opaque>();
    h->out = std::move(out);
    *handle = h.release();
    return OK;
}

}  // namespace

extern "C" {

ov_status_e ovgenai_c_bundled_batching_pipeline_create(const char* models_path, const char* device,
                                                       size_t property_args_size,
                                                       ovgenai_c_bundled_batching_pipeline** pipe, ...) {
    if (!models_path)
        return null_arg(__func__, "models_path", INVALID_C_PARAM);
    if (!device)
        return null_arg(__func__, "device", INVALID_C_PARAM);
    if (!pipe)
        return null_arg(__func__, "pipe", INVALID_C_PARAM);
    va_list ap;
    va_start(ap, pipe);
    const ovgc::CreateProperties props = ovgc::read_create_properties(property_args_size, ap);
    va_end(ap);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        if (property_args_size % 2 != 0)
            throw std::invalid_argument("property_args_size must be even (key, value pairs), got " +
                                        std::to_string(property_args_size));
        if (props.has_null)
            throw std::invalid_argument("a property key or value is NULL");
        auto p = std::make_unique<ovgenai_c_bundled_batching_pipeline_opaque>();
        p->engine = std::make_unique<ovgc::BatchingEngine>(models_path, device, props.pairs);
        *pipe = p.release();
        return OK;
    });
}

void ovgenai_c_bundled_batching_pipeline_free(ovgenai_c_bundled_batching_pipeline* pipe) {
    try {
        delete pipe;
    } catch (...) {
    }
}

ov_status_e ovgenai_c_bundled_batching_pipeline_add_request(ovgenai_c_bundled_batching_pipeline* pipe,
                                                            const char* prompt, int templated,
                                                            const ov_genai_generation_config* config,
                                                            ovgenai_c_bundled_generation_handle** handle) {
    if (!pipe || !pipe->engine)
        return null_arg(__func__, "pipe", INVALID_C_PARAM);
    if (!prompt)
        return null_arg(__func__, "prompt", INVALID_C_PARAM);
    if (!handle)
        return null_arg(__func__, "handle", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        try {
            return make_handle(pipe->engine->add(prompt, templated != 0, config ? &config->cfg : nullptr), handle);
        } catch (const std::invalid_argument& e) {
            ovgc::set_last_error(std::string(__func__) + ": " + e.what());
            return INVALID_C_PARAM;
        }
    });
}

ov_status_e ovgenai_c_bundled_batching_pipeline_add_request_history(ovgenai_c_bundled_batching_pipeline* pipe,
                                                                    const ov_genai_chat_history* history,
                                                                    const ov_genai_generation_config* config,
                                                                    ovgenai_c_bundled_generation_handle** handle) {
    if (!pipe || !pipe->engine)
        return null_arg(__func__, "pipe", INVALID_C_PARAM);
    if (!history)
        return null_arg(__func__, "history", INVALID_C_PARAM);
    if (!handle)
        return null_arg(__func__, "handle", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        try {
            return make_handle(pipe->engine->add_history(history->h, config ? &config->cfg : nullptr), handle);
        } catch (const std::invalid_argument& e) {
            ovgc::set_last_error(std::string(__func__) + ": " + e.what());
            return INVALID_C_PARAM;
        }
    });
}

ov_status_e ovgenai_c_bundled_batching_pipeline_add_request_tokens(ovgenai_c_bundled_batching_pipeline* pipe,
                                                                   const int64_t* input_ids, size_t input_size,
                                                                   const ov_genai_generation_config* config,
                                                                   ovgenai_c_bundled_generation_handle** handle) {
    if (!pipe || !pipe->engine)
        return null_arg(__func__, "pipe", INVALID_C_PARAM);
    if (!input_ids && input_size)
        return null_arg(__func__, "input_ids", INVALID_C_PARAM);
    if (!handle)
        return null_arg(__func__, "handle", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        try {
            std::vector<int64_t> ids(input_ids, input_ids + input_size);
            return make_handle(pipe->engine->add_tokens(ids, config ? &config->cfg : nullptr), handle);
        } catch (const std::invalid_argument& e) {
            ovgc::set_last_error(std::string(__func__) + ": " + e.what());
            return INVALID_C_PARAM;
        }
    });
}

ov_status_e ovgenai_c_bundled_batching_pipeline_step(ovgenai_c_bundled_batching_pipeline* pipe) {
    if (!pipe || !pipe->engine)
        return null_arg(__func__, "pipe", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        pipe->engine->step_now();
        return OK;
    });
}

ov_status_e ovgenai_c_bundled_batching_pipeline_has_unfinished(const ovgenai_c_bundled_batching_pipeline* pipe,
                                                               int* unfinished) {
    if (!pipe || !pipe->engine)
        return null_arg(__func__, "pipe", INVALID_C_PARAM);
    if (!unfinished)
        return null_arg(__func__, "unfinished", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        *unfinished = pipe->engine->has_unfinished() ? 1 : 0;
        return OK;
    });
}

ov_status_e ovgenai_c_bundled_batching_pipeline_get_event_fd(const ovgenai_c_bundled_batching_pipeline* pipe,
                                                              int* fd) {
    if (!pipe || !pipe->engine)
        return null_arg(__func__, "pipe", INVALID_C_PARAM);
    if (!fd)
        return null_arg(__func__, "fd", INVALID_C_PARAM);
    *fd = pipe->engine->event_fd();
    return OK;
}

ov_status_e ovgenai_c_bundled_batching_pipeline_get_stats(const ovgenai_c_bundled_batching_pipeline* pipe,
                                                          size_t* steps, size_t* shared_steps, size_t* max_batch,
                                                          size_t* running, size_t* waiting, size_t* used_blocks,
                                                          size_t* block_limit, size_t* preempted,
                                                          size_t* prompt_tokens, size_t* reused_tokens) {
    if (!pipe || !pipe->engine)
        return null_arg(__func__, "pipe", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        const ovgc::BatchingStats s = pipe->engine->stats();
        auto put = [](size_t* p, size_t v) {
            if (p)
                *p = v;
        };
        put(steps, s.steps);
        put(shared_steps, s.shared_steps);
        put(max_batch, s.max_batch);
        put(running, s.running);
        put(waiting, s.waiting);
        put(used_blocks, s.used_blocks);
        put(block_limit, s.block_limit);
        put(preempted, s.preempted);
        put(prompt_tokens, s.prompt_tokens);
        put(reused_tokens, s.reused_tokens);
        return OK;
    });
}

ov_status_e ovgenai_c_bundled_generation_handle_get_status(const ovgenai_c_bundled_generation_handle* handle,
                                                           int* status) {
    if (!handle)
        return null_arg(__func__, "handle", INVALID_C_PARAM);
    if (!status)
        return null_arg(__func__, "status", INVALID_C_PARAM);
    std::lock_guard<std::mutex> lock(handle->out->mu);
    *status = static_cast<int>(handle->out->status);
    return OK;
}

ov_status_e ovgenai_c_bundled_generation_handle_wait(const ovgenai_c_bundled_generation_handle* handle,
                                                     long timeout_ms, int* ready) {
    if (!handle)
        return null_arg(__func__, "handle", INVALID_C_PARAM);
    if (!ready)
        return null_arg(__func__, "ready", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        ovgc::RequestOutput& o = *handle->out;
        std::unique_lock<std::mutex> lock(o.mu);
        auto has = [&] { return o.done() || o.tokens_read < o.tokens.size() || o.text_read < o.text.size(); };
        if (timeout_ms < 0)
            o.cv.wait(lock, has);
        else
            o.cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), has);
        *ready = has() ? 1 : 0;
        return OK;
    });
}

ov_status_e ovgenai_c_bundled_generation_handle_read(ovgenai_c_bundled_generation_handle* handle, int64_t* tokens,
                                                     float* log_probs, size_t* size) {
    if (!handle)
        return null_arg(__func__, "handle", INVALID_C_PARAM);
    if (!size)
        return null_arg(__func__, "size", INVALID_C_PARAM);
    ovgc::RequestOutput& o = *handle->out;
    std::lock_guard<std::mutex> lock(o.mu);
    const size_t unread = o.tokens.size() - o.tokens_read;
    if (!tokens) {
        *size = unread;
        return OK;
    }
    const size_t n = std::min(unread, *size);
    for (size_t i = 0; i < n; ++i) {
        tokens[i] = o.tokens[o.tokens_read + i];
        if (log_probs)
            log_probs[i] = o.tokens_read + i < o.log_probs.size() ? o.log_probs[o.tokens_read + i] : 0.0f;
    }
    o.tokens_read += n;
    *size = n;
    return OK;
}

ov_status_e ovgenai_c_bundled_generation_handle_read_text(ovgenai_c_bundled_generation_handle* handle, char* text,
                                                          size_t* size) {
    if (!handle)
        return null_arg(__func__, "handle", INVALID_C_PARAM);
    if (!size)
        return null_arg(__func__, "size", INVALID_C_PARAM);
    ovgc::RequestOutput& o = *handle->out;
    o.wants_text.store(true);
    std::lock_guard<std::mutex> lock(o.mu);
    const size_t n = o.text.size() - o.text_read;
    const ov_status_e st = copy_out(__func__, o.text.data() + o.text_read, n, 1, text, size);
    if (st == OK && text)
        o.text_read += n;
    return st;
}

ov_status_e ovgenai_c_bundled_generation_handle_get_text(const ovgenai_c_bundled_generation_handle* handle, char* text,
                                                         size_t* size) {
    if (!handle)
        return null_arg(__func__, "handle", INVALID_C_PARAM);
    if (!size)
        return null_arg(__func__, "size", INVALID_C_PARAM);
    std::lock_guard<std::mutex> lock(handle->out->mu);
    return copy_out(__func__, handle->out->text.data(), handle->out->text.size(), 1, text, size);
}

ov_status_e ovgenai_c_bundled_generation_handle_get_tokens(const ovgenai_c_bundled_generation_handle* handle,
                                                           int64_t* tokens, size_t* size) {
    if (!handle)
        return null_arg(__func__, "handle", INVALID_C_PARAM);
    if (!size)
        return null_arg(__func__, "size", INVALID_C_PARAM);
    std::lock_guard<std::mutex> lock(handle->out->mu);
    return copy_out(__func__, handle->out->tokens.data(), handle->out->tokens.size(), 0, tokens, size);
}

ov_status_e ovgenai_c_bundled_generation_handle_get_result(const ovgenai_c_bundled_generation_handle* handle,
                                                           float* score, int* finish_reason, size_t* prompt_tokens) {
    if (!handle)
        return null_arg(__func__, "handle", INVALID_C_PARAM);
    std::lock_guard<std::mutex> lock(handle->out->mu);
    if (score)
        *score = handle->out->score;
    if (finish_reason)
        *finish_reason = handle->out->finish_reason;
    if (prompt_tokens)
        *prompt_tokens = handle->out->prompt_tokens;
    return OK;
}

ov_status_e ovgenai_c_bundled_generation_handle_get_error(const ovgenai_c_bundled_generation_handle* handle,
                                                          char* text, size_t* size) {
    if (!handle)
        return null_arg(__func__, "handle", INVALID_C_PARAM);
    if (!size)
        return null_arg(__func__, "size", INVALID_C_PARAM);
    std::lock_guard<std::mutex> lock(handle->out->mu);
    const std::string& e = handle->out->error;
    return copy_out(__func__, e.data(), e.size(), 1, text, size);
}

ov_status_e ovgenai_c_bundled_generation_handle_cancel(ovgenai_c_bundled_generation_handle* handle) {
    if (!handle)
        return null_arg(__func__, "handle", INVALID_C_PARAM);
    int none = 0;
    handle->out->requested.compare_exchange_strong(none, 3);
    return OK;
}

ov_status_e ovgenai_c_bundled_generation_handle_stop(ovgenai_c_bundled_generation_handle* handle) {
    if (!handle)
        return null_arg(__func__, "handle", INVALID_C_PARAM);
    int none = 0;
    handle->out->requested.compare_exchange_strong(none, 4);
    return OK;
}

void ovgenai_c_bundled_generation_handle_free(ovgenai_c_bundled_generation_handle* handle) {
    if (!handle)
        return;
    int none = 0;
    handle->out->requested.compare_exchange_strong(none, 3);
    try {
        delete handle;
    } catch (...) {
    }
}

}  // extern "C"
