#include "engine/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace ovgc {

namespace {
inline void penalize_div(float& v, float p) { v = v >= 0 ? v / p : v * p; }
}  // namespace

void Sampler::process(float* logits, size_t vocab, const GenerationConfig& cfg, const std::set<int64_t>& prompt_ids,
                      const std::vector<int64_t>& full_ids, const std::map<int64_t, size_t>& generated_counts,
                      size_t generated_len) {
    auto in_range = [vocab](int64_t id) { return id >= 0 && static_cast<size_t>(id) < vocab; };
    if (cfg.min_new_tokens > 0 && generated_len < cfg.min_new_tokens) {
        for (int64_t id : cfg.stop_token_ids)
            if (in_range(id))
                logits[id] = 0.0f;  // upstream's EOS penalty
    }
    if (cfg.repetition_penalty != 1.0f) {
        for (int64_t id : prompt_ids)
            if (in_range(id))
                penalize_div(logits[id], cfg.repetition_penalty);
        for (auto& [id, cnt] : generated_counts)
            if (!prompt_ids.count(id) && in_range(id))
                penalize_div(logits[id], cfg.repetition_penalty);
    }
    if (cfg.presence_penalty != 0.0f) {
        for (auto& [id, cnt] : generated_counts)
            if (in_range(id))
                logits[id] += logits[id] >= 0 ? -cfg.presence_penalty : cfg.presence_penalty;
    }
    if (cfg.frequency_penalty != 0.0f) {
        for (auto& [id, cnt] : generated_counts)
            if (in_range(id)) {
                float d = cfg.frequency_penalty * static_cast<float>(cnt);
                logits[id] += logits[id] >= 0 ? -d : d;
            }
    }
    // no_repeat_ngram_size: ban tokens that would complete an n-gram already present.
    const size_t n = cfg.no_repeat_ngram_size;
    if (n > 0 && n != kUnlimited && full_ids.size() + 1 >= n) {
        const size_t L = full_ids.size();
        if (n == 1) {
            for (int64_t id : full_ids)
                if (in_range(id))
                    logits[id] = -std::numeric_limits<float>::infinity();
        } else {
            // the last n-1 tokens form the prefix; find earlier occurrences
            const int64_t* tail = full_ids.data() + (L - (n - 1));
            for (size_t s = 0; s + n <= L; ++s) {
                if (std::equal(tail, tail + (n - 1), full_ids.data() + s)) {
                    int64_t banned = full_ids[s + n - 1];
                    if (in_range(banned))
                        logits[banned] = -std::numeric_limits<float>::infinity();
                }
            }
        }
    }
}

SampledToken Sampler::greedy(const float* logits, size_t vocab) {
    size_t best = 0;
    float bv = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < vocab; ++i)
        if (logits[i] > bv) {
            bv = logits[i];
            best = i;
        }
    return {static_cast<int64_t>(best), 0.0f};
}

std::vector<SampledToken> Sampler::multinomial(float* logits, size_t vocab, const GenerationConfig& cfg, size_t n) {
    auto& cand = scratch_;
    cand.clear();
    const bool top_k_active = cfg.top_k > 0 && cfg.top_k < vocab;
    if (top_k_active) {
        cand.reserve(vocab);
        for (size_t i = 0; i < vocab; ++i)
            cand.emplace_back(logits[i], static_cast<int64_t>(i));
        std::partial_sort(cand.begin(), cand.begin() + cfg.top_k, cand.end(),
                          [](auto& a, auto& b) { return a.first > b.first; });
        cand.resize(cfg.top_k);
    } else {
        cand.reserve(vocab);
        for (size_t i = 0; i < vocab; ++i)
            cand.emplace_back(logits[i], static_cast<int64_t>(i));
    }
    // temperature softmax
    float mx = -std::numeric_limits<float>::infinity();
    for (auto& c : cand)
        mx = std::max(mx, c.first);
    if (!std::isfinite(mx))
        throw std::runtime_error("sampling: all logits are -inf or NaN");
    const float inv_t = 1.0f / cfg.temperature;
    float sum = 0.0f;
    for (auto& c : cand) {
        c.first = std::exp((c.first - mx) * inv_t);
        sum += c.first;
    }
    for (auto& c : cand)
        c.first /= sum;
    if (cfg.min_p > 0.0f) {
        float pmax = 0.0f;
        for (auto& c : cand)
            pmax = std::max(pmax, c.first);
        const float thr = cfg.min_p * pmax;
        cand.erase(std::remove_if(cand.begin(), cand.end(), [thr](auto& c) { return c.first < thr; }), cand.end());
    }
    if (cfg.top_p < 1.0f) {
        std::sort(cand.begin(), cand.end(), [](auto& a, auto& b) { return a.first > b.first; });
        float acc = 0.0f;
        size_t keep = 0;
        for (auto& c : cand) {
            acc += c.first;
            ++keep;
            if (acc > cfg.top_p)
                break;
        }
        cand.resize(std::max<size_t>(keep, 1));
    }
    std::vector<float> w(cand.size());
    float total = 0.0f;
    for (size_t i = 0; i < cand.size(); ++i) {
        w[i] = cand[i].first;
        total += w[i];
    }
    std::discrete_distribution<size_t> dist(w.begin(), w.end());
    std::vector<SampledToken> out;
    out.reserve(n);
    for (size_t k = 0; k < n; ++k) {
        size_t pick = dist(rng_);
        float p = total > 0 ? cand[pick].first / total : 0.0f;
        out.push_back({cand[pick].second, p > 0 ? std::log(p) : -std::numeric_limits<float>::infinity()});
    }
    return out;
}

}  // namespace ovgc
