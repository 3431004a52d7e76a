#include "engine/whisper/feature_extractor.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "json/json.hpp"

namespace ovgc {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Complex FFT of a real signal (interleaved re/im out). Even lengths split into even/odd halves; odd lengths
// use the direct DFT. Twiddles come from tables of length n_fft (stride n_fft / n).
void real_fft(const std::vector<float>& in, std::vector<float>& out, const std::vector<float>& sin_t,
              const std::vector<float>& cos_t, size_t n_fft) {
    const size_t n = in.size();
    out.assign(2 * n, 0.0f);
    if (n == 1) {
        out[0] = in[0];
        out[1] = 0.0f;
        return;
    }
    if (n % 2 == 1) {
        const size_t step = n_fft / n;
        for (size_t k = 0; k < n; ++k) {
            float re = 0.0f, im = 0.0f;
            for (size_t t = 0; t < n; ++t) {
                const size_t idx = (k * t * step) % n_fft;
                re += in[t] * cos_t[idx];
                im -= in[t] * sin_t[idx];
            }
            out[2 * k] = re;
            out[2 * k + 1] = im;
        }
        return;
    }
    const size_t half = n / 2;
    std::vector<float> even(half), odd(half);
    for (size_t i = 0; i < half; ++i) {
        even[i] = in[2 * i];
        odd[i] = in[2 * i + 1];
    }
    std::vector<float> fe, fo;
    real_fft(even, fe, sin_t, cos_t, n_fft);
    real_fft(odd, fo, sin_t, cos_t, n_fft);
    const size_t step = n_fft / n;
    for (size_t k = 0; k < half; ++k) {
        const float wr = cos_t[k * step];
        const float wi = -sin_t[k * step];
        const float o_re = fo[2 * k], o_im = fo[2 * k + 1];
        out[2 * k] = fe[2 * k] + wr * o_re - wi * o_im;
        out[2 * k + 1] = fe[2 * k + 1] + wr * o_im + wi * o_re;
        out[2 * (k + half)] = fe[2 * k] - wr * o_re + wi * o_im;
        out[2 * (k + half) + 1] = fe[2 * k + 1] - wr * o_im - wi * o_re;
    }
}

// Slaney mel scale (linear below 1 kHz, logarithmic above), in the float/double mix GenAI computes it with.
float hz_to_mel(float hz) {
    const float log_step = 27.0 / std::log(6.4);
    float mel = 3.0 * hz / 200.0;
    if (hz >= 1000.0f)
        mel = 15.0f + std::log(static_cast<double>(hz / 1000.0f)) * log_step;
    return mel;
}

float mel_to_hz(float mel) {
    const float log_step = std::log(6.4) / 27.0;
    float hz = 200.0 * mel / 3.0;
    if (mel >= 15.0f)
        hz = 1000.0f * std::exp(static_cast<double>(log_step * (mel - 15.0f)));
    return hz;
}

// [n_mels][n_bins] triangular filters between mel-spaced edges, area-normalised (Slaney).
std::vector<float> slaney_mel_filters(size_t n_bins, size_t n_mels, size_t sampling_rate) {
    const float max_hz = 8000.0f;
    if (max_hz > static_cast<float>(sampling_rate / 2))
        throw std::invalid_argument("max_frequency should be less or equal sampling_rate / 2");
    const float mel_lo = hz_to_mel(0.0f), mel_hi = hz_to_mel(max_hz);
    const float mel_step = (mel_hi - mel_lo) / static_cast<float>(n_mels + 1);
    std::vector<float> edges(n_mels + 2);
    for (size_t i = 0; i < edges.size(); ++i)
        edges[i] = mel_to_hz(mel_lo + i * mel_step);
    const float bin_step = static_cast<float>(sampling_rate / 2) / static_cast<float>(n_bins - 1);
    std::vector<float> out(n_mels * n_bins, 0.0f);
    for (size_t b = 0; b < n_bins; ++b) {
        const float f = b * bin_step;
        for (size_t m = 0; m < n_mels; ++m) {
            const float down = -(edges[m] - f) / (edges[m + 1] - edges[m]);
            const float up = (edges[m + 2] - f) / (edges[m + 2] - edges[m + 1]);
            float w = std::max(0.0f, std::min(down, up));
            w *= 2.0f / (edges[m + 2] - edges[m]);
            out[m * n_bins + b] = w;
        }
    }
    return out;
}

void read_size(const JsonValue& j, const char* key, size_t& dst) {
    if (const JsonValue* v = j.find(key); v && v->is_int() && v->as_int() >= 0)
        dst = static_cast<size_t>(v->as_int());
}

}  // namespace

std::vector<float> WhisperFeatures::window(size_t offset, size_t frames) const {
    if (offset >= n_frames)
        throw std::out_of_range("feature window offset " + std::to_string(offset) + " is past the last frame (" +
                                std::to_string(n_frames) + ")");
    const size_t take = std::min(n_frames - offset, frames);
    std::vector<float> out(feature_size * frames, 0.0f);
    for (size_t m = 0; m < feature_size; ++m)
        std::copy_n(data.begin() + m * n_frames + offset, take, out.begin() + m * frames);
    return out;
}

