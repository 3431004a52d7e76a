#include "engine/batching_engine.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace ovgc {

struct BatchingEngine::Request {
    std::shared_ptr<RequestOutput> out;
    GenerationConfig cfg;
    std::vector<int64_t> prompt;
    std::vector<int64_t> gen;
    std::map<int64_t, size_t> counts;
    std::set<int64_t> prompt_ids;
    Sampler sampler;
    PagedKV::Table table;
    size_t max_new = 0;
    size_t window = 0;  // longest stop string in tokens
    size_t hold = 0;    // tokens held back from the reader (a stop string may still cut them)
    size_t given = 0;   // tokens of gen given to out
    size_t streamed = 0;  // tokens of gen given to the text streamer
    std::unique_ptr<TextStreamer> text;
    bool finished = false;

    size_t total() const { return prompt.size() + gen.size(); }
    size_t pending() const { return total() - table.len; }  // tokens to feed before the next sample
    int64_t token_at(size_t i) const { return i < prompt.size() ? prompt[i] : gen[i - prompt.size()]; }
};

namespace {

std::vector<std::pair<std::string, std::string>> with_paged_attention(
    std::vector<std::pair<std::string, std::string>> props) {
    bool has_backend = false;
    for (auto& [k, v] : props)
        if (k == "ATTENTION_BACKEND") {
            if (v != "PA")
                throw std::invalid_argument("continuous batching runs the PagedAttention model: ATTENTION_BACKEND "
                                            "must be PA, got '" + v + "'");
            has_backend = true;
        }
    if (!has_backend)
        props.emplace_back("ATTENTION_BACKEND", "PA");
    return props;
}

}  // namespace

BatchingEngine::BatchingEngine(const std::string& models_path, const std::string& device,
                               std::vector<std::pair<std::string, std::string>> properties)
    : base_(std::make_unique<LLMEngine>(models_path, device, with_paged_attention(std::move(properties)))) {
    const SchedulerConfig* sched = base_->paged_scheduler();
    if (!sched)
        throw std::logic_error("the batching engine's model is not in the PagedAttention form");
    sched_ = *sched;
    if (sched_.max_num_seqs == 0)
        throw std::invalid_argument("SchedulerConfig max_num_seqs must be greater than 0");
    if (!sched_.dynamic_split_fuse && sched_.max_num_seqs > sched_.max_num_batched_tokens)
        throw std::invalid_argument("Max num batched tokens (" + std::to_string(sched_.max_num_batched_tokens) +
                                    ") must be greater or equal to max num sequences (" +
                                    std::to_string(sched_.max_num_seqs) + ")");
    ov::CompiledModel compiled = base_->compiled_model();
    req_ = compiled.create_infer_request();
    kv_ = std::make_unique<PagedKV>(compiled, req_, sched_.num_kv_blocks, sched_.cache_bytes);
    if (ov::CompiledModel one_token = base_->paged_one_token_form())
        kv_->attach_one_token(one_token);  // a request stepped alone runs on it (bit-identical logits)
    stats_.block_limit = kv_->block_limit();
    if (kv_->block_limit())
        kv_->reserve(kv_->block_limit());  // the whole fixed pool at once, as GenAI allocates it
    thread_ = std::thread([this] { loop(); });
}

BatchingEngine::~BatchingEngine() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable())
        thread_.join();
    auto end = [&](Request& r) {
        if (!r.finished)
            fail(r, "the pipeline was freed before the request finished");
    };
    for (auto& r : running_)
        end(*r);
    for (auto& r : waiting_)
        end(*r);
    for (auto& r : incoming_)
        end(*r);
    signal_.ring();  // the failures above; the signal's own end of file follows with the engine
}

// ---------------------------------------------------------------- requests

std::shared_ptr<RequestOutput> BatchingEngine::add(const std::string& prompt, bool templated,
                                                   const GenerationConfig* cfg_in) {
    GenerationConfig cfg = base_->resolve_config(cfg_in);
    std::vector<int64_t> ids;
    {
        std::lock_guard<std::mutex> lock(tok_mu_);
        PerfMetrics perf;
        if (templated) {
            ids = base_->encode_prompt(prompt, cfg, perf);
        } else {
            GenerationConfig plain = cfg;
            plain.apply_chat_template = false;
            ids = base_->encode_prompt(prompt, plain, perf);
        }
    }
    return enqueue(std::move(ids), std::move(cfg));
}

