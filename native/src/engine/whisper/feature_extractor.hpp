// Whisper's log-mel spectrogram, computed as GenAI's WhisperFeatureExtractor does (same padding, periodic Hann
// window, radix-2 FFT with a direct DFT for odd lengths, Slaney mel filters, log10 with a 1e-10 floor, clamp at
// max - 8, (x + 4) / 4), so the features match it to the float rounding.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ovgc {

struct WhisperFeatures {
    size_t feature_size = 0;
    size_t n_frames = 0;         // frames of the padded audio
    size_t n_active_frames = 0;  // frames of the audio itself
    std::vector<float> data;     // [feature_size, n_frames], row-major

    // `frames` frames from `offset` on, each mel row zero-padded to `frames` ([feature_size, frames]).
    std::vector<float> window(size_t offset, size_t frames) const;
};

class WhisperFeatureExtractor {
public:
    size_t feature_size = 80;
    size_t sampling_rate = 16000;
    size_t hop_length = 160;
    size_t n_fft = 400;
    size_t chunk_length = 30;
    size_t n_samples = 480000;
    size_t nb_max_frames = 3000;

    // Reads preprocessor_config.json when it exists (else the defaults above).
    explicit WhisperFeatureExtractor(const std::string& preprocessor_json_path);

    // Throws std::invalid_argument when the audio is not longer than n_fft / 2 samples.
    WhisperFeatures extract(const float* pcm, size_t n) const;

    const std::vector<float>& mel_filters() const { return mel_filter_; }  // [feature_size, 1 + n_fft / 2]

private:
    void init_tables();
    void compute_frames(size_t first, size_t stride, const std::vector<float>& padded, size_t n_active_samples,
                        WhisperFeatures& out) const;

    std::vector<float> sin_, cos_, hann_, mel_filter_;
};

}  // namespace ovgc
