#include "engine/paged_kv.hpp"
#include "engine/model_graph.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>

#include <openvino/op/constant.hpp>
#include <openvino/op/gather.hpp>
#include <openvino/op/matmul.hpp>
#include <openvino/op/parameter.hpp>
#include <openvino/pass/manager.hpp>
#include <openvino/pass/sdpa_to_paged_attention.hpp>

namespace ovgc {

namespace {

const char* const kSampled = "sampled_tokens_indices";

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

bool is_cache_name(const std::string& n) { return starts_with(n, "key_cache.") || starts_with(n, "value_cache."); }

bool is_known_name(const std::string& n) {
    static const char* known[] = {"input_ids",  "position_ids",         "past_lens",       "subsequence_begins",
                                  "block_indices", "block_indices_begins", "max_context_len", kSampled};
    for (auto* k : known)
        if (n == k)
            return true;
    return false;
}

}  // namespace

void PagedKV::transform(const std::shared_ptr<ov::Model>& model) {
    ov::pass::Manager manager;
    // one block table for all layers, no score outputs, no score aggregation / cache rotation / xattention /
    // adaptive RKV / qq bias inputs: the plain form GenAI uses for a default CPU pipeline.
    manager.register_pass<ov::pass::SDPAToPagedAttention>(false, false, false, false, false, false, false);
    try {
        manager.run_passes(model);
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string("ATTENTION_BACKEND=PA: SDPAToPagedAttention failed on this model: ") +
                                 e.what());
    }

    // logits only for the tokens we sample from: Gather(hidden, sampled_tokens_indices, axis 0) before lm_head.
    std::shared_ptr<ov::op::v0::MatMul> matmul = find_lm_head_matmul(model);
    if (!matmul)
        throw std::runtime_error("ATTENTION_BACKEND=PA: the lm_head MatMul before the logits was not found");
    auto pshape = matmul->get_input_partial_shape(0);
    if (pshape.rank().is_dynamic() || pshape.rank().get_length() != 3)
        throw std::runtime_error("ATTENTION_BACKEND=PA: unexpected hidden-state rank before lm_head");
    auto idx = std::make_shared<ov::op::v0::Parameter>(ov::element::i64, ov::PartialShape{ov::Dimension::dynamic()});
    idx->set_friendly_name(kSampled);
    idx->get_output_tensor(0).set_names({kSampled});
    auto axis = ov::op::v0::Constant::create(ov::element::i64, ov::Shape{}, {0});
    auto gather = std::make_shared<ov::op::v8::Gather>(matmul->input_value(0), idx, axis);
    matmul->input(0).replace_source_output(gather);
    model->add_parameters({idx});
    model->validate_nodes_and_infer_types();
}

std::shared_ptr<ov::Model> PagedKV::one_token_form(const std::shared_ptr<ov::Model>& transformed) {
    std::map<std::string, ov::PartialShape> shapes;
    for (auto& in : transformed->inputs()) {
        const std::string name = in.get_any_name();
        if (name == "input_ids" || name == "position_ids" || name == "past_lens" || name == kSampled)
            shapes[name] = ov::PartialShape{1};
        else if (name == "subsequence_begins" || name == "block_indices_begins")
            shapes[name] = ov::PartialShape{2};
    }
    if (shapes.size() != 6)
        return nullptr;
    try {
        auto model = transformed->clone();
        model->reshape(shapes);
        return model;
    } catch (const std::exception&) {
        return nullptr;  // a model that does not take these shapes runs every step on the main form
    }
}

void PagedKV::set_neutral_inputs(const ov::CompiledModel& compiled, ov::InferRequest& req) const {
    for (auto& [name, type] : extra_inputs_) {
        ov::Tensor t = req.get_tensor(name);
        auto ps = compiled.input(name).get_partial_shape();
        if (ps.rank().is_static() && ps.rank().get_length() == 0) {
            t.set_shape({});
        } else {
            ov::Shape s(ps.rank().is_static() ? ps.rank().get_length() : 1, 0);
            t.set_shape(s);
        }
        if (t.get_byte_size())
            std::memset(t.data(), 0, t.get_byte_size());
    }
}