std::shared_ptr<RequestOutput> BatchingEngine::add_history(const ChatHistoryData& history,
                                                           const GenerationConfig* cfg_in) {
    GenerationConfig cfg = base_->resolve_config(cfg_in);
    std::vector<int64_t> ids;
    {
        std::lock_guard<std::mutex> lock(tok_mu_);
        PerfMetrics perf;
        ids = base_->encode_history(history, cfg, perf);
    }
    return enqueue(std::move(ids), std::move(cfg));
}

std::shared_ptr<RequestOutput> BatchingEngine::add_tokens(const std::vector<int64_t>& ids,
                                                          const GenerationConfig* cfg_in) {
    GenerationConfig cfg = base_->resolve_config(cfg_in);
    const size_t vocab = base_->vocab_size();
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || (vocab && static_cast<size_t>(ids[i]) >= vocab))
            throw std::invalid_argument("input token id " + std::to_string(ids[i]) + " at position " +
                                        std::to_string(i) + " is outside the model's vocabulary [0, " +
                                        std::to_string(vocab) + ")");
    return enqueue(ids, std::move(cfg));
}

std::shared_ptr<RequestOutput> BatchingEngine::enqueue(std::vector<int64_t> prompt, GenerationConfig cfg) {
    if (cfg.echo)
        throw std::invalid_argument("echo is not supported by continuous batching in the bundled backend");
    if (cfg.is_beam_search())
        throw std::invalid_argument("beam search (num_beams > 1) is not supported by continuous batching in the "
                                    "bundled backend; use LLMPipeline");
    if (cfg.num_return_sequences != 1)
        throw std::invalid_argument("num_return_sequences > 1 is not supported by continuous batching in the "
                                    "bundled backend; add one request per sequence");
    if (prompt.empty())
        throw std::invalid_argument("the prompt tokenized to zero tokens");
    cfg.check_prompt_length(prompt.size());
    const size_t context = base_->max_context();
    if (context && prompt.size() >= context)
        throw std::invalid_argument("the prompt has " + std::to_string(prompt.size()) +
                                    " tokens, which does not fit the model's context of " + std::to_string(context) +
                                    " tokens (config.json max_position_embeddings)");
    if (!sched_.dynamic_split_fuse && prompt.size() > sched_.max_num_batched_tokens)
        throw std::invalid_argument("Sequence length (" + std::to_string(prompt.size()) +
                                    ") is longer than max number of tokens in batch (" +
                                    std::to_string(sched_.max_num_batched_tokens) + ")");
    auto r = std::make_unique<Request>();
    r->out = std::make_shared<RequestOutput>();
    r->out->prompt_tokens = prompt.size();
    r->prompt = std::move(prompt);
    r->prompt_ids.insert(r->prompt.begin(), r->prompt.end());
    r->cfg = std::move(cfg);
    r->max_new = r->cfg.get_max_new_tokens(r->prompt.size());
    r->sampler.reseed(r->cfg.rng_seed);
    {
        std::lock_guard<std::mutex> lock(tok_mu_);
        for (auto& s : r->cfg.stop_strings)
            r->window = std::max(r->window, base_->tokenizer().encode(s, false).size());
    }
    r->hold = (!r->cfg.stop_strings.empty() && !r->cfg.include_stop_str_in_output) ? r->window : 0;
    RequestOutput* out = r->out.get();
    r->text = std::make_unique<TextStreamer>(base_->tokenizer(), [out](const std::string& piece) {
        std::lock_guard<std::mutex> lock(out->mu);
        out->text += piece;
        return StreamStatus::Running;
    });
    auto handle = r->out;
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_)
            throw std::runtime_error("the pipeline is being freed");
        incoming_.push_back(std::move(r));
    }
    cv_.notify_all();
    return handle;
}

void BatchingEngine::step_now() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        manual_ = true;
    }
    guarded_step();
}

bool BatchingEngine::has_unfinished() const {
    std::lock_guard<std::mutex> lock(mu_);
    return !incoming_.empty() || stats_.running || stats_.waiting;
}

BatchingStats BatchingEngine::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    BatchingStats s = stats_;
    s.waiting += incoming_.size();
    return s;
}

// ---------------------------------------------------------------- output

