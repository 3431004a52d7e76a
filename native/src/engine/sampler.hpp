// Per-sequence logit processing (min_new_tokens EOS suppression, repetition / presence / frequency
// penalties; no_repeat_ngram_size is a beam-search option upstream and is ignored here) and token selection (greedy argmax; multinomial with top_k ->
// temperature -> min_p -> top_p, drawn with std::mt19937).
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "engine/generation_config.hpp"

namespace ovgc {

struct SampledToken {
    int64_t id;
    float log_prob;
};

// The parts of a row's log-sum-exp in GenAI's float order: its largest value, and the float sum of exp(x - max)
// in vocabulary order (beam search's log-softmax and the greedy log-probability both start from it).
struct ExpSum {
    float max;
    float sum;
};
ExpSum exp_sum(const float* row, size_t vocab);

// GenAI's greedy score when logprobs > 0 (0 otherwise): the chosen token's log-probability under the model's own
// logits, before any penalty. Made from the row before the penalties change it in place.
class GreedyLogProb {
public:
    GreedyLogProb(const float* row, size_t vocab, const GenerationConfig& cfg, bool penalties);
    SampledToken score(SampledToken tok, const float* row) const;

private:
    bool on_ = false;
    float log_sum_exp_ = 0.0f;
    std::vector<float> raw_;  // the row before the penalties (only with both)
};

class Sampler {
public:
    // Reseeded with the config's rng_seed at the start of every generate call (upstream 2026.4 behaves
    // so: the same seed reproduces the same text on one pipeline).
    void reseed(size_t seed) { rng_.seed(static_cast<std::mt19937::result_type>(seed)); }

    // Apply penalties in place to one row of logits.
    static void process(float* logits, size_t vocab, const GenerationConfig& cfg, const std::set<int64_t>& prompt_ids,
                        const std::vector<int64_t>& full_ids, const std::map<int64_t, size_t>& generated_counts,
                        size_t generated_len);

    static SampledToken greedy(const float* logits, size_t vocab);
    // Draws n tokens (with replacement) from the processed distribution. `logits` may be modified.
    std::vector<SampledToken> multinomial(float* logits, size_t vocab, const GenerationConfig& cfg, size_t n);

private:
    std::mt19937 rng_;
    std::vector<std::pair<float, int64_t>> scratch_;
};

}  // namespace ovgc
