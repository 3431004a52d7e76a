#include "engine/tokenizer.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "json/json.hpp"

#include <openvino/op/constant.hpp>

namespace ovgc {

namespace {

int64_t rt_int(const std::shared_ptr<ov::Model>& m, const char* key) {
    auto& rt = m->get_rt_info();
    auto it = rt.find(key);
    if (it == rt.end())
        return -1;
    try {
        return it->second.as<int64_t>();
    } catch (...) {
        try {
            return std::stoll(it->second.as<std::string>());
        } catch (...) {
            return -1;
        }
    }
}

std::string rt_str(const std::shared_ptr<ov::Model>& m, const char* key) {
    auto& rt = m->get_rt_info();
    auto it = rt.find(key);
    if (it == rt.end())
        return {};
    try {
        return it->second.as<std::string>();
    } catch (...) {
        return {};
    }
}

// A detokenizer that keeps special tokens: the VocabDecoder's list of ids to skip replaced by an empty one.
std::shared_ptr<ov::Model> keep_special_tokens(std::shared_ptr<ov::Model> model) {
    for (auto& op : model->get_ordered_ops()) {
        if (std::string(op->get_type_name()) == "VocabDecoder" && op->get_input_size() >= 5) {
            auto et = op->get_input_element_type(4);
            auto empty = std::make_shared<ov::op::v0::Constant>(et, ov::Shape{0});
            op->input(4).replace_source_output(empty->output(0));
            op->validate_and_infer_types();
            model->validate_nodes_and_infer_types();
            return model;
        }
    }
    return nullptr;
}

// The tokenizer with CombineSegments' special-token inputs zeroed (add_special_tokens=false).
std::shared_ptr<ov::Model> without_special_tokens(std::shared_ptr<ov::Model> model) {
    std::shared_ptr<ov::Node> combine;
    for (auto& op : model->get_ordered_ops())
        if (std::string(op->get_type_name()) == "CombineSegments")
            combine = op;
    if (!combine || combine->get_input_size() < 2 || combine->get_input_element_type(1) != ov::element::i32)
        return nullptr;
    auto c = std::dynamic_pointer_cast<ov::op::v0::Constant>(combine->get_input_node_shared_ptr(1));
    if (!c)
        return nullptr;
    auto zeros = ov::op::v0::Constant::create(ov::element::i32, c->get_shape(),
                                              std::vector<int32_t>(ov::shape_size(c->get_shape()), 0));
    combine->input(1).replace_source_output(zeros->output(0));
    model->validate_nodes_and_infer_types();
    return model;
}

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f)
        return {};
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// Hugging Face files beside the IR, used when the tokenizer rt_info lacks the chat template.
std::string template_from_hf_files(const std::string& dir) {
    std::string jinja = slurp(dir + "/chat_template.jinja");
    if (!jinja.empty())
        return jinja;
    std::string cfg = slurp(dir + "/tokenizer_config.json");
    if (cfg.empty())
        return {};
    try {
        JsonValue j = json_parse(cfg);
        const JsonValue* t = j.find("chat_template");
        if (t && t->is_string())
            return t->as_string();
        if (t && t->is_array()) {  // [{"name": ..., "template": ...}]: the "default" one, else the first
            std::string first;
            for (auto& e : t->as_array()) {
                const JsonValue* name = e.find("name");
                const JsonValue* tmpl = e.find("template");
                if (!tmpl || !tmpl->is_string())
                    continue;
                if (first.empty())
                    first = tmpl->as_string();
                if (name && name->is_string() && name->as_string() == "default")
                    return tmpl->as_string();
            }
            return first;
        }
    } catch (...) {
    }
    return {};
}

std::string run_detok(ov::InferRequest& req, const int64_t* ids, size_t n) {
    ov::Tensor in(ov::element::i64, ov::Shape{1, n});
    if (n)
        std::copy(ids, ids + n, in.data<int64_t>());
    req.set_input_tensor(in);
    req.infer();
    ov::Tensor out = req.get_output_tensor();
    if (out.get_size() == 0)
        return {};
    return out.data<std::string>()[0];
}

}  // namespace

Tokenizer::Tokenizer(ov::Core& core, const std::string& dir)
    : Tokenizer(core, core.read_model(dir + "/openvino_tokenizer.xml"), core.read_model(dir + "/openvino_detokenizer.xml"),
                dir) {}

