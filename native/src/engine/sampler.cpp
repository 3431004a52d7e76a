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
    (void)full_ids;  // no_repeat_ngram_size applies to beam search only (as upstream)
}

ExpSum exp_sum(const float* row, size_t vocab) {
    ExpSum e{*std::max_element(row, row + vocab), 0.0f};
    for (size_t i = 0; i < vocab; ++i)
        e.sum += std::exp(row[i] - e.max);
    return e;
}

GreedyLogProb::GreedyLogProb(const float* row, size_t vocab, const GenerationConfig& cfg, bool penalties)
    : on_(cfg.logprobs > 0 && !cfg.is_multinomial() && vocab > 0) {
    if (!on_)
        return;
    const ExpSum e = exp_sum(row, vocab);
    log_sum_exp_ = std::log(e.sum) + e.max;  // as GenAI's (logf(sum) + max)
    if (penalties)
        raw_.assign(row, row + vocab);
}

SampledToken GreedyLogProb::score(SampledToken tok, const float* row) const {
    if (on_ && tok.id >= 0)
        tok.log_prob = (raw_.empty() ? row : raw_.data())[tok.id] - log_sum_exp_;
    return tok;
}

// The first index of the largest value (NaN never wins; all -inf or NaN: 0). Two passes the compiler vectorises:
// each block's maximum over 16 independent lanes (no index to carry, so no branch per element), keeping the first
// block that reaches the running maximum; then the first position of that value from that block on. 3-4x faster
// than a compare-and-branch scan over a 49k vocabulary, the same answer.
SampledToken Sampler::greedy(const float* logits, size_t vocab) {
    constexpr size_t kBlock = 256;
    constexpr size_t kLanes = 16;
    const float lowest = -std::numeric_limits<float>::infinity();
    float best_value = lowest;
    size_t best_block = vocab;
    for (size_t start = 0; start < vocab; start += kBlock) {
        const size_t end = std::min(start + kBlock, vocab);
        float lane[kLanes];
        for (size_t l = 0; l < kLanes; ++l)
            lane[l] = lowest;
        size_t i = start;
        for (; i + kLanes <= end; i += kLanes)
            for (size_t l = 0; l < kLanes; ++l) {
                const float v = logits[i + l];
                lane[l] = v > lane[l] ? v : lane[l];
            }
        float block_max = lowest;
        for (size_t l = 0; l < kLanes; ++l)
            block_max = lane[l] > block_max ? lane[l] : block_max;
        for (; i < end; ++i)
            block_max = logits[i] > block_max ? logits[i] : block_max;
        if (block_max > best_value) {
            best_value = block_max;
            best_block = start;
        }
    }
    for (size_t i = best_block; i < vocab; ++i)
        if (logits[i] == best_value)
            return {static_cast<int64_t>(i), 0.0f};
    return {0, 0.0f};
}