WhisperFeatureExtractor::WhisperFeatureExtractor(const std::string& preprocessor_json_path) {
    std::ifstream f(preprocessor_json_path, std::ios::binary);
    if (f) {
        std::ostringstream ss;
        ss << f.rdbuf();
        const JsonValue j = json_parse(ss.str());
        read_size(j, "feature_size", feature_size);
        read_size(j, "sampling_rate", sampling_rate);
        read_size(j, "hop_length", hop_length);
        read_size(j, "n_fft", n_fft);
        read_size(j, "chunk_length", chunk_length);
        read_size(j, "n_samples", n_samples);
        read_size(j, "nb_max_frames", nb_max_frames);
    }
    if (n_fft < 2 || hop_length == 0 || feature_size == 0 || sampling_rate == 0)
        throw std::invalid_argument("preprocessor_config.json: n_fft, hop_length, feature_size and sampling_rate "
                                    "must be positive (n_fft at least 2)");
    init_tables();
}

void WhisperFeatureExtractor::init_tables() {
    sin_.resize(n_fft);
    cos_.resize(n_fft);
    for (size_t i = 0; i < n_fft; ++i) {
        const double theta = (2 * kPi * i) / n_fft;
        sin_[i] = std::sin(static_cast<float>(theta));
        cos_[i] = std::cos(static_cast<float>(theta));
    }
    hann_.resize(n_fft);  // periodic
    for (size_t i = 0; i < n_fft; ++i)
        hann_[i] = 0.5 * (1.0 - std::cos(static_cast<float>((2.0 * kPi * i) / n_fft)));
    mel_filter_ = slaney_mel_filters(1 + n_fft / 2, feature_size, sampling_rate);
}

void WhisperFeatureExtractor::compute_frames(size_t first, size_t stride, const std::vector<float>& padded,
                                             size_t n_active_samples, WhisperFeatures& out) const {
    const size_t n_bins = 1 + n_fft / 2;
    const size_t computed = std::min(n_active_samples / hop_length + 1, out.n_frames);
    std::vector<float> frame(n_fft, 0.0f), spectrum;
    size_t i = first;
    for (; i < computed; i += stride) {
        const size_t offset = i * hop_length;
        const size_t avail = std::min(n_fft, n_active_samples - offset);
        for (size_t j = 0; j < avail; ++j)
            frame[j] = hann_[j] * padded[offset + j];
        std::fill(frame.begin() + avail, frame.end(), 0.0f);  // past the audio: zeros, not the reflection
        real_fft(frame, spectrum, sin_, cos_, n_fft);
        for (size_t j = 0; j < n_bins; ++j)
            spectrum[j] = spectrum[2 * j] * spectrum[2 * j] + spectrum[2 * j + 1] * spectrum[2 * j + 1];
        for (size_t m = 0; m < feature_size; ++m) {
            const float* w = &mel_filter_[m * n_bins];
            double sum = 0.0;
            size_t k = 0;
            for (; k + 3 < n_bins; k += 4)
                sum += spectrum[k] * w[k] + spectrum[k + 1] * w[k + 1] + spectrum[k + 2] * w[k + 2] +
                       spectrum[k + 3] * w[k + 3];
            for (; k < n_bins; ++k)
                sum += spectrum[k] * w[k];
            out.data[m * out.n_frames + i] = std::log10(std::max(sum, 1e-10));
        }
    }
    const double floor_value = std::log10(1e-10);
    for (; i < out.n_frames; i += stride)
        for (size_t m = 0; m < feature_size; ++m)
            out.data[m * out.n_frames + i] = floor_value;
}

WhisperFeatures WhisperFeatureExtractor::extract(const float* pcm, size_t n) const {
    const size_t pad = n_fft / 2;
    if (n <= pad)
        throw std::invalid_argument("raw_speech too short for reflect padding: size=" + std::to_string(n) +
                                    ", required > " + std::to_string(pad));
    // [reflection of the start | audio | zeros up to n_samples | reflection of the end]
    const size_t body = std::max(n, n_samples);
    std::vector<float> padded(body + 2 * pad, 0.0f);
    std::copy(pcm, pcm + n, padded.begin() + pad);
    for (size_t j = 0; j < pad; ++j) {
        padded[j] = padded[2 * pad - j];
        padded[pad + body + j] = padded[pad + body - 2 - j];
    }
    WhisperFeatures out;
    out.feature_size = feature_size;
    out.n_frames = (padded.size() - n_fft) / hop_length;
    out.n_active_frames = n / hop_length;
    out.data.assign(feature_size * out.n_frames, 0.0f);

    const size_t n_active_samples = n + pad;
    const size_t n_threads = std::max<size_t>(1, std::min<size_t>(4, std::thread::hardware_concurrency()));
    std::vector<std::thread> workers;
    for (size_t t = 1; t < n_threads; ++t)
        workers.emplace_back([&, t] { compute_frames(t, n_threads, padded, n_active_samples, out); });
    compute_frames(0, n_threads, padded, n_active_samples, out);
    for (auto& w : workers)
        w.join();

    double top = -1e20;
    for (float v : out.data)
        top = std::max(top, static_cast<double>(v));
    top -= 8.0;
    for (float& v : out.data) {
        if (v < top)
            v = static_cast<float>(top);
        v = (v + 4.0) / 4.0;
    }
    return out;
}

}  // namespace ovgc
