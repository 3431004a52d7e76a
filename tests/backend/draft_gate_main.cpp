// Drives ovgc::DraftGate (native/src/engine/prompt_lookup.cpp) for tests/backend/test_draft_gate.py: one command
// per stdin line ("plain US", "verified MATCH N_FEED TAKEN US", "worth MATCH N_FEED"); "worth" prints 1 or 0.
#include <iostream>
#include <string>

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
        } else {
            std::cerr << "unknown command " << cmd << "\n";
            return 2;
        }
    }
    return 0;
}