std::vector<SampledToken> Sampler::multinomial(float* logits, size_t vocab, const GenerationConfig& cfg, size_t n) {
    // Candidate list: (value, token id). Stays empty while every token is a candidate (values live in `logits`).
    auto& cand = scratch_;
    cand.clear();
    size_t size = vocab;
    const auto min_cmp = [](const std::pair<float, int64_t>& a, const std::pair<float, int64_t>& b) {
        return a.first > b.first;
    };
    const bool top_k_active = cfg.top_k > 0 && cfg.top_k != kUnlimited;
    const bool min_p_active = cfg.min_p > 0.0f;
    const bool defer = top_k_active && cfg.top_p == 1.0f && !min_p_active;

    // 1. top_k: a K-element min-heap over the logits, kept in heap order.
    if (top_k_active && cfg.top_k < vocab) {
        cand.resize(cfg.top_k);
        for (size_t i = 0; i < cfg.top_k; ++i)
            cand[i] = {logits[i], static_cast<int64_t>(i)};
        std::make_heap(cand.begin(), cand.end(), min_cmp);
        for (size_t i = cfg.top_k; i < vocab; ++i) {
            if (logits[i] > cand[0].first) {
                std::pop_heap(cand.begin(), cand.end(), min_cmp);
                cand.back() = {logits[i], static_cast<int64_t>(i)};
                std::push_heap(cand.begin(), cand.end(), min_cmp);
            }
        }
        size = cfg.top_k;
    }
    const bool use_vec = !cand.empty();
    auto val = [&](size_t i) -> float& { return use_vec ? cand[i].first : logits[i]; };

    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<SampledToken> out;
    out.reserve(n);

    if (defer) {
        // 2a. temperature as a plain scale; exp fused with the draw.
        if (cfg.temperature != 1.0f) {
            const float s = 1.0f / cfg.temperature;
            for (size_t i = 0; i < size; ++i)
                val(i) *= s;
        }
        float mx = val(0);
        for (size_t i = 1; i < size; ++i)
            mx = std::max(mx, val(i));
        std::vector<float> w(size);
        float sum = 0.0f;
        for (size_t i = 0; i < size; ++i) {
            w[i] = std::exp(val(i) - mx);
            sum += w[i];
        }
        if (!(sum > 0.0f && std::isfinite(sum)))
            throw std::runtime_error("sampling: no finite probability mass");
        const float log_sum = std::log(sum) + mx;
        for (size_t k = 0; k < n; ++k) {
            const float r = sum * u(rng_);
            float run = 0.0f;
            size_t pick = size - 1;
            for (size_t i = 0; i < size; ++i) {
                run += w[i];
                if (run > r) {
                    pick = i;
                    break;
                }
            }
            const int64_t id = use_vec ? cand[pick].second : static_cast<int64_t>(pick);
            out.push_back({id, val(pick) - log_sum});
        }
        return out;
    }

    // 2b. temperature softmax (normalised probabilities).
    {
        float mx = val(0);
        for (size_t i = 1; i < size; ++i)
            mx = std::max(mx, val(i));
        float norm = 0.0f;
        if (cfg.temperature == 1.0f) {
            for (size_t i = 0; i < size; ++i) {
                val(i) = std::exp(val(i) - mx);
                norm += val(i);
            }
        } else {
            const float s = 1.0f / cfg.temperature;
            for (size_t i = 0; i < size; ++i) {
                val(i) = std::exp((val(i) - mx) * s);
                norm += val(i);
            }
        }
        for (size_t i = 0; i < size; ++i)
            val(i) /= norm;
    }
    bool vec = use_vec;
    auto ensure_vec = [&]() {
        if (!vec) {
            cand.resize(vocab);
            for (size_t i = 0; i < vocab; ++i)
                cand[i] = {logits[i], static_cast<int64_t>(i)};
            vec = true;
        }
    };
    // 3. min_p: drop tokens below min_p * max probability (order kept).
    if (min_p_active) {
        ensure_vec();
        float pmax = 0.0f;
        for (size_t i = 0; i < size; ++i)
            pmax = std::max(pmax, cand[i].first);
        const float thr = cfg.min_p * pmax;
        auto it = std::remove_if(cand.begin(), cand.begin() + size, [thr](auto& c) { return c.first < thr; });
        size = static_cast<size_t>(it - cand.begin());
        cand.resize(size);
    }
    // 4. top_p: partial sorts of growing prefixes, then a full sort if needed; keep the nucleus.
    if (cfg.top_p != 1.0f) {
        ensure_vec();
        bool done = false;
        for (size_t step = 16; step <= 1024 && !done; step *= 2) {
            if (size <= step)
                break;
            std::partial_sort(cand.begin(), cand.begin() + step, cand.begin() + size, min_cmp);
            float acc = 0.0f;
            for (size_t i = 0; i < step; ++i) {
                acc += cand[i].first;
                if (acc > cfg.top_p) {
                    size = i + 1;
                    cand.resize(size);
                    done = true;
                    break;
                }
            }
        }
        if (!done) {
            std::sort(cand.begin(), cand.begin() + size, min_cmp);
            float acc = 0.0f;
            size_t keep = 0;
            for (size_t i = 0; i < size; ++i) {
                acc += cand[i].first;
                ++keep;
                if (acc > cfg.top_p)
                    break;
            }
            size = keep;
            cand.resize(size);
        }
    }
    auto pv = [&](size_t i) { return vec ? cand[i].first : logits[i]; };
    float total = 0.0f;
    for (size_t i = 0; i < size; ++i)
        total += pv(i);
    if (!(total > 0.0f && std::isfinite(total)))
        throw std::runtime_error("sampling: no finite probability mass");
    const float log_total = std::log(total);
    for (size_t k = 0; k < n; ++k) {
        const float r = total * u(rng_);
        float run = 0.0f;
        size_t pick = size - 1;
        for (size_t i = 0; i < size; ++i) {
            run += pv(i);
            if (run > r) {
                pick = i;
                break;
            }
        }
        const int64_t id = vec ? cand[pick].second : static_cast<int64_t>(pick);
        out.push_back({id, std::log(pv(pick)) - log_total});
    }
    return out;
}

}  // namespace ovgc