// Gives the reader the tokens beyond the hold-back window (all once finished), with their text.
void BatchingEngine::publish(Request& r) {
    const size_t limit = r.finished ? r.gen.size() : (r.gen.size() > r.hold ? r.gen.size() - r.hold : 0);
    std::vector<int64_t> fresh;
    while (r.given < limit)
        fresh.push_back(r.gen[r.given++]);
    const bool stream_text = r.out->wants_text.load();
    bool deferred = false;
    if (stream_text) {
        if (defer_text_ && !r.finished && r.given == r.streamed + 1) {
            r.text->push(r.gen[r.streamed++]);  // its text comes with the step's other requests' (flush_text)
            text_batch_.push_back(&r);
            deferred = true;
        } else {
            while (r.streamed < r.given)
                r.text->put(r.gen[r.streamed++]);  // appends to out->text under its lock
            if (r.finished)
                r.text->end();
        }
    }
    {
        std::lock_guard<std::mutex> lock(r.out->mu);
        r.out->tokens.insert(r.out->tokens.end(), fresh.begin(), fresh.end());
    }
    if (deferred)
        return;  // the reader is woken once the text is there too
    if (r.finished && !stream_text) {
        std::string all = base_->tokenizer().decode(r.gen.data(), r.given);
        std::lock_guard<std::mutex> lock(r.out->mu);
        r.out->text = std::move(all);
    }
    if (!fresh.empty() || r.finished)
        r.out->cv.notify_all();
}

// The text of the step's deferred tokens (publish): one detokenizer call for all of them, each streamer then going on
// as put() would have; their readers are woken last.
void BatchingEngine::flush_text() {
    if (text_batch_.empty())
        return;
    std::vector<Request*> batch;
    batch.swap(text_batch_);
    std::vector<const std::vector<int64_t>*> rows;
    rows.reserve(batch.size());
    for (Request* r : batch)
        rows.push_back(&r->text->pending());
    const std::vector<std::string> texts = base_->tokenizer().decode_batch(rows);
    for (size_t i = 0; i < batch.size(); ++i) {
        batch[i]->text->take(texts[i]);  // appends to out->text under its lock
        batch[i]->out->cv.notify_all();
    }
}

void BatchingEngine::finish(Request& r, GenerationStatus status) {
    r.finished = true;
    if (r.table.len || !r.table.blocks.empty())
        kv_->release_table(r.table);
    if (status != GenerationStatus::Cancel) {
        publish(r);  // everything left (a cancel drops what was held back, as GenAI drops its last tokens)
    } else if (!r.out->wants_text.load()) {
        std::string given = base_->tokenizer().decode(r.gen.data(), r.given);
        std::lock_guard<std::mutex> lock(r.out->mu);
        r.out->text = std::move(given);
    }
    {
        std::lock_guard<std::mutex> lock(r.out->mu);
        r.out->status = status;
        if (status == GenerationStatus::Stop && r.out->finish_reason == 0)
            r.out->finish_reason = 1;
    }
    r.out->cv.notify_all();
}

void BatchingEngine::fail(Request& r, const std::string& why) {
    r.finished = true;
    if (kv_ && (r.table.len || !r.table.blocks.empty()))
        kv_->release_table(r.table);
    {
        std::lock_guard<std::mutex> lock(r.out->mu);
        r.out->status = GenerationStatus::Ignored;
        r.out->error = why;
    }
    r.out->cv.notify_all();
}

// Trailing tokens to drop when the generated text ends in a stop string, -1 otherwise (the single-request
// engine's rule: a window of the longest stop string in tokens, trailing spaces / newlines of the kept text
// ignored).
long BatchingEngine::match_stop_string(const Request& r) const {
    const auto& gen = r.gen;
    if (r.cfg.stop_strings.empty() || gen.size() < r.window)
        return -1;
    std::vector<int64_t> buf(gen.end() - static_cast<long>(r.window), gen.end());
    Tokenizer& tok = base_->tokenizer();
    const std::string text = tok.decode(buf);
    for (auto& stop : r.cfg.stop_strings) {
        const auto pos = text.find(stop);
        if (pos == std::string::npos)
            continue;
        std::string kept = text.substr(0, pos + (r.cfg.include_stop_str_in_output ? stop.size() : 0));
        while (!kept.empty() && (kept.back() == ' ' || kept.back() == '\n'))
            kept.pop_back();
        size_t to_remove = buf.size();
        if (!kept.empty())
            for (size_t i = 0; i < buf.size(); ++i)
                if (tok.decode(buf.data(), i + 1).find(kept) != std::string::npos) {
                    to_remove = buf.size() - i - 1;
                    break;
                }
        return static_cast<long>(to_remove);
    }
    return -1;
}

