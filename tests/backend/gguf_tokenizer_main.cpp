// ovgc::gguf::build_tokenizer_models (native/src/engine/gguf/gguf_tokenizer.cpp) on a GGUF file: saves the two
// models as GenAI saves them (ov::save_model, no f16 compression) and, given texts, runs them through the
// backend's own Tokenizer (native/src/engine/tokenizer.cpp), which reads their rt_info and makes its variants.
//   gguf_tokenizer_main <file.gguf> <out dir> [<texts file>]
// The extension comes from OPENVINO_TOKENIZERS_PATH_GENAI. Writes <out dir>/openvino_{tokenizer,detokenizer}.xml
// and prints "saved". With a texts file (one hex-encoded UTF-8 text a line) it then prints
//   bos <id> <hex of its text>, eos <id> <hex>, pad <id>, batch 0|1, template <hex of the chat template>,
// then per text "ids <id>..." and "text <hex of decode(ids)>", and "plain <id>..." (encode without special tokens).
// A refused file prints "error: <message>" on stderr and exits with 3.
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <openvino/openvino.hpp>

#include "engine/gguf/gguf_file.hpp"
#include "engine/gguf/gguf_tokenizer.hpp"
#include "engine/openvino_core.hpp"
#include "engine/tokenizer.hpp"

namespace {

std::string to_hex(const std::string& s) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out.empty() ? "-" : out;
}

std::string from_hex(const std::string& h) {
    if (h == "-")
        return {};
    std::string out;
    for (size_t i = 0; i + 1 < h.size(); i += 2)
        out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
    return out;
}

void print_ids(const char* tag, const std::vector<int64_t>& ids) {
    std::cout << tag;
    for (auto id : ids)
        std::cout << ' ' << id;
    std::cout << '\n';
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3 && argc != 4) {
        std::cerr << "usage: gguf_tokenizer_main FILE.gguf OUT_DIR [TEXTS]\n";
        return 2;
    }
    try {
        ovgc::gguf::TokenizerModels models;
        {
            const ovgc::gguf::GgufFile file(argv[1]);
            models = ovgc::gguf::build_tokenizer_models(file);
        }  // the models hold copies: the file may go
        const std::string out = argv[2];
        ov::save_model(models.tokenizer, out + "/openvino_tokenizer.xml", false);
        ov::save_model(models.detokenizer, out + "/openvino_detokenizer.xml", false);
        std::cout << "saved\n";
        if (argc == 3)
            return 0;

        ovgc::Tokenizer tok(ovgc::core(), models.tokenizer, models.detokenizer);
        std::cout << "bos " << tok.bos_token_id() << ' ' << to_hex(tok.bos_token()) << '\n'
                  << "eos " << tok.eos_token_id() << ' ' << to_hex(tok.eos_token()) << '\n'
                  << "pad " << tok.pad_token_id() << '\n'
                  << "batch " << (tok.can_decode_batch() ? 1 : 0) << '\n'
                  << "template " << to_hex(tok.chat_template()) << '\n';
        std::ifstream texts(argv[3]);
        std::string line;
        while (std::getline(texts, line)) {
            const std::string text = from_hex(line);
            const std::vector<int64_t> ids = tok.encode(text);
            print_ids("ids", ids);
            std::cout << "text " << to_hex(tok.decode(ids)) << '\n';
            print_ids("plain", tok.encode(text, false));
        }
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << '\n';
        return 3;
    }
    return 0;
}
