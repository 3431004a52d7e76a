#include "engine/whisper/whisper_engine.hpp"
#include "engine/decoded_texts.hpp"

#include <algorithm>
#include <exception>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "engine/beam_search.hpp"
#include "engine/errors.hpp"
#include "engine/openvino_core.hpp"
#include "engine/whisper/context_tokens.hpp"
#include "engine/whisper/logits_processor.hpp"
#include "engine/whisper/segments.hpp"
#include "json/json.hpp"

namespace ovgc {

namespace {

struct Timer {
    Clock::time_point t0 = Clock::now();
    float us() const { return PerfMetrics::us_between(t0, Clock::now()); }
};

// Empties the decoder's state when a transcription ends by an exception (cancelled, or failed) in the middle of a
// window: what it had decoded must not seed the next call.
class ResetDecoderOnThrow {
public:
    explicit ResetDecoderOnThrow(WhisperDecoder& decoder) : decoder_(decoder) {}
    ~ResetDecoderOnThrow() {
        if (std::uncaught_exceptions() > exceptions_) {
            try {
                decoder_.reset();
            } catch (...) {  // the exception in flight is the one to report
            }
        }
    }
    ResetDecoderOnThrow(const ResetDecoderOnThrow&) = delete;
    ResetDecoderOnThrow& operator=(const ResetDecoderOnThrow&) = delete;

private:
    WhisperDecoder& decoder_;
    const int exceptions_ = std::uncaught_exceptions();
};

size_t read_max_source_positions(const std::string& config_json) {
    std::ifstream f(config_json, std::ios::binary);
    if (!f)
        return 1500;
    std::ostringstream ss;
    ss << f.rdbuf();
    const JsonValue j = json_parse(ss.str());
    if (const JsonValue* v = j.find("max_source_positions"); v && v->is_int() && v->as_int() > 0)
        return static_cast<size_t>(v->as_int());
    return 1500;
}

// One decoder inference of a window, in the metrics as GenAI records it: its duration (overall, per token, Whisper's
// decode stage), its end time and its batch (the running beams).
void record_decoder_step(PerfMetrics& perf, WhisperRawPerf& wperf, float& inference_us, Clock::time_point start,
                         size_t batch) {
    const auto end = Clock::now();
    const float us = PerfMetrics::us_between(start, end);
    inference_us += us;
    perf.raw.token_infer_us.push_back(us);
    perf.raw.token_times.push_back(end);
    perf.raw.batch_sizes.push_back(batch);
    wperf.decode_inference_us.push_back(us);
}

// A logits row as log-probabilities, in place (GenAI normalises each row so before Whisper's masks in a beam search;
// its sum in double)
void to_log_probs(float* row, size_t vocab) {
    const float top = *std::max_element(row, row + vocab);
    double sum = 0.0;
    for (size_t i = 0; i < vocab; ++i)
        sum += std::exp(static_cast<double>(row[i]) - top);
    const float log_sum = static_cast<float>(std::log(sum)) + top;
    for (size_t i = 0; i < vocab; ++i)
        row[i] -= log_sum;
}

// Keeps the first `offset` entries and then only those inside `ranges` (relative to offset): GenAI drops the
// per-token metrics of tokens that ended up outside every segment.
template <typename T>
void keep_ranges(std::vector<T>& v, size_t offset, const std::vector<std::pair<size_t, size_t>>& ranges) {
    if (!ranges.empty() && v.size() < offset + ranges.back().second)
        return;
    std::vector<T> out(v.begin(), v.begin() + std::min(offset, v.size()));
    for (auto [b, e] : ranges)
        out.insert(out.end(), v.begin() + offset + b, v.begin() + offset + e);
    v = std::move(out);
}

}  // namespace

// One transcription's streaming: token ids to the target's callback, or text through GenAI's TextStreamer rules.
class WhisperEngine::Stream {
public:
    Stream(const WhisperStreamTarget& target, Tokenizer& tokenizer) : target_(target) {
        if (!target_.tokens)
            text_.emplace(tokenizer, target_.text);
    }
    // GenAI's streamer->write(ids): several ids at once are cached and decoded as one write (TextStreamer)
    StreamStatus write(const int64_t* ids, size_t n) {
        if (target_.tokens)
            return target_.tokens(ids, n);
        if (n == 0)
            return StreamStatus::Running;
        text_->push_undecoded(std::vector<int64_t>(ids, ids + n - 1));
        return text_->put(ids[n - 1]);
    }
    void end() {
        if (text_)
            text_->end();  // (its status no longer matters, as GenAI's end() returns none)
    }

private:
    const WhisperStreamTarget& target_;
    std::optional<TextStreamer> text_;
};

std::string WhisperResults::to_string() const { return decoded_texts_string(texts, scores); }

WhisperEngine::WhisperEngine(const std::string& models_path, const std::string& device,
                             const std::vector<std::pair<std::string, std::string>>& properties) {
    const auto t0 = Clock::now();
    std::string dir = models_path;
    while (dir.size() > 1 && dir.back() == '/')
        dir.pop_back();
    if (!is_dir(dir))
        throw std::runtime_error("model folder '" + models_path + "' does not exist or is not a directory");
    std::string missing;
    for (const char* f : {"openvino_encoder_model.xml", "openvino_decoder_model.xml", "openvino_tokenizer.xml",
                          "openvino_detokenizer.xml"})
        if (!is_file(dir + "/" + f))
            missing += std::string(missing.empty() ? "" : ", ") + f;
    if (!missing.empty())
        throw std::runtime_error("Whisper model folder '" + models_path + "' lacks " + missing +
                                 " (export one with optimum-cli export openvino --model openai/whisper-tiny <folder>)");
    ov::AnyMap props;
    std::optional<bool> word_timestamps;  // GenAI's pipeline property: a config default, and the decoder's form
    for (auto& [k, v] : properties) {
        if (k == "word_timestamps")
            word_timestamps = property_flag(k, v);
        else
            props[k] = v;
    }

    if (is_file(dir + "/generation_config.json"))
        config_ = WhisperGenerationConfig::from_json_file(dir + "/generation_config.json");
    if (word_timestamps)
        config_.word_timestamps = *word_timestamps;
    load_tokenizers_extension();
    tokenizer_ = std::make_unique<Tokenizer>(core(), dir);
    features_ = std::make_unique<WhisperFeatureExtractor>(dir + "/preprocessor_config.json");
    max_source_positions_ = read_max_source_positions(dir + "/config.json");
    try {
        encoder_ = std::make_unique<WhisperEncoder>(dir + "/openvino_encoder_model.xml", device, props);
        decoder_ = std::make_unique<WhisperDecoder>(dir + "/openvino_decoder_model.xml", device, props,
                                                    config_.word_timestamps);
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string("compiling the Whisper models for device '") + device +
                                 "' failed: " + e.what());
    }
    if (config_.eos_token_id == -1 && tokenizer_->eos_token_id() >= 0)
        config_.set_eos_token_id(tokenizer_->eos_token_id());
    load_time_ms_ = static_cast<float>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
}

