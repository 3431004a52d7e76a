// Group (diverse) beam search with GenAI's selection rules, independent of the model runner:
//  - every group of G = num_beams / num_beam_groups beams starts from the prompt (one live beam, G-1 at -inf);
//  - per step and group, each beam proposes its 2G most likely next tokens (log-softmax of its logits row,
//    minus diversity_penalty for every token an earlier group picked this step, no-repeat n-grams banned),
//    scored by cumulative log-probability;
//  - over the best candidates in order: a stop token among the first G ends a hypothesis (score divided by
//    length^length_penalty, EOS counted; the G best hypotheses kept per group), a stop string likewise, the
//    others continue until G beams are chosen;
//  - a group ends by its stop criterion (EARLY, HEURISTIC, NEVER) or when no beam can continue; at the length
//    limit every running beam becomes a hypothesis.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "engine/generation_config.hpp"

namespace ovgc {

class GroupBeamSearch {
public:
    struct Hypothesis {
        std::vector<int64_t> tokens;  // generated tokens (a final stop token included)
        float score;                  // cumulative log-probability / length^length_penalty
        uint64_t seq = 0;             // upstream's sequence id
    };
    // Logits row `row` of the last inference (vocab set by the callee).
    using LogitsRow = std::function<const float*(size_t row, size_t& vocab)>;
    // For generated tokens that may end with a stop string: how many trailing tokens to drop, or -1 (no match).
    using StopStringMatch = std::function<long(const std::vector<int64_t>& generated)>;

    GroupBeamSearch(const GenerationConfig& cfg, std::vector<int64_t> prompt, size_t max_new_tokens,
                    StopStringMatch stop_strings);

    // One step over the logits of the last inference (the prompt's, then each batch's).
    void select(const LogitsRow& logits);
    // The rows select() gets are log-probabilities already (GenAI's LogitsType::LOG_PROBS, Whisper's beam search:
    // normalised before its masks), used as they are.
    void rows_are_log_probs(bool yes) { rows_are_log_probs_ = yes; }
    bool done() const;
    // The next batch: one row per running beam, in upstream's sequence order (a beam continued by one child keeps
    // its place, further children are appended, beams without children leave). parents[i] is the row of beam i's
    // parent in the last inference; the beams take rows 0..n-1 of the next one. (The order matters beyond
    // bookkeeping: the CPU kernels' results for a row can depend on its position in the batch.)
    void next_batch(std::vector<int64_t>& tokens, std::vector<int32_t>& parents);
    // After next_batch(): the generated tokens of the beam in each row of the next batch (valid until select()).
    std::vector<const std::vector<int64_t>*> batch_generated() const;
    // The n best hypotheses over all groups, best first.
    std::vector<Hypothesis> best(size_t n) const;

private:
    struct Beam {
        std::vector<int64_t> tokens;
        float score = -std::numeric_limits<float>::infinity();  // cumulative log-probability
        size_t row = 0;         // row of this beam in the last inference's logits
        int64_t last = -1;      // the token this beam added in the last step
        size_t parent_row = 0;  // while a child: its parent's row
        uint64_t seq = 0;       // upstream's sequence id (beams sharing a prefix share it until they fork)
    };
    struct Group {
        std::vector<Beam> ongoing;           // best first
        std::vector<Hypothesis> finished;    // min-heap on score: the worst kept hypothesis first
        bool done = false;
    };

    // Offer a hypothesis to the group's G best (forked: it gets a new sequence, appended to the order).
    void finish(Group& g, const std::vector<int64_t>& tokens, float score, uint64_t seq, bool forked);
    void forget(uint64_t seq);
    bool criterion_met(const Group& g) const;
    void finalize();
    std::vector<float> log_softmax(const float* logits, size_t vocab) const;
    void ban_repeated_ngrams(const Beam& beam, std::vector<float>& log_probs) const;

    GenerationConfig cfg_;
    std::vector<int64_t> prompt_;
    size_t max_new_;
    size_t group_size_;
    StopStringMatch stop_strings_;
    std::vector<Group> groups_;
    std::vector<uint64_t> order_{0};  // live sequence ids (running and finished) in upstream's order
    uint64_t next_seq_ = 1;
    size_t steps_ = 0;
    bool rows_are_log_probs_ = false;
};

}  // namespace ovgc
