// Word-level timestamps for Whisper, as GenAI's WhisperPipeline makes them (after openai-whisper's timing.py): the
// decoder's cross-attention of the model's alignment heads over the window's text, normalised and median-filtered,
// aligned to the audio frames by dynamic time warping, then split into words.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <openvino/openvino.hpp>

#include "engine/tokenizer.hpp"

namespace ovgc {

struct WhisperWord {
    std::string word;
    std::vector<int64_t> token_ids;
    float start_ts = 0.0f;
    float end_ts = 0.0f;
};

// One alignment head's attention scores over one decoder pass: [tokens, frames], row-major.
struct HeadScores {
    size_t tokens = 0;
    size_t frames = 0;
    std::vector<float> data;
};

// Replaces each cross-attention ScaledDotProductAttention of a Whisper decoder (friendly name containing
// "encoder_attn") by its plain form (softmax(q * scale @ k^T + mask) @ v, GenAI's decomposition, so the decoder's
// tokens stay GenAI's) and makes each one's scaled scores a model output named cross_attention_scores_<layer>, in
// graph order. Returns the number of layers exposed.
size_t expose_cross_attention_scores(const std::shared_ptr<ov::Model>& model);

// The output name of layer `layer`'s cross-attention scores ([batch, heads, tokens, frames]).
std::string cross_attention_scores_name(size_t layer);

// The words of one 30 s window. sot: the window's start-of-transcript tokens (without the no-timestamps token);
// text: the text tokens (every id below eos) and then eos, as the alignment pass ran them after sot and the
// no-timestamps token; heads: that pass's scores of the alignment heads; active_frames: the window's mel frames
// holding audio; time_offset: the window's start in seconds; language: "en", "zh", ... (no-space languages split
// per character).
std::vector<WhisperWord> window_word_timestamps(const std::vector<HeadScores>& heads, size_t sot_size,
                                                const std::vector<int64_t>& text, Tokenizer& tokenizer,
                                                size_t active_frames, float time_offset, const std::string& language);

}  // namespace ovgc
