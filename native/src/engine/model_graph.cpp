#include "engine/model_graph.hpp"

namespace ovgc {

std::shared_ptr<ov::op::v0::MatMul> find_lm_head_matmul(const std::shared_ptr<ov::Model>& model) {
    ov::Output<ov::Node> logits;
    for (auto& out : model->outputs())
        if (out.get_names().count("logits"))
            logits = out;
    if (!logits.get_node())
        logits = model->output(0);
    std::shared_ptr<ov::Node> node = logits.get_node_shared_ptr();
    for (int depth = 0; depth < 6 && node; ++depth) {
        if (auto mm = std::dynamic_pointer_cast<ov::op::v0::MatMul>(node))
            return mm;
        if (node->get_input_size() == 0)
            break;
        node = node->input_value(0).get_node_shared_ptr();
    }
    return nullptr;
}

}  // namespace ovgc
