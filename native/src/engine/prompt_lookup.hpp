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

// What a PromptLookup engine was asked for: the `prompt_lookup` create property.
struct PromptLookupSettings {
    bool enabled = false;
};

class PromptLookup {
public:
    // Drafts for the text `ctx` (n tokens): up to `max_count` tokens that followed the earliest earlier
    // occurrence of its last k tokens, trying k = max_ngram_size down to 1 (upstream's search: k at most n / 2
    // when max_ngram_size >= n). Empty when nothing matches.
    static std::vector<int64_t> candidates(const int64_t* ctx, size_t n, size_t max_count, size_t max_ngram_size);

    // How many drafts to propose this step, at most `limit`: all of them while drafts are accepted, fewer after
    // rejections (a rejected draft costs an inference row for nothing), never below one.
    size_t budget(size_t limit) const { return budget_ < limit ? budget_ : limit; }
    // After a verification step that proposed `proposed` drafts of which `accepted` were kept.
    void update(size_t proposed, size_t accepted, size_t limit);
    void reset(size_t limit) { budget_ = limit; }

private:
    size_t budget_ = 0;
};

}  // namespace ovgc
