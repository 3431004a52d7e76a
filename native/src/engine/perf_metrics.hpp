// Performance metrics with upstream GenAI's definitions (durations in microseconds internally,
// reported as mean/std in milliseconds).
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

namespace ovgc {

using Clock = std::chrono::steady_clock;

struct MeanStd {
    float mean = -1.0f;
    float std = -1.0f;
};

struct RawPerf {
    std::vector<float> generate_us, tokenization_us, detokenization_us, chat_template_us;
    std::vector<float> inference_us;        // one per generate call (summed infer time)
    std::vector<float> token_infer_us;      // one per infer request
    std::vector<float> ttft_us;             // one per generate call
    std::vector<float> durations_us;        // between consecutive token batches, per token
    std::vector<float> sampling_us;         // one per sampling step (all sequences of the step)
    std::vector<size_t> batch_sizes;                // of the call in progress (finalize_call consumes them)
    std::vector<Clock::time_point> token_times;     // of the call in progress
    std::vector<size_t> all_batch_sizes;            // every finalized call's, kept (upstream's m_batch_sizes)
    std::vector<Clock::time_point> all_token_times; // every finalized call's, kept (upstream's m_new_token_times)
    // speculative decoding (a draft model): per draft inference its duration and the tokens it fed; per
    // verification step the drafts proposed and how many of them were accepted
    std::vector<float> draft_infer_us;
    std::vector<size_t> draft_fed, draft_proposed, draft_accepted;
};

class PerfMetrics {
public:
    float load_time_ms = 0.0f;
    size_t num_generated_tokens = 0;
    size_t num_input_tokens = 0;
    RawPerf raw;

    // Derives ttft / durations / token counts from token_times relative to start (once per generate call).
    void finalize_call(Clock::time_point start);
    MeanStd ttft() const { return stat(raw.ttft_us); }
    MeanStd tpot() const { return stat(raw.durations_us); }
    MeanStd ipot() const { return stat(raw.token_infer_us); }
    MeanStd throughput() const;
    MeanStd generate_duration() const { return stat(raw.generate_us); }
    MeanStd tokenization_duration() const { return stat(raw.tokenization_us); }
    MeanStd detokenization_duration() const { return stat(raw.detokenization_us); }
    MeanStd chat_template_duration() const { return stat(raw.chat_template_us); }
    MeanStd inference_duration() const { return stat(raw.inference_us); }

    // left += right (upstream operator+): raw series concatenated, counts summed, load time kept.
    void add(const PerfMetrics& right);

    static MeanStd stat(const std::vector<float>& us);
    static float us_between(Clock::time_point a, Clock::time_point b) {
        return static_cast<float>(std::chrono::duration_cast<std::chrono::microseconds>(b - a).count());
    }
};

}  // namespace ovgc