void PagedKV::attach_one_token(ov::CompiledModel one_token) {
    ov::InferRequest req = one_token.create_infer_request();
    for (auto& in : one_token.inputs()) {  // every input must be one the main form has (filled the same way)
        const std::string name = in.get_any_name();
        if (!is_cache_name(name) && !is_known_name(name) &&
            std::none_of(extra_inputs_.begin(), extra_inputs_.end(), [&](auto& e) { return e.first == name; }))
            throw std::runtime_error("the one-token form has an input the main form lacks: " + name);
    }
    set_neutral_inputs(one_token, req);
    for (auto& c : caches_)
        req.set_tensor(c.name, c.tensor);
    one_token_req_ = std::move(req);
}

PagedKV::PagedKV(const ov::CompiledModel& compiled, ov::InferRequest& req, size_t num_kv_blocks, size_t cache_bytes)
    : req_(&req), step_req_(&req) {
    size_t value_block = 0;
    for (auto& in : compiled.inputs()) {
        const std::string name = in.get_any_name();
        if (is_cache_name(name)) {
            auto ps = in.get_partial_shape();
            if (ps.rank().is_dynamic() || ps.rank().get_length() < 2)
                throw std::runtime_error("ATTENTION_BACKEND=PA: cache input '" + name + "' has no static layout");
            Cache c;
            c.name = name;
            c.type = in.get_element_type();
            if (c.type.is_dynamic())
                throw std::runtime_error("ATTENTION_BACKEND=PA: the device left cache input '" + name +
                                         "' without an element type");
            size_t elems = 1;
            for (size_t i = 1; i < static_cast<size_t>(ps.rank().get_length()); ++i) {
                if (ps[i].is_dynamic())
                    throw std::runtime_error("ATTENTION_BACKEND=PA: cache input '" + name + "' has a dynamic dimension");
                c.block_shape.push_back(static_cast<size_t>(ps[i].get_length()));
                elems *= c.block_shape.back();
            }
            c.block_bytes = c.type.size() * elems;
            if (starts_with(name, "value_cache.") && c.block_shape.size() == 3 && !value_block)
                value_block = c.block_shape[1];  // [blocks, kv_heads, block_size, head_size(+scales)]
            caches_.push_back(std::move(c));
        } else if (!is_known_name(name)) {
            extra_inputs_.emplace_back(name, in.get_element_type());
        }
    }
    if (caches_.empty())
        throw std::runtime_error("ATTENTION_BACKEND=PA: the transformed model has no key/value cache inputs");
    if (value_block)
        block_size_ = value_block;
    // neutral values for optional inputs (score aggregation, rotation, ...): empty / zero
    set_neutral_inputs(compiled, *req_);
    size_t bytes_per_block = 0;
    for (auto& c : caches_)
        bytes_per_block += c.block_bytes;
    limit_ = num_kv_blocks ? num_kv_blocks : (cache_bytes ? cache_bytes / bytes_per_block : 0);
    if ((num_kv_blocks || cache_bytes) && limit_ == 0)
        throw std::runtime_error("SchedulerConfig cache_size (" + std::to_string(cache_bytes) +
                                 " bytes) holds no KV block of " + std::to_string(bytes_per_block) + " bytes");
    grow(limit_ ? std::min<size_t>(16, limit_) : 16);
    reset();
}

size_t PagedKV::used_blocks() const { return capacity_ - free_.size(); }

void PagedKV::grow(size_t need_blocks) {
    if (need_blocks <= capacity_)
        return;
    if (limit_ && need_blocks > limit_)
        throw std::runtime_error(
            "the request was dropped because it did not fit in the KV cache: it needs more than " +
            std::to_string(limit_) + " blocks of " + std::to_string(block_size_) +
            " tokens (SchedulerConfig num_kv_blocks / cache_size). Increase cache_size / num_kv_blocks, or reduce "
            "the prompt or generation length");
    size_t cap = std::max(need_blocks, capacity_ * 2);
    if (limit_)
        cap = std::min(cap, limit_);
    for (auto& c : caches_) {
        ov::Shape shape{cap};
        shape.insert(shape.end(), c.block_shape.begin(), c.block_shape.end());
        ov::Tensor t(c.type, shape);
        auto* dst = static_cast<uint8_t*>(t.data());
        if (capacity_)
            std::memcpy(dst, c.tensor.data(), capacity_ * c.block_bytes);
        std::memset(dst + capacity_ * c.block_bytes, 0, (cap - capacity_) * c.block_bytes);
        c.tensor = t;
        req_->set_tensor(c.name, c.tensor);
        if (one_token_req_)
            one_token_req_.set_tensor(c.name, c.tensor);
    }
    refcount_.resize(cap, 0);
    for (size_t b = cap; b-- > capacity_;)
        free_.push_back(static_cast<int32_t>(b));  // lowest index handed out first
    capacity_ = cap;
}

