#include "engine/paged_backend.hpp"

#include <stdexcept>
#include <string>

namespace ovgc {

PagedBackend::PagedBackend(const std::shared_ptr<ov::Model>& model, const SchedulerConfig& scheduler,
                           bool one_token_steps)
    : scheduler_(scheduler) {
    PagedKV::transform(model);
    if (one_token_steps)
        one_token_model_ = PagedKV::one_token_form(model);
}

void PagedBackend::bind(const ov::CompiledModel& compiled, ov::InferRequest& request) {
    kv_ = std::make_unique<PagedKV>(compiled, request, scheduler_.num_kv_blocks, scheduler_.cache_bytes);
}

// The one-token form compiles beside the main one (2 cores: both ready in ~1.6× the time of one, not 2×). It is
// only a faster way to run some steps: when it cannot be compiled, every step runs on the main form.
void PagedBackend::start_forms(ov::Core& core, const std::string& device, const ov::AnyMap& properties) {
    if (!one_token_model_)
        return;
    one_token_compiling_ = std::async(std::launch::async, [&core, device, properties,
                                                           model = std::move(one_token_model_)]() {
        return core.compile_model(model, device, properties);
    });
}

void PagedBackend::attach_forms() {
    if (!one_token_compiling_.valid())
        return;
    try {
        one_token_compiled_ = one_token_compiling_.get();
        kv_->attach_one_token(one_token_compiled_);
    } catch (const std::exception&) {
        one_token_compiled_ = {};
    }
}

// The prompt's whole blocks only, as what GenAI's prefix cache restores after the beams. The prompt's partly
// filled last block is not the prefill's any more: the first beam step wrote into it (one beam in place, the
// others into copies of it), and in the CPU plugin's u8 cache (keys quantised by channel, per block) a write into
// a block also changes the entries already there. Reused, it gave an exact repeat of the prompt other logits than
// computing the prompt afresh (and than GenAI, which recomputes that block); it is recomputed instead.
size_t PagedBackend::keep_prompt_after_beams(size_t prompt_len, bool) {
    const size_t keep = prompt_len - prompt_len % kv_->block_size();
    kv_->keep_prefix(keep);  // 0: nothing stays
    return keep;
}

// Whole blocks of the common prefix, or the old sequence's partly filled last block too when the old sequence is
// entirely a prefix of the new prompt (what GenAI's block-hash prefix cache can restore).
size_t PagedBackend::reusable_prefix(size_t common, size_t cached) const {
    return common == cached ? common : common - common % kv_->block_size();
}

// GenAI's scheduler: with dynamic_split_fuse the prompt goes in chunks of max_num_batched_tokens (from the first
// token not restored from the prefix cache); without it, whole or not at all.
std::vector<size_t> PagedBackend::prefill_chunks(size_t feed) const {
    const size_t batch = scheduler_.max_num_batched_tokens;
    if (!scheduler_.dynamic_split_fuse && scheduler_.max_num_seqs > batch)
        throw std::invalid_argument("Max num batched tokens (" + std::to_string(batch) +
                                    ") must be greater or equal to max num sequences (" +
                                    std::to_string(scheduler_.max_num_seqs) + ")");
    if (!scheduler_.dynamic_split_fuse && feed > batch)
        throw std::invalid_argument("Sequence length (" + std::to_string(feed) +
                                    ") is longer than max number of tokens in batch (" + std::to_string(batch) + ")");
    std::vector<size_t> chunks;
    size_t done = 0;
    while (feed - done > batch) {
        chunks.push_back(batch);
        done += batch;
    }
    chunks.push_back(feed - done);
    return chunks;
}

void PagedBackend::prepare_prefill(const int64_t* ids, size_t n, size_t) { kv_->prepare_prefill(ids, n); }

void PagedBackend::prepare_decode(const std::vector<int64_t>& ids, const std::vector<int32_t>& parents, size_t) {
    if (ids.size() > scheduler_.max_num_batched_tokens)  // GenAI's scheduler then schedules nothing and drops the request
        throw std::runtime_error("the request was dropped: " + std::to_string(ids.size()) +
                                 " sequences need more than SchedulerConfig max_num_batched_tokens (" +
                                 std::to_string(scheduler_.max_num_batched_tokens) + ") tokens per step");
    kv_->prepare_decode(ids, parents);
}

}  // namespace ovgc
