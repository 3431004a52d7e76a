// The Whisper engine behind ov_genai_whisper_pipeline: model folder loading (encoder, stateful decoder, tokenizer,
// generation_config.json, preprocessor_config.json, config.json), then GenAI's whisper_generate: log-mel features,
// 30 s windows (long-form audio advances by the last timestamp), language detection on multilingual models,
// greedy or multinomial decoding with Whisper's logit rules, segments -> chunks, perf metrics.
#pragma once

#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/perf_metrics.hpp"
#include "engine/sampler.hpp"
#include "engine/text_streamer.hpp"
#include "engine/tokenizer.hpp"
#include "engine/whisper/decoder.hpp"
#include "engine/whisper/encoder.hpp"
#include "engine/whisper/feature_extractor.hpp"
#include "engine/whisper/whisper_generation_config.hpp"
#include "engine/whisper/word_timestamps.hpp"

namespace ovgc {

struct WhisperChunk {
    float start_ts = 0.0f;
    float end_ts = -1.0f;  // -1: the model gave no closing timestamp
    std::string text;
};

// Whisper's own durations (microseconds), beside the common PerfMetrics.
struct WhisperRawPerf {
    std::vector<float> features_extraction_us;
    std::vector<float> encode_inference_us;
    std::vector<float> decode_inference_us;
    std::vector<float> word_level_timestamps_us{0.0f};  // one sum over the windows (0 without word timestamps)
};

// Stops a pipeline's running transcription from another thread (the bundled backend's extra; GenAI's C ABI has no
// cancellation for Whisper). Shared by the engine and every handle the C API gave out, so a handle outlives the
// pipeline safely. Only a running transcription is stopped: nothing is remembered for a later one.
class WhisperCancelSwitch {
public:
    // true when a transcription was running (it stops at its next decoder step or window)
    bool request() {
        std::lock_guard<std::mutex> lock(mu_);
        if (!running_)
            return false;
        requested_.store(true, std::memory_order_relaxed);
        return true;
    }
    bool requested() const { return requested_.load(std::memory_order_relaxed); }

    // A transcription's span: cleared at its start and end.
    class Running {
    public:
        explicit Running(WhisperCancelSwitch& s) : s_(s) { s_.set_running(true); }
        ~Running() { s_.set_running(false); }
        Running(const Running&) = delete;
        Running& operator=(const Running&) = delete;

    private:
        WhisperCancelSwitch& s_;
    };

private:
    void set_running(bool running) {
        std::lock_guard<std::mutex> lock(mu_);
        running_ = running;
        requested_.store(false, std::memory_order_relaxed);
    }
    std::mutex mu_;
    bool running_ = false;
    std::atomic<bool> requested_{false};
};

// Where a transcription streams to (the bundled backend's extra; GenAI's C ABI streams no Whisper text): token ids,
// else text by GenAI's TextStreamer rules. GenAI's order: without timestamps each decoder step's token as it is
// sampled, with timestamps (and for audio longer than one window) each window's text tokens once it is decoded;
// end() when the transcription is over. A status other than Running stops it as GenAI's handle does: the result keeps
// what was decoded (the step already under way included, as GenAI's overlapped inference samples it).
struct WhisperStreamTarget {
    std::function<StreamStatus(const int64_t* ids, size_t n)> tokens;  // set: ids go here (text is ignored)
    TextStreamer::Callback text;
};

struct WhisperResults {
    std::vector<std::string> texts;
    std::vector<float> scores;
    std::string language;  // "en", detected or given
    std::optional<std::vector<WhisperChunk>> chunks;  // set when return_timestamps was asked for
    std::optional<std::vector<WhisperWord>> words;    // set when word_timestamps was asked for (and a window ended)
    PerfMetrics perf;
    WhisperRawPerf whisper_perf;
    std::string to_string() const;
};

class WhisperEngine {
public:
    WhisperEngine(const std::string& models_path, const std::string& device,
                  const std::vector<std::pair<std::string, std::string>>& properties);

    // pcm: float32 mono at the feature extractor's sampling rate. cfg NULL: the pipeline's config. stream: NULL, or
    // where the transcription streams to.
    WhisperResults generate(const float* pcm, size_t n, const WhisperGenerationConfig* cfg,
                            const WhisperStreamTarget* stream = nullptr);

    const WhisperGenerationConfig& generation_config() const { return config_; }
    void set_generation_config(const WhisperGenerationConfig& cfg);
    const std::shared_ptr<WhisperCancelSwitch>& cancel_switch() const { return cancel_; }

private:
    void throw_if_cancelled() const;  // StatusError INFER_CANCELLED once the cancel switch was pulled
    class Stream;
    struct Window {
        std::vector<int64_t> tokens;
        bool stopped = false;  // the streamer asked to stop
    };
    // stream: per-step streaming (no timestamps), else NULL
    Window decode_window(const ov::Tensor& encoder_out, const std::vector<int64_t>& prompt,
                         const WhisperGenerationConfig& cfg, bool return_timestamps, PerfMetrics& perf,
                         WhisperRawPerf& wperf, float& inference_us, Stream* stream);
    Window decode_window_beams(const ov::Tensor& encoder_out, const std::vector<int64_t>& prompt,
                               const WhisperGenerationConfig& cfg, bool return_timestamps, PerfMetrics& perf,
                               WhisperRawPerf& wperf, float& inference_us);
    std::pair<std::vector<int64_t>, std::string> start_tokens(const ov::Tensor& encoder_out,
                                                              const WhisperGenerationConfig& cfg,
                                                              float& inference_us);

    std::unique_ptr<Tokenizer> tokenizer_;
    std::unique_ptr<WhisperFeatureExtractor> features_;
    std::unique_ptr<WhisperEncoder> encoder_;
    std::unique_ptr<WhisperDecoder> decoder_;
    WhisperGenerationConfig config_;
    Sampler sampler_;
    size_t max_source_positions_ = 1500;
    float load_time_ms_ = 0.0f;
    std::shared_ptr<WhisperCancelSwitch> cancel_ = std::make_shared<WhisperCancelSwitch>();
};

}  // namespace ovgc
