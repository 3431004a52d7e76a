// The stateful SDPA form (ATTENTION_BACKEND=SDPA): the exported model as it is, its KV cache in the request's
// state variables, rows reordered by beam_idx; logits only for the last prompt position (a Slice before the
// lm_head MatMul). Its cache lives within a chat only, as upstream's stateful pipeline.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/attention_backend.hpp"

namespace ovgc {

class StatefulBackend final : public AttentionBackend {
public:
    // Reads the state variables' sequence axes and rewrites the model (before compilation). compat_row0:
    // upstream 2026.4's feeding of row 0 for every sampled sequence (OVGENAI_C_BUNDLED_COMPAT_ROW0).
    StatefulBackend(const std::shared_ptr<ov::Model>& model, bool compat_row0);

    void bind(const ov::CompiledModel& compiled, ov::InferRequest& request) override;
    ov::InferRequest& step_request() override { return *req_; }

    void reset() override;
    void trim(size_t keep) override;
    size_t keep_prompt_after_beams(size_t prompt_len, bool chat) override;

    bool keeps_cache_between_requests() const override { return false; }
    bool reuses_prefix(bool chat) const override { return chat; }
    size_t reusable_prefix(size_t common, size_t) const override { return common; }
    bool counts_reused_prompt_tokens() const override { return false; }

    std::vector<size_t> prefill_chunks(size_t feed) const override { return {feed}; }
    void prepare_prefill(const int64_t* ids, size_t n, size_t cached) override;
    void prepare_decode(const std::vector<int64_t>& ids, const std::vector<int32_t>& parents, size_t cached) override;
    int32_t sampled_parent_row(size_t row) const override { return compat_row0_ ? 0 : static_cast<int32_t>(row); }

    size_t steps_after_stream_stop() const override { return 0; }
    bool feeds_last_token_after_stop() const override { return true; }

private:
    ov::InferRequest* req_ = nullptr;
    bool has_position_ids_ = false;
    bool compat_row0_ = false;
    std::vector<std::pair<std::string, size_t>> seq_axes_;  // state variable id -> sequence axis
};

}  // namespace ovgc