void WhisperEngine::set_generation_config(const WhisperGenerationConfig& cfg) {
    config_ = merge_with_base(config_, cfg);
}

std::pair<std::vector<int64_t>, std::string> WhisperEngine::start_tokens(const ov::Tensor& encoder_out,
                                                                         const WhisperGenerationConfig& cfg,
                                                                         float& inference_us) {
    if (!cfg.is_multilingual)
        return {{cfg.decoder_start_token_id}, "en"};
    int64_t lang_id = 0;
    std::string language;
    if (cfg.language) {
        language = *cfg.language;
        lang_id = language_token_id(cfg.lang_to_id, language);
    } else {
        Timer t;
        ov::Tensor logits = decoder_->step(encoder_out, {cfg.decoder_start_token_id});
        inference_us += t.us();
        const float* row = logits.data<const float>();
        const size_t vocab = logits.get_shape().back();
        int64_t best = -1;
        float best_value = -std::numeric_limits<float>::infinity();
        for (const auto& [lang, id] : cfg.lang_to_id) {
            if (id < 0 || static_cast<size_t>(id) >= vocab)
                continue;
            if (row[id] > best_value) {
                best_value = row[id];
                best = id;
            }
        }
        decoder_->reset();
        if (best < 0)
            throw std::runtime_error("language detection found no language token of 'lang_to_id' in the vocabulary");
        lang_id = best;
        language = language_of_token(cfg.lang_to_id, lang_id);
    }
    const int64_t task_id =
        cfg.task && *cfg.task == "translate" ? cfg.translate_token_id : cfg.transcribe_token_id;
    return {{cfg.decoder_start_token_id, lang_id, task_id}, plain_language(language)};
}

