#include "engine/perf_metrics.hpp"

#include <cmath>
#include <stdexcept>

namespace ovgc {

MeanStd PerfMetrics::stat(const std::vector<float>& us) {
    if (us.empty())
        return {-1.0f, -1.0f};
    double sum = 0.0, sq = 0.0;
    for (float v : us) {
        double ms = v / 1000.0;
        sum += ms;
        sq += ms * ms;
    }
    double mean = sum / us.size();
    double var = sq / us.size() - mean * mean;
    return {static_cast<float>(mean), static_cast<float>(std::sqrt(var > 0 ? var : 0.0))};
}

void PerfMetrics::finalize_call(Clock::time_point start) {
    auto& t = raw.token_times;
    auto& b = raw.batch_sizes;
    if (t.empty() || b.empty())
        return;
    raw.ttft_us.push_back(us_between(start, t[0]));
    size_t generated = b[0];
    for (size_t i = 1; i < t.size(); ++i) {
        float d = us_between(t[i - 1], t[i]) / static_cast<float>(b[i]);
        for (size_t k = 0; k < b[i]; ++k)
            raw.durations_us.push_back(d);
        generated += b[i];
    }
    num_generated_tokens += generated;
    raw.all_token_times.insert(raw.all_token_times.end(), t.begin(), t.end());
    raw.all_batch_sizes.insert(raw.all_batch_sizes.end(), b.begin(), b.end());
    t.clear();
    b.clear();
}

MeanStd PerfMetrics::throughput() const {
    MeanStd tp = tpot();
    return {1000.0f / tp.mean, (tp.std * 1000.0f) / (tp.mean * tp.mean)};
}

void PerfMetrics::add(const PerfMetrics& r) {
    if (r.load_time_ms != load_time_ms)
        throw std::invalid_argument("perf metrics can be accumulated only for the same pipeline (load times differ)");
    auto cat = [](std::vector<float>& a, const std::vector<float>& b) { a.insert(a.end(), b.begin(), b.end()); };
    cat(raw.generate_us, r.raw.generate_us);
    cat(raw.tokenization_us, r.raw.tokenization_us);
    cat(raw.detokenization_us, r.raw.detokenization_us);
    cat(raw.chat_template_us, r.raw.chat_template_us);
    cat(raw.inference_us, r.raw.inference_us);
    cat(raw.token_infer_us, r.raw.token_infer_us);
    cat(raw.ttft_us, r.raw.ttft_us);
    cat(raw.durations_us, r.raw.durations_us);
    cat(raw.sampling_us, r.raw.sampling_us);
    raw.all_token_times.insert(raw.all_token_times.end(), r.raw.all_token_times.begin(), r.raw.all_token_times.end());
    raw.all_batch_sizes.insert(raw.all_batch_sizes.end(), r.raw.all_batch_sizes.begin(), r.raw.all_batch_sizes.end());
    cat(raw.draft_infer_us, r.raw.draft_infer_us);
    auto cat_counts = [](std::vector<size_t>& a, const std::vector<size_t>& b) { a.insert(a.end(), b.begin(), b.end()); };
    cat_counts(raw.draft_fed, r.raw.draft_fed);
    cat_counts(raw.draft_proposed, r.raw.draft_proposed);
    cat_counts(raw.draft_accepted, r.raw.draft_accepted);
    num_generated_tokens += r.num_generated_tokens;
    num_input_tokens += r.num_input_tokens;
}

}  // namespace ovgc
