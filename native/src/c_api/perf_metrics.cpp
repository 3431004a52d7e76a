// perf_metrics.h over ovgc::PerfMetrics.
#include "c_api/capi.hpp"

using ovgc::guard;
using ovgc::null_arg;

#define OVGC_PERF_PAIR(NAME, METHOD)                                                                  \
    ov_status_e ov_genai_perf_metrics_get_##NAME(const ov_genai_perf_metrics* metrics, float* mean,  \
                                                 float* std) {                                       \
        if (!metrics)                                                                                \
            return null_arg(__func__, "metrics", INVALID_C_PARAM);                                   \
        if (!mean || !std)                                                                           \
            return null_arg(__func__, !mean ? "mean" : "std", INVALID_C_PARAM);                     \
        ovgc::MeanStd v = metrics->m.METHOD();                                                       \
        *mean = v.mean;                                                                              \
        *std = v.std;                                                                                \
        return OK;                                                                                   \
    }

extern "C" {

ov_status_e ov_genai_perf_metrics_get_load_time(const ov_genai_perf_metrics* metrics, float* load_time) {
    if (!metrics)
        return null_arg(__func__, "metrics", INVALID_C_PARAM);
    if (!load_time)
        return null_arg(__func__, "load_time", INVALID_C_PARAM);
    *load_time = metrics->m.load_time_ms;
    return OK;
}

ov_status_e ov_genai_perf_metrics_get_num_generation_tokens(const ov_genai_perf_metrics* metrics,
                                                            size_t* num_generation_tokens) {
    if (!metrics)
        return null_arg(__func__, "metrics", INVALID_C_PARAM);
    if (!num_generation_tokens)
        return null_arg(__func__, "num_generation_tokens", INVALID_C_PARAM);
    *num_generation_tokens = metrics->m.num_generated_tokens;
    return OK;
}

ov_status_e ov_genai_perf_metrics_get_num_input_tokens(const ov_genai_perf_metrics* metrics, size_t* num_input_tokens) {
    if (!metrics)
        return null_arg(__func__, "metrics", INVALID_C_PARAM);
    if (!num_input_tokens)
        return null_arg(__func__, "num_input_tokens", INVALID_C_PARAM);
    *num_input_tokens = metrics->m.num_input_tokens;
    return OK;
}

OVGC_PERF_PAIR(ttft, ttft)
OVGC_PERF_PAIR(tpot, tpot)
OVGC_PERF_PAIR(ipot, ipot)
OVGC_PERF_PAIR(throughput, throughput)
OVGC_PERF_PAIR(inference_duration, inference_duration)
OVGC_PERF_PAIR(generate_duration, generate_duration)
OVGC_PERF_PAIR(tokenization_duration, tokenization_duration)
OVGC_PERF_PAIR(detokenization_duration, detokenization_duration)
OVGC_PERF_PAIR(chat_template_duration, chat_template_duration)

ov_status_e ov_genai_perf_metrics_add_in_place(ov_genai_perf_metrics* left, const ov_genai_perf_metrics* right) {
    if (!left)
        return null_arg(__func__, "left", INVALID_C_PARAM);
    if (!right)
        return null_arg(__func__, "right", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        if (left == right) {
            ovgc::PerfMetrics copy = right->m;
            left->m.add(copy);
        } else {
            left->m.add(right->m);
        }
        return OK;
    });
}

}  // extern "C"
