// Drives ovgc::DraftGate and PromptLookup::propose (native/src/engine/prompt_lookup.cpp) for
// tests/backend/test_draft_gate.py: one command per stdin line ("plain US", "verified MATCH N_FEED TAKEN US",
// "worth MATCH N_FEED", "refused MATCH N DRAFT...", "token ID", "propose LIMIT N TOKEN..."); "worth" prints 1 or 0,
// "propose" the drafts on one line ("-" for none) and the match length on the next.
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "engine/prompt_lookup.hpp"

namespace {
std::vector<int64_t> read_tokens() {  // a count, then that many token ids
    size_t n = 0;
    std::cin >> n;
    std::vector<int64_t> tokens(n);
    for (auto& t : tokens)
        std::cin >> t;
    return tokens;
}
}  // namespace

int main() {
    ovgc::DraftGate gate;
    std::string cmd;
    while (std::cin >> cmd) {
        if (cmd == "plain") {
            float us = 0;
            std::cin >> us;
            gate.plain_step(us);
        } else if (cmd == "verified") {
            size_t match = 0, n_feed = 0, taken = 0;
            float us = 0;
            std::cin >> match >> n_feed >> taken >> us;
            gate.verified(match, n_feed, taken, us);
        } else if (cmd == "worth") {
            size_t match = 0, n_feed = 0;
            std::cin >> match >> n_feed;
            std::cout << (gate.worth(match, n_feed) ? 1 : 0) << "\n";
        } else if (cmd == "refused") {
            size_t match = 0;
            std::cin >> match;
            gate.refused(match, read_tokens());
        } else if (cmd == "token") {
            int64_t token = 0;
            std::cin >> token;
            gate.plain_token(token);
        } else if (cmd == "propose") {  // a fresh search with num_assistant_tokens 5, max_ngram_size 3
            size_t limit = 0;
            std::cin >> limit;
            const std::vector<int64_t> text = read_tokens();
            ovgc::PromptLookup search(5, 3, 32);
            const auto& drafts = search.propose(text.data(), text.size(), limit);
            for (auto d : drafts)
                std::cout << d << " ";
            std::cout << (drafts.empty() ? "-" : "") << "\n" << search.last_match() << "\n";
        } else {
            std::cerr << "unknown command " << cmd << "\n";
            return 2;
        }
    }
    return 0;
}