WhisperEngine::Window WhisperEngine::decode_window(const ov::Tensor& encoder_out, const std::vector<int64_t>& prompt,
                                                   const WhisperGenerationConfig& cfg, bool return_timestamps,
                                                   PerfMetrics& perf, WhisperRawPerf& wperf, float& inference_us,
                                                   Stream* stream) {
    Window w;
    bool& stopped = w.stopped;
    // GenAI samples each window as a new request, its random generator seeded afresh with rng_seed
    sampler_.reseed(cfg.rng_seed);
    const size_t max_new = cfg.get_max_new_tokens(prompt.size());
    const std::set<int64_t> prompt_ids(prompt.begin(), prompt.end());
    std::map<int64_t, size_t> counts;
    std::vector<int64_t> feed = prompt;
    while (true) {
        throw_if_cancelled();
        Timer infer;
        ov::Tensor logits = decoder_->step(encoder_out, feed);
        record_decoder_step(perf, wperf, inference_us, infer.t0, 1);

        const ov::Shape shape = logits.get_shape();
        if (shape.size() != 3 || shape[0] != 1 || shape[1] == 0 || shape[2] == 0)
            throw std::runtime_error("the Whisper decoder's logits have shape " + shape.to_string() +
                                     ", expected [1, positions, vocab]");
        const size_t vocab = shape.back();
        float* row = logits.data<float>() + (shape[1] - 1) * vocab;
        process_whisper_logits(row, vocab, cfg, return_timestamps, w.tokens, w.tokens.empty());

        Timer sampling;
        Sampler::process(row, vocab, cfg, prompt_ids, w.tokens, counts, w.tokens.size());
        const int64_t token =
            cfg.is_multinomial() ? sampler_.multinomial(row, vocab, cfg, 1).at(0).id : Sampler::greedy(row, vocab).id;
        perf.raw.sampling_us.push_back(sampling.us());

        w.tokens.push_back(token);
        ++counts[token];
        const bool stop_hit = !cfg.ignore_eos && cfg.stop_token_ids.count(token) > 0;
        const bool finished = w.tokens.size() >= max_new || stop_hit;
        if (stream) {
            // GenAI streams the first token as soon as it is sampled, every later one while the next step's
            // inference runs (so a stop there still samples that step's token, which is kept but not streamed),
            // and a finishing token at the end even after a stop.
            if (w.tokens.size() == 1) {
                stopped = stream->write(&token, 1) != StreamStatus::Running;
                if (finished || stopped)
                    break;
            } else if (finished) {
                stream->write(&token, 1);
                break;
            } else if (stopped) {
                break;
            } else {
                stopped = stream->write(&token, 1) != StreamStatus::Running;
            }
        } else if (finished) {
            break;
        }
        feed.assign(1, token);
    }
    return w;
}

WhisperEngine::Window WhisperEngine::decode_window_beams(const ov::Tensor& encoder_out,
                                                         const std::vector<int64_t>& prompt,
                                                         const WhisperGenerationConfig& cfg, bool return_timestamps,
                                                         PerfMetrics& perf, WhisperRawPerf& wperf,
                                                         float& inference_us) {
    GroupBeamSearch search(cfg, prompt, cfg.get_max_new_tokens(prompt.size()), nullptr);
    search.rows_are_log_probs(true);
    std::vector<std::vector<float>> rows;  // the last inference's rows, as log-probabilities, Whisper's masks applied
    size_t vocab = 0;
    // each row's last position, normalised, then masked (timestamp rules on that beam's generated tokens)
    auto take_rows = [&](const ov::Tensor& logits, const std::vector<const std::vector<int64_t>*>& generated) {
        const ov::Shape shape = logits.get_shape();
        if (shape.size() != 3 || shape[1] == 0 || shape[2] == 0)
            throw std::runtime_error("the Whisper decoder's logits have shape " + shape.to_string() +
                                     ", expected [beams, positions, vocab]");
        vocab = shape[2];
        rows.resize(shape[0]);
        static const std::vector<int64_t> none;
        for (size_t r = 0; r < shape[0]; ++r) {
            const float* last = logits.data<const float>() + (r * shape[1] + shape[1] - 1) * vocab;
            rows[r].assign(last, last + vocab);
            to_log_probs(rows[r].data(), vocab);
            const bool initial = generated.empty();
            process_whisper_logits(rows[r].data(), vocab, cfg, return_timestamps,
                                   initial || !generated[r] ? none : *generated[r], initial);
        }
    };
    auto timed_step = [&](auto&& infer, size_t batch) {
        throw_if_cancelled();
        Timer t;
        ov::Tensor logits = infer();
        record_decoder_step(perf, wperf, inference_us, t.t0, batch);
        return logits;
    };
    auto timed_select = [&] {  // one sampling duration per step, as GenAI's sampler records it
        Timer t;
        search.select([&](size_t row, size_t& v) -> const float* {
            v = vocab;
            return rows.at(row).data();
        });
        perf.raw.sampling_us.push_back(t.us());
    };
    take_rows(timed_step([&] { return decoder_->step(encoder_out, prompt); }, 1), {});
    timed_select();
    std::vector<int64_t> tokens;
    std::vector<int32_t> parents;
    while (!search.done()) {
        search.next_batch(tokens, parents);
        const auto generated = search.batch_generated();
        take_rows(timed_step([&] { return decoder_->step_beams(encoder_out, tokens, parents); }, tokens.size()),
                  generated);
        timed_select();
    }
    Window w;
    auto best = search.best(1);
    if (!best.empty())
        w.tokens = std::move(best[0].tokens);
    return w;
}

