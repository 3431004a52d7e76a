// Prompt-lookup decoding (GenAI's prompt_lookup pipeline): draft tokens are found by matching the last n-gram of
// the text so far (prompt + generated) against an earlier place in it, and the tokens that followed it there are
// proposed as the next ones. The engine feeds the last token and the drafts in one inference, samples every
// position and keeps the drafts while they equal what was sampled, so the output is what one-token-per-step
// decoding gives (greedy: the same argmaxes; multinomial: one draw per generated token, as upstream's validation
// without draft probabilities).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ovgc {

// The draft search. Every step proposes as many drafts as it finds (up to num_assistant_tokens): decoding is
// bound by reading the weights, so verifying a few more tokens in the same inference costs next to nothing.
class PromptLookup {
public:
    // Drafts for the text `ctx` (n tokens): up to `max_count` tokens that followed the earliest earlier
    // occurrence of its last k tokens, trying k = max_ngram_size down to 1 (upstream's search: k at most n / 2
    // when max_ngram_size >= n). Empty when nothing matches.
    static std::vector<int64_t> candidates(const int64_t* ctx, size_t n, size_t max_count, size_t max_ngram_size);
};

}  // namespace ovgc
