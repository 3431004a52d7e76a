#include "engine/gguf/gguf_ir.hpp"

#include <filesystem>
#include <stdexcept>

#include <openvino/core/graph_util.hpp>

#include "engine/gguf/gguf_file.hpp"
#include "engine/gguf/gguf_model.hpp"

namespace ovgc::gguf {

void save_ir(const std::string& folder, const std::shared_ptr<ov::Model>& model, const TokenizerModels* tokenizers) {
    const std::filesystem::path dir(folder);
    try {
        if (model)
            ov::save_model(model, (dir / "openvino_model.xml").string(), true);
        if (tokenizers) {
            ov::save_model(tokenizers->tokenizer, (dir / "openvino_tokenizer.xml").string(), false);
            ov::save_model(tokenizers->detokenizer, (dir / "openvino_detokenizer.xml").string(), false);
        }
    } catch (const std::exception& e) {
        throw std::runtime_error("writing OpenVINO IR into '" + folder + "' failed: " + e.what());
    }
}

void convert_to_ir(const std::string& gguf_path, const std::string& folder, bool model, bool tokenizers) {
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec))
        throw std::runtime_error("the output folder '" + folder + "' does not exist or is not a folder");
    GgufFile file(gguf_path);
    TokenizerModels tok;
    if (tokenizers)
        tok = build_tokenizer_models(file);
    std::shared_ptr<ov::Model> lm = model ? build_language_model(file) : nullptr;
    save_ir(folder, lm, tokenizers ? &tok : nullptr);
}

}  // namespace ovgc::gguf