void WhisperEngine::throw_if_cancelled() const {
    if (cancel_->requested())
        throw StatusError(kStatusInferCancelled, "the transcription was cancelled");
}

WhisperResults WhisperEngine::generate(const float* pcm, size_t n, const WhisperGenerationConfig* per_call,
                                       const WhisperStreamTarget* stream_target) {
    const auto start = Clock::now();
    const WhisperCancelSwitch::Running running(*cancel_);
    const ResetDecoderOnThrow reset_on_throw(*decoder_);
    WhisperGenerationConfig cfg;
    if (per_call) {
        cfg = merge_with_base(config_, *per_call);
    } else {
        config_.validate();
        cfg = config_;
    }
    if (cfg.word_timestamps && !decoder_->has_cross_attention_scores())
        throw std::runtime_error("word_timestamps=true needs the pipeline created with the property "
                                 "word_timestamps=true (its decoder then exposes the cross-attention the word "
                                 "timestamps come from)");
    std::optional<Stream> stream;
    if (stream_target && (stream_target->tokens || stream_target->text))
        stream.emplace(*stream_target, *tokenizer_);

    WhisperResults res;
    PerfMetrics& perf = res.perf;
    WhisperRawPerf& wperf = res.whisper_perf;
    float tokenization_us = 0.0f;
    const WhisperContextTokens ctx = prepare_context_tokens(cfg, *tokenizer_, tokenization_us);

    Timer fe;
    const WhisperFeatures features = features_->extract(pcm, n);
    wperf.features_extraction_us.push_back(fe.us());

    const WhisperFeatureExtractor& fx = *features_;
    const bool short_form = features.n_frames <= fx.nb_max_frames;
    const bool return_timestamps = cfg.return_timestamps || !short_form;  // long-form needs timestamps
    const float time_precision = static_cast<float>(fx.chunk_length) / static_cast<float>(max_source_positions_);
    const float frame_seconds = static_cast<float>(fx.hop_length) / static_cast<float>(fx.sampling_rate);
    const int64_t timestamp_begin = cfg.no_timestamps_token_id + 1;

    float inference_us = 0.0f;
    std::vector<int64_t> sot;
    std::vector<int64_t> output_tokens;
    std::vector<WhisperSegment> segments;
    size_t advance = 0;
    for (size_t offset = 0; offset < features.n_frames; offset += advance) {
        throw_if_cancelled();
        const float time_offset = offset * frame_seconds;
        std::vector<float> window = features.window(offset, fx.nb_max_frames);
        Timer enc;
        ov::Tensor encoder_out = encoder_->encode(window, fx.feature_size, fx.nb_max_frames);
        const float enc_us = enc.us();
        inference_us += enc_us;
        wperf.encode_inference_us.push_back(enc_us);

        if (sot.empty()) {
            auto [tokens, language] = start_tokens(encoder_out, cfg, inference_us);
            sot = std::move(tokens);
            res.language = std::move(language);
        }
        std::vector<int64_t> prompt = context_prompt(ctx, cfg, offset);
        prompt.insert(prompt.end(), sot.begin(), sot.end());
        if (!return_timestamps)
            prompt.push_back(cfg.no_timestamps_token_id);

        Window w = cfg.is_beam_search()
                       ? decode_window_beams(encoder_out, prompt, cfg, return_timestamps, perf, wperf, inference_us)
                       : decode_window(encoder_out, prompt, cfg, return_timestamps, perf, wperf, inference_us,
                                       stream && !return_timestamps ? &*stream : nullptr);
        decoder_->reset();

        if (return_timestamps) {
            ExtractedSegments ex =
                extract_segments(w.tokens, timestamp_begin, fx.nb_max_frames, time_precision, time_offset);
            const size_t kept = output_tokens.size();
            keep_ranges(perf.raw.token_infer_us, kept, ex.ranges);
            keep_ranges(perf.raw.token_times, kept, ex.ranges);
            keep_ranges(perf.raw.batch_sizes, kept, ex.ranges);
            keep_ranges(perf.raw.sampling_us, kept, ex.ranges);
            keep_ranges(wperf.decode_inference_us, kept, ex.ranges);
            segments.insert(segments.end(), ex.segments.begin(), ex.segments.end());
            output_tokens.insert(output_tokens.end(), ex.text_tokens.begin(), ex.text_tokens.end());
            advance = ex.last_offset;
            // with timestamps GenAI streams each window's text tokens (an empty write too); a stop ends the audio
            if (stream && stream->write(ex.text_tokens.data(), ex.text_tokens.size()) != StreamStatus::Running)
                break;
        } else {
            output_tokens.insert(output_tokens.end(), w.tokens.begin(), w.tokens.end());
            advance = features.n_frames;
            // a beam search's tokens are known when it ends: the chosen beam's, at once (GenAI writes one of the
            // finished beams, in its map's order: often not the one its result keeps)
            if (stream && cfg.is_beam_search() && stream->write(w.tokens.data(), w.tokens.size()) != StreamStatus::Running)
                w.stopped = true;
        }
        if (w.stopped)
            break;
        if (cfg.word_timestamps) {
            Timer words_timer;
            // GenAI's count of the window's audio frames (a window past the audio's end counts whole)
            const size_t active = offset <= features.n_active_frames
                                      ? std::min(fx.nb_max_frames, features.n_active_frames - offset)
                                      : fx.nb_max_frames;
            std::vector<int64_t> text;
            for (const int64_t t : w.tokens)
                if (t < cfg.eos_token_id)
                    text.push_back(t);
            text.push_back(cfg.eos_token_id);
            std::vector<int64_t> ids = sot;
            ids.push_back(cfg.no_timestamps_token_id);
            ids.insert(ids.end(), text.begin(), text.end());
            const std::vector<HeadScores> heads = decoder_->alignment_scores(encoder_out, ids, cfg.alignment_heads);
            std::vector<WhisperWord> words =
                window_word_timestamps(heads, sot.size(), text, *tokenizer_, active, time_offset, res.language);
            if (!res.words)
                res.words.emplace();
            res.words->insert(res.words->end(), std::make_move_iterator(words.begin()),
                              std::make_move_iterator(words.end()));
            wperf.word_level_timestamps_us[0] += words_timer.us();
        }
        if (advance == 0)
            advance = fx.nb_max_frames;  // never loop on one window (the timestamp rules make this unreachable)
    }

    if (stream)
        stream->end();
    Timer detok;
    res.texts.push_back(tokenizer_->decode(output_tokens));
    perf.raw.detokenization_us.push_back(detok.us());
    res.scores.push_back(1.0f);  // GenAI reports 1 for Whisper
    if (cfg.return_timestamps) {
        std::vector<WhisperChunk> chunks;
        chunks.reserve(segments.size());
        for (const auto& s : segments) {
            Timer d;
            chunks.push_back({s.start, s.end, tokenizer_->decode(s.tokens)});
            perf.raw.detokenization_us.push_back(d.us());
        }
        res.chunks = std::move(chunks);
    }
    perf.raw.tokenization_us.push_back(tokenization_us);
    perf.raw.inference_us.push_back(inference_us);
    perf.load_time_ms = load_time_ms_;
    perf.num_input_tokens = 0;
    perf.raw.generate_us.push_back(PerfMetrics::us_between(start, Clock::now()));
    perf.finalize_call(start);
    return res;
}

}  // namespace ovgc
