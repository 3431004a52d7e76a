// Small graph helpers shared by the model runners (stateful SDPA and PagedAttention).
#pragma once

#include <memory>

#include <openvino/core/model.hpp>
#include <openvino/op/matmul.hpp>

namespace ovgc {

// The lm_head MatMul that produces the "logits" output (searched a few nodes up from that output), or nullptr.
std::shared_ptr<ov::op::v0::MatMul> find_lm_head_matmul(const std::shared_ptr<ov::Model>& model);

}  // namespace ovgc
