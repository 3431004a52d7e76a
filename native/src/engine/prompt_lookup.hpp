// Prompt-lookup decoding (GenAI's prompt_lookup pipeline): draft tokens are found by matching the last n-gram of
// the text so far (prompt + generated) against an earlier place in it, and the tokens that followed it there are
// proposed as the next ones. The engine feeds the last token and the drafts in one inference, samples every
// position and keeps the drafts while they equal what was sampled, so the output is what one-token-per-step
// decoding gives (greedy: the same argmaxes; multinomial: one draw per generated token, as upstream's validation
// without draft probabilities). How the drafts are chosen only changes the speed, never a token.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ovgc {

// The draft search and the draft length of one generation.
//
// Search: the last k tokens of the text (k = max_ngram_size down to 1, at most n / 2 as upstream) are looked up
// at every earlier place; when the longest k matches in several places, the place whose preceding tokens agree
// with the text for longest wins (the surrounding context, not only the last k tokens, decides which copy of a
// repeated phrase is being followed), then the one with more tokens after it, then the most recent. Upstream
// takes the earliest place of the longest k. When the tokens after the chosen place run into the end of the text
// (the text repeats with a period of p tokens, as an answer caught in a loop does), the drafts go on with the same
// period: drafts[j] = drafts[j - p].
//
// Length: where decoding is bound by reading the weights, verifying a few more tokens in one inference costs little
// (not everywhere: on an AMX CPU under bf16 a 6-token verification costs two one-token steps; DraftGate below
// decides from measured costs whether a proposal is worth verifying at all).
// A generation starts with num_assistant_tokens drafts per step; after a step whose whole draft was accepted the
// next may propose twice as many (up to `max_tokens`), and after a rejected draft it is back to
// num_assistant_tokens. Without a match the step proposes nothing (the engine then runs a plain one-token step).
class PromptLookup {
public:
    PromptLookup(size_t num_assistant_tokens, size_t max_ngram_size, size_t max_tokens);

    // Drafts for the text `ctx` (n tokens), at most `limit` (what is left of max_new_tokens / the context) and at
    // most the current draft length or `room` (the drafts the step can feed anyway), whichever is more.
    const std::vector<int64_t>& propose(const int64_t* ctx, size_t n, size_t limit, size_t room = 0);
    // What the verification of the last proposal kept: `accepted` of its drafts were equal to the sampled tokens
    // (the step may also have ended early at a stop rule; then nothing is learned).
    void verified(size_t proposed, size_t accepted, bool ended);

    size_t draft_length() const { return length_; }
    size_t last_match() const { return match_; }  // tokens the last proposal's match agreed on (n-gram + context)

    // Upstream's search (GenAI's generate_candidates): the tokens after the earliest earlier occurrence of the
    // longest matching tail of k = max_ngram_size..1 tokens (k at most n / 2 when max_ngram_size >= n).
    static std::vector<int64_t> candidates(const int64_t* ctx, size_t n, size_t max_count, size_t max_ngram_size);

private:
    size_t base_, ngram_, max_tokens_, length_, match_ = 0;
    std::vector<int64_t> drafts_;
};

// Whether a proposal is worth its verification, from what this generation measured: a verification feeding n
// tokens costs verify_us(n) and yields the tokens it takes (the sampled one plus the accepted drafts); a plain
// one-token step costs plain_us and yields one. Drafts are verified while the tokens that proposals of the same
// kind (how many tokens of the text their match agreed on) took, on average, pay for the verification:
// taken * plain_us >= verify_us(n). Until both costs and that kind's yield are measured, a proposal is verified;
// of the proposals a kind loses, one in kExploreEvery is verified anyway, so a kind whose drafts start to be
// accepted (the answer begins to copy the input) wins again. A refused proposal is still scored, for free: the
// plain steps after it are compared with its drafts, and the tokens a verification would have taken count as
// that kind's yield, so a kind wins again as soon as the answer follows its drafts. Only the speed depends on it,
// never a token.
class DraftGate {
public:
    DraftGate() {
        verify_us_.fill(-1);
        taken_.fill(-1);
    }
    bool worth(size_t match, size_t n_feed);
    void verified(size_t match, size_t n_feed, size_t taken, float infer_us);
    void plain_step(float infer_us);
    // A proposal worth() refused (scored by the plain tokens that follow, unless another is being scored), and the
    // token each plain step of the generation took.
    void refused(size_t match, const std::vector<int64_t>& drafts);
    void plain_token(int64_t token);
    static constexpr size_t kExploreEvery = 8;

private:
    static size_t kind(size_t match);
    static double blend(double avg, double sample);  // an exponential average; a negative avg: none yet
    static constexpr size_t kKinds = 5, kShapes = 48;
    double plain_us_ = -1;
    std::array<double, kShapes> verify_us_;  // by tokens fed (all -1 from the constructor)
    std::array<double, kKinds> taken_;       // by kind of match (all -1 from the constructor)
    std::array<size_t, kKinds> lost_{};
    std::vector<int64_t> shadow_;  // the refused proposal being scored (empty: none)
    size_t shadow_match_ = 0, shadow_accepted_ = 0;
};

}  // namespace ovgc
