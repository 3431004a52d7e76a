// ovgenai_c_bundled_* extras: version, thread-local last error, live handle counters, cancel-only streaming,
// apply_chat_template.
#include <atomic>

#include "c_api/capi.hpp"

namespace ovgc {
namespace {
std::atomic<long> g_live[static_cast<int>(HandleKind::Count_)];
thread_local std::string t_last_error;
thread_local bool t_cancel_only = false;
const char* const kKindNames[] = {"pipeline", "config", "results", "perf_metrics", "chat_history", "json_container"};
}  // namespace

void handle_created(HandleKind k) { g_live[static_cast<int>(k)].fetch_add(1, std::memory_order_relaxed); }
void handle_destroyed(HandleKind k) { g_live[static_cast<int>(k)].fetch_sub(1, std::memory_order_relaxed); }
void set_last_error(const std::string& text) { t_last_error = text; }
bool cancel_only_streaming() { return t_cancel_only; }

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
