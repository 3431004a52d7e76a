// ovgenai_c_bundled_* extras: version, thread-local last error, live handle counters, cancel-only and token
// streaming, apply_chat_template, generate from token ids, generated ids and scores of results, GGUF -> IR.
#include <atomic>

#include "c_api/capi.hpp"
#include "c_api/pipeline_call.hpp"
#include "engine/gguf/gguf_ir.hpp"
#include "engine/openvino_core.hpp"

namespace ovgc {
namespace {
std::atomic<long> g_live[static_cast<int>(HandleKind::Count_)];
thread_local std::string t_last_error;
thread_local bool t_cancel_only = false;
thread_local TokenStreamer t_token_streamer;
const char* const kKindNames[] = {"pipeline",     "config",         "results",          "perf_metrics",
                                  "chat_history", "json_container", "batching_pipeline", "generation_handle"};
}  // namespace

void handle_created(HandleKind k) { g_live[static_cast<int>(k)].fetch_add(1, std::memory_order_relaxed); }
void handle_destroyed(HandleKind k) { g_live[static_cast<int>(k)].fetch_sub(1, std::memory_order_relaxed); }
void set_last_error(const std::string& text) { t_last_error = text; }
bool cancel_only_streaming() { return t_cancel_only; }
TokenStreamer token_streamer() { return t_token_streamer; }

}  // namespace ovgc

extern "C" const char* ovgenai_c_bundled_version(void) {
#ifdef OVGC_VERSION
    return "ovgenai_c_bundled " OVGC_VERSION;
#else
    return "ovgenai_c_bundled";
#endif
}

extern "C" const char* ovgenai_c_bundled_last_error(void) { return ovgc::t_last_error.c_str(); }

extern "C" void ovgenai_c_bundled_set_cancel_only_streaming(int on) { ovgc::t_cancel_only = on != 0; }

extern "C" long ovgenai_c_bundled_live_handles(const char* kind) {
    using namespace ovgc;
    const int n = static_cast<int>(HandleKind::Count_);
    if (!kind) {
        long total = 0;
        for (int i = 0; i < n; ++i)
            total += g_live[i].load();
        return total;
    }
    for (int i = 0; i < n; ++i)
        if (std::strcmp(kind, kKindNames[i]) == 0)
            return g_live[i].load();
    return -1;
}

extern "C" void ovgenai_c_bundled_set_token_streamer(ovgenai_c_bundled_token_callback callback, void* args) {
    ovgc::t_token_streamer.callback = callback;
    ovgc::t_token_streamer.args = callback ? args : nullptr;
}

extern "C" ov_status_e ovgenai_c_bundled_generation_config_set_apply_chat_template(ov_genai_generation_config* config,
                                                                                   int apply) {
    if (!config)
        return ovgc::null_arg(__func__, "config", INVALID_C_PARAM);
    config->cfg.apply_chat_template = apply != 0;
    return OK;
}

extern "C" ov_status_e ovgenai_c_bundled_generation_config_get_apply_chat_template(const ov_genai_generation_config* config,
                                                                                   int* apply) {
    if (!config)
        return ovgc::null_arg(__func__, "config", INVALID_C_PARAM);
    if (!apply)
        return ovgc::null_arg(__func__, "apply", INVALID_C_PARAM);
    *apply = config->cfg.apply_chat_template ? 1 : 0;
    return OK;
}

extern "C" ov_status_e ovgenai_c_bundled_llm_pipeline_generate_tokens(ov_genai_llm_pipeline* pipe, const int64_t* input_ids,
                                                                      size_t input_size, const int64_t* attention_mask,
                                                                      const ov_genai_generation_config* config,
                                                                      const streamer_callback* streamer,
                                                                      ov_genai_decoded_results** results) {
    if (input_size == 0 && pipe && pipe->engine && input_ids) {
        ovgc::set_last_error(std::string(__func__) + ": input_size is 0 (the prompt needs at least one token)");
        return INVALID_C_PARAM;
    }
    return ovgc::run_generate(__func__, pipe, input_ids, "input_ids", config, streamer, results,
                              [&](ovgc::LLMEngine& engine, const ovgc::GenerationConfig* cfg, ovgc::StreamCallback* cb) {
                                  std::vector<int64_t> ids;
                                  ids.reserve(input_size);
                                  for (size_t i = 0; i < input_size; ++i) {
                                      const int64_t m = attention_mask ? attention_mask[i] : 1;
                                      if (m != 0 && m != 1)
                                          throw std::invalid_argument("attention_mask[" + std::to_string(i) + "] is " +
                                                                      std::to_string(m) + "; it must be 0 or 1");
                                      if (m == 1)
                                          ids.push_back(input_ids[i]);
                                  }
                                  return engine.generate_tokens(ids, cfg, cb);
                              });
}

