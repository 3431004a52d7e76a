#include "engine/prompt_lookup.hpp"

#include <algorithm>

namespace ovgc {

namespace {
constexpr size_t kContextCap = 64;      // how far back the preceding tokens of a match are compared
constexpr size_t kLoneTokenDrafts = 2;  // the most drafts a match of one token without context proposes
}

PromptLookup::PromptLookup(size_t num_assistant_tokens, size_t max_ngram_size, size_t max_tokens)
    : base_(num_assistant_tokens),
      ngram_(max_ngram_size),
      max_tokens_(std::max(max_tokens, num_assistant_tokens)),
      length_(num_assistant_tokens) {}

const std::vector<int64_t>& PromptLookup::propose(const int64_t* ctx, size_t n, size_t limit, size_t room) {
    drafts_.clear();
    match_ = 0;
    limit = std::min(limit, std::max(length_, room));
    if (limit == 0 || n < 2)
        return drafts_;
    const size_t longest = ngram_ >= n ? n / 2 : ngram_;
    for (size_t k = longest; k > 0; --k) {
        const int64_t* tail = ctx + n - k;
        size_t best_from = 0, best_context = 0, best_count = 0;
        bool found = false;
        // an earlier occurrence starts at i < n - k (the tail itself is not a match)
        for (size_t i = 0; i + k < n; ++i) {
            if (ctx[i] != tail[0] || !std::equal(tail + 1, tail + k, ctx + i + 1))
                continue;
            size_t context = 0;  // the tokens before both occurrences that agree too
            while (context < kContextCap && context < i && ctx[i - 1 - context] == ctx[n - k - 1 - context])
                ++context;
            const size_t from = i + k;
            const size_t count = std::min(n - from, limit);
            // later occurrences win ties (>=): the most recent one
            if (!found || context > best_context || (context == best_context && count >= best_count)) {
                found = true;
                best_from = from;
                best_context = context;
                best_count = count;
            }
        }
        if (found) {
            match_ = k + best_context;
            // a lone token with no agreeing context predicts poorly (about one draft in four is accepted on the
            // benchmark's prompts): propose fewer, as each extra draft adds to the step's cost
            size_t count = limit;
            if (match_ == 1)
                count = std::min(count, std::max(kLoneTokenDrafts, room));
            // the continuation, and past the end of the text the same period again (drafts_[j - period])
            const size_t period = n - best_from;
            drafts_.reserve(count);
            for (size_t j = 0; j < count; ++j) {
                const int64_t next = j < period ? ctx[best_from + j] : drafts_[j - period];
                drafts_.push_back(next);
            }
            return drafts_;
        }
    }
    return drafts_;
}

void PromptLookup::verified(size_t proposed, size_t accepted, bool ended) {
    if (ended || proposed == 0)
        return;
    if (accepted < proposed)
        length_ = base_;
    else if (proposed >= length_)
        length_ = std::min(max_tokens_, length_ * 2);
}

size_t DraftGate::kind(size_t match) {  // tokens the match agreed on: 1, 2, 3-4, 5-8, more
    return match <= 1 ? 0 : match == 2 ? 1 : match <= 4 ? 2 : match <= 8 ? 3 : 4;
}

double DraftGate::blend(double avg, double sample) { return avg < 0 ? sample : 0.7 * avg + 0.3 * sample; }

bool DraftGate::worth(size_t match, size_t n_feed) {
    const size_t k = kind(match);
    const double verify = n_feed < kShapes ? verify_us_[n_feed] : -1;
    if (plain_us_ < 0 || verify < 0 || taken_[k] < 0 || taken_[k] * plain_us_ >= verify)
        return true;
    return ++lost_[k] % kExploreEvery == 0;
}

void DraftGate::verified(size_t match, size_t n_feed, size_t taken, float infer_us) {
    shadow_.clear();  // a refused proposal still being scored: its tokens now come from a verification
    const size_t k = kind(match);
    taken_[k] = blend(taken_[k], static_cast<double>(taken));
    if (n_feed < kShapes)
        verify_us_[n_feed] = blend(verify_us_[n_feed], infer_us);
}

void DraftGate::plain_step(float infer_us) { plain_us_ = blend(plain_us_, infer_us); }

void DraftGate::refused(size_t match, const std::vector<int64_t>& drafts) {
    if (!shadow_.empty() || drafts.empty())
        return;
    shadow_ = drafts;
    shadow_match_ = match;
    shadow_accepted_ = 0;
}

void DraftGate::plain_token(int64_t token) {
    if (shadow_.empty())
        return;
    if (token == shadow_[shadow_accepted_] && ++shadow_accepted_ < shadow_.size())
        return;  // the answer follows the drafts so far
    // a verification would have taken the accepted drafts and the token after them
    const size_t k = kind(shadow_match_);
    taken_[k] = blend(taken_[k], static_cast<double>(shadow_accepted_ + 1));
    shadow_.clear();
}

std::vector<int64_t> PromptLookup::candidates(const int64_t* ctx, size_t n, size_t max_count, size_t max_ngram_size) {
    if (max_count == 0 || n < 2)
        return {};
    size_t longest = max_ngram_size >= n ? n / 2 : max_ngram_size;
    for (size_t k = longest; k > 0; --k) {
        const int64_t* tail = ctx + n - k;
        // an earlier occurrence starts at i < n - k (the tail itself is not a match)
        for (size_t i = 0; i + k < n; ++i) {
            if (ctx[i] != tail[0] || !std::equal(tail + 1, tail + k, ctx + i + 1))
                continue;
            const size_t from = i + k;
            const size_t count = std::min(n - from, max_count);
            return std::vector<int64_t>(ctx + from, ctx + from + count);
        }
    }
    return {};
}

}  // namespace ovgc
