#include "engine/beam_search.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

#include "engine/sampler.hpp"

namespace ovgc {

namespace {

constexpr int kStopEarly = 0;
constexpr int kStopHeuristic = 1;
constexpr int kStopNever = 2;

// min-heap order on hypothesis scores: the worst kept hypothesis at the front
bool heap_order(const GroupBeamSearch::Hypothesis& a, const GroupBeamSearch::Hypothesis& b) {
    return a.score > b.score;
}

}  // namespace

GroupBeamSearch::GroupBeamSearch(const GenerationConfig& cfg, std::vector<int64_t> prompt, size_t max_new_tokens,
                                 StopStringMatch stop_strings)
    : cfg_(cfg), prompt_(std::move(prompt)), max_new_(max_new_tokens), stop_strings_(std::move(stop_strings)) {
    if (cfg_.num_beams < 2 || cfg_.num_beam_groups == 0 || cfg_.num_beams % cfg_.num_beam_groups != 0)
        throw std::invalid_argument("beam search needs num_beams > 1 divisible by num_beam_groups");
    group_size_ = cfg_.num_beams / cfg_.num_beam_groups;
    groups_.resize(cfg_.num_beam_groups);
    for (auto& g : groups_) {
        g.ongoing.resize(group_size_);
        g.ongoing.front().score = 0.0f;  // one live beam: the others would only repeat its choices
    }
}

bool GroupBeamSearch::done() const {
    return std::all_of(groups_.begin(), groups_.end(), [](const Group& g) { return g.done; });
}

std::vector<float> GroupBeamSearch::log_softmax(const float* logits, size_t vocab) const {
    // float arithmetic in upstream's order, so equal logits give equal scores
    const ExpSum e = exp_sum(logits, vocab);
    const float log_sum = std::log(e.sum);
    std::vector<float> out(vocab);
    for (size_t i = 0; i < vocab; ++i)
        out[i] = logits[i] - e.max - log_sum;
    return out;
}

void GroupBeamSearch::ban_repeated_ngrams(const Beam& beam, std::vector<float>& log_probs) const {
    const size_t n = cfg_.no_repeat_ngram_size;
    const size_t len = prompt_.size() + beam.tokens.size();
    if (len <= 1 || len < n)
        return;
    auto at = [&](size_t i) { return i < prompt_.size() ? prompt_[i] : beam.tokens[i - prompt_.size()]; };
    auto ban = [&](int64_t t) {
        if (t >= 0 && static_cast<size_t>(t) < log_probs.size())
            log_probs[t] = -std::numeric_limits<float>::infinity();
    };
    if (n == 1) {  // every token seen so far
        for (size_t i = 0; i < len; ++i)
            ban(at(i));
        return;
    }
    // the last n-1 tokens: ban whatever followed an earlier occurrence of them
    const size_t k = n - 1, tail = len - k;
    for (size_t i = 0; i + k < len; ++i) {
        size_t j = 0;
        while (j < k && at(i + j) == at(tail + j))
            ++j;
        if (j == k)
            ban(at(i + k));
    }
}

void GroupBeamSearch::finish(Group& g, const std::vector<int64_t>& tokens, float score, uint64_t seq, bool forked) {
    const float len = static_cast<float>(std::max<size_t>(tokens.size(), 1));
    g.finished.push_back({tokens, score / std::pow(len, cfg_.length_penalty), seq});
    std::push_heap(g.finished.begin(), g.finished.end(), heap_order);
    if (g.finished.size() > group_size_) {
        std::pop_heap(g.finished.begin(), g.finished.end(), heap_order);
        const uint64_t victim = g.finished.back().seq;
        g.finished.pop_back();
        if (forked && victim == seq)
            return;  // not kept: upstream does not fork it either
        forget(victim);
    }
    if (forked)
        order_.push_back(seq);
}

void GroupBeamSearch::forget(uint64_t seq) {
    auto it = std::find(order_.begin(), order_.end(), seq);
    if (it != order_.end())
        order_.erase(it);
}

// Checked after a step's choices, against the group's best beam before that step (as upstream).
bool GroupBeamSearch::criterion_met(const Group& g) const {
    if (g.finished.size() < group_size_ || g.ongoing.empty())
        return false;
    const Beam& best = g.ongoing.front();
    const float worst_kept = g.finished.front().score;
    const size_t cur_len = best.tokens.size();
    switch (cfg_.stop_criteria) {
    case kStopEarly:
        return true;
    case kStopHeuristic:
        return worst_kept >= best.score / std::pow(static_cast<float>(cur_len), cfg_.length_penalty);
    case kStopNever: {
        const size_t length = cfg_.length_penalty > 0.0f ? max_new_ : cur_len;
        return worst_kept >= best.score / std::pow(static_cast<float>(length), cfg_.length_penalty);
    }
    default:
        throw std::invalid_argument("unknown stop_criteria " + std::to_string(cfg_.stop_criteria));
    }
}

void GroupBeamSearch::select(const LogitsRow& logits) {
    struct Token {
        float log_prob;
        int64_t id;
    };
    struct Candidate {
        size_t beam;
        int64_t token;
        float score;
    };
    ++steps_;
    const size_t per_beam = 2 * group_size_;
    std::map<uint64_t, size_t> num_children;  // per parent sequence, over all groups (as upstream counts them)
    for (const auto& g : groups_)
        for (const auto& b : g.ongoing)
            num_children[b.seq] = 0;
    std::vector<int64_t> chosen_earlier;  // tokens the earlier groups continued with in this step
    std::vector<std::vector<Beam>> children(groups_.size());
    std::vector<Token> toks;
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
        Group& g = groups_[gi];
        if (g.done)
            continue;
        std::vector<Candidate> cands;
        cands.reserve(g.ongoing.size() * per_beam);
        for (size_t bi = 0; bi < g.ongoing.size(); ++bi) {
            const Beam& beam = g.ongoing[bi];
            size_t vocab = 0;
            const float* row = logits(beam.row, vocab);
            std::vector<float> lp = rows_are_log_probs_ ? std::vector<float>(row, row + vocab) : log_softmax(row, vocab);
            for (int64_t t : chosen_earlier)
                if (t >= 0 && static_cast<size_t>(t) < vocab)
                    lp[t] -= cfg_.diversity_penalty;
            ban_repeated_ngrams(beam, lp);
            // the whole row sorted with std::sort, as upstream: equal log-probabilities (frequent with
            // quantised weights) then come out in the same order
            toks.resize(vocab);
            for (size_t i = 0; i < vocab; ++i)
                toks[i] = {lp[i], static_cast<int64_t>(i)};
            std::sort(toks.begin(), toks.end(), [](const Token& a, const Token& b) { return a.log_prob > b.log_prob; });
            const size_t take = std::min(per_beam, vocab);
            for (size_t k = 0; k < take; ++k)
                cands.push_back({bi, toks[k].id, beam.score + toks[k].log_prob});
        }
        const size_t head = std::min(per_beam, cands.size());
        std::partial_sort(cands.begin(), cands.begin() + head, cands.end(),
                          [](const Candidate& a, const Candidate& b) { return a.score > b.score; });

        auto& kids = children[gi];
        for (size_t ci = 0; ci < cands.size() && kids.size() < group_size_; ++ci) {
            const Candidate& c = cands[ci];
            const Beam& parent = g.ongoing[c.beam];
            if (cfg_.stop_token_ids.count(c.token)) {
                if (ci < group_size_) {  // only a stop token among the best G ends a hypothesis
                    std::vector<int64_t> t = parent.tokens;
                    t.push_back(c.token);
                    finish(g, t, c.score, next_seq_++, true);
                }
                continue;
            }
            if (!cfg_.stop_strings.empty() && stop_strings_) {
                std::vector<int64_t> t = parent.tokens;
                t.push_back(c.token);
                const long cut = stop_strings_(t);
                if (cut >= 0) {
                    if (ci < group_size_) {
                        t.resize(t.size() - std::min<size_t>(static_cast<size_t>(cut), t.size()));
                        finish(g, t, c.score, next_seq_++, true);
                    }
                    continue;
                }
            }
            Beam child;
            child.tokens = parent.tokens;
            child.tokens.push_back(c.token);
            child.score = c.score;
            child.last = c.token;
            child.parent_row = parent.row;
            child.seq = parent.seq;
            ++num_children[parent.seq];
            kids.push_back(std::move(child));
        }
        for (const Beam& k : kids)
            chosen_earlier.push_back(k.last);
        if (criterion_met(g) || kids.empty()) {
            g.done = true;
            for (const auto& b : g.ongoing)
                forget(b.seq);
            g.ongoing.clear();
        }
    }
    // children take their sequences: all but a parent's last child fork a new one (appended), the last
    // continues the parent's; parents without children are dropped
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
        Group& g = groups_[gi];
        if (g.done)
            continue;
        for (Beam& child : children[gi]) {
            size_t& left = num_children[child.seq];
            if (left > 1) {
                child.seq = next_seq_++;
                order_.push_back(child.seq);
                --left;
            } else if (std::find(order_.begin(), order_.end(), child.seq) == order_.end()) {
                order_.push_back(child.seq);  // its parent's sequence was already dropped
            }
        }
        for (const Beam& b : g.ongoing)
            if (num_children[b.seq] == 0)
                forget(b.seq);
        g.ongoing = std::move(children[gi]);
    }
    if (!done() && steps_ >= max_new_)
        finalize();
}