void BatchingEngine::accept(Request& r, const SampledToken& tok) {
    r.gen.push_back(tok.id);
    r.counts[tok.id]++;
    const size_t g = r.gen.size();
    int reason = 0;
    if (!r.cfg.ignore_eos && r.cfg.stop_token_ids.count(tok.id)) {
        reason = 1;
    } else {
        const size_t context = base_->max_context();
        if (g >= r.max_new || (context && r.prompt.size() + g >= context))
            reason = 2;
        const long cut = match_stop_string(r);
        if (cut >= 0) {
            r.gen.resize(r.gen.size() - std::min(static_cast<size_t>(cut), r.gen.size()));
            reason = 1;
        }
    }
    {
        std::lock_guard<std::mutex> lock(r.out->mu);
        r.out->score += tok.log_prob;
        r.out->log_probs.push_back(tok.log_prob);
        if (reason)
            r.out->finish_reason = reason;
    }
    if (reason)
        finish(r, GenerationStatus::Finished);
    else
        publish(r);
}

// ---------------------------------------------------------------- the step loop

bool BatchingEngine::take_requests(std::unique_lock<std::mutex>& lock) {
    cv_.wait(lock, [&] { return stop_ || (!manual_ && (!incoming_.empty() || stats_.running || stats_.waiting)); });
    return !stop_;
}

void BatchingEngine::loop() noexcept {
    while (true) {
        {
            std::unique_lock<std::mutex> lock(mu_);
            if (!take_requests(lock))
                return;
        }
        guarded_step();
    }
}

void BatchingEngine::guarded_step() noexcept {
    std::lock_guard<std::mutex> step_lock(step_mu_);
    {
        std::lock_guard<std::mutex> lock(mu_);
        while (!incoming_.empty()) {
            waiting_.push_back(std::move(incoming_.front()));
            incoming_.pop_front();
        }
    }
    try {
        step();
    } catch (const std::exception& e) {
        // the inference itself failed: every admitted request ends with the error
        for (auto& r : running_)
            if (!r->finished)
                fail(*r, e.what());
        running_.clear();
    } catch (...) {
        for (auto& r : running_)
            if (!r->finished)
                fail(*r, "unknown error in the batching step");
        running_.clear();
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.running = running_.size();
        stats_.waiting = waiting_.size();
        stats_.used_blocks = kv_->used_blocks();
    }
    signal_.ring();  // after the step's outputs and the counters: an event loop wakes to read them
}

// Prefix caching between running requests (SchedulerConfig enable_prefix_caching, GenAI's default): a new
// request's prompt starts from the longest prefix that an admitted request has already computed (its tokens, cached
// in blocks it will not write again), down to the token — GenAI's prefix cache matches whole blocks (32 tokens on
// CPU), which leaves e.g. a shared system prompt shorter than a block prefilled again by every request. The
// shared blocks are reference-counted; a partly used last block is copied on the first write. At least
// kMinShared tokens (less is not worth the copy). Returns the tokens taken.
size_t BatchingEngine::share_prefix(Request& r) {
    constexpr size_t kMinShared = 8;
    if (!sched_.enable_prefix_caching || r.table.len || !r.table.blocks.empty() || r.prompt.size() <= kMinShared)
        return 0;
    const size_t bs = kv_->block_size();
    const Request* donor = nullptr;
    size_t best = 0;
    for (auto& o : running_) {
        if (o->finished || o.get() == &r)
            continue;
        // its full blocks only (it writes its next tokens into a partly used last block), and r feeds >= 1 token
        const size_t limit = std::min((o->table.len / bs) * bs, r.prompt.size() - 1);
        if (limit <= best)
            continue;
        size_t n = 0;
        while (n < limit && o->token_at(n) == r.prompt[n])
            ++n;
        if (n > best) {
            best = n;
            donor = o.get();
        }
    }
    if (!donor || best < kMinShared)
        return 0;
    kv_->share_prefix(donor->table, best, r.table);
    return best;
}

