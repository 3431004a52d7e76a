#include "engine/stateful_backend.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include <openvino/op/matmul.hpp>
#include <openvino/op/slice.hpp>

#include "engine/model_graph.hpp"

namespace ovgc {

namespace {

// Compute logits for the last position only during prefill: slice the hidden states before the lm_head MatMul.
void apply_slice_before_matmul(const std::shared_ptr<ov::Model>& model) {
    std::shared_ptr<ov::op::v0::MatMul> matmul = find_lm_head_matmul(model);
    if (!matmul)
        return;
    auto pshape = matmul->get_input_partial_shape(0);
    if (pshape.rank().is_dynamic() || pshape.rank().get_length() != 3)
        return;
    auto start = ov::op::v0::Constant::create(ov::element::i64, ov::Shape{1}, {-1});
    auto stop = ov::op::v0::Constant::create(ov::element::i64, ov::Shape{1}, {std::numeric_limits<int64_t>::max()});
    auto step = ov::op::v0::Constant::create(ov::element::i64, ov::Shape{1}, {1});
    auto axis = ov::op::v0::Constant::create(ov::element::i64, ov::Shape{1}, {1});
    auto slice = std::make_shared<ov::op::v8::Slice>(matmul->input_value(0), start, stop, step, axis);
    matmul->input(0).replace_source_output(slice);
    model->validate_nodes_and_infer_types();
}

}  // namespace

StatefulBackend::StatefulBackend(const std::shared_ptr<ov::Model>& model, bool compat_row0) : compat_row0_(compat_row0) {
    for (auto& in : model->inputs())
        has_position_ids_ |= in.get_names().count("position_ids") > 0;
    for (auto& var : model->get_variables()) {
        const auto& info = var->get_info();
        size_t axis = 2;
        if (info.data_shape.rank().is_static()) {
            for (size_t i = 1; i < static_cast<size_t>(info.data_shape.rank().get_length()); ++i)
                if (info.data_shape[i].is_dynamic()) {
                    axis = i;
                    break;
                }
        }
        seq_axes_.emplace_back(info.variable_id, axis);
    }
    apply_slice_before_matmul(model);
}

void StatefulBackend::bind(const ov::CompiledModel&, ov::InferRequest& request) { req_ = &request; }

void StatefulBackend::reset() { req_->reset_state(); }

// Cuts every state variable to its first `keep` positions on the sequence axis (all batch rows).
void StatefulBackend::trim(size_t keep) {
    for (auto& state : req_->query_state()) {
        size_t axis = 2;
        for (auto& [name, ax] : seq_axes_)
            if (name == state.get_name())
                axis = ax;
        ov::Tensor old = state.get_state();
        ov::Shape shape = old.get_shape();
        if (axis >= shape.size() || shape[axis] <= keep)
            continue;
        ov::Shape nshape = shape;
        nshape[axis] = keep;
        ov::Tensor fresh(old.get_element_type(), nshape);
        size_t outer = 1, inner = old.get_element_type().size();
        for (size_t i = 0; i < axis; ++i)
            outer *= shape[i];
        for (size_t i = axis + 1; i < shape.size(); ++i)
            inner *= shape[i];
        const auto* src = static_cast<const uint8_t*>(old.data());
        auto* dst = static_cast<uint8_t*>(fresh.data());
        for (size_t o = 0; o < outer; ++o)
            std::memcpy(dst + o * keep * inner, src + o * shape[axis] * inner, keep * inner);
        state.set_state(fresh);
    }
}

// In a chat: the state keeps the prompt (every row; the next turn reads row 0), as upstream's stateful chat.
size_t StatefulBackend::keep_prompt_after_beams(size_t prompt_len, bool chat) {
    if (!chat)
        return 0;
    trim(prompt_len);
    return prompt_len;
}

void StatefulBackend::prepare_prefill(const int64_t* ids, size_t n, size_t cached) {
    ov::Tensor input_ids = req_->get_tensor("input_ids");
    input_ids.set_shape({1, n});
    std::copy(ids, ids + n, input_ids.data<int64_t>());
    ov::Tensor mask = req_->get_tensor("attention_mask");
    mask.set_shape({1, cached + n});
    std::fill_n(mask.data<int64_t>(), cached + n, 1);
    if (has_position_ids_) {
        ov::Tensor pos = req_->get_tensor("position_ids");
        pos.set_shape({1, n});
        auto* p = pos.data<int64_t>();
        for (size_t i = 0; i < n; ++i)
            p[i] = static_cast<int64_t>(cached + i);
    }
    ov::Tensor beam = req_->get_tensor("beam_idx");
    beam.set_shape({1});
    beam.data<int32_t>()[0] = 0;
}

void StatefulBackend::prepare_decode(const std::vector<int64_t>& step_ids, const std::vector<int32_t>& parents,
                                     size_t cached) {
    const size_t B = step_ids.size();
    ov::Tensor ids = req_->get_tensor("input_ids");
    ids.set_shape({B, 1});
    std::copy(step_ids.begin(), step_ids.end(), ids.data<int64_t>());
    ov::Tensor mask = req_->get_tensor("attention_mask");
    mask.set_shape({B, cached + 1});
    std::fill_n(mask.data<int64_t>(), B * (cached + 1), 1);
    if (has_position_ids_) {
        ov::Tensor pos = req_->get_tensor("position_ids");
        pos.set_shape({B, 1});
        std::fill_n(pos.data<int64_t>(), B, static_cast<int64_t>(cached));
    }
    ov::Tensor beam = req_->get_tensor("beam_idx");
    beam.set_shape({B});
    std::copy(parents.begin(), parents.end(), beam.data<int32_t>());
}

}  // namespace ovgc
