#include "engine/gguf/gguf_tokenizer.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <openvino/op/add.hpp>
#include <openvino/op/constant.hpp>
#include <openvino/op/convert.hpp>
#include <openvino/op/gather.hpp>
#include <openvino/op/minimum.hpp>
#include <openvino/op/parameter.hpp>
#include <openvino/op/range.hpp>
#include <openvino/op/reduce_max.hpp>
#include <openvino/op/shape_of.hpp>
#include <openvino/op/slice.hpp>
#include <openvino/op/subtract.hpp>

#include "engine/openvino_core.hpp"

namespace ovgc::gguf {

namespace {

using ov::element::i32;
using ov::element::i64;
using ov::element::u8;
using Constant = ov::op::v0::Constant;

// GenAI's fixed numbers: the tokenizer keeps the last kMaxLength ids of a text; BPETokenizer caches the merges of
// a fifth of the vocabulary's size in words, at least kMinCacheCapacity.
constexpr int32_t kMaxLength = 8192;
constexpr float kCacheShare = 0.2f;
constexpr int32_t kMinCacheCapacity = 20000;

#ifdef OVGC_VERSION
constexpr const char* kGeneratorVersion = "ovgenai_c_bundled " OVGC_VERSION;
#else
constexpr const char* kGeneratorVersion = "ovgenai_c_bundled";
#endif

// llama.cpp token types that are special (split off before the BPE, skipped when decoding): control, user defined.
constexpr int64_t kTokenControl = 3;
constexpr int64_t kTokenUserDefined = 4;

// The regular expressions of the pre-tokenizer (RegexSplit, "isolate" each), by tokenizer.ggml.pre: GenAI knows
// "qwen2" and "smollm" (llama.cpp's expressions) and uses the default set for any other value.
std::vector<std::string> split_expressions(const std::string& pre) {
    if (pre == "qwen2")
        return {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
    if (pre == "smollm")
        return {"\\p{N}", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"};
    return {"[\\p{P}\\$\\+<=>\\^~\\|]+", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
            "\\p{N}+", "[0-9][0-9][0-9]"};
}

// GenAI's chat template fixes for templates GGUF converters store differently from the model's
// tokenizer_config.json (Qwen2.5's tool-call example; Qwen3's reverse loop over the messages): each pattern's
// first occurrence is replaced.
std::string patched_chat_template(std::string tmpl) {
    static const std::pair<std::string, std::string> kPatches[] = {
        {R"({{\"name\": <function-name>, \"arguments\": <args-json-object>}})",
         R"({\"name\": <function-name>, \"arguments\": <args-json-object>})"},
        {"{%- for index in range(ns.last_query_index, -1, -1) %}\n"
         "    {%- set message = messages[index] %}\n"
         "    {%- if ns.multi_step_tool and message.role == \"user\" and not('<tool_response>' in message.content and "
         "'</tool_response>' in message.content) %}",
         "{%- for message in messages[::-1] %}\n"
         "    {%- set index = (messages|length - 1) - loop.index0 %}\n"
         "    {%- if ns.multi_step_tool and message.role == \"user\" and not(message.content.startswith('<tool_response>') "
         "and message.content.endswith('</tool_response>')) %}"},
    };
    for (const auto& [from, to] : kPatches)
        if (auto pos = tmpl.find(from); pos != std::string::npos)
            tmpl.replace(pos, from.size(), to);
    return tmpl;
}

// GPT-2's byte-level alphabet reversed: the UTF-8 text of each of the 256 stand-in characters -> its byte. Bytes
// that are printable Latin-1 ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand for themselves; the other 68 are
// U+0100.. in byte order.
const std::unordered_map<std::string, uint8_t>& byte_level_alphabet() {
    static const std::unordered_map<std::string, uint8_t> alphabet = [] {
        std::unordered_map<std::string, uint8_t> m;
        uint32_t next_extra = 256;
        for (uint32_t b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            const uint32_t cp = printable ? b : next_extra++;
            std::string utf8;
            if (cp < 0x80) {
                utf8 += static_cast<char>(cp);
            } else {  // all stand-ins are below U+0800: two bytes
                utf8 += static_cast<char>(0xC0 | (cp >> 6));
                utf8 += static_cast<char>(0x80 | (cp & 0x3F));
            }
            m.emplace(std::move(utf8), static_cast<uint8_t>(b));
        }
        return m;
    }();
    return alphabet;
}

// A vocabulary / merge entry's bytes. A text made only of stand-in characters is the bytes they stand for; a text
// with any other character is its own bytes. As in GenAI, the text is read up to its first invalid UTF-8 lead byte
// or cut sequence: a valid prefix of stand-ins alone gives only its bytes.
std::string token_bytes(const std::string& text) {
    const auto& alphabet = byte_level_alphabet();
    std::string bytes;
    for (size_t i = 0; i < text.size();) {
        const auto lead = static_cast<unsigned char>(text[i]);
        const size_t len = lead < 0x80 ? 1 : (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3
                         : (lead & 0xF8) == 0xF0 ? 4 : 0;
        if (len == 0 || len > text.size() - i)
            break;
        auto it = alphabet.find(text.substr(i, len));
        if (it == alphabet.end())
            return text;
        bytes += static_cast<char>(it->second);
        i += len;
    }
    return bytes;
}

// Strings as openvino_tokenizers' unpacked string form: i32 begins, i32 ends, u8 bytes (three constants).
ov::OutputVector string_constant(const std::vector<std::string>& strings) {
    std::vector<int32_t> begins, ends;
    std::vector<uint8_t> chars;
    begins.reserve(strings.size());
    ends.reserve(strings.size());
    for (const auto& s : strings) {
        if (chars.size() + s.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
            throw std::runtime_error("GGUF tokenizer: the vocabulary or merges exceed 2 GiB of text");
        begins.push_back(static_cast<int32_t>(chars.size()));
        chars.insert(chars.end(), s.begin(), s.end());
        ends.push_back(static_cast<int32_t>(chars.size()));
    }
    return {std::make_shared<Constant>(i32, ov::Shape{begins.size()}, begins),
            std::make_shared<Constant>(i32, ov::Shape{ends.size()}, ends),
            std::make_shared<Constant>(u8, ov::Shape{chars.size()}, chars)};
}

// One string as a u8 constant (a regular expression).
ov::Output<ov::Node> bytes_constant(const std::string& s) {
    return std::make_shared<Constant>(u8, ov::Shape{s.size()}, std::vector<uint8_t>(s.begin(), s.end()));
}

// The special tokens as one alternation for SpecialTokensSplit: each token in a group, every byte that is not an
// ASCII letter, digit or '_' escaped with a backslash (non-ASCII bytes too, as GenAI does).
std::string special_tokens_expression(const std::vector<std::string>& specials) {
    std::string re;
    for (size_t i = 0; i < specials.size(); ++i) {
        re += i ? "|(" : "(";
        for (const char c : specials[i]) {
            const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
            if (!word)
                re += '\\';
            re += c;
        }
        re += ')';
    }
    return re;
}

// openvino_tokenizers' node factory: an operation of the extension by type name, inputs and attributes.
class NodeFactory {
public:
    NodeFactory() : create_(reinterpret_cast<CreateFn>(tokenizers_extension_symbol("create_tokenizer_node"))) {}

    ov::OutputVector operator()(const std::string& type, const ov::OutputVector& inputs,
                                const ov::AnyMap& attributes = {}) const {
        try {
            return create_(type, inputs, attributes);
        } catch (const std::exception& e) {
            throw std::runtime_error("GGUF tokenizer: openvino_tokenizers could not make a " + type + " node: " +
                                     e.what());
        }
    }

private:
    // the extension's exported create_tokenizer_node (C linkage, C++ types)
    using CreateFn = ov::OutputVector (*)(const std::string&, const ov::OutputVector&, const ov::AnyMap&);
    CreateFn create_;
};

// The tokenizer metadata of the file (tokenizer.ggml.* and tokenizer.chat_template), checked.
struct GgufVocab {
    std::vector<std::string> tokens;  // as stored: byte-level stand-in text
    std::vector<std::string> bytes;   // token_bytes() of each
    std::vector<bool> special;        // control or user-defined
    std::vector<std::string> merges;  // "left right"
    std::string pre;
    std::string unk_token;            // empty without tokenizer.ggml.unknown_token_id
    int64_t bos = -1, eos = -1, pad = -1;
    std::string chat_template;
};

// A token id key, -1 when absent. GenAI reads these as u32.
int64_t token_id(const GgufFile& file, const std::string& key) {
    if (!file.has(key))
        return -1;
    const int64_t id = file.get_int(key);
    if (id < 0 || id > static_cast<int64_t>(std::numeric_limits<uint32_t>::max()))
        throw std::runtime_error("GGUF metadata '" + key + "' in '" + file.path() + "' is " + std::to_string(id) +
                                 ", not a token id");
    return id;
}

GgufVocab read_vocab(const GgufFile& file) {
    const std::string where = " in '" + file.path() + "'";
    if (!file.has("tokenizer.ggml.model"))
        throw std::runtime_error("GGUF file '" + file.path() + "' holds no tokenizer (no tokenizer.ggml.model)");
    const std::string model = file.get_string("tokenizer.ggml.model");
    if (model != "gpt2")
        throw std::runtime_error("GGUF tokenizer.ggml.model '" + model + "'" + where +
                                 " is not supported: only 'gpt2' (byte-level BPE) tokenizers are, as in OpenVINO GenAI");
    GgufVocab v;
    v.tokens = file.get_strings("tokenizer.ggml.tokens");
    const std::vector<int64_t>& types = file.get_ints("tokenizer.ggml.token_type");
    if (types.size() < v.tokens.size())
        throw std::runtime_error("GGUF tokenizer.ggml.token_type" + where + " has " + std::to_string(types.size()) +
                                 " entries for " + std::to_string(v.tokens.size()) + " tokens");
    v.merges = file.get_strings("tokenizer.ggml.merges");
    v.pre = file.get_string("tokenizer.ggml.pre");  // required, as in GenAI
    v.bytes.reserve(v.tokens.size());
    v.special.reserve(v.tokens.size());
    for (size_t i = 0; i < v.tokens.size(); ++i) {
        v.bytes.push_back(token_bytes(v.tokens[i]));
        v.special.push_back(types[i] == kTokenControl || types[i] == kTokenUserDefined);
    }
    if (const int64_t unk = token_id(file, "tokenizer.ggml.unknown_token_id"); unk >= 0) {
        if (static_cast<uint64_t>(unk) >= v.tokens.size())
            throw std::runtime_error("GGUF tokenizer.ggml.unknown_token_id" + where + " is " + std::to_string(unk) +
                                     ", beyond the " + std::to_string(v.tokens.size()) + " tokens");
        v.unk_token = v.tokens[static_cast<size_t>(unk)];
    }
    v.bos = token_id(file, "tokenizer.ggml.bos_token_id");
    v.eos = token_id(file, "tokenizer.ggml.eos_token_id");
    v.pad = token_id(file, "tokenizer.ggml.padding_token_id");
    v.chat_template = file.get_string_or("tokenizer.chat_template", "");
    if (!v.chat_template.empty())
        v.chat_template = patched_chat_template(v.chat_template);
    return v;
}

std::shared_ptr<ov::Model> build_tokenizer(const GgufVocab& v, const NodeFactory& make) {
    using namespace ov::op;
    auto text = std::make_shared<v0::Parameter>(ov::element::string, ov::PartialShape{ov::Dimension::dynamic()});
    ov::OutputVector unpacked = make("StringTensorUnpack", {text});

    // Each string its own row: ragged begins 0..n-1, ends 1..n, before the unpacked begins / ends / bytes.
    auto shape = std::make_shared<v3::ShapeOf>(unpacked[0], i32);
    auto zero = std::make_shared<Constant>(i32, ov::Shape{}, 0);
    auto one = std::make_shared<Constant>(i32, ov::Shape{}, 1);
    auto batch = std::make_shared<v8::Gather>(shape, zero, zero);
    auto batch_plus_one = std::make_shared<v1::Add>(batch, one);
    ov::OutputVector rows{std::make_shared<v4::Range>(zero, batch, one, i32),
                          std::make_shared<v4::Range>(one, batch_plus_one, one, i32)};
    rows.insert(rows.end(), unpacked.begin(), unpacked.end());

    // Special tokens (as stored) split off whole, then the pre-tokenizer's expressions.
    std::vector<std::string> specials, special_bytes;
    std::vector<int32_t> special_ids;
    for (size_t i = 0; i < v.tokens.size(); ++i) {
        if (v.special[i]) {
            specials.push_back(v.tokens[i]);
            special_bytes.push_back(v.bytes[i]);
            special_ids.push_back(static_cast<int32_t>(i));
        }
    }
    rows.push_back(bytes_constant(special_tokens_expression(specials)));
    ov::OutputVector words = make("SpecialTokensSplit", rows);
    for (const std::string& re : split_expressions(v.pre)) {
        words.push_back(bytes_constant(re));
        words = make("RegexSplit", words, {{"behaviour", std::string("isolate")}, {"invert", false}, {"max_splits", -1}});
    }

    // BPE over the words (the split's first five outputs: ragged rows of ragged words): vocabulary, merges (left /
    // right halves) and special tokens as bytes, special ids.
    if (words.size() < 5)
        throw std::runtime_error("GGUF tokenizer: openvino_tokenizers' RegexSplit gave " + std::to_string(words.size()) +
                                 " outputs, expected at least 5");
    ov::OutputVector bpe_inputs(words.begin(), words.begin() + 5);
    std::vector<std::string> lefts, rights;
    lefts.reserve(v.merges.size());
    rights.reserve(v.merges.size());
    for (const std::string& merge : v.merges) {
        const size_t space = merge.find(' ');
        // A merge without a space is its whole text on both sides (GenAI splits it that way).
        lefts.push_back(token_bytes(merge.substr(0, space)));
        rights.push_back(token_bytes(space == std::string::npos ? merge : merge.substr(space + 1)));
    }
    using Strings = std::vector<std::string>;
    for (const Strings* strings : std::initializer_list<const Strings*>{&v.bytes, &lefts, &rights, &special_bytes}) {
        ov::OutputVector c = string_constant(*strings);
        bpe_inputs.insert(bpe_inputs.end(), c.begin(), c.end());
    }
    bpe_inputs.push_back(std::make_shared<Constant>(i32, ov::Shape{special_ids.size()}, special_ids));
    const int32_t cache_capacity =
        std::max<int32_t>(static_cast<int32_t>(v.tokens.size() * kCacheShare), kMinCacheCapacity);
    ov::OutputVector ids = make("BPETokenizer", bpe_inputs,
                                {{"unk_token", v.unk_token},
                                 {"fuse_unk", true},
                                 {"suffix_indicator", std::string()},
                                 {"end_suffix", std::string()},
                                 {"byte_fallback", true},
                                 {"cache_capacity", cache_capacity}});

    // Keep a row's last kMaxLength ids: begins = ends - min(ends - begins, kMaxLength).
    auto lengths = std::make_shared<v1::Subtract>(ids[1], ids[0]);
    auto kept = std::make_shared<v1::Minimum>(lengths, std::make_shared<Constant>(i32, ov::Shape{}, kMaxLength));
    ids[0] = std::make_shared<v1::Subtract>(ids[1], kept);

    // Dense [batch, longest row], padded on the left with 0 (mask 0).
    auto kept_lengths = std::make_shared<v1::Subtract>(ids[1], ids[0]);
    auto longest = std::make_shared<v1::ReduceMax>(kept_lengths, std::make_shared<Constant>(i32, ov::Shape{1}, 0), false);
    ids.push_back(longest);
    ids.push_back(std::make_shared<Constant>(i32, ov::Shape{}, 0));
    ov::OutputVector dense = make("RaggedToDense", ids, {{"pad_right", false}, {"pad_max_length", false}});

    dense[0] = std::make_shared<v0::Convert>(dense[0], i64);
    dense[1] = std::make_shared<v0::Convert>(dense[1], i64);
    dense[0].get_tensor().add_names({"input_ids"});
    dense[1].get_tensor().add_names({"attention_mask"});
    return std::make_shared<ov::Model>(dense, ov::ParameterVector{text}, "tokenizer");
}

std::shared_ptr<ov::Model> build_detokenizer(const GgufVocab& v, const NodeFactory& make) {
    using namespace ov::op;
    auto ids = std::make_shared<v0::Parameter>(i64, ov::PartialShape{ov::Dimension::dynamic(), ov::Dimension::dynamic()});
    ov::OutputVector inputs{ids};
    ov::OutputVector vocab = string_constant(v.bytes);
    inputs.insert(inputs.end(), vocab.begin(), vocab.end());

    // The ids to skip, through a Slice [0, INT32_MAX): GenAI's stateful skip_special_tokens switch moves its start.
    std::vector<int32_t> special_ids;
    for (size_t i = 0; i < v.tokens.size(); ++i)
        if (v.special[i])
            special_ids.push_back(static_cast<int32_t>(i));
    auto skipped = std::make_shared<Constant>(i32, ov::Shape{special_ids.size()}, special_ids);
    auto start = std::make_shared<Constant>(i32, ov::Shape{1}, 0);
    auto step = std::make_shared<Constant>(i32, ov::Shape{1}, 1);
    auto stop = std::make_shared<Constant>(i32, ov::Shape{1}, std::numeric_limits<int32_t>::max());
    inputs.push_back(std::make_shared<v8::Slice>(skipped, start, stop, step));

    // VocabDecoder: ragged rows of ragged token bytes; FuzeRagged joins each row's bytes into one string.
    ov::OutputVector pieces = make("VocabDecoder", inputs);
    ov::OutputVector texts = make("FuzeRagged", ov::OutputVector(pieces.begin(), pieces.end() - 1));
    texts.push_back(pieces.back());
    texts = make("UTF8Validate", texts, {{"replace_mode", true}});
    ov::OutputVector packed = make("StringTensorPack", texts);
    packed[0].get_tensor().add_names({"string_output"});
    return std::make_shared<ov::Model>(packed, ov::ParameterVector{ids}, "detokenizer");
}

// What GenAI writes in both models' rt_info (the ids as int64, -1 when the file has none).
void set_rt_info(const std::shared_ptr<ov::Model>& model, const GgufVocab& v) {
    model->set_rt_info(std::string(kGeneratorVersion), "openvino_genai_version");
    model->set_rt_info(v.pad, "pad_token_id");
    model->set_rt_info(v.bos, "bos_token_id");
    model->set_rt_info(v.eos, "eos_token_id");
    model->set_rt_info(v.chat_template, "chat_template");
}

}  // namespace

TokenizerModels build_tokenizer_models(const GgufFile& file) {
    const GgufVocab vocab = read_vocab(file);
    const NodeFactory make;
    TokenizerModels models{build_tokenizer(vocab, make), build_detokenizer(vocab, make)};
    set_rt_info(models.tokenizer, vocab);
    set_rt_info(models.detokenizer, vocab);
    return models;
}

}  // namespace ovgc::gguf
