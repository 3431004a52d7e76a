// The stateful Whisper decoder (openvino_decoder_model.xml as optimum-intel exports it: input_ids,
// encoder_hidden_states, beam_idx and optionally cache_position; self- and cross-attention KV in the model state),
// with the logits sliced to the last position before the lm_head MatMul, as GenAI compiles it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <openvino/openvino.hpp>

#include "engine/whisper/word_timestamps.hpp"

namespace ovgc {

class WhisperDecoder {
public:
    // cross_attention_scores: the cross-attention is decomposed and its scores exposed (GenAI's word_timestamps
    // pipeline property), for alignment_scores()
    WhisperDecoder(const std::string& xml_path, const std::string& device, const ov::AnyMap& properties,
                   bool cross_attention_scores = false);

    // Runs the next tokens (batch 1) against the window's encoder output; returns the logits [1, L, vocab]
    // (L = 1 when the slice applied), owned by the request until the next call.
    ov::Tensor step(const ov::Tensor& encoder_hidden_state, const std::vector<int64_t>& ids);
    // One step of a beam search: row i feeds tokens[i] after the state of row parents[i] of the last step (the
    // encoder's hidden state repeated for every row, as GenAI does). Logits [rows, 1, vocab].
    ov::Tensor step_beams(const ov::Tensor& encoder_hidden_state, const std::vector<int64_t>& tokens,
                          const std::vector<int32_t>& parents);
    // Forgets the KV cache (self and cross) and the encoder output.
    void reset();

    bool has_cross_attention_scores() const { return cross_attention_layers_ > 0; }
    // One pass over `ids` from an empty state (which it leaves empty): the cross-attention scores of the
    // (layer, head) pairs, each [ids, frames].
    std::vector<HeadScores> alignment_scores(const ov::Tensor& encoder_hidden_state, const std::vector<int64_t>& ids,
                                             const std::vector<std::pair<size_t, size_t>>& heads);

private:
    void bind_encoder(const ov::Tensor& encoder_hidden_state, size_t batch);
    ov::Tensor run(size_t positions);  // cache positions for `positions` new tokens, then one inference

    ov::InferRequest request_;
    bool has_cache_position_ = false;
    size_t encoder_batch_ = 0;  // the batch of the bound encoder hidden state (0: none bound)
    int64_t position_ = 0;
    size_t cross_attention_layers_ = 0;
};

}  // namespace ovgc
