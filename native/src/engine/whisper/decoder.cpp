#include "engine/whisper/decoder.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include <openvino/op/add.hpp>
#include <openvino/op/constant.hpp>
#include <openvino/op/matmul.hpp>
#include <openvino/op/slice.hpp>

#include "engine/openvino_core.hpp"

namespace ovgc {

namespace {

// GenAI's slice before the lm_head: the MatMul feeding output 0 (directly or through an Add) gets only the last
// position of its 3-D input.
void slice_last_position_before_lm_head(const std::shared_ptr<ov::Model>& model) {
    auto producer = model->output(0).get_node()->input_value(0).get_node_shared_ptr();
    auto matmul = ov::as_type_ptr<ov::op::v0::MatMul>(producer);
    if (!matmul)
        if (auto add = ov::as_type_ptr<ov::op::v1::Add>(producer))
            matmul = ov::as_type_ptr<ov::op::v0::MatMul>(add->input_value(0).get_node_shared_ptr());
    if (!matmul || matmul->get_input_partial_shape(0).rank().is_dynamic() ||
        matmul->get_input_partial_shape(0).rank().get_length() != 3)
        return;
    auto start = ov::op::v0::Constant::create(ov::element::i64, ov::Shape{1}, {-1});
    auto stop = ov::op::v0::Constant::create(ov::element::i64, ov::Shape{1}, {-2});
    auto step = ov::op::v0::Constant::create(ov::element::i64, ov::Shape{1}, {-1});
    auto axis = ov::op::v0::Constant::create(ov::element::i64, ov::Shape{1}, {1});
    auto slice = std::make_shared<ov::op::v8::Slice>(matmul->input_value(0), start, stop, step, axis);
    matmul->input(0).replace_source_output(slice);
}

}  // namespace

WhisperDecoder::WhisperDecoder(const std::string& xml_path, const std::string& device, const ov::AnyMap& properties,
                               bool cross_attention_scores) {
    auto model = core().read_model(xml_path);
    bool has_ids = false, has_encoder = false, has_beam = false;
    for (auto& in : model->inputs()) {
        const auto& names = in.get_names();
        has_ids |= names.count("input_ids") > 0;
        has_encoder |= names.count("encoder_hidden_states") > 0;
        has_beam |= names.count("beam_idx") > 0;
        has_cache_position_ |= names.count("cache_position") > 0;
    }
    if (!has_ids || !has_encoder || !has_beam)
        throw std::runtime_error("openvino_decoder_model.xml is not a stateful Whisper decoder (needs inputs "
                                 "input_ids, encoder_hidden_states and beam_idx); export it with optimum-cli export "
                                 "openvino (stateful)");
    if (cross_attention_scores) {
        cross_attention_layers_ = expose_cross_attention_scores(model);
        if (cross_attention_layers_ == 0)
            throw std::runtime_error("word_timestamps: openvino_decoder_model.xml has no cross-attention "
                                     "ScaledDotProductAttention (named *encoder_attn*) to take alignments from");
    }
    slice_last_position_before_lm_head(model);
    request_ = core().compile_model(model, device, properties).create_infer_request();
}

void WhisperDecoder::bind_encoder(const ov::Tensor& encoder_hidden_state, size_t batch) {
    if (encoder_batch_ == batch)
        return;
    if (batch == 1) {
        request_.set_tensor("encoder_hidden_states", encoder_hidden_state);
    } else {
        ov::Shape shape = encoder_hidden_state.get_shape();
        if (shape.empty() || shape[0] != 1)
            throw std::runtime_error("the Whisper encoder's hidden state has shape " + shape.to_string() +
                                     ", expected batch 1");
        const size_t one = encoder_hidden_state.get_byte_size();
        shape[0] = batch;
        ov::Tensor repeated(encoder_hidden_state.get_element_type(), shape);
        const auto* src = static_cast<const char*>(encoder_hidden_state.data());
        auto* dst = static_cast<char*>(repeated.data());
        for (size_t b = 0; b < batch; ++b)
            std::copy(src, src + one, dst + b * one);
        request_.set_tensor("encoder_hidden_states", repeated);
    }
    encoder_batch_ = batch;
}

ov::Tensor WhisperDecoder::run(size_t positions) {
    if (has_cache_position_) {
        ov::Tensor pos(ov::element::i64, {positions});
        std::iota(pos.data<int64_t>(), pos.data<int64_t>() + positions, position_);
        request_.set_tensor("cache_position", pos);
    }
    position_ += static_cast<int64_t>(positions);
    // start_async + wait, as GenAI runs its decoder: the step then executes on the compiled model's own (pinned)
    // stream thread; a synchronous infer() runs it on the calling thread, which measured 1.15-1.4x slower per step
    // on CPU (whisper-tiny.en, side by side with GenAI)
    request_.start_async();
    request_.wait();
    return request_.get_tensor("logits");
}

ov::Tensor WhisperDecoder::step(const ov::Tensor& encoder_hidden_state, const std::vector<int64_t>& ids) {
    bind_encoder(encoder_hidden_state, 1);
    ov::Tensor input_ids(ov::element::i64, {1, ids.size()});
    std::copy(ids.begin(), ids.end(), input_ids.data<int64_t>());
    request_.set_tensor("input_ids", input_ids);
    ov::Tensor beam_idx(ov::element::i32, {1});
    beam_idx.data<int32_t>()[0] = 0;
    request_.set_tensor("beam_idx", beam_idx);
    return run(ids.size());
}

ov::Tensor WhisperDecoder::step_beams(const ov::Tensor& encoder_hidden_state, const std::vector<int64_t>& tokens,
                                      const std::vector<int32_t>& parents) {
    if (tokens.empty() || tokens.size() != parents.size())
        throw std::logic_error("step_beams: one parent per token");
    const size_t rows = tokens.size();
    bind_encoder(encoder_hidden_state, rows);
    ov::Tensor input_ids(ov::element::i64, {rows, 1});
    std::copy(tokens.begin(), tokens.end(), input_ids.data<int64_t>());
    request_.set_tensor("input_ids", input_ids);
    ov::Tensor beam_idx(ov::element::i32, {rows});
    std::copy(parents.begin(), parents.end(), beam_idx.data<int32_t>());
    request_.set_tensor("beam_idx", beam_idx);
    return run(1);
}

std::vector<HeadScores> WhisperDecoder::alignment_scores(const ov::Tensor& encoder_hidden_state,
                                                         const std::vector<int64_t>& ids,
                                                         const std::vector<std::pair<size_t, size_t>>& heads) {
    if (!has_cross_attention_scores())
        throw std::runtime_error("word_timestamps: the pipeline was created without the property word_timestamps=true, "
                                 "so its decoder does not expose the cross-attention its word timestamps come from");
    reset();
    step(encoder_hidden_state, ids);
    std::vector<HeadScores> out;
    for (const auto& [layer, head] : heads) {
        if (layer >= cross_attention_layers_)
            throw std::runtime_error("word_timestamps: alignment head (" + std::to_string(layer) + ", " +
                                     std::to_string(head) + ") names layer " + std::to_string(layer) +
                                     ", the decoder has " + std::to_string(cross_attention_layers_));
        const ov::Tensor t = request_.get_tensor(cross_attention_scores_name(layer));
        const ov::Shape shape = t.get_shape();  // [batch, heads, tokens, frames]
        if (shape.size() != 4 || shape[0] != 1 || shape[2] != ids.size())
            throw std::runtime_error("word_timestamps: cross-attention scores of shape " + shape.to_string());
        if (head >= shape[1])
            throw std::runtime_error("word_timestamps: alignment head (" + std::to_string(layer) + ", " +
                                     std::to_string(head) + ") names head " + std::to_string(head) + ", layer " +
                                     std::to_string(layer) + " has " + std::to_string(shape[1]));
        HeadScores h;
        h.tokens = shape[2];
        h.frames = shape[3];
        const size_t n = h.tokens * h.frames;
        h.data.resize(n);
        const ov::element::Type type = t.get_element_type();
        if (type == ov::element::f32) {
            const float* src = t.data<const float>() + head * n;
            std::copy(src, src + n, h.data.begin());
        } else if (type == ov::element::f16) {
            const ov::float16* src = t.data<const ov::float16>() + head * n;
            std::transform(src, src + n, h.data.begin(), [](ov::float16 v) { return static_cast<float>(v); });
        } else if (type == ov::element::bf16) {
            const ov::bfloat16* src = t.data<const ov::bfloat16>() + head * n;
            std::transform(src, src + n, h.data.begin(), [](ov::bfloat16 v) { return static_cast<float>(v); });
        } else {
            throw std::runtime_error("word_timestamps: cross-attention scores of type " + type.get_type_name());
        }
        out.push_back(std::move(h));
    }
    reset();
    return out;
}

void WhisperDecoder::reset() {
    request_.reset_state();
    position_ = 0;
    encoder_batch_ = 0;
}

}  // namespace ovgc
