// The PagedAttention form (ATTENTION_BACKEND=PA, or any SchedulerConfig key): the model rewritten by
// PagedKV::transform, its KV cache in PagedKV's block tables, run under the SchedulerConfig limits. Its cache
// outlives requests and chats (GenAI's PA pipeline keeps its prefix cache): whole blocks of a common prefix are
// reused.
#pragma once

#include <future>
#include <limits>
#include <memory>

#include "engine/attention_backend.hpp"
#include "engine/paged_kv.hpp"

namespace ovgc {

// The SchedulerConfig fields the bundled PA engine honours (OVGENAI_C_* create properties); the defaults are
// GenAI's latency-oriented config, which its LLMPipeline uses on CPU when no scheduler_config is given.
struct SchedulerConfig {
    size_t max_num_batched_tokens = std::numeric_limits<size_t>::max();
    bool dynamic_split_fuse = true;
    size_t max_num_seqs = 256;
    bool enable_prefix_caching = true;
    size_t num_kv_blocks = 0;  // 0: no fixed pool (cache_bytes, if set, gives one)
    size_t cache_bytes = 0;    // 0: unbounded
};

class PagedBackend final : public AttentionBackend {
public:
    // Rewrites the model into the PagedAttention form (before compilation). one_token_steps: also compile the
    // static one-token form (PagedKV::one_token_form) for a single sequence's decode steps (OVGENAI_C_STATIC_DECODE).
    PagedBackend(const std::shared_ptr<ov::Model>& model, const SchedulerConfig& scheduler, bool one_token_steps);

    void bind(const ov::CompiledModel& compiled, ov::InferRequest& request) override;
    void start_forms(ov::Core& core, const std::string& device, const ov::AnyMap& properties) override;
    void attach_forms() override;
    ov::InferRequest& step_request() override { return kv_->step_request(); }
    std::pair<size_t, size_t> form_steps() const override { return {kv_->one_token_steps(), kv_->main_steps()}; }
    bool one_token_steps_keep_main_shape() const override { return kv_->has_one_token_form(); }
    // The compiled one-token form (empty without one): the batching engine binds its own pool to it too.
    const ov::CompiledModel& one_token_form() const { return one_token_compiled_; }
    const SchedulerConfig& scheduler() const { return scheduler_; }

    void reset() override { kv_->reset(); }
    void trim(size_t keep) override { kv_->trim(keep); }
    size_t keep_prompt_after_beams(size_t prompt_len, bool) override;

    bool keeps_cache_between_requests() const override { return true; }
    bool reuses_prefix(bool) const override { return scheduler_.enable_prefix_caching; }
    size_t reusable_prefix(size_t common, size_t cached) const override;
    bool counts_reused_prompt_tokens() const override { return true; }

    std::vector<size_t> prefill_chunks(size_t feed) const override;
    void prepare_prefill(const int64_t* ids, size_t n, size_t cached) override;
    void prepare_decode(const std::vector<int64_t>& ids, const std::vector<int32_t>& parents, size_t cached) override;
    size_t max_verify_tokens() const override { return scheduler_.max_num_batched_tokens; }
    void prepare_verify(const int64_t* ids, size_t n, size_t) override { kv_->prepare_verify(ids, n); }

    size_t steps_after_stream_stop() const override { return 2; }
    bool feeds_last_token_after_stop() const override { return false; }

private:
    SchedulerConfig scheduler_;
    std::shared_ptr<ov::Model> one_token_model_;          // until start_forms
    std::future<ov::CompiledModel> one_token_compiling_;  // from start_forms to attach_forms
    ov::CompiledModel one_token_compiled_;
    std::unique_ptr<PagedKV> kv_;
};

}  // namespace ovgc
