// PagedAttention model runner state: the model transformed by ov::pass::SDPAToPagedAttention, driven for a
// handful of sequences (one in prefill, num_return_sequences in sampling decode) over per-layer key/value
// block caches that this class allocates in the layout and element type the compiled model asks for.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <openvino/openvino.hpp>

namespace ovgc {

class PagedKV {
public:
    // Rewrites the stateful SDPA model into the PagedAttention form and makes the logits output carry only
    // the last token of every subsequence (a Gather before the lm_head MatMul fed by `sampled_tokens_indices`).
    static void transform(const std::shared_ptr<ov::Model>& model);

    // The transformed model (by transform) with static shapes for one token of one sequence: the form a decode
    // step of a single sequence runs on. The CPU plugin compiles it without the per-node dynamic-shape work (and
    // fuses more), which makes such a step ~15 % faster with bit-identical logits (measured on SmolLM2-135M, 2026.4).
    // nullptr when the model does not take that shape.
    static std::shared_ptr<ov::Model> one_token_form(const std::shared_ptr<ov::Model>& transformed);

    // Binds to the compiled model's inputs; allocates the caches (grown on demand). A fixed pool
    // (SchedulerConfig num_kv_blocks, else cache_bytes / bytes of one block over all layers) caps the growth;
    // 0 and 0: unlimited.
    PagedKV(const ov::CompiledModel& compiled, ov::InferRequest& req, size_t num_kv_blocks = 0,
            size_t cache_bytes = 0);

    // Runs one-token steps of a single sequence on a request of `one_token` (one_token_form compiled like the main
    // model), over the same caches; every other step on the main request.
    void attach_one_token(ov::CompiledModel one_token);
    bool has_one_token_form() const { return static_cast<bool>(one_token_req_); }
    // The request the last prepare_* call filled.
    ov::InferRequest& step_request() { return *step_req_; }
    // Inferences prepared so far on the one-token form and on the main form.
    size_t one_token_steps() const { return one_token_steps_.load(std::memory_order_relaxed); }
    size_t main_steps() const { return main_steps_.load(std::memory_order_relaxed); }

    void reset();               // drops every sequence; sequence 0 is empty
    void trim(size_t keep);     // sequence 0 keeps its first `keep` tokens (only when there is one sequence)
    void keep_prefix(size_t keep);  // sequence 0 alone stays, with its first `keep` tokens (e.g. the prompt of several beams)
    size_t num_sequences() const { return seqs_.size(); }

    // Appends n tokens to sequence 0 (the only sequence) and fills the request's inputs.
    void prepare_prefill(const int64_t* ids, size_t n);
    // Appends n tokens to sequence 0 (the only sequence) with logits for each of them (prompt-lookup drafts).
    void prepare_verify(const int64_t* ids, size_t n);
    // One token per new sequence b; new sequence b continues old sequence parents[b] (forks share blocks,
    // copy on write). Fills the request's inputs.
    void prepare_decode(const std::vector<int64_t>& ids, const std::vector<int32_t>& parents);

    // Independent sequences stepped together (the batching engine, batching_engine.*): each request owns a block
    // table; none shares blocks with another. Tables are the caller's; release_table gives their blocks back.
    struct Table {
        std::vector<int32_t> blocks;
        size_t len = 0;  // tokens whose keys/values are cached
    };
    // Blocks to append for `n` more tokens of `t` (one more when its partly filled last block is shared: the first
    // write copies it).
    size_t blocks_needed(const Table& t, size_t n) const;
    // `to` (empty) starts with the first `len` cached tokens of `from`: it shares the blocks holding them (the
    // last one, if partly used by `to`, is copied on `to`'s first write; `from` must not write into the shared
    // blocks again, i.e. `len` lies within `from`'s full blocks).
    void share_prefix(const Table& from, size_t len, Table& to);
    // Blocks that can still be handed out (the pool's limit minus those in use; SIZE_MAX without a limit).
    size_t blocks_available() const;
    void release_table(Table& t);
    // Allocates the pool up to `blocks` now (capped by the limit) instead of on demand.
    void reserve(size_t blocks) { grow(limit_ ? std::min(blocks, limit_) : blocks); }
    // One inference's inputs: tables[b] gets counts[b] new tokens ids[b][0..counts[b]) after its cached ones.
    void prepare_tables(const std::vector<Table*>& tables, const std::vector<const int64_t*>& ids,
                        const std::vector<size_t>& counts);

    size_t block_size() const { return block_size_; }
    size_t capacity_blocks() const { return capacity_; }
    size_t used_blocks() const;
    size_t block_limit() const { return limit_; }  // 0: unlimited

private:
    using Seq = Table;
    int32_t alloc_block();
    void release(int32_t b);
    void grow(size_t need_blocks);
    void copy_block(int32_t from, int32_t to);
    void ensure_writable(Seq& s, size_t new_len);
    void fill_inputs(const std::vector<Seq*>& seqs, const std::vector<const int64_t*>& ids,
                     const std::vector<size_t>& counts);

    void set_neutral_inputs(const ov::CompiledModel& compiled, ov::InferRequest& req) const;

    ov::InferRequest* req_;
    ov::InferRequest one_token_req_;  // empty without the one-token form
    ov::InferRequest* step_req_;      // req_ or &one_token_req_: what the last fill_inputs filled
    std::atomic<size_t> one_token_steps_{0}, main_steps_{0};  // read from other threads (form_steps)
    struct Cache {
        std::string name;
        ov::element::Type type;
        ov::Shape block_shape;  // dims after the block axis
        size_t block_bytes = 0;
        ov::Tensor tensor;
    };
    std::vector<Cache> caches_;
    std::vector<std::pair<std::string, ov::element::Type>> extra_inputs_;  // neutral-valued inputs
    size_t block_size_ = 32;
    size_t capacity_ = 0;
    size_t limit_ = 0;
    std::vector<int32_t> refcount_;
    std::vector<int32_t> free_;
    std::vector<Seq> seqs_;
};

}  // namespace ovgc
