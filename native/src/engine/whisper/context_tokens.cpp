#include "engine/whisper/context_tokens.hpp"

#include <chrono>

#include "engine/perf_metrics.hpp"

namespace ovgc {

namespace {

std::vector<int64_t> tokenize_context(const std::string& text, const WhisperGenerationConfig& cfg,
                                      Tokenizer& tokenizer, float& us) {
    if (text.empty())
        return {};
    const auto t0 = Clock::now();
    std::vector<int64_t> ids = tokenizer.encode(text, false);
    us += PerfMetrics::us_between(t0, Clock::now());
    std::vector<int64_t> out;
    out.reserve(ids.size());
    for (int64_t id : ids)
        if (id != cfg.decoder_start_token_id && id != cfg.eos_token_id && id != cfg.no_timestamps_token_id)
            out.push_back(id);
    return out;
}

}  // namespace

WhisperContextTokens prepare_context_tokens(const WhisperGenerationConfig& cfg, Tokenizer& tokenizer, float& us) {
    WhisperContextTokens ctx;
    us = 0.0f;
    if (cfg.initial_prompt)
        ctx.initial_prompt = tokenize_context(" " + *cfg.initial_prompt, cfg, tokenizer, us);
    if (cfg.hotwords)
        ctx.hotwords = tokenize_context(" " + *cfg.hotwords, cfg, tokenizer, us);
    return ctx;
}

std::vector<int64_t> context_prompt(const WhisperContextTokens& ctx, const WhisperGenerationConfig& cfg,
                                    size_t window_offset) {
    const bool with_prompt = !ctx.initial_prompt.empty() && window_offset == 0;
    const bool with_hotwords = !ctx.hotwords.empty();
    if (!with_prompt && !with_hotwords)
        return {};
    std::vector<int64_t> out{cfg.prev_sot_token_id};
    if (with_prompt)
        out.insert(out.end(), ctx.initial_prompt.begin(), ctx.initial_prompt.end());
    if (with_hotwords)
        out.insert(out.end(), ctx.hotwords.begin(), ctx.hotwords.end());
    return out;
}

}  // namespace ovgc