extern "C" ov_status_e ovgenai_c_bundled_decoded_results_get_num_sequences(const ov_genai_decoded_results* results,
                                                                           size_t* size) {
    if (!results)
        return ovgc::null_arg(__func__, "results", INVALID_C_PARAM);
    if (!size)
        return ovgc::null_arg(__func__, "size", INVALID_C_PARAM);
    *size = results->r.texts.size();
    return OK;
}

namespace {
ov_status_e bad_index(const char* fn, size_t index, size_t n) {
    ovgc::set_last_error(std::string(fn) + ": index " + std::to_string(index) + " is out of range (" +
                         std::to_string(n) + " sequences)");
    return OUT_OF_BOUNDS;
}
}  // namespace

extern "C" ov_status_e ovgenai_c_bundled_decoded_results_get_tokens(const ov_genai_decoded_results* results, size_t index,
                                                                    int64_t* tokens, size_t* size) {
    if (!results)
        return ovgc::null_arg(__func__, "results", INVALID_C_PARAM);
    if (!size)
        return ovgc::null_arg(__func__, "size", INVALID_C_PARAM);
    return ovgc::guard(__func__, UNKNOW_EXCEPTION, [&] {
        const auto& all = results->r.tokens;
        if (index >= all.size())
            return bad_index(__func__, index, all.size());
        const auto& ids = all[index];
        if (!tokens) {
            *size = ids.size();
            return OK;
        }
        if (*size < ids.size()) {
            ovgc::set_last_error(std::string(__func__) + ": buffer of " + std::to_string(*size) +
                                 " ids is too small, need " + std::to_string(ids.size()));
            return OUT_OF_BOUNDS;
        }
        std::copy(ids.begin(), ids.end(), tokens);
        *size = ids.size();
        return OK;
    });
}

extern "C" ov_status_e ovgenai_c_bundled_decoded_results_get_score(const ov_genai_decoded_results* results, size_t index,
                                                                   float* score) {
    if (!results)
        return ovgc::null_arg(__func__, "results", INVALID_C_PARAM);
    if (!score)
        return ovgc::null_arg(__func__, "score", INVALID_C_PARAM);
    const auto& scores = results->r.scores;
    if (index >= scores.size())
        return bad_index(__func__, index, scores.size());
    *score = scores[index];
    return OK;
}

extern "C" ov_status_e ovgenai_c_bundled_decoded_results_get_finish_reason(const ov_genai_decoded_results* results,
                                                                           size_t index, int* reason) {
    if (!results)
        return ovgc::null_arg(__func__, "results", INVALID_C_PARAM);
    if (!reason)
        return ovgc::null_arg(__func__, "reason", INVALID_C_PARAM);
    const auto& reasons = results->r.finish_reasons;
    if (index >= reasons.size())
        return bad_index(__func__, index, reasons.size());
    *reason = reasons[index];
    return OK;
}

extern "C" ov_status_e ovgenai_c_bundled_llm_pipeline_get_form_steps(const ov_genai_llm_pipeline* pipe,
                                                                    size_t* one_token_form, size_t* main_form) {
    if (!pipe || !pipe->engine)
        return ovgc::null_arg(__func__, "pipe", INVALID_C_PARAM);
    if (!one_token_form || !main_form)
        return ovgc::null_arg(__func__, !one_token_form ? "one_token_form" : "main_form", INVALID_C_PARAM);
    const auto steps = pipe->engine->form_steps();
    *one_token_form = steps.first;
    *main_form = steps.second;
    return OK;
}

extern "C" ov_status_e ovgenai_c_bundled_convert_gguf(const char* gguf_path, const char* out_dir, int parts) {
    if (!gguf_path)
        return ovgc::null_arg(__func__, "gguf_path", INVALID_C_PARAM);
    if (!out_dir)
        return ovgc::null_arg(__func__, "out_dir", INVALID_C_PARAM);
    if (parts < 1 || parts > 3) {
        ovgc::set_last_error(std::string(__func__) + ": parts is " + std::to_string(parts) +
                             "; 1 (model), 2 (tokenizers) or 3 (both)");
        return INVALID_C_PARAM;
    }
    return ovgc::guard(__func__, UNKNOW_EXCEPTION, [&] {
        const bool tokenizers = (parts & 2) != 0;
        if (tokenizers)
            ovgc::load_tokenizers_extension();
        ovgc::gguf::convert_to_ir(gguf_path, out_dir, (parts & 1) != 0, tokenizers);
        return OK;
    });
}
