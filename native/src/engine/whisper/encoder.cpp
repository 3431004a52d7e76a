#include "engine/whisper/encoder.hpp"

#include "engine/openvino_core.hpp"

namespace ovgc {

WhisperEncoder::WhisperEncoder(const std::string& xml_path, const std::string& device, const ov::AnyMap& properties) {
    request_ = core().compile_model(xml_path, device, properties).create_infer_request();
}

ov::Tensor WhisperEncoder::encode(std::vector<float>& features, size_t feature_size, size_t frames) {
    if (features.size() != feature_size * frames)
        throw std::invalid_argument("Mel spectrogram required size: " + std::to_string(feature_size) + " * " +
                                    std::to_string(frames) + ". Actual size: " + std::to_string(features.size()) + ".");
    request_.set_tensor("input_features", ov::Tensor(ov::element::f32, {1, feature_size, frames}, features.data()));
    request_.infer();
    // drop the reference to the caller's buffer
    request_.set_tensor("input_features", ov::Tensor(ov::element::f32, {0, feature_size, frames}));
    return request_.get_tensor("last_hidden_state");
}

}  // namespace ovgc