int32_t PagedKV::alloc_block() {
    if (free_.empty())
        grow(capacity_ + 1);
    int32_t b = free_.back();
    free_.pop_back();
    refcount_[b] = 1;
    return b;
}

void PagedKV::release(int32_t b) {
    if (--refcount_[b] == 0)
        free_.push_back(b);
}

void PagedKV::copy_block(int32_t from, int32_t to) {
    for (auto& c : caches_) {
        auto* base = static_cast<uint8_t*>(c.tensor.data());
        std::memcpy(base + to * c.block_bytes, base + from * c.block_bytes, c.block_bytes);
    }
}

void PagedKV::reset() {
    for (auto& s : seqs_)
        for (auto b : s.blocks)
            release(b);
    seqs_.assign(1, Seq{});
}

void PagedKV::trim(size_t keep) {
    if (seqs_.size() != 1 || keep == 0) {
        reset();
        return;
    }
    Seq& s = seqs_[0];
    if (keep >= s.len)
        return;
    const size_t nb = (keep + block_size_ - 1) / block_size_;
    while (s.blocks.size() > nb) {
        release(s.blocks.back());
        s.blocks.pop_back();
    }
    s.len = keep;
}

void PagedKV::keep_prefix(size_t keep) {
    if (seqs_.empty() || keep == 0 || keep > seqs_[0].len) {
        reset();
        return;
    }
    for (size_t i = 1; i < seqs_.size(); ++i)
        for (auto b : seqs_[i].blocks)
            release(b);
    seqs_.resize(1);
    trim(keep);
}

// Makes room for tokens [s.len, new_len): the partly filled last block must be private, new blocks appended.
void PagedKV::ensure_writable(Seq& s, size_t new_len) {
    if (s.len % block_size_ != 0 && !s.blocks.empty() && refcount_[s.blocks.back()] > 1) {
        int32_t fresh = alloc_block();
        copy_block(s.blocks.back(), fresh);  // after alloc_block: a grow may have replaced the tensors
        release(s.blocks.back());
        s.blocks.back() = fresh;
    }
    const size_t nb = (new_len + block_size_ - 1) / block_size_;
    while (s.blocks.size() < nb)
        s.blocks.push_back(alloc_block());
}

void PagedKV::prepare_prefill(const int64_t* ids, size_t n) {
    if (seqs_.size() != 1)
        reset();
    ensure_writable(seqs_[0], seqs_[0].len + n);
    fill_inputs({&seqs_[0]}, {ids}, {n});
}

void PagedKV::prepare_verify(const int64_t* ids, size_t n) {
    if (seqs_.size() != 1)
        throw std::logic_error("PagedKV: drafts are verified for one sequence only");
    ensure_writable(seqs_[0], seqs_[0].len + n);
    fill_inputs({&seqs_[0]}, {ids}, {n});
    ov::Tensor sampled = step_req_->get_tensor(kSampled);
    sampled.set_shape({n});
    auto* rows = sampled.data<int64_t>();
    for (size_t i = 0; i < n; ++i)
        rows[i] = static_cast<int64_t>(i);
}

void PagedKV::prepare_decode(const std::vector<int64_t>& ids, const std::vector<int32_t>& parents) {
    std::vector<Seq> next(parents.size());
    for (size_t b = 0; b < parents.size(); ++b) {
        if (parents[b] < 0 || static_cast<size_t>(parents[b]) >= seqs_.size())
            throw std::logic_error("PagedKV: bad parent sequence");
        next[b] = seqs_[parents[b]];
        for (auto blk : next[b].blocks)
            ++refcount_[blk];
    }
    for (auto& s : seqs_)
        for (auto blk : s.blocks)
            release(blk);
    seqs_ = std::move(next);
    std::vector<const int64_t*> ptrs;
    std::vector<Seq*> rows;
    std::vector<size_t> counts(ids.size(), 1);
    for (size_t b = 0; b < ids.size(); ++b) {
        ensure_writable(seqs_[b], seqs_[b].len + 1);
        ptrs.push_back(&ids[b]);
    }
    for (auto& s : seqs_)
        rows.push_back(&s);
    fill_inputs(rows, ptrs, counts);
}

size_t PagedKV::blocks_needed(const Table& t, size_t n) const {
    const size_t nb = (t.len + n + block_size_ - 1) / block_size_;
    const bool copy = n > 0 && t.len % block_size_ != 0 && !t.blocks.empty() && refcount_[t.blocks.back()] > 1;
    return (nb > t.blocks.size() ? nb - t.blocks.size() : 0) + (copy ? 1 : 0);
}