Tokenizer::Tokenizer(ov::Core& core, const std::shared_ptr<ov::Model>& tok_model,
                     const std::shared_ptr<ov::Model>& detok_model, const std::string& dir) {
    bos_id_ = rt_int(tok_model, "bos_token_id");
    eos_id_ = rt_int(tok_model, "eos_token_id");
    pad_id_ = rt_int(tok_model, "pad_token_id");
    if (eos_id_ < 0)
        eos_id_ = rt_int(detok_model, "eos_token_id");
    chat_template_ = rt_str(tok_model, "chat_template");
    if (chat_template_.empty())
        chat_template_ = rt_str(detok_model, "chat_template");
    if (chat_template_.empty() && !dir.empty())
        chat_template_ = template_from_hf_files(dir);

    // One thread each: these small string models then run on the calling thread alone instead of waking (and
    // competing with) a worker pool right after every LLM step, which cost ~0.2 ms per streamed token.
    const ov::AnyMap one_thread{ov::inference_num_threads(1)};
    tok_ = core.compile_model(tok_model, "CPU", one_thread).create_infer_request();
    if (auto plain = without_special_tokens(tok_model->clone())) {
        tok_plain_ = core.compile_model(plain, "CPU", one_thread).create_infer_request();
        has_plain_ = true;
    }
    detok_ = core.compile_model(detok_model, "CPU", one_thread).create_infer_request();
    // Batch padding: a special token the detokenizer skips (eos, pad or bos), checked here once — it decodes to
    // nothing alone and repeated, and adds nothing after text.
    for (const int64_t candidate : {eos_id_, pad_id_, bos_id_}) {
        if (candidate < 0)
            continue;
        const int64_t alone[3] = {candidate, candidate, candidate};
        if (!run_detok(detok_, alone, 1).empty() || !run_detok(detok_, alone, 3).empty())
            continue;
        bool adds_nothing = true;
        for (const int64_t t : {int64_t{0}, int64_t{5}, int64_t{100}, int64_t{1000}}) {
            const int64_t row[2] = {t, candidate};
            try {
                if (run_detok(detok_, row, 2) != run_detok(detok_, row, 1)) {
                    adds_nothing = false;
                    break;
                }
            } catch (const std::exception&) {  // an id beyond a small vocabulary
            }
        }
        if (adds_nothing) {
            skipped_id_ = candidate;
            break;
        }
    }

    // Special token strings, decoded without skipping special tokens.
    if (bos_id_ >= 0 || eos_id_ >= 0) {
        auto raw = keep_special_tokens(detok_model->clone());
        if (raw) {
            auto req = core.compile_model(raw, "CPU").create_infer_request();
            if (bos_id_ >= 0)
                bos_ = run_detok(req, &bos_id_, 1);
            if (eos_id_ >= 0)
                eos_ = run_detok(req, &eos_id_, 1);
        }
    }
}

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool add_special_tokens) {
    ov::InferRequest& req = (!add_special_tokens && has_plain_) ? tok_plain_ : tok_;
    ov::Tensor in(ov::element::string, ov::Shape{1});
    in.data<std::string>()[0] = text;
    req.set_input_tensor(in);
    req.infer();
    ov::Tensor ids = req.get_tensor("input_ids");
    ov::Tensor mask;
    try {
        mask = req.get_tensor("attention_mask");
    } catch (...) {
    }
    const size_t n = ids.get_size();
    std::vector<int64_t> out;
    out.reserve(n);
    if (ids.get_element_type() == ov::element::i64) {
        const int64_t* d = ids.data<const int64_t>();
        const int64_t* m = mask && mask.get_size() == n && mask.get_element_type() == ov::element::i64
                               ? mask.data<const int64_t>() : nullptr;
        for (size_t i = 0; i < n; ++i)
            if (!m || m[i] != 0)
                out.push_back(d[i]);
    } else if (ids.get_element_type() == ov::element::i32) {
        const int32_t* d = ids.data<const int32_t>();
        for (size_t i = 0; i < n; ++i)
            out.push_back(d[i]);
    } else {
        throw std::runtime_error("tokenizer: unexpected input_ids element type");
    }
    return out;
}

std::string Tokenizer::decode(const int64_t* ids, size_t n) { return run_detok(detok_, ids, n); }

std::vector<std::string> Tokenizer::decode_batch(const std::vector<const std::vector<int64_t>*>& rows) {
    std::vector<std::string> out;
    out.reserve(rows.size());
    if (rows.size() < 2 || skipped_id_ < 0) {
        for (auto* r : rows)
            out.push_back(decode(*r));
        return out;
    }
    size_t width = 0;
    for (auto* r : rows)
        width = std::max(width, r->size());
    if (width == 0)
        return std::vector<std::string>(rows.size());
    ov::Tensor in(ov::element::i64, ov::Shape{rows.size(), width});
    int64_t* d = in.data<int64_t>();
    for (size_t b = 0; b < rows.size(); ++b) {
        const auto& r = *rows[b];
        std::copy(r.begin(), r.end(), d + b * width);
        std::fill(d + b * width + r.size(), d + (b + 1) * width, skipped_id_);
    }
    detok_.set_input_tensor(in);
    detok_.infer();
    ov::Tensor res = detok_.get_output_tensor();
    if (res.get_size() != rows.size())
        throw std::runtime_error("detokenizer: " + std::to_string(res.get_size()) + " strings for " +
                                 std::to_string(rows.size()) + " rows");
    const std::string* s = res.data<std::string>();
    out.assign(s, s + rows.size());
    return out;
}

}  // namespace ovgc