// One inference: the running requests' next tokens (decodes first, then unfinished prompts in admission order),
// then new requests' prompts while the token budget (max_num_batched_tokens), max_num_seqs and the KV pool allow.
bool BatchingEngine::step() {
    // handles' cancel / stop requests, seen between steps (so within one token)
    auto take_request = [&](Request& r) -> bool {
        const int asked = r.out->requested.load();
        if (!asked)
            return false;
        std::lock_guard<std::mutex> tl(tok_mu_);
        finish(r, asked == 4 ? GenerationStatus::Stop : GenerationStatus::Cancel);
        return true;
    };
    for (auto& r : running_)
        take_request(*r);
    for (auto& r : waiting_)
        take_request(*r);
    running_.erase(std::remove_if(running_.begin(), running_.end(), [](auto& r) { return r->finished; }),
                   running_.end());
    waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), [](auto& r) { return r->finished; }),
                   waiting_.end());
    if (running_.empty() && waiting_.empty())
        return false;

    struct Slot {
        Request* r;
        size_t n;     // tokens fed
        size_t need;  // new blocks reserved
    };
    constexpr size_t kNoLimit = std::numeric_limits<size_t>::max();
    std::vector<Slot> batch;
    size_t budget = sched_.max_num_batched_tokens;
    size_t blocks = kv_->blocks_available();
    auto reserve = [&](Request& r, size_t n) -> bool {
        const size_t need = kv_->blocks_needed(r.table, n);
        if (need > blocks)
            return false;
        if (blocks != kNoLimit)
            blocks -= need;
        budget -= n;
        batch.push_back({&r, n, need});
        return true;
    };
    // Takes back the KV blocks of running_[j] (out of this step if it was in it); it waits at the front of the
    // queue and is recomputed later (its prompt and tokens fed again).
    auto evict = [&](size_t j) {
        Request* v = running_[j].get();
        for (size_t k = 0; k < batch.size(); ++k)
            if (batch[k].r == v) {
                if (blocks != kNoLimit)
                    blocks += batch[k].need;
                budget += batch[k].n;
                batch.erase(batch.begin() + static_cast<long>(k));
                break;
            }
        const size_t freed = v->table.blocks.size();
        kv_->release_table(v->table);
        if (blocks != kNoLimit)
            blocks += freed;
        waiting_.push_front(std::move(running_[j]));
        running_.erase(running_.begin() + static_cast<long>(j));
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.preempted;
    };
    const std::string too_large =
        "the request was dropped because it did not fit in the KV cache: it needs more than " +
        std::to_string(kv_->block_limit()) + " blocks of " + std::to_string(kv_->block_size()) +
        " tokens (SchedulerConfig num_kv_blocks / cache_size). Increase cache_size / num_kv_blocks, or reduce the "
        "prompt or generation length";

    // 1. decodes, in admission order; when the pool is full the latest admitted request gives its blocks back
    for (size_t i = 0; i < running_.size(); ++i) {
        Request& r = *running_[i];
        if (r.pending() != 1 || budget == 0)
            continue;
        while (!reserve(r, 1)) {
            if (running_.size() == 1) {
                std::lock_guard<std::mutex> tl(tok_mu_);
                fail(r, too_large);
                break;
            }
            const bool self = running_.back().get() == &r;
            evict(running_.size() - 1);
            if (self)
                break;
        }
    }
    running_.erase(std::remove_if(running_.begin(), running_.end(), [](auto& r) { return r->finished; }),
                   running_.end());
    // 2. prompts already admitted, then 3. new ones
    auto schedule_prompt = [&](Request& r) -> bool {
        const size_t pending = r.pending();
        size_t n = std::min(pending, budget);
        if (n == 0 || (!sched_.dynamic_split_fuse && n < pending))
            return false;
        if (blocks != std::numeric_limits<size_t>::max()) {
            // as many tokens as the free blocks hold (a chunk with split-fuse; the whole prompt or nothing without)
            const size_t room = blocks * kv_->block_size() +
                                (r.table.blocks.size() * kv_->block_size() - r.table.len);
            if (room < n) {
                if (!sched_.dynamic_split_fuse || room == 0)
                    return false;
                n = room;
            }
        }
        return reserve(r, n);
    };
    for (auto& rp : running_)
        if (rp->pending() > 1)
            schedule_prompt(*rp);
    while (!waiting_.empty() && running_.size() < sched_.max_num_seqs && budget > 0) {
        Request& r = *waiting_.front();
        const size_t reused = share_prefix(r);
        if (!schedule_prompt(r)) {
            if (reused)
                kv_->release_table(r.table);  // waits with no blocks held
            break;
        }
        {
            std::lock_guard<std::mutex> lock(mu_);
            stats_.prompt_tokens += r.prompt.size();
            stats_.reused_tokens += reused;
        }
        running_.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
    }
    if (batch.empty()) {
        // nothing fits the KV pool: free the latest request's blocks (recomputed later), or fail it when alone
        if (running_.size() > 1) {
            evict(running_.size() - 1);
        } else if (running_.size() == 1) {
            std::lock_guard<std::mutex> tl(tok_mu_);
            fail(*running_.front(), too_large);
            running_.clear();
        } else if (!waiting_.empty()) {
            // alone and still too large for the whole pool
            std::lock_guard<std::mutex> tl(tok_mu_);
            fail(*waiting_.front(), too_large);
            waiting_.pop_front();
        }
        return false;
    }

    // inputs: each slot's next n tokens
    std::vector<PagedKV::Table*> tables;
    std::vector<std::vector<int64_t>> ids(batch.size());
    std::vector<const int64_t*> ptrs;
    std::vector<size_t> counts;
    for (size_t b = 0; b < batch.size(); ++b) {
        Request& r = *batch[b].r;
        for (size_t i = 0; i < batch[b].n; ++i)
            ids[b].push_back(r.token_at(r.table.len + i));
        tables.push_back(&r.table);
        ptrs.push_back(ids[b].data());
        counts.push_back(batch[b].n);
    }
    kv_->prepare_tables(tables, ptrs, counts);
    ov::InferRequest& req = kv_->step_request();
    req.start_async();
    req.wait();
    {
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.steps;
        if (batch.size() >= 2)
            ++stats_.shared_steps;
        stats_.max_batch = std::max(stats_.max_batch, batch.size());
    }

    // sample the requests whose fed tokens reached their end (the logits row b is slot b's last token)
    ov::Tensor logits = req.get_tensor("logits");
    const ov::Shape shape = logits.get_shape();
    if (shape.size() < 2)
        throw std::runtime_error("unexpected logits rank");
    const size_t vocab = shape.back();
    const size_t per_row = shape.size() == 3 ? shape[1] : 1;
    std::lock_guard<std::mutex> tl(tok_mu_);
    // the streamed text of this step's tokens is decoded once for all requests after sampling; a failure on the way
    // leaves nothing deferred behind (the step's error then ends every request)
    struct TextDeferral {
        BatchingEngine& e;
        explicit TextDeferral(BatchingEngine& engine) : e(engine) { e.defer_text_ = true; }
        ~TextDeferral() {
            e.defer_text_ = false;
            e.text_batch_.clear();
        }
    } deferral(*this);
    for (size_t b = 0; b < batch.size(); ++b) {
        Request& r = *batch[b].r;
        if (r.finished || r.pending() != 0)
            continue;
        const size_t offset = (b * per_row + (per_row - 1)) * vocab;
        float* row = nullptr;
        if (logits.get_element_type() == ov::element::f32) {
            row = logits.data<float>() + offset;
        } else {
            row_buf_.resize(vocab);
            if (logits.get_element_type() == ov::element::f16) {
                const auto* h = logits.data<ov::float16>() + offset;
                for (size_t i = 0; i < vocab; ++i)
                    row_buf_[i] = static_cast<float>(h[i]);
            } else if (logits.get_element_type() == ov::element::bf16) {
                const auto* h = logits.data<ov::bfloat16>() + offset;
                for (size_t i = 0; i < vocab; ++i)
                    row_buf_[i] = static_cast<float>(h[i]);
            } else {
                throw std::runtime_error("unsupported logits element type");
            }
            row = row_buf_.data();
        }
        static const std::vector<int64_t> no_context;
        const GenerationConfig& cfg = r.cfg;
        const bool penalties = cfg.min_new_tokens > 0 || cfg.repetition_penalty != 1.0f ||
                               cfg.presence_penalty != 0.0f || cfg.frequency_penalty != 0.0f;
        const GreedyLogProb logprob(row, vocab, cfg, penalties);
        if (penalties)
            Sampler::process(row, vocab, cfg, r.prompt_ids, no_context, r.counts, r.gen.size());
        const SampledToken tok = cfg.is_multinomial() ? r.sampler.multinomial(row, vocab, cfg, 1)[0]
                                                      : logprob.score(Sampler::greedy(row, vocab), row);
        accept(r, tok);
    }
    flush_text();
    running_.erase(std::remove_if(running_.begin(), running_.end(), [](auto& r) { return r->finished; }),
                   running_.end());
    return true;
}

}  // namespace ovgc