void PagedKV::share_prefix(const Table& from, size_t len, Table& to) {
    if (!to.blocks.empty() || to.len || len > from.len || len > (from.len / block_size_) * block_size_)
        throw std::logic_error("PagedKV: bad prefix share");
    const size_t nb = (len + block_size_ - 1) / block_size_;
    for (size_t i = 0; i < nb; ++i) {
        to.blocks.push_back(from.blocks[i]);
        ++refcount_[from.blocks[i]];
    }
    to.len = len;
}

size_t PagedKV::blocks_available() const {
    if (!limit_)
        return std::numeric_limits<size_t>::max();
    const size_t used = used_blocks();
    return limit_ > used ? limit_ - used : 0;
}

void PagedKV::release_table(Table& t) {
    for (auto b : t.blocks)
        release(b);
    t.blocks.clear();
    t.len = 0;
}

void PagedKV::prepare_tables(const std::vector<Table*>& tables, const std::vector<const int64_t*>& ids,
                             const std::vector<size_t>& counts) {
    if (tables.empty() || tables.size() != ids.size() || tables.size() != counts.size())
        throw std::logic_error("PagedKV: bad batch");
    for (size_t b = 0; b < tables.size(); ++b)
        ensure_writable(*tables[b], tables[b]->len + counts[b]);
    fill_inputs(tables, ids, counts);
}

// Inputs for one step: sequence b gets counts[b] new tokens after its seqs[b]->len cached ones.
void PagedKV::fill_inputs(const std::vector<Seq*>& seqs, const std::vector<const int64_t*>& ids,
                          const std::vector<size_t>& counts) {
    const size_t S = counts.size();
    size_t total = 0, nblocks = 0, max_ctx = 0;
    for (size_t b = 0; b < S; ++b) {
        total += counts[b];
        nblocks += seqs[b]->blocks.size();
        max_ctx = std::max(max_ctx, seqs[b]->len + counts[b]);
    }
    step_req_ = S == 1 && total == 1 && one_token_req_ ? &one_token_req_ : req_;
    (step_req_ == req_ ? main_steps_ : one_token_steps_).fetch_add(1, std::memory_order_relaxed);
    ov::InferRequest& r = *step_req_;
    ov::Tensor input_ids = r.get_tensor("input_ids");
    input_ids.set_shape({total});
    ov::Tensor pos = r.get_tensor("position_ids");
    pos.set_shape({total});
    ov::Tensor past = r.get_tensor("past_lens");
    past.set_shape({S});
    ov::Tensor begins = r.get_tensor("subsequence_begins");
    begins.set_shape({S + 1});
    ov::Tensor bidx = r.get_tensor("block_indices");
    bidx.set_shape({nblocks});
    ov::Tensor bbeg = r.get_tensor("block_indices_begins");
    bbeg.set_shape({S + 1});
    ov::Tensor sampled = r.get_tensor(kSampled);
    sampled.set_shape({S});
    ov::Tensor mcl = r.get_tensor("max_context_len");
    mcl.data<int32_t>()[0] = static_cast<int32_t>(max_ctx);

    auto* pid = input_ids.data<int64_t>();
    auto* ppos = pos.data<int64_t>();
    auto* ppast = past.data<int32_t>();
    auto* pbeg = begins.data<int32_t>();
    auto* pbidx = bidx.data<int32_t>();
    auto* pbbeg = bbeg.data<int32_t>();
    auto* psamp = sampled.data<int64_t>();
    size_t t = 0, k = 0;
    pbeg[0] = 0;
    pbbeg[0] = 0;
    for (size_t b = 0; b < S; ++b) {
        Seq& s = *seqs[b];
        for (size_t i = 0; i < counts[b]; ++i) {
            pid[t] = ids[b][i];
            ppos[t] = static_cast<int64_t>(s.len + i);
            ++t;
        }
        ppast[b] = static_cast<int32_t>(s.len);
        pbeg[b + 1] = static_cast<int32_t>(t);
        psamp[b] = static_cast<int64_t>(t - 1);
        for (auto blk : s.blocks)
            pbidx[k++] = blk;
        pbbeg[b + 1] = static_cast<int32_t>(k);
        s.len += counts[b];  // committed: the caller runs the request next (a failure resets the cache)
    }
}

}  // namespace ovgc
