#include "engine/prompt_lookup.hpp"

#include <algorithm>

namespace ovgc {

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
