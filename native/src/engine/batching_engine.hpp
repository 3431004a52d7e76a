// Continuous batching over one compiled PagedAttention model: concurrent requests share decode steps. Each
// request owns a block table in one PagedKV pool; one native thread (owned by the engine) runs the step loop:
// it schedules the decodes of the running requests and the prompts of new ones (chunked by
// SchedulerConfig max_num_batched_tokens) into one inference (a new prompt's prefix that a running request has
// already computed is shared, not prefilled again: enable_prefix_caching), samples each request with its own config and
// random generator, applies its stop rules and hands its tokens and text to its RequestOutput.
// Facts from GenAI's ContinuousBatchingPipeline (statuses, finish reasons, scheduler limits); our own scheduler.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <openvino/openvino.hpp>

#include "engine/generation_config.hpp"
#include "engine/llm_engine.hpp"
#include "engine/paged_backend.hpp"
#include "engine/paged_kv.hpp"
#include "engine/sampler.hpp"
#include "engine/step_signal.hpp"
#include "engine/text_streamer.hpp"

namespace ovgc {

// GenAI's GenerationStatus values.
enum class GenerationStatus { Running = 0, Finished = 1, Ignored = 2, Cancel = 3, Stop = 4 };

// One request's output as its reader sees it. The step thread writes, the handle's owner reads; every field
// under `mu`.
struct RequestOutput {
    mutable std::mutex mu;
    std::condition_variable cv;  // notified when tokens, text or the status change
    GenerationStatus status = GenerationStatus::Running;
    std::vector<int64_t> tokens;  // generated ids given out so far (stop-string hold-back applied)
    std::vector<float> log_probs;
    size_t tokens_read = 0;  // read cursor over tokens
    std::string text;        // streamed text (TextStreamer chunks) of tokens
    size_t text_read = 0;    // read cursor over text
    float score = 0.0f;      // sum of log-probabilities of the generated tokens
    int finish_reason = 0;   // GenerationFinishReason: 0 NONE, 1 STOP, 2 LENGTH
    std::string error;       // why an IGNORED request failed
    size_t prompt_tokens = 0;
    // set by the handle's first read_text: the step thread streams text from then on (catching up); without it
    // the text is decoded once when the request ends (no detokenisation per token)
    std::atomic<bool> wants_text{false};
    // set by the handle: 0 nothing, 3 cancel (tokens not yet read are dropped), 4 stop (finish now, keep all)
    std::atomic<int> requested{0};

    bool done() const { return status != GenerationStatus::Running; }
};

struct BatchingStats {
    size_t steps = 0;          // inferences run
    size_t shared_steps = 0;   // inferences that served two or more requests
    size_t max_batch = 0;      // most requests in one inference
    size_t running = 0;        // requests admitted (prefill or decode)
    size_t waiting = 0;        // requests queued, not admitted
    size_t used_blocks = 0;    // KV blocks in use
    size_t block_limit = 0;    // 0: the pool grows on demand
    size_t preempted = 0;      // requests whose blocks were taken back (recomputed later)
    size_t prompt_tokens = 0;  // prompt tokens admitted (a recomputed request's again)
    size_t reused_tokens = 0;  // of them, taken from another running request's KV cache (not prefilled)
};

class BatchingEngine {
public:
    // The model folder and properties as LLMEngine takes them; the PagedAttention form is required.
    BatchingEngine(const std::string& models_path, const std::string& device,
                   std::vector<std::pair<std::string, std::string>> properties);
    ~BatchingEngine();
    BatchingEngine(const BatchingEngine&) = delete;
    BatchingEngine& operator=(const BatchingEngine&) = delete;

    // Queues a request. templated: the prompt is encoded as a plain generate() call does (the config's
    // apply_chat_template rule); else as GenAI's add_request(prompt) (as it is, special tokens added).
    std::shared_ptr<RequestOutput> add(const std::string& prompt, bool templated, const GenerationConfig* cfg);
    std::shared_ptr<RequestOutput> add_history(const ChatHistoryData& history, const GenerationConfig* cfg);
    std::shared_ptr<RequestOutput> add_tokens(const std::vector<int64_t>& ids, const GenerationConfig* cfg);
    // GenAI's step(): the first call hands the stepping to the caller for good (the step thread then idles);
    // runs one step on the calling thread. has_unfinished: requests queued or running.
    void step_now();
    bool has_unfinished() const;
    BatchingStats stats() const;
    // Readable after every step (its outputs published first); end of file once the engine is gone (see
    // StepSignal). Owned by the engine.
    int event_fd() const { return signal_.read_fd(); }
    const GenerationConfig& generation_config() const { return base_->generation_config(); }

private:
    struct Request;
    std::shared_ptr<RequestOutput> enqueue(std::vector<int64_t> prompt, GenerationConfig cfg);
    void loop() noexcept;
    bool step();  // false: nothing could run
    void guarded_step() noexcept;  // step() under step_mu_, its failures given to the requests
    void finish(Request& r, GenerationStatus status);
    void fail(Request& r, const std::string& why);
    void publish(Request& r);
    void flush_text();
    void accept(Request& r, const SampledToken& tok);
    long match_stop_string(const Request& r) const;
    bool take_requests(std::unique_lock<std::mutex>& lock);
    size_t share_prefix(Request& r);

    std::unique_ptr<LLMEngine> base_;  // model folder, tokenizer, chat template, default config
    SchedulerConfig sched_;
    ov::InferRequest req_;
    std::unique_ptr<PagedKV> kv_;
    mutable std::mutex tok_mu_;  // the tokenizer (encode on callers' threads, decode on the step thread)

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::unique_ptr<Request>> incoming_;
    bool stop_ = false;
    bool manual_ = false;   // step_now() was called: the step thread no longer steps
    std::mutex step_mu_;    // one step at a time (the step thread's or step_now's)
    BatchingStats stats_;  // under mu_

    // step thread only
    std::vector<std::unique_ptr<Request>> running_;  // in admission order
    std::deque<std::unique_ptr<Request>> waiting_;
    std::vector<float> row_buf_;
    // During a step's sampling: the requests whose one new token's text waits for the step's single detokenizer
    // call (flush_text), instead of one call per request.
    bool defer_text_ = false;
    std::vector<Request*> text_batch_;
    StepSignal signal_;  // declared before thread_: it outlives the step thread
    std::thread thread_;
};

}  // namespace ovgc
