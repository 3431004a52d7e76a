// The LLM engine behind ov_genai_llm_pipeline: model folder loading, chat template, KV-cache-reusing chat,
// the decode loop, stop rules, streaming and perf metrics. The attention form (stateful SDPA or PagedAttention)
// is an AttentionBackend (attention_backend.hpp) chosen at load.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <openvino/openvino.hpp>

#include "engine/attention_backend.hpp"
#include "engine/generation_config.hpp"
#include "engine/perf_metrics.hpp"
#include "engine/sampler.hpp"
#include "engine/text_streamer.hpp"
#include "engine/tokenizer.hpp"
#include "json/json.hpp"

namespace ovgc {

class ChatTemplate;
struct SchedulerConfig;

struct DecodedResults {
    std::vector<std::string> texts;
    std::vector<std::vector<int64_t>> tokens;  // generated token ids of each sequence (texts[i] decodes tokens[i])
    std::vector<float> scores;
    std::vector<int> finish_reasons;  // GenAI's GenerationFinishReason per sequence: 0 NONE, 1 STOP, 2 LENGTH
    PerfMetrics perf;
    std::string to_string() const;
};

struct ChatHistoryData {
    JsonValue messages = JsonValue::array();
    JsonValue tools = JsonValue::array();
    JsonValue extra_context = JsonValue::object();
};

using StreamCallback = std::function<StreamStatus(const std::string&)>;
using TokenCallback = std::function<StreamStatus(const int64_t* ids, size_t n)>;

class LLMEngine {
public:
    LLMEngine(const std::string& models_path, const std::string& device,
              const std::vector<std::pair<std::string, std::string>>& properties);
    ~LLMEngine();

    DecodedResults generate(const std::string& prompt, const GenerationConfig* cfg, const StreamCallback* streamer);
    DecodedResults generate_with_history(const ChatHistoryData& history, const GenerationConfig* cfg,
                                         const StreamCallback* streamer);
    // The prompt as token ids, used as they are (no template, no special tokens added); outside a chat only.
    DecodedResults generate_tokens(const std::vector<int64_t>& ids, const GenerationConfig* cfg,
                                   const StreamCallback* streamer);
    void start_chat();
    void finish_chat();

    const GenerationConfig& generation_config() const { return config_; }
    void set_generation_config(const GenerationConfig& cfg);
    // false: the streamer gets an empty string per token (cancellation checks only, no detokenisation)
    void set_stream_text(bool on) { stream_text_ = on; }
    // set: a streaming call gives each generated token id to this instead of text to the StreamCallback
    void set_token_streamer(TokenCallback cb) { token_streamer_ = std::move(cb); }

    // ---- what the batching engine (batching_engine.*) shares: it runs its own requests over this engine's
    // compiled model, tokenizer, chat template and configuration
    // The prompt's tokens as a plain (non-chat) generate call makes them: the chat template when the config
    // applies it and the model has one, else the text with the tokenizer's special tokens.
    std::vector<int64_t> encode_prompt(const std::string& prompt, const GenerationConfig& cfg, PerfMetrics& perf);
    // A chat history's tokens as generate_with_history makes them (the template over messages, tools, extra
    // context), without touching this engine's chat state.
    std::vector<int64_t> encode_history(const ChatHistoryData& history, const GenerationConfig& cfg, PerfMetrics& perf);
    GenerationConfig resolve_config(const GenerationConfig* cfg) const { return resolve(cfg); }
    Tokenizer& tokenizer() { return *tokenizer_; }
    ov::CompiledModel compiled_model() { return req_.get_compiled_model(); }
    const SchedulerConfig* paged_scheduler() const;  // nullptr: the engine runs SDPA
    ov::CompiledModel paged_one_token_form() const;  // PagedKV::one_token_form compiled; empty without it
    // Inferences run so far on the PA one-token form and on the main form (SDPA: {0, 0}).
    std::pair<size_t, size_t> form_steps() const { return backend_->form_steps(); }
    size_t max_context() const { return max_context_; }
    size_t vocab_size() const { return vocab_size_; }
    bool has_draft_model() const { return draft_ != nullptr; }

    // ---- as a draft model (speculative decoding, the `OVGENAI_C_DRAFT_MODEL` create property of the main engine)
    // Up to `max_n` greedy tokens that would follow `text`: the cache is first brought to `text` (its common prefix
    // with what is cached kept, the rest fed), then one token per step. With `confidence` > 0 the drafting also
    // ends after a token whose probability is below it (that token is still proposed, as GenAI's draft does).
    // The cache keeps `text` and every proposed token but the last, so the next call feeds only what is new.
    // Each inference's duration and the tokens it fed go to `raw` (draft_infer_us, draft_fed).
    const std::vector<int64_t>& draft_tokens(const std::vector<int64_t>& text, size_t max_n, float confidence,
                                             RawPerf& raw);

private:
    enum class ChatInput { Undef, String, History };
    struct RunResult {
        std::vector<std::vector<int64_t>> tokens;
        std::vector<float> scores;
        std::vector<int> finish_reasons;
        StreamStatus status = StreamStatus::Running;
    };

    GenerationConfig resolve(const GenerationConfig* cfg) const;
    std::string render(const JsonValue& messages, const JsonValue* tools, const JsonValue* extra, PerfMetrics& perf);
    DecodedResults echo_only(const std::vector<int64_t>& full, const StreamCallback* streamer, Clock::time_point start,
                             Clock::time_point encode_stop, PerfMetrics perf);
    DecodedResults run_chat_tokens(std::vector<int64_t> full_tokens, const GenerationConfig& cfg,
                                   const StreamCallback* streamer, Clock::time_point start, PerfMetrics perf);
    RunResult decode_loop(const std::vector<int64_t>& full, size_t cached, const GenerationConfig& cfg,
                          const StreamCallback* streamer, PerfMetrics& perf);
    void reset_kv();
    void trim_kv(size_t keep);
    void load_draft_model(const std::string& spec);  // the OVGENAI_C_DRAFT_MODEL property's JSON
    // the last inference's logits for the last token it fed: argmax, and its probability when `prob` is set
    int64_t last_argmax(float* prob);
    void check_supported(const GenerationConfig& cfg, bool streaming) const;

    ov::InferRequest req_;
    std::unique_ptr<AttentionBackend> backend_;  // StatefulBackend (SDPA) or PagedBackend (PA); bound to req_
    std::unique_ptr<Tokenizer> tokenizer_;
    std::unique_ptr<ChatTemplate> template_;
    std::string template_error_;
    GenerationConfig config_;
    Sampler sampler_;
    float load_time_ms_ = 0.0f;
    size_t max_context_ = 0;  // 0: unknown

    bool chat_ = false;
    ChatInput chat_input_ = ChatInput::Undef;
    JsonValue history_ = JsonValue::array();
    std::vector<int64_t> kv_tokens_;  // exactly the tokens whose keys/values are in the model state
    size_t kv_batch_ = 1;
    bool stream_text_ = true;
    TokenCallback token_streamer_;
    size_t vocab_size_ = 0;  // 0: unknown (dynamic logits dimension)
    bool prompt_lookup_ = false;  // the `prompt_lookup` create property (prompt_lookup.hpp; selects PA, as GenAI)
    std::unique_ptr<LLMEngine> draft_;  // speculative decoding's draft model (selects PA, as GenAI); null: none
    std::vector<int64_t> drafted_;      // draft_tokens' result
};

}  // namespace ovgc
