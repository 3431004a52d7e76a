// Drives ovgc::DraftGate and PromptLookup::propose (native/src/engine/prompt_lookup.cpp) for
// tests/backend/test_draft_gate.py: one command per stdin line ("plain US", "verified MATCH N_FEED TAKEN US",
// "worth MATCH N_FEED", "refused MATCH N DRAFT...", "token ID", "propose LIMIT N TOKEN..."); "worth" prints 1 or 0,
// "propose" the drafts on one line ("-" for none) and the match length on the next.
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "engine/prompt_lookup.hpp"

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
            size_t match = 0, n = 0;
            std::cin >> match >> n;
            std::vector<int64_t> drafts(n);
            for (auto& d : drafts)
                std::cin >> d;
            gate.refused(match, drafts);
        } else if (cmd == "token") {
            int64_t token = 0;
            std::cin >> token;
            gate.plain_token(token);
        } else if (cmd == "propose") {  // a fresh search with num_assistant_tokens 5, max_ngram_size 3
            size_t limit = 0, n = 0;
            std::cin >> limit >> n;
            std::vector<int64_t> text(n);
            for (auto& t : text)
                std::cin >> t;
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
