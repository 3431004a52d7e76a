#include "engine/whisper/logits_processor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ovgc {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Masks ids [from, to) clipped to the vocabulary.
void mask_range(float* logits, size_t vocab, int64_t from, int64_t to) {
    const int64_t lo = std::max<int64_t>(from, 0);
    const int64_t hi = std::min<int64_t>(to, static_cast<int64_t>(vocab));
    for (int64_t i = lo; i < hi; ++i)
        logits[i] = kNegInf;
}

}  // namespace

void suppress_tokens(float* logits, size_t vocab, const std::vector<int64_t>& tokens) {
    for (int64_t id : tokens)
        if (id >= 0 && static_cast<size_t>(id) < vocab)
            logits[id] = kNegInf;
}

void apply_timestamp_rules(float* logits, size_t vocab, const WhisperGenerationConfig& cfg,
                           const std::vector<int64_t>& generated, bool initial_step) {
    const int64_t vocab_end = static_cast<int64_t>(vocab);
    if (cfg.no_timestamps_token_id >= 0 && cfg.no_timestamps_token_id < vocab_end)
        logits[cfg.no_timestamps_token_id] = kNegInf;
    const int64_t ts_begin = cfg.no_timestamps_token_id + 1;

    const size_t n = generated.size();
    const bool last_ts = n >= 1 && generated[n - 1] >= ts_begin;
    const bool penultimate_ts = n < 2 || generated[n - 2] >= ts_begin;
    if (last_ts) {
        if (penultimate_ts)
            mask_range(logits, vocab, ts_begin, vocab_end);  // a pair just closed: text (or eos) next
        else
            mask_range(logits, vocab, 0, cfg.eos_token_id);  // an open timestamp: another timestamp or eos
    }

    int64_t last_timestamp = -1;
    for (int64_t t : generated)
        if (t >= ts_begin)
            last_timestamp = t;
    if (last_timestamp >= 0) {
        // never decreasing; after a closed pair not the same one again
        const int64_t bound = (last_ts && !penultimate_ts) ? last_timestamp : last_timestamp + 1;
        mask_range(logits, vocab, ts_begin, bound);
    }

    if (initial_step) {
        mask_range(logits, vocab, 0, ts_begin);
        mask_range(logits, vocab, ts_begin + static_cast<int64_t>(cfg.max_initial_timestamp_index) + 1, vocab_end);
    }

    // log-softmax of the row (float, as GenAI's sampler computes it)
    const float top = *std::max_element(logits, logits + vocab);
    float acc = 0.0f;
    for (size_t i = 0; i < vocab; ++i)
        acc += std::exp(logits[i] - top);
    const float log_sum = std::log(acc);
    auto log_prob = [&](size_t i) { return logits[i] - top - log_sum; };

    const size_t first_ts = static_cast<size_t>(std::clamp<int64_t>(ts_begin, 0, vocab_end));
    float ts_mass = 0.0f;
    for (size_t i = first_ts; i < vocab; ++i)
        ts_mass += std::exp(log_prob(i));
    const float ts_log_prob = std::log(ts_mass);
    if (first_ts == 0)
        return;
    float best_text = log_prob(0);
    for (size_t i = 1; i < first_ts; ++i)
        best_text = std::max(best_text, log_prob(i));
    if (ts_log_prob > best_text)
        mask_range(logits, vocab, 0, ts_begin);
}

void process_whisper_logits(float* logits, size_t vocab, const WhisperGenerationConfig& cfg, bool return_timestamps,
                            const std::vector<int64_t>& generated, bool initial_step) {
    if (initial_step)
        suppress_tokens(logits, vocab, cfg.begin_suppress_tokens);
    suppress_tokens(logits, vocab, cfg.suppress_tokens);
    if (return_timestamps)
        apply_timestamp_rules(logits, vocab, cfg, generated, initial_step);
}

}  // namespace ovgc
