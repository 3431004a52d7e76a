// The Whisper encoder (openvino_encoder_model.xml): one 30 s window of log-mel features -> last_hidden_state.
#pragma once

#include <string>
#include <vector>

#include <openvino/openvino.hpp>

namespace ovgc {

class WhisperEncoder {
public:
    WhisperEncoder(const std::string& xml_path, const std::string& device, const ov::AnyMap& properties);

    // features: [feature_size, frames] of one window. The returned tensor is the request's own output
    // (valid until the next encode).
    ov::Tensor encode(std::vector<float>& features, size_t feature_size, size_t frames);

private:
    ov::InferRequest request_;
};

}  // namespace ovgc