void GroupBeamSearch::finalize() {
    for (auto& g : groups_) {
        if (g.done)
            continue;
        for (const Beam& b : g.ongoing)
            finish(g, b.tokens, b.score, b.seq, false);
        g.ongoing.clear();
        g.done = true;
    }
}

void GroupBeamSearch::next_batch(std::vector<int64_t>& tokens, std::vector<int32_t>& parents) {
    tokens.clear();
    parents.clear();
    std::map<uint64_t, Beam*> by_seq;
    for (auto& g : groups_)
        if (!g.done)
            for (auto& b : g.ongoing)
                by_seq[b.seq] = &b;
    for (uint64_t seq : order_) {  // finished sequences are in order_ too, but have no running beam
        auto it = by_seq.find(seq);
        if (it == by_seq.end())
            continue;
        Beam& b = *it->second;
        tokens.push_back(b.last);
        parents.push_back(static_cast<int32_t>(b.parent_row));
        b.row = tokens.size() - 1;
    }
    if (tokens.size() != by_seq.size())
        throw std::logic_error("beam search: a running beam has no sequence");
}

std::vector<const std::vector<int64_t>*> GroupBeamSearch::batch_generated() const {
    std::vector<const std::vector<int64_t>*> out;
    for (const auto& g : groups_)
        if (!g.done)
            for (const auto& b : g.ongoing) {
                if (out.size() <= b.row)
                    out.resize(b.row + 1, nullptr);
                out[b.row] = &b.tokens;
            }
    return out;
}

std::vector<GroupBeamSearch::Hypothesis> GroupBeamSearch::best(size_t n) const {
    // upstream sorts its finished sequences (in sequence order) by score with std::sort
    std::vector<Hypothesis> all;
    for (uint64_t seq : order_)
        for (const auto& g : groups_)
            for (const auto& h : g.finished)
                if (h.seq == seq)
                    all.push_back(h);
    std::sort(all.begin(), all.end(), [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
    if (all.size() > n)
        all.resize(n);
    return all;
}

}  // namespace ovgc
