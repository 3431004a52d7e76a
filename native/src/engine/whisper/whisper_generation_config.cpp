#include "engine/whisper/whisper_generation_config.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "json/json.hpp"

namespace ovgc {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

JsonValue read_json(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f)
        throw std::runtime_error("Failed to open '" + path + "' with generation config");
    std::ostringstream ss;
    ss << f.rdbuf();
    return json_parse(ss.str());
}

// A value at `key` or at the dotted path "outer.inner" (as GenAI's read_json_param); null counts as absent.
const JsonValue* lookup(const JsonValue& j, const std::string& key) {
    if (const JsonValue* v = j.find(key); v && !v->is_null())
        return v;
    auto dot = key.find('.');
    if (dot == std::string::npos)
        return nullptr;
    const JsonValue* outer = j.find(key.substr(0, dot));
    if (!outer || !outer->is_object())
        return nullptr;
    return lookup(*outer, key.substr(dot + 1));
}

void read_id(const JsonValue& j, const char* key, int64_t& dst) {
    if (const JsonValue* v = lookup(j, key); v && v->is_int())
        dst = v->as_int();
}

void read_ids(const JsonValue& j, const char* key, std::vector<int64_t>& dst) {
    const JsonValue* v = lookup(j, key);
    if (!v || !v->is_array())
        return;
    std::vector<int64_t> ids;
    for (const auto& e : v->as_array())
        if (e.is_int())
            ids.push_back(e.as_int());
    dst = std::move(ids);
}

}  // namespace

WhisperGenerationConfig WhisperGenerationConfig::from_json_file(const std::string& path) {
    WhisperGenerationConfig c;
    c.update_from_json_file(path);
    const JsonValue j = read_json(path);
    read_ids(j, "begin_suppress_tokens", c.begin_suppress_tokens);
    read_ids(j, "suppress_tokens", c.suppress_tokens);
    read_id(j, "decoder_start_token_id", c.decoder_start_token_id);
    read_id(j, "pad_token_id", c.pad_token_id);
    read_id(j, "no_timestamps_token_id", c.no_timestamps_token_id);
    if (const JsonValue* v = lookup(j, "max_initial_timestamp_index"); v && v->is_int() && v->as_int() >= 0)
        c.max_initial_timestamp_index = static_cast<size_t>(v->as_int());
    read_id(j, "prev_sot_token_id", c.prev_sot_token_id);
    if (const JsonValue* v = lookup(j, "is_multilingual"); v && v->is_bool())
        c.is_multilingual = v->as_bool();
    if (c.is_multilingual) {
        read_id(j, "task_to_id.transcribe", c.transcribe_token_id);
        read_id(j, "task_to_id.translate", c.translate_token_id);
    }
    if (const JsonValue* v = lookup(j, "lang_to_id"); v && v->is_object()) {
        c.lang_to_id.clear();
        for (const auto& [lang, id] : v->as_object())
            if (id.is_int())
                c.lang_to_id[lang] = id.as_int();
    }
    if (const JsonValue* v = lookup(j, "alignment_heads"); v && v->is_array()) {
        c.alignment_heads.clear();
        for (const auto& pair : v->as_array())
            if (pair.is_array() && pair.size() == 2 && pair.as_array()[0].is_int() && pair.as_array()[1].is_int())
                c.alignment_heads.emplace_back(static_cast<size_t>(pair.as_array()[0].as_int()),
                                               static_cast<size_t>(pair.as_array()[1].as_int()));
    }
    c.apply_chat_template = false;
    return c;
}

int64_t language_token_id(const std::map<std::string, int64_t>& lang_to_id, const std::string& language) {
    const bool wrapped = language.size() > 4 && language.compare(0, 2, "<|") == 0 &&
                         language.compare(language.size() - 2, 2, "|>") == 0;
    const auto it = lang_to_id.find(wrapped ? language : "<|" + language + "|>");
    if (it == lang_to_id.end())
        fail("'language' " + language + " must be provided in 'lang_to_id' map.");
    return it->second;
}

std::string language_of_token(const std::map<std::string, int64_t>& lang_to_id, int64_t token_id) {
    for (const auto& [lang, id] : lang_to_id)
        if (id == token_id)
            return lang;
    throw std::runtime_error("Language token id " + std::to_string(token_id) + " not found in lang_to_id map.");
}

std::string plain_language(const std::string& language) {
    std::string out;
    for (char ch : language)
        if (ch != '<' && ch != '|' && ch != '>')
            out += ch;
    return out;
}

void WhisperGenerationConfig::validate() const {
    GenerationConfig::validate();
    if (is_multilingual && lang_to_id.empty())
        fail("'lang_to_id' map must be provided for multilingual models.\n"
             "'lang_to_id' map can be provided as custom std::map<std::string, int64_t>\n"
             "Or initialized from generation_config.json: \n"
             "ov::genai::WhisperGenerationConfig config = pipeline.get_generation_config();\n"
             "ov::genai::WhisperGenerationConfig config{models_path / \"generation_config.json\"};");
    if (is_multilingual && language.has_value())
        language_token_id(lang_to_id, *language);
    if (is_multilingual && task.has_value() && *task != "transcribe" && *task != "translate")
        fail("'task' mast be 'transcribe' or 'translate'. Task provided: '" + *task + "'.");
    if (!is_multilingual) {
        if (language.has_value())
            fail("Cannot specify 'language' for not multilingual model.");
        if (task.has_value())
            fail("Cannot specify 'task' for not multilingual model.");
    }
    if (num_return_sequences != 1)
        fail("'num_return_sequences' must be 1. Provided: " + std::to_string(num_return_sequences) + ".");
    if (num_assistant_tokens > 0 || assistant_confidence_threshold > 0.0f)
        fail("Assisted generation is not supported.");
    if (word_timestamps && alignment_heads.empty())
        fail("'word_timestamps' can be true only when 'alignment_heads' is set and not empty.");
}

WhisperGenerationConfig merge_with_base(const WhisperGenerationConfig& base, const WhisperGenerationConfig& per_call) {
    WhisperGenerationConfig c = per_call;
    if (c.stop_token_ids.empty())
        c.stop_token_ids = base.stop_token_ids;
    if (c.eos_token_id == -1)
        c.set_eos_token_id(base.eos_token_id);
    if (c.lang_to_id.empty())
        c.lang_to_id = base.lang_to_id;
    c.validate();
    return c;
}

}  // namespace ovgc
