// cdefs/92_ovgenai_c_perf_metrics.h: the raw series of a perf metrics object (bundled-only extra).
#include <cstring>
#include <vector>

#include "c_api/capi.hpp"

#pragma GCC visibility push(default)
extern "C" {
#include "92_ovgenai_c_perf_metrics.h"
}
#pragma GCC visibility pop

namespace {

// The series `name` of `raw` as doubles; false for an unknown name.
bool raw_series(const ovgc::RawPerf& raw, const char* name, std::vector<double>& out) {
    auto take = [&out](const auto& values) {
        out.assign(values.begin(), values.end());
        return true;
    };
    if (!std::strcmp(name, "generate_durations"))
        return take(raw.generate_us);
    if (!std::strcmp(name, "tokenization_durations"))
        return take(raw.tokenization_us);
    if (!std::strcmp(name, "detokenization_durations"))
        return take(raw.detokenization_us);
    if (!std::strcmp(name, "chat_template_durations"))
        return take(raw.chat_template_us);
    if (!std::strcmp(name, "inference_durations"))
        return take(raw.inference_us);
    if (!std::strcmp(name, "token_infer_durations"))
        return take(raw.token_infer_us);
    if (!std::strcmp(name, "m_times_to_first_token"))
        return take(raw.ttft_us);
    if (!std::strcmp(name, "sampling_durations"))
        return take(raw.sampling_us);
    if (!std::strcmp(name, "m_durations"))
        return take(raw.durations_us);
    if (!std::strcmp(name, "m_batch_sizes"))
        return take(raw.all_batch_sizes);
    if (!std::strcmp(name, "draft_infer_durations"))
        return take(raw.draft_infer_us);
    if (!std::strcmp(name, "draft_fed_tokens"))
        return take(raw.draft_fed);
    if (!std::strcmp(name, "draft_proposed_tokens"))
        return take(raw.draft_proposed);
    if (!std::strcmp(name, "draft_accepted_tokens"))
        return take(raw.draft_accepted);
    if (!std::strcmp(name, "m_new_token_times")) {
        out.clear();
        for (const auto& t : raw.all_token_times)
            out.push_back(std::chrono::duration<double, std::milli>(t.time_since_epoch()).count());
        return true;
    }
    return false;
}

}  // namespace

extern "C" ov_status_e ovgenai_c_bundled_perf_metrics_get_raw(const ov_genai_perf_metrics* metrics,
                                                              const char* series, double* values, size_t* size) {
    if (!metrics)
        return ovgc::null_arg(__func__, "metrics", INVALID_C_PARAM);
    if (!series)
        return ovgc::null_arg(__func__, "series", INVALID_C_PARAM);
    if (!size)
        return ovgc::null_arg(__func__, "size", INVALID_C_PARAM);
    return ovgc::guard(__func__, UNKNOW_EXCEPTION, [&]() -> ov_status_e {
        std::vector<double> out;
        if (!raw_series(metrics->m.raw, series, out)) {
            ovgc::set_last_error(std::string(__func__) + ": no raw series named '" + series + "'");
            return NOT_FOUND;
        }
        if (!values) {
            *size = out.size();
            return OK;
        }
        if (*size < out.size())
            return OUT_OF_BOUNDS;
        std::copy(out.begin(), out.end(), values);
        *size = out.size();
        return OK;
    });
}
