// The stateful Whisper decoder (openvino_decoder_model.xml as optimum-intel exports it: input_ids,
// encoder_hidden_states, beam_idx and optionally cache_position; self- and cross-attention KV in the model state),
// with the logits sliced to the last position before the lm_head MatMul, as GenAI compiles it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <openvino/openvino.hpp>

namespace ovgc {

class WhisperDecoder {
public:
    WhisperDecoder(const std::string& xml_path, const std::string& device, const ov::AnyMap& properties);

    // Runs the next tokens (batch 1) against the window's encoder output; returns the logits [1, L, vocab]
    // (L = 1 when the slice applied), owned by the request until the next call.
    ov::Tensor step(const ov::Tensor& encoder_hidden_state, const std::vector<int64_t>& ids);
    // Forgets the KV cache (self and cross) and the encoder output.
    void reset();

private:
    ov::InferRequest request_;
    bool has_cache_position_ = false;
    bool encoder_bound_ = false;
    int64_t position_ = 0;
};

}  // namespace ovgc
