#include "engine/llm_engine.hpp"
#include "engine/decoded_texts.hpp"
#include "engine/beam_search.hpp"
#include "engine/paged_backend.hpp"
#include "engine/prompt_lookup.hpp"
#include "engine/stateful_backend.hpp"
#include "engine/openvino_core.hpp"
#include "engine/gguf/gguf_file.hpp"
#include "engine/gguf/gguf_ir.hpp"
#include "engine/gguf/gguf_model.hpp"
#include "engine/gguf/gguf_tokenizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sys/resource.h>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>

#include "chat_template/chat_template.hpp"
#include "engine/errors.hpp"
#include "common/utf8.hpp"

namespace ovgc {

// ---------------------------------------------------------------- helpers

namespace {

// An environment switch: set, not empty and not "0".
bool env_flag(const char* name) {
    const char* e = std::getenv(name);
    return e && *e && std::strcmp(e, "0") != 0;
}

bool ends_with(const std::string& s, const std::string& suf) {
    return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

std::string gguf_hint() {
    return "pass the .gguf file itself (llama, qwen2 and qwen3 models are read directly; with the property "
           "enable_save_ov_model=YES the OpenVINO IR is also written beside it)";
}

size_t read_max_context(const std::string& dir) {
    std::ifstream f(dir + "/config.json");
    if (!f)
        return 0;
    std::stringstream ss;
    ss << f.rdbuf();
    try {
        JsonValue j = json_parse(ss.str());
        if (auto* v = j.find("max_position_embeddings"); v && v->is_int() && v->as_int() > 0)
            return static_cast<size_t>(v->as_int());
    } catch (...) {
    }
    return 0;
}

// The largest weights file (openvino_model.bin) for which the PA engine compiles its one-token form by default.
constexpr std::uintmax_t kStaticDecodeMaxWeights = 256ULL << 20;
// Prompt lookup: the most drafts one step may verify once whole drafts keep being accepted (prompt_lookup.hpp)
constexpr size_t kMaxDraftTokens = 32;
// ... and the most padding tokens a step feeds to keep the previous inference's shape
constexpr size_t kMaxPadTokens = 8;
// Speculative decoding: the draft tokens per step when the config sets neither num_assistant_tokens nor
// assistant_confidence_threshold (GenAI's default)
constexpr size_t kDefaultAssistantTokens = 5;

struct Timer {
    Clock::time_point t0 = Clock::now();
    float us() const { return PerfMetrics::us_between(t0, Clock::now()); }
};

}  // namespace

std::string DecodedResults::to_string() const { return decoded_texts_string(texts, scores); }

// ---------------------------------------------------------------- construction

LLMEngine::LLMEngine(const std::string& models_path, const std::string& device,
                     const std::vector<std::pair<std::string, std::string>>& properties) {
    const auto t0 = Clock::now();
    std::string dir = models_path;
    while (dir.size() > 1 && dir.back() == '/')
        dir.pop_back();
    // A GGUF file (GenAI's test: the .gguf extension) is read and built in memory (engine/gguf/), else an IR folder.
    const bool from_gguf = ends_with(dir, ".gguf");
    std::unique_ptr<gguf::GgufFile> gguf_file;
    if (from_gguf) {
        if (!is_file(dir))
            throw std::runtime_error("GGUF file '" + models_path + "' does not exist or is not a file");
        gguf_file = std::make_unique<gguf::GgufFile>(dir);
    } else {
        if (!is_dir(dir))
            throw std::runtime_error("model folder '" + models_path + "' does not exist or is not a directory");
        std::string missing;
        for (const char* f : {"openvino_model.xml", "openvino_model.bin", "openvino_tokenizer.xml", "openvino_detokenizer.xml"})
            if (!is_file(dir + "/" + f))
                missing += std::string(missing.empty() ? "" : ", ") + f;
        if (!missing.empty()) {
            std::string msg = "model folder '" + models_path + "' lacks " + missing;
            if (!is_file(dir + "/openvino_model.xml"))
                msg += "; if you have a GGUF, " + gguf_hint() +
                       "; for a Hugging Face model: optimum-cli export openvino --model <id> <folder>";
            throw std::runtime_error(msg);
        }
    }

    ov::AnyMap compile_props;
    // The attention backend: the ATTENTION_BACKEND property, else OVGENAI_C_BUNDLED_ATTENTION_BACKEND (read at
    // pipeline create), else the build default OVGC_DEFAULT_ATTENTION_BACKEND (CMake cache variable; PA unless changed).
    std::string backend = OVGC_DEFAULT_ATTENTION_BACKEND;
    if (const char* env = std::getenv("OVGENAI_C_BUNDLED_ATTENTION_BACKEND"); env && *env)
        backend = env;
    // SchedulerConfig fields (ovgenai_c.scheduler): any of them selects PA, as scheduler_config does in GenAI.
    bool scheduler_config = false;
    SchedulerConfig scheduler;
    size_t cache_size_gb = 0;
    auto size_value = [](const std::string& key, const std::string& v) -> size_t {
        size_t pos = 0;
        unsigned long long n = 0;
        try {
            if (v.empty() || v[0] == '-')
                throw std::invalid_argument(v);
            n = std::stoull(v, &pos, 10);
        } catch (const std::exception&) {
            pos = 0;
        }
        if (pos == 0 || pos != v.size())
            throw std::invalid_argument(key + " must be a non-negative integer, got '" + v + "'");
        return static_cast<size_t>(n);
    };
    // A single sequence's one-token steps on a static one-token form of the PA model (PagedKV::one_token_form):
    // ~15 % faster steps with identical logits, measured on CPU, for a second compilation (beside the first: load
    // ~+0.6 s) and memory (~2× the weights file more). On by default on CPU for weights files up to 256 MiB, where
    // the per-node work it saves weighs most and the memory least; the environment variable OVGENAI_C_STATIC_DECODE
    // (read at create) and, over it, the property of that name (YES/NO) decide otherwise.
    bool static_decode = false;
    bool save_ir = false;
    std::string draft_spec;
    if (device == "CPU") {
        std::error_code ec;
        const auto weights = std::filesystem::file_size(from_gguf ? dir : dir + "/openvino_model.bin", ec);
        static_decode = !ec && weights <= kStaticDecodeMaxWeights;
    }
    if (const char* env = std::getenv("OVGENAI_C_STATIC_DECODE"); env && *env)
        static_decode = property_flag("the environment variable OVGENAI_C_STATIC_DECODE", env);
    for (auto& [k, v] : properties) {
        if (k == "ATTENTION_BACKEND") {
            backend = v;
            continue;
        }
        if (k == "prompt_lookup") {  // GenAI's property (ov::genai::prompt_lookup), as the C API passes it: a string
            prompt_lookup_ = property_flag(k, v);
            continue;
        }
        if (k == "enable_save_ov_model") {  // GenAI's GGUF property; a folder of IR has nothing to save
            save_ir = property_flag(k, v);
            continue;
        }
        if (k == "OVGENAI_C_STATIC_DECODE") {  // the PA engine's one-token form (PagedKV::one_token_form)
            static_decode = property_flag(k, v);
            continue;
        }
        if (k == "OVGENAI_C_DRAFT_MODEL") {  // speculative decoding: {"path", "device", "properties": {k: "v"}}
            draft_spec = v;
            continue;
        }
        if (k.rfind("OVGENAI_C_", 0) == 0) {
            if (k == "OVGENAI_C_MAX_NUM_BATCHED_TOKENS")
                scheduler.max_num_batched_tokens = size_value(k, v);
            else if (k == "OVGENAI_C_DYNAMIC_SPLIT_FUSE")
                scheduler.dynamic_split_fuse = property_flag(k, v);
            else if (k == "OVGENAI_C_MAX_NUM_SEQS")
                scheduler.max_num_seqs = size_value(k, v);
            else if (k == "OVGENAI_C_ENABLE_PREFIX_CACHING")
                scheduler.enable_prefix_caching = property_flag(k, v);
            else if (k == "OVGENAI_C_NUM_KV_BLOCKS")
                scheduler.num_kv_blocks = size_value(k, v);
            else if (k == "OVGENAI_C_CACHE_SIZE")
                cache_size_gb = size_value(k, v);
            else
                throw std::invalid_argument("unknown bundled-backend property '" + k + "'");
            scheduler_config = true;
            continue;
        }
        compile_props[k] = v;
    }
    if (backend != "SDPA" && backend != "PA")
        throw std::invalid_argument("ATTENTION_BACKEND must be SDPA or PA, got '" + backend + "'");
    if (prompt_lookup_ && !draft_spec.empty())
        throw std::invalid_argument("prompt_lookup and a draft model exclude each other: the drafts come from one of them");
    // GenAI runs prompt lookup and speculative decoding on its continuous-batching (PA) pipeline whatever
    // ATTENTION_BACKEND says
    const bool use_pa = backend == "PA" || scheduler_config || prompt_lookup_ || !draft_spec.empty();
    if (scheduler_config) {
        if (scheduler.max_num_batched_tokens == 0)
            throw std::invalid_argument("SchedulerConfig max_num_batched_tokens must be greater than 0");
        if (cache_size_gb > std::numeric_limits<size_t>::max() / (1024ULL * 1024ULL * 1024ULL))
            throw std::invalid_argument("SchedulerConfig cache_size " + std::to_string(cache_size_gb) +
                                        " GB is larger than available memory size on the system");
        scheduler.cache_bytes = cache_size_gb * 1024ULL * 1024ULL * 1024ULL;
    }

    load_tokenizers_extension();
    std::shared_ptr<ov::Model> model;
    if (from_gguf) {
        gguf::TokenizerModels tokenizers = gguf::build_tokenizer_models(*gguf_file);
        model = gguf::build_language_model(*gguf_file);
        max_context_ = gguf::context_length(*gguf_file);
        gguf_file.reset();  // everything needed is copied out of the mapping
        if (save_ir)  // GenAI writes what it built beside the GGUF
            gguf::save_ir(std::filesystem::path(dir).parent_path().string(), model, &tokenizers);
        tokenizer_ = std::make_unique<Tokenizer>(core(), tokenizers.tokenizer, tokenizers.detokenizer);
    } else {
        tokenizer_ = std::make_unique<Tokenizer>(core(), dir);
        model = core().read_model(dir + "/openvino_model.xml");
        max_context_ = read_max_context(dir);
    }
    if (!tokenizer_->chat_template().empty()) {
        try {
            template_ = std::make_unique<ChatTemplate>(tokenizer_->chat_template());
        } catch (const std::exception& e) {
            template_error_ = e.what();  // reported when a template is needed
        }
    }

    bool has_input_ids = false, has_mask = false, has_beam = false;
    for (auto& in : model->inputs()) {
        auto& names = in.get_names();
        has_input_ids |= names.count("input_ids") > 0;
        has_mask |= names.count("attention_mask") > 0;
        has_beam |= names.count("beam_idx") > 0;
    }
    if (!has_input_ids || !has_mask || !has_beam)
        throw std::runtime_error("openvino_model.xml is not a stateful LLM (needs inputs input_ids, attention_mask, "
                                 "beam_idx and a KV-cache state); export it with optimum-cli export openvino (stateful)");
    // Upstream's stateful pipeline (2026.4) feeds beam_idx 0 for every sampled sequence when
    // num_return_sequences > 1, so all sequences attend to sequence 0's KV cache. We keep each
    // sequence's own cache; this switch reproduces upstream token for token (for parity tests; SDPA only).
    const bool compat_row0 = env_flag("OVGENAI_C_BUNDLED_COMPAT_ROW0");
    // the one place the two attention forms differ for the engine: which backend rewrites and drives the model
    if (use_pa)
        backend_ = std::make_unique<PagedBackend>(model, scheduler, static_decode);
    else
        backend_ = std::make_unique<StatefulBackend>(model, compat_row0);

    ov::CompiledModel compiled;
    try {
        backend_->start_forms(core(), device, compile_props);  // (the backend waits for them when it goes)
        compiled = core().compile_model(model, device, compile_props);
        req_ = compiled.create_infer_request();
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string("compiling the model for device '") + device + "' failed: " + e.what());
    }
    backend_->bind(compiled, req_);
    backend_->attach_forms();
    for (auto& out : compiled.outputs()) {
        auto& names = out.get_names();
        const auto& ps = out.get_partial_shape();
        if (names.count("logits") && ps.rank().is_static() && ps.rank().get_length() >= 1 && ps[ps.rank().get_length() - 1].is_static())
            vocab_size_ = static_cast<size_t>(ps[ps.rank().get_length() - 1].get_length());
    }

    if (!from_gguf && is_file(dir + "/generation_config.json"))
        config_.update_from_json_file(dir + "/generation_config.json");
    if (config_.eos_token_id == -1 && tokenizer_->eos_token_id() >= 0)
        config_.set_eos_token_id(tokenizer_->eos_token_id());
    if (!draft_spec.empty())
        load_draft_model(draft_spec);
    load_time_ms_ = PerfMetrics::us_between(t0, Clock::now()) / 1000.0f;
}

LLMEngine::~LLMEngine() = default;

// ---------------------------------------------------------------- speculative decoding's draft model

void LLMEngine::load_draft_model(const std::string& spec) {
    JsonValue j;
    try {
        j = json_parse(spec);
    } catch (const std::exception& e) {
        throw std::invalid_argument(std::string("OVGENAI_C_DRAFT_MODEL must be a JSON object: ") + e.what());
    }
    const JsonValue* path = j.is_object() ? j.find("path") : nullptr;
    if (!path || !path->is_string() || path->as_string().empty())
        throw std::invalid_argument("OVGENAI_C_DRAFT_MODEL needs \"path\": the draft model's folder or GGUF file");
    std::string device = "CPU";
    if (const JsonValue* d = j.find("device"); d && !(d->is_string() && d->as_string().empty())) {
        if (!d->is_string())
            throw std::invalid_argument("OVGENAI_C_DRAFT_MODEL \"device\" must be a string");
        device = d->as_string();
    }
    std::vector<std::pair<std::string, std::string>> props;
    if (const JsonValue* p = j.find("properties")) {
        if (!p->is_object())
            throw std::invalid_argument("OVGENAI_C_DRAFT_MODEL \"properties\" must be an object of strings");
        for (auto& [k, v] : p->as_object()) {
            if (!v.is_string())
                throw std::invalid_argument("OVGENAI_C_DRAFT_MODEL property '" + k + "' must be a string");
            if (k == "OVGENAI_C_DRAFT_MODEL" || k == "prompt_lookup")
                throw std::invalid_argument("a draft model cannot have '" + k + "' of its own");
            props.emplace_back(k, v.as_string());
        }
    }
    try {
        draft_ = std::make_unique<LLMEngine>(path->as_string(), device, props);
    } catch (const std::exception& e) {
        throw std::runtime_error("loading the draft model '" + path->as_string() + "' failed: " + e.what());
    }
    if (draft_->vocab_size_ && vocab_size_ && draft_->vocab_size_ != vocab_size_)
        throw std::invalid_argument("the draft model's vocabulary (" + std::to_string(draft_->vocab_size_) +
                                    " tokens) differs from the main model's (" + std::to_string(vocab_size_) +
                                    "): speculative decoding needs the same tokenizer");
}

int64_t LLMEngine::last_argmax(float* prob) {
    ov::Tensor lg = backend_->step_request().get_tensor("logits");
    const auto shp = lg.get_shape();
    if (shp.empty() || shp.back() == 0 || lg.get_size() < shp.back())
        throw std::runtime_error("unexpected logits shape");
    const size_t vocab = shp.back();
    const size_t offset = lg.get_size() - vocab;  // the last row: the last token fed
    std::vector<float> row(vocab);
    const auto type = lg.get_element_type();
    if (type == ov::element::f32) {
        const float* src = lg.data<float>() + offset;
        std::copy(src, src + vocab, row.begin());
    } else if (type == ov::element::f16) {
        const auto* src = lg.data<ov::float16>() + offset;
        for (size_t i = 0; i < vocab; ++i)
            row[i] = static_cast<float>(src[i]);
    } else if (type == ov::element::bf16) {
        const auto* src = lg.data<ov::bfloat16>() + offset;
        for (size_t i = 0; i < vocab; ++i)
            row[i] = static_cast<float>(src[i]);
    } else {
        throw std::runtime_error("unsupported logits element type " + type.get_type_name());
    }
    const int64_t best = Sampler::greedy(row.data(), vocab).id;
    if (prob) {
        double sum = 0.0;
        const float top = row[static_cast<size_t>(best)];
        for (float x : row)
            sum += std::exp(static_cast<double>(x - top));
        *prob = static_cast<float>(1.0 / sum);
    }
    return best;
}

const std::vector<int64_t>& LLMEngine::draft_tokens(const std::vector<int64_t>& text, size_t max_n, float confidence,
                                                    RawPerf& raw) {
    drafted_.clear();
    if (max_context_)
        max_n = std::min(max_n, max_context_ > text.size() ? max_context_ - text.size() : 0);
    if (text.empty() || max_n == 0)
        return drafted_;
    try {
        size_t p = 0;
        while (p < kv_tokens_.size() && p < text.size() && kv_tokens_[p] == text[p])
            ++p;
        if (p == text.size())
            --p;  // the last token is fed again: its logits are the first draft's
        if (p < kv_tokens_.size() || kv_batch_ != 1)
            trim_kv(p);
        size_t cached = kv_tokens_.size();
        auto infer = [&](size_t fed) {
            Timer t;
            ov::InferRequest& req = backend_->step_request();
            req.start_async();
            req.wait();
            raw.draft_infer_us.push_back(t.us());
            raw.draft_fed.push_back(fed);
        };
        const std::vector<size_t> chunks = backend_->prefill_chunks(text.size() - cached);
        for (size_t n : chunks) {
            backend_->prepare_prefill(text.data() + cached, n, cached);
            infer(n);
            cached += n;
        }
        kv_tokens_.assign(text.begin(), text.end());
        kv_batch_ = 1;
        while (true) {
            float prob = 1.0f;
            const int64_t tok = last_argmax(confidence > 0.0f ? &prob : nullptr);
            drafted_.push_back(tok);
            if (drafted_.size() >= max_n || (confidence > 0.0f && prob < confidence))
                break;
            backend_->prepare_decode({tok}, {backend_->sampled_parent_row(0)}, kv_tokens_.size());
            infer(1);
            kv_tokens_.push_back(tok);
        }
    } catch (...) {
        reset_kv();
        throw;
    }
    return drafted_;
}

// ---------------------------------------------------------------- configuration

void LLMEngine::set_generation_config(const GenerationConfig& cfg) {
    GenerationConfig c = cfg;
    if (c.eos_token_id == -1 && config_.eos_token_id != -1)
        c.set_eos_token_id(config_.eos_token_id);
    if (cfg.stop_token_ids.empty())
        c.stop_token_ids.insert(config_.stop_token_ids.begin(), config_.stop_token_ids.end());
    c.validate();
    config_ = c;
}

GenerationConfig LLMEngine::resolve(const GenerationConfig* cfg) const {
    GenerationConfig c = cfg ? *cfg : config_;
    if (c.stop_token_ids.empty())
        c.stop_token_ids = config_.stop_token_ids;
    if (c.eos_token_id == -1 && config_.eos_token_id != -1)
        c.set_eos_token_id(config_.eos_token_id);
    c.validate();
    return c;
}

void LLMEngine::check_supported(const GenerationConfig& cfg, bool streaming) const {
    if (cfg.echo && !backend_->keeps_cache_between_requests())  // PA has it; GenAI's stateful pipeline refuses it
        throw std::invalid_argument("echo is not supported in the stateful pipeline (ATTENTION_BACKEND=SDPA)");
    if (cfg.echo && chat_)
        throw std::invalid_argument("echo is not supported in a chat (start_chat): the history keeps answers only");
    if (cfg.num_return_sequences > 1024)
        throw std::invalid_argument("num_return_sequences " + std::to_string(cfg.num_return_sequences) +
                                    " is too large for the stateful pipeline (at most 1024 sequences per batch)");
    if (cfg.num_beams > 1024)
        throw std::invalid_argument("num_beams " + std::to_string(cfg.num_beams) +
                                    " is too large (at most 1024 sequences per batch)");
    if (prompt_lookup_ && !cfg.is_prompt_lookup())  // GenAI's prompt-lookup pipeline asserts this for every request
        throw std::invalid_argument("`max_ngram_size` && `num_assistant_tokens` should be specified for `prompt lookup "
                                    "decoding` (the pipeline was created with prompt_lookup)");
    if (draft_ && (cfg.num_return_sequences != 1 || cfg.is_beam_search()))  // GenAI's assertion with a draft model
        throw std::invalid_argument("Beam search and parallel sampling are not compatible with assistant generation "
                                    "(the pipeline has a draft model)");
    if (streaming && (cfg.num_return_sequences != 1 || cfg.is_beam_search()))
        throw std::invalid_argument("Currently streaming is possible only with batch size=1 and only for greedy or "
                                    "multinomial decoding (num_return_sequences == 1, no beam search)");
}

// ---------------------------------------------------------------- chat template

std::string LLMEngine::render(const JsonValue& messages, const JsonValue* tools, const JsonValue* extra,
                              PerfMetrics& perf) {
    if (!template_) {
        if (!template_error_.empty())
            throw std::runtime_error("the model's chat template could not be parsed: " + template_error_);
        throw std::runtime_error("the model has no chat template (tokenizer rt_info 'chat_template' is empty)");
    }
    Timer t;
    JsonValue ctx = JsonValue::object();
    ctx.set("messages", messages);
    ctx.set("add_generation_prompt", true);
    ctx.set("bos_token", tokenizer_->bos_token());
    ctx.set("eos_token", tokenizer_->eos_token());
    if (tools && tools->is_array() && tools->size() > 0)
        ctx.set("tools", *tools);
    if (extra && extra->is_object())
        for (auto& [k, v] : extra->as_object())
            ctx.set(k, v);
    std::string out = template_->render(ctx);
    perf.raw.chat_template_us.push_back(t.us());
    return out;
}

// ---------------------------------------------------------------- public generate

DecodedResults LLMEngine::generate(const std::string& prompt, const GenerationConfig* cfg_in,
                                   const StreamCallback* streamer) {
    const auto start = Clock::now();
    if (chat_ && chat_input_ == ChatInput::Undef)
        chat_input_ = ChatInput::String;
    if (chat_ && chat_input_ != ChatInput::String)
        throw std::runtime_error("chat doesn't support switching between input types; keep using chat history "
                                 "input or call finish_chat() first");
    GenerationConfig cfg = resolve(cfg_in);
    check_supported(cfg, streamer != nullptr);
    size_t bad = 0;
    if (!utf8_valid(prompt, &bad))
        throw std::invalid_argument("the prompt is not valid UTF-8 (byte offset " + std::to_string(bad) + ")");

    PerfMetrics perf;
    std::vector<int64_t> tokens;
    if (chat_) {
        JsonValue msg = JsonValue::object();
        msg.set("role", "user");
        msg.set("content", prompt);
        history_.push_back(msg);
        try {
            std::string text = render(history_, nullptr, nullptr, perf);
            tokens = tokenizer_->encode(text, false);
        } catch (...) {
            history_.as_array().pop_back();
            throw;
        }
    } else if (cfg.apply_chat_template && !tokenizer_->chat_template().empty()) {
        JsonValue msgs = JsonValue::array();
        JsonValue msg = JsonValue::object();
        msg.set("role", "user");
        msg.set("content", prompt);
        msgs.push_back(msg);
        tokens = tokenizer_->encode(render(msgs, nullptr, nullptr, perf), false);
    } else {
        tokens = tokenizer_->encode(prompt, true);
    }

    DecodedResults res;
    try {
        res = run_chat_tokens(std::move(tokens), cfg, streamer, start, std::move(perf));
    } catch (...) {
        if (chat_)
            history_.as_array().pop_back();
        throw;
    }
    return res;
}

DecodedResults LLMEngine::generate_with_history(const ChatHistoryData& history, const GenerationConfig* cfg_in,
                                                const StreamCallback* streamer) {
    chat_ = true;
    if (chat_input_ == ChatInput::Undef)
        chat_input_ = ChatInput::History;
    if (chat_input_ != ChatInput::History)
        throw std::runtime_error("chat doesn't support switching between input types; keep using string input or "
                                 "call finish_chat() first");
    const auto start = Clock::now();
    GenerationConfig cfg = resolve(cfg_in);
    check_supported(cfg, streamer != nullptr);
    if (!cfg.apply_chat_template)
        throw std::invalid_argument("chat template must be applied when using chat history");
    if (tokenizer_->chat_template().empty())
        throw std::runtime_error("the model has no chat template; generate_with_history needs one");
    if (!history.messages.is_array() || history.messages.size() == 0)
        throw std::invalid_argument("chat history must not be empty");
    // As upstream's stateful pipeline: the KV cache of the previous call is reused only when this history
    // continues the previous one (more messages, the earlier ones equal); otherwise it starts over. The PA engine
    // always goes through the prefix-cache rule instead (GenAI's PA pipeline keeps no chat state).
    bool continues = history.messages.size() > history_.size();
    for (size_t i = 0; continues && i < history_.size(); ++i)
        continues = history.messages.as_array()[i] == history_.as_array()[i];
    if (!continues && !backend_->keeps_cache_between_requests())
        reset_kv();
    history_ = history.messages;
    PerfMetrics perf;
    std::string text = render(history.messages, &history.tools, &history.extra_context, perf);
    if (!utf8_valid(text))
        throw std::invalid_argument("the rendered chat history is not valid UTF-8");
    auto tokens = tokenizer_->encode(text, false);
    return run_chat_tokens(std::move(tokens), cfg, streamer, start, std::move(perf));
}

DecodedResults LLMEngine::generate_tokens(const std::vector<int64_t>& ids, const GenerationConfig* cfg_in,
                                          const StreamCallback* streamer) {
    const auto start = Clock::now();
    if (chat_)
        throw std::runtime_error("generate from token ids inside a chat is not supported by the bundled backend; "
                                 "call finish_chat() first");
    GenerationConfig cfg = resolve(cfg_in);
    check_supported(cfg, streamer != nullptr);
    if (ids.empty())
        throw std::invalid_argument("the input has no tokens (none with attention_mask 1)");
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || (vocab_size_ && static_cast<size_t>(ids[i]) >= vocab_size_))
            throw std::invalid_argument("input token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                                        " is outside the model's vocabulary [0, " + std::to_string(vocab_size_) + ")");
    return run_chat_tokens(ids, cfg, streamer, start, PerfMetrics());
}

void LLMEngine::start_chat() {
    finish_chat();
    chat_ = true;
}

void LLMEngine::finish_chat() {
    chat_ = false;
    chat_input_ = ChatInput::Undef;
    history_ = JsonValue::array();
    // GenAI's PA pipeline keeps its prefix cache across chats: the next request may reuse these blocks
    if (!backend_->keeps_cache_between_requests())
        reset_kv();
}

// ---------------------------------------------------------------- shared with the batching engine

std::vector<int64_t> LLMEngine::encode_prompt(const std::string& prompt, const GenerationConfig& cfg,
                                              PerfMetrics& perf) {
    size_t bad = 0;
    if (!utf8_valid(prompt, &bad))
        throw std::invalid_argument("the prompt is not valid UTF-8 (byte offset " + std::to_string(bad) + ")");
    if (cfg.apply_chat_template && !tokenizer_->chat_template().empty()) {
        JsonValue msgs = JsonValue::array();
        JsonValue msg = JsonValue::object();
        msg.set("role", "user");
        msg.set("content", prompt);
        msgs.push_back(msg);
        return tokenizer_->encode(render(msgs, nullptr, nullptr, perf), false);
    }
    return tokenizer_->encode(prompt, true);
}

std::vector<int64_t> LLMEngine::encode_history(const ChatHistoryData& history, const GenerationConfig& cfg,
                                               PerfMetrics& perf) {
    if (!cfg.apply_chat_template)
        throw std::invalid_argument("chat template must be applied when using chat history");
    if (tokenizer_->chat_template().empty())
        throw std::runtime_error("the model has no chat template; a chat history needs one");
    if (!history.messages.is_array() || history.messages.size() == 0)
        throw std::invalid_argument("chat history must not be empty");
    std::string text = render(history.messages, &history.tools, &history.extra_context, perf);
    if (!utf8_valid(text))
        throw std::invalid_argument("the rendered chat history is not valid UTF-8");
    return tokenizer_->encode(text, false);
}

const SchedulerConfig* LLMEngine::paged_scheduler() const {
    auto* paged = dynamic_cast<const PagedBackend*>(backend_.get());
    return paged ? &paged->scheduler() : nullptr;
}

ov::CompiledModel LLMEngine::paged_one_token_form() const {
    auto* paged = dynamic_cast<const PagedBackend*>(backend_.get());
    return paged ? paged->one_token_form() : ov::CompiledModel{};
}

// ---------------------------------------------------------------- KV cache

void LLMEngine::reset_kv() {
    backend_->reset();
    kv_tokens_.clear();
    kv_batch_ = 1;
}

void LLMEngine::trim_kv(size_t keep) {
    if (keep == 0 || kv_batch_ != 1) {
        reset_kv();
        return;
    }
    backend_->trim(keep);
    kv_tokens_.resize(keep);
}

// ---------------------------------------------------------------- core

DecodedResults LLMEngine::echo_only(const std::vector<int64_t>& full, const StreamCallback* streamer,
                                    Clock::time_point start, Clock::time_point encode_stop, PerfMetrics perf) {
    // echo with no new token (max_new_tokens 0): the prompt is the answer, as GenAI's pipeline gives it back
    // without generating; a streamer gets it as GenAI's does (all of it in one write, then the end)
    if (streamer && token_streamer_) {
        token_streamer_(full.data(), full.size());
    } else if (streamer && stream_text_) {
        TextStreamer ts(*tokenizer_, *streamer);
        ts.push_undecoded(std::vector<int64_t>(full.begin(), full.end() - 1));
        if (ts.put(full.back()) == StreamStatus::Running)
            ts.end();
    }
    const auto detok_start = Clock::now();
    DecodedResults res;
    res.texts.push_back(tokenizer_->decode(full));
    res.tokens.push_back(full);
    res.scores.push_back(0.0f);
    res.finish_reasons.push_back(0);  // NONE, as GenAI reports it
    const auto detok_stop = Clock::now();
    perf.load_time_ms = load_time_ms_;
    perf.raw.generate_us.push_back(PerfMetrics::us_between(start, Clock::now()));
    perf.raw.tokenization_us.push_back(PerfMetrics::us_between(start, encode_stop));
    perf.raw.detokenization_us.push_back(PerfMetrics::us_between(detok_start, detok_stop));
    perf.finalize_call(start);
    res.perf = std::move(perf);
    return res;
}

DecodedResults LLMEngine::run_chat_tokens(std::vector<int64_t> full, const GenerationConfig& cfg,
                                          const StreamCallback* streamer, Clock::time_point start, PerfMetrics perf) {
    if (full.empty())
        throw std::invalid_argument("the prompt tokenized to zero tokens");
    cfg.check_prompt_length(full.size());
    if (max_context_ && full.size() >= max_context_)
        throw std::invalid_argument("the prompt has " + std::to_string(full.size()) +
                                    " tokens, which does not fit the model's context of " + std::to_string(max_context_) +
                                    " tokens (config.json max_position_embeddings)");
    const auto encode_stop = Clock::now();
    if (cfg.echo && cfg.get_max_new_tokens(full.size()) == 0)
        return echo_only(full, streamer, start, encode_stop, std::move(perf));

    size_t cached = 0;
    // Chat reuses the KV cache of the previous turn. With PA, plain generate calls also keep the previous
    // request's blocks and reuse whole blocks of a common prefix (as GenAI's default CPU pipeline, whose
    // latency-oriented scheduler config enables prefix caching).
    if (backend_->reuses_prefix(chat_)) {
        size_t p = 0;
        while (p < kv_tokens_.size() && p < full.size() && kv_tokens_[p] == full[p])
            ++p;
        // PA (chat or not, as GenAI's PA pipeline, whose prefix cache is all it reuses): whole blocks only
        p = backend_->reusable_prefix(p, kv_tokens_.size());
        if (p == full.size())
            --p;  // at least one token must be fed
        if (p < kv_tokens_.size() || kv_batch_ != 1)
            trim_kv(p);
        cached = kv_tokens_.size();
    } else {
        reset_kv();
    }

    RunResult rr;
    try {
        rr = decode_loop(full, cached, cfg, streamer, perf);
    } catch (...) {
        reset_kv();
        throw;
    }

    const auto detok_start = Clock::now();
    DecodedResults res;
    for (auto& t : rr.tokens) {
        if (cfg.echo)  // echo: each sequence's ids start with the prompt's, and its text is theirs together
            t.insert(t.begin(), full.begin(), full.end());
        res.texts.push_back(tokenizer_->decode(t));
    }
    res.tokens = std::move(rr.tokens);
    res.scores = rr.scores;
    res.finish_reasons = rr.finish_reasons;
    const auto detok_stop = Clock::now();

    if (chat_ && chat_input_ == ChatInput::String) {
        if (rr.status == StreamStatus::Cancel) {
            history_.as_array().pop_back();
        } else {
            JsonValue msg = JsonValue::object();
            msg.set("role", "assistant");
            msg.set("content", res.texts.empty() ? std::string() : res.texts[0]);
            history_.push_back(msg);
        }
    }
    if (!chat_ && !backend_->keeps_cache_between_requests())
        reset_kv();

    const auto stop = Clock::now();
    perf.load_time_ms = load_time_ms_;
    perf.raw.generate_us.push_back(PerfMetrics::us_between(start, stop));
    perf.raw.tokenization_us.push_back(PerfMetrics::us_between(start, encode_stop));
    perf.raw.detokenization_us.push_back(PerfMetrics::us_between(detok_start, detok_stop));
    perf.finalize_call(start);
    res.perf = std::move(perf);
    return res;
}

namespace {

struct Seq {
    std::vector<int64_t> gen;
    std::map<int64_t, size_t> counts;
    float score = 0.0f;
    bool finished = false;
    int reason = 0;  // GenerationFinishReason: 0 NONE, 1 STOP (stop token / string / streamer STOP), 2 LENGTH
    size_t row = 0;       // row of this sequence in the last infer batch
    size_t streamed = 0;  // tokens already given to the streamer
};

}  // namespace

LLMEngine::RunResult LLMEngine::decode_loop(const std::vector<int64_t>& full, size_t cached,
                                            const GenerationConfig& cfg, const StreamCallback* streamer,
                                            PerfMetrics& perf) {
    RunResult rr;
    sampler_.reseed(cfg.rng_seed);
    const size_t prompt_len = full.size();
    const size_t feed = prompt_len - cached;
    const size_t max_new = cfg.get_max_new_tokens(prompt_len);
    std::set<int64_t> prompt_ids(full.begin(), full.end());

    // Stop strings: window = longest stop string in tokens (as upstream).
    size_t window = 0;
    for (auto& s : cfg.stop_strings)
        window = std::max(window, tokenizer_->encode(s, false).size());
    // As GenAI's: a streamed token waits until the longest stop string's tokens after it are known, whether or
    // not stop strings go into the output
    const size_t stream_hold = cfg.stop_strings.empty() ? 0 : window;

    std::unique_ptr<TextStreamer> ts;  // none in cancel-only mode (the callback then gets "" per token) and
                                       // with a token streamer (it gets the ids)
    if (streamer && stream_text_ && !token_streamer_)
        ts = std::make_unique<TextStreamer>(*tokenizer_, *streamer);

    float infer_total_us = 0.0f;
    // Runs the inference the backend's last prepare_* filled, on the plugin's (pinned) stream thread as upstream's
    // steps do (measured: equal to infer() or a little faster).
    auto infer_prepared = [&]() {
        ov::InferRequest& req = backend_->step_request();
        req.start_async();
        req.wait();
    };
    auto run_infer_sync = [&]() {
        Timer t;
        infer_prepared();
        float us = t.us();
        infer_total_us += us;
        perf.raw.token_infer_us.push_back(us);
        perf.raw.token_times.push_back(Clock::now());
    };

    // ---- prefill: the uncached prompt tokens in the backend's chunks (one unless PA's batch limit splits them);
    // the whole prefill is one first-token step
    {
        const std::vector<size_t> chunks = backend_->prefill_chunks(feed);
        float chunks_us = 0.0f;
        size_t done = 0;
        for (size_t k = 0; k + 1 < chunks.size(); ++k) {
            backend_->prepare_prefill(full.data() + cached + done, chunks[k], cached + done);
            Timer t;
            infer_prepared();
            chunks_us += t.us();
            done += chunks[k];
        }
        backend_->prepare_prefill(full.data() + cached + done, chunks.back(), cached + done);
        run_infer_sync();
        perf.raw.token_infer_us.back() += chunks_us;
        infer_total_us += chunks_us;
        perf.raw.batch_sizes.push_back(1);
        // GenAI's PA pipeline counts reused (prefix-cached) prompt tokens too, its stateful one only those fed
        perf.num_input_tokens = backend_->counts_reused_prompt_tokens() ? prompt_len : feed;
    }
    kv_tokens_.assign(full.begin(), full.end());
    kv_batch_ = 1;

    std::vector<Seq> seqs;
    std::vector<float> row_buf;

    auto logits_row = [&](size_t row, size_t& vocab) -> float* {
        ov::Tensor lg = backend_->step_request().get_tensor("logits");
        auto shp = lg.get_shape();
        if (shp.size() != 3)
            throw std::runtime_error("unexpected logits rank");
        vocab = shp[2];
        const size_t S = shp[1];
        if (lg.get_element_type() == ov::element::f32) {
            float* base = lg.data<float>() + (row * S + (S - 1)) * vocab;
            return base;
        }
        // other precisions: convert the row
        row_buf.resize(vocab);
        ov::Tensor src(lg.get_element_type(), ov::Shape{1, 1, vocab},
                       static_cast<uint8_t*>(lg.data()) + (row * S + (S - 1)) * vocab * lg.get_element_type().size());
        if (lg.get_element_type() == ov::element::f16) {
            const auto* h = src.data<ov::float16>();
            for (size_t i = 0; i < vocab; ++i)
                row_buf[i] = static_cast<float>(h[i]);
        } else if (lg.get_element_type() == ov::element::bf16) {
            const auto* h = src.data<ov::bfloat16>();
            for (size_t i = 0; i < vocab; ++i)
                row_buf[i] = static_cast<float>(h[i]);
        } else {
            throw std::runtime_error("unsupported logits element type");
        }
        return row_buf.data();
    };

    // Trailing tokens to drop when `gen` ends in a stop string (upstream's window and trimming), -1 otherwise.
    auto match_stop_string = [&](const std::vector<int64_t>& gen) -> long {
        if (cfg.stop_strings.empty() || gen.size() < window)
            return -1;
        std::vector<int64_t> buf(gen.end() - window, gen.end());
        std::string text = tokenizer_->decode(buf);
        for (auto& ss : cfg.stop_strings) {
            auto pos = text.find(ss);
            if (pos == std::string::npos)
                continue;
            std::string kept = text.substr(0, pos + (cfg.include_stop_str_in_output ? ss.size() : 0));
            while (!kept.empty() && (kept.back() == ' ' || kept.back() == '\n'))
                kept.pop_back();
            size_t to_remove = buf.size();
            if (!kept.empty()) {
                for (size_t i = 0; i < buf.size(); ++i) {
                    std::string part = tokenizer_->decode(buf.data(), i + 1);
                    if (part.find(kept) != std::string::npos) {
                        to_remove = buf.size() - i - 1;
                        break;
                    }
                }
            }
            return static_cast<long>(to_remove);
        }
        return -1;
    };

    // Appends token to seq and applies the stop rules.
    auto accept = [&](Seq& s, const SampledToken& tok) {
        s.gen.push_back(tok.id);
        s.counts[tok.id]++;
        s.score += tok.log_prob;
        const size_t g = s.gen.size();
        if (!cfg.ignore_eos && cfg.stop_token_ids.count(tok.id)) {
            s.finished = true;
            s.reason = 1;
            return;
        }
        if (g >= max_new || (max_context_ && prompt_len + g >= max_context_)) {
            s.finished = true;
            s.reason = 2;
        }
        const long cut = match_stop_string(s.gen);
        if (cut >= 0) {
            s.gen.resize(s.gen.size() - std::min(static_cast<size_t>(cut), s.gen.size()));
            s.finished = true;
            s.reason = 1;
        }
    };

    auto sample_for = [&](Seq& s, size_t row, size_t n) -> std::vector<SampledToken> {
        size_t vocab = 0;
        float* lg = logits_row(row, vocab);
        // no_repeat_ngram_size is a beam-search option upstream; greedy and multinomial ignore it.
        static const std::vector<int64_t> no_ctx;
        const bool need_process = cfg.min_new_tokens > 0 || cfg.repetition_penalty != 1.0f ||
                                  cfg.presence_penalty != 0.0f || cfg.frequency_penalty != 0.0f;
        if (cfg.is_multinomial()) {
            if (need_process)
                Sampler::process(lg, vocab, cfg, prompt_ids, no_ctx, s.counts, s.gen.size());
            return sampler_.multinomial(lg, vocab, cfg, n);
        }
        const GreedyLogProb logprob(lg, vocab, cfg, need_process);
        if (need_process)
            Sampler::process(lg, vocab, cfg, prompt_ids, no_ctx, s.counts, s.gen.size());
        return {logprob.score(Sampler::greedy(lg, vocab), lg)};
    };

    // stream tokens of sequence 0 that are beyond the hold-back window (all when finished)
    auto stream_pending = [&](Seq& s) -> StreamStatus {
        if (!streamer)
            return StreamStatus::Running;
        size_t limit = s.finished ? s.gen.size() : (s.gen.size() > stream_hold ? s.gen.size() - stream_hold : 0);
        StreamStatus st = StreamStatus::Running;
        static const std::string no_text;
        if (cfg.echo && s.streamed == 0 && limit > 0) {  // echo: the prompt comes with the first new token, as
            if (token_streamer_)                           // GenAI's first output carries it
                st = token_streamer_(full.data(), full.size());
            else if (ts)
                ts->push_undecoded(full);
        }
        if (s.streamed >= limit || st != StreamStatus::Running)
            return st;
        // the tokens a step releases go in one write, as GenAI's step output (several after a verification, or
        // the stop-string window's at the end); with no text, one empty call per token (cancel-only mode)
        const int64_t* first = s.gen.data() + s.streamed;
        const size_t n = limit - s.streamed;
        s.streamed = limit;
        if (token_streamer_)
            return token_streamer_(first, n);
        if (!ts) {
            for (size_t i = 0; i < n && st == StreamStatus::Running; ++i)
                st = (*streamer)(no_text);
            return st;
        }
        ts->push_undecoded(std::vector<int64_t>(first, first + n - 1));
        return ts->put(first[n - 1]);
    };

    // Inputs of one decode step: B new tokens, each continuing the sequence in row parents[b] of the last
    // inference (PA: forked block tables; SDPA: beam_idx reorders the state); total_len = tokens in the cache.
    auto feed_step = [&](const std::vector<int64_t>& step_ids, const std::vector<int32_t>& parents, size_t total_len) {
        backend_->prepare_decode(step_ids, parents, total_len);
    };
    // One decode inference, timed like upstream's steps (B tokens counted per step).
    auto run_step = [&](size_t counted) {
        Timer t;
        infer_prepared();
        float us = t.us();
        infer_total_us += us;
        perf.raw.token_infer_us.push_back(us);
        perf.raw.token_times.push_back(Clock::now());
        perf.raw.batch_sizes.push_back(counted);
    };

    if (cfg.is_beam_search()) {
        GroupBeamSearch search(cfg, full, max_context_ ? std::min(max_new, max_context_ - prompt_len) : max_new,
                               match_stop_string);
        auto rows = [&](size_t row, size_t& vocab) -> const float* { return logits_row(row, vocab); };
        auto timed_select = [&] {  // one sampling duration per step, as upstream's sampler records it
            Timer t;
            search.select(rows);
            perf.raw.sampling_us.push_back(t.us());
        };
        timed_select();
        std::vector<int64_t> step_ids;
        std::vector<int32_t> parents;
        size_t total_len = prompt_len;
        while (!search.done()) {
            search.next_batch(step_ids, parents);
            feed_step(step_ids, parents, total_len);
            run_step(1);  // upstream counts one generated token per beam-search step
            kv_batch_ = step_ids.size();
            ++total_len;
            timed_select();
        }
        perf.raw.inference_us.push_back(infer_total_us);
        if (total_len != prompt_len) {
            // The cache holds several beams: keep only (the start of) the prompt, as upstream does (its PA prefix
            // cache keeps the prompt's whole blocks; its stateful chat trims the turn's tokens and reads row 0 of
            // the state next).
            const size_t kept = backend_->keep_prompt_after_beams(prompt_len, chat_);
            kv_tokens_.assign(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(std::min(kept, prompt_len)));
            kv_batch_ = 1;
            if (kept == 0)
                reset_kv();
        }
        for (auto& h : search.best(cfg.num_return_sequences)) {
            // a hypothesis ends at a stop token / string (STOP) or at the length limit (LENGTH)
            const bool stopped = (!h.tokens.empty() && !cfg.ignore_eos && cfg.stop_token_ids.count(h.tokens.back())) ||
                                 h.tokens.size() < (max_context_ ? std::min(max_new, max_context_ - prompt_len) : max_new);
            rr.finish_reasons.push_back(stopped ? 1 : 2);
            rr.tokens.push_back(std::move(h.tokens));
            rr.scores.push_back(h.score);
        }
        rr.status = StreamStatus::Running;
        return rr;
    }

    // ---- first token(s)
    {
        Timer sampling;
        Seq root;
        auto toks = sample_for(root, 0, cfg.is_multinomial() ? cfg.num_return_sequences : 1);
        perf.raw.sampling_us.push_back(sampling.us());
        for (auto& t : toks) {
            Seq s;
            s.row = 0;
            accept(s, t);
            seqs.push_back(std::move(s));
        }
    }

    // Streaming happens right after sampling, before the next infer request (as upstream: a STOP or
    // CANCEL from the callback means no further inference).
    StreamStatus status = StreamStatus::Running;
    if (streamer && seqs.size() == 1)
        status = stream_pending(seqs[0]);
    size_t total_len = prompt_len;  // tokens in the KV cache after the next infer minus one
    std::vector<int32_t> beam_rows;
    // GenAI's PagedAttention pipeline streams from a worker thread and sees a STOP/CANCEL only after its next
    // step, which samples one more token (returned, not streamed); the step after that still runs for the
    // stopped request (feeding that token, counting a generated token) but its token is dropped. With a callback
    // faster than a step this is always so: we do the same (not in cancel-only mode, where nobody reads the
    // stream and a cancel should end the call at once).
    const size_t steps_after_stop = (ts || token_streamer_) ? backend_->steps_after_stream_stop() : 0;
    size_t steps_done_after_stop = 0;

    // ---- prompt lookup (prompt_lookup.hpp): gen.back() and the drafts found in the text so far go in one
    // inference; its rows are sampled in order, each token accepted and streamed as a one-token step would, until
    // a sampled token differs from the draft it verifies (that token is kept), the sequence ends or the streamer
    // stops. The cache keeps what it holds in plain decoding: the prompt and every generated token but the last.
    // A draft model (speculative decoding) proposes the drafts instead of the search, in the same steps: greedy
    // tokens of the draft, num_assistant_tokens of them (GenAI's default 5 when neither it nor
    // assistant_confidence_threshold is set), or while the draft's confidence holds; every proposal is verified.
    const bool drafting = draft_ && seqs.size() == 1 && backend_->max_verify_tokens() > 1;
    const bool lookup =
        (drafting || (prompt_lookup_ && cfg.is_prompt_lookup())) && seqs.size() == 1 && backend_->max_verify_tokens() > 1;
    std::vector<int64_t> lookup_text, fed;
    // OVGENAI_C_LOOKUP_TRACE=1: one stderr line per step of a prompt-lookup generation (tokens fed, tokens taken,
    // microseconds in the inference and between the previous inference and this one), for profiling
    static const bool lookup_trace = env_flag("OVGENAI_C_LOOKUP_TRACE");
    // OVGENAI_C_LOOKUP_UPSTREAM=1: upstream's draft search and fixed draft length (for comparisons)
    static const bool upstream_search = env_flag("OVGENAI_C_LOOKUP_UPSTREAM");
    const size_t verify_cap = backend_->max_verify_tokens() > 1 ? backend_->max_verify_tokens() - 1 : 0;
    PromptLookup search(std::min(cfg.num_assistant_tokens, verify_cap), cfg.max_ngram_size,
                        std::min(verify_cap, upstream_search ? cfg.num_assistant_tokens : kMaxDraftTokens));
    DraftGate gate;             // whether a proposal pays for its verification, from this generation's costs
    size_t last_fed = 1;        // tokens fed to the last decode inference
    double accepted_avg = 1.0;  // drafts accepted per verification step, exponentially averaged
    Timer since_infer;
    auto cpu_us = [] {
        rusage ru{};
        getrusage(RUSAGE_SELF, &ru);
        return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
    };
    double cpu_mark = lookup_trace ? cpu_us() : 0;
    auto trace_step = [&](size_t fed_n, size_t taken_n, float infer_us, float before_us, size_t match = 0,
                          size_t drafts_n = 0) {
        if (!lookup_trace)
            return;
        const double now = cpu_us();
        std::fprintf(stderr,
                     "ovgenai_c lookup step: fed %zu taken %zu infer_us %.0f between_us %.0f cpu_us %.0f match %zu "
                     "drafts %zu\n",
                     fed_n, taken_n, infer_us, before_us, now - cpu_mark, match, drafts_n);
        cpu_mark = now;
    };
    auto lookup_step = [&](Seq& s) -> bool {  // false: no drafts this step (a plain step follows)
        const size_t g = s.gen.size();
        size_t limit = max_new > g + 1 ? max_new - g - 1 : 0;
        if (max_context_)
            limit = std::min(limit, max_context_ > prompt_len + g + 1 ? max_context_ - prompt_len - g - 1 : 0);
        if (limit == 0)
            return false;
        lookup_text.assign(full.begin(), full.end());
        lookup_text.insert(lookup_text.end(), s.gen.begin(), s.gen.end());
        // The CPU plugin prepares every node again when the input shape changes (about half a one-token step here),
        // so the step keeps the last inference's shape when it can: drafts fill it, the rest is padding.
        // Padding pays while drafts keep being accepted (a padded step costs more than a one-token one): with
        // fewer than one accepted draft per two recent steps, the step goes back to plain decoding's shape.
        const size_t shape = upstream_search || drafting || accepted_avg < 0.5 ? 1 : last_fed;
        std::vector<int64_t> drafts;
        if (drafting) {
            const size_t count = cfg.num_assistant_tokens ? cfg.num_assistant_tokens
                                 : cfg.assistant_confidence_threshold > 0.0f ? verify_cap
                                                                              : kDefaultAssistantTokens;
            drafts = draft_->draft_tokens(lookup_text, std::min({limit, count, verify_cap}),
                                          cfg.assistant_confidence_threshold, perf.raw);
        } else {
            drafts = upstream_search ? PromptLookup::candidates(lookup_text.data(), lookup_text.size(),
                                                                std::min(limit, search.draft_length()), cfg.max_ngram_size)
                                     : search.propose(lookup_text.data(), lookup_text.size(), limit, shape - 1);
            if (shape == 1 && !upstream_search && search.last_match() <= 1)
                drafts.clear();  // after plain steps a lone-token match is not worth changing the shape for
        }
        const size_t real = 1 + drafts.size();  // rows that are sampled
        size_t n_feed = real;
        // Where one-token steps run on a form of their own, they leave the main form's shape alone: padding
        // alone (no drafts) would only buy a several-token inference for one token, so that is a plain step.
        const bool may_pad = !drafts.empty() || !backend_->one_token_steps_keep_main_shape();
        if (may_pad && shape > real && shape - real <= kMaxPadTokens && shape <= backend_->max_verify_tokens() &&
            (!max_context_ || prompt_len + g - 1 + shape <= max_context_))
            n_feed = shape;
        if (n_feed == 1)
            return false;
        if (!upstream_search && !drafting && !drafts.empty() && !gate.worth(search.last_match(), n_feed)) {
            gate.refused(search.last_match(), drafts);
            return false;  // proposals like this one have not paid for their verification in this generation
        }
        fed.assign(1, s.gen.back());
        fed.insert(fed.end(), drafts.begin(), drafts.end());
        fed.resize(n_feed, s.gen.back());  // padding: its rows are never sampled, its cache entries trimmed
        backend_->prepare_verify(fed.data(), fed.size(), total_len);
        const float before_us = since_infer.us();
        Timer t;
        infer_prepared();
        const float us = t.us();
        since_infer = Timer{};
        infer_total_us += us;
        perf.raw.token_infer_us.push_back(us);
        perf.raw.token_times.push_back(Clock::now());
        Timer sampling;
        size_t taken = 0, accepted = 0;
        while (taken < real) {
            const SampledToken tok = sample_for(s, taken, 1)[0];
            accept(s, tok);
            ++taken;
            const bool is_draft = taken < real && tok.id == fed[taken];
            accepted += is_draft ? 1 : 0;
            if (streamer)
                status = stream_pending(s);
            if (!is_draft || s.finished || status != StreamStatus::Running)
                break;
        }
        perf.raw.sampling_us.push_back(sampling.us());
        perf.raw.batch_sizes.push_back(taken);  // tokens generated by the step (TPOT counts tokens, not steps)
        const bool ended = s.finished || status != StreamStatus::Running;
        search.verified(drafts.size(), taken - 1, ended);
        if (drafting) {
            perf.raw.draft_proposed.push_back(drafts.size());
            perf.raw.draft_accepted.push_back(accepted);
        }
        if (!ended && !drafts.empty())
            gate.verified(search.last_match(), fed.size(), taken, us);
        accepted_avg = 0.5 * accepted_avg + 0.5 * static_cast<double>(taken - 1);
        if (taken < fed.size())
            backend_->trim(total_len + taken);
        kv_tokens_.insert(kv_tokens_.end(), fed.begin(), fed.begin() + static_cast<long>(taken));
        total_len += taken;
        trace_step(fed.size(), taken, us, before_us, upstream_search ? 0 : search.last_match(), drafts.size());
        last_fed = fed.size();
        s.row = 0;
        return true;
    };
    while (true) {
        std::vector<size_t> running;
        for (size_t i = 0; i < seqs.size(); ++i)
            if (!seqs[i].finished)
                running.push_back(i);
        if (running.empty())
            break;
        if (status != StreamStatus::Running) {
            if (steps_done_after_stop >= steps_after_stop)
                break;
            ++steps_done_after_stop;
        }
        if (lookup && status == StreamStatus::Running && lookup_step(seqs[0]))
            continue;
        const size_t B = running.size();
        beam_rows.resize(B);
        std::vector<int64_t> step_ids(B);
        for (size_t b = 0; b < B; ++b) {
            step_ids[b] = seqs[running[b]].gen.back();
            beam_rows[b] = backend_->sampled_parent_row(seqs[running[b]].row);
        }
        feed_step(step_ids, beam_rows, total_len);
        const float before_us = since_infer.us();
        run_step(B);
        since_infer = Timer{};
        last_fed = B;
        if (lookup) {  // one sequence
            gate.plain_step(perf.raw.token_infer_us.back());
            trace_step(1, 1, perf.raw.token_infer_us.back(), before_us);
        }
        if (B == 1)
            kv_tokens_.push_back(seqs[running[0]].gen.back());
        kv_batch_ = B;
        ++total_len;
        if (status != StreamStatus::Running && steps_done_after_stop == steps_after_stop)
            break;  // GenAI's last step for a stopped request: inferred and counted, its token dropped

        Timer sampling;  // the whole step's sampling, as upstream's sampler records it
        for (size_t b = 0; b < B; ++b) {
            Seq& s = seqs[running[b]];
            s.row = b;
            auto toks = sample_for(s, b, 1);
            accept(s, toks[0]);
        }
        perf.raw.sampling_us.push_back(sampling.us());
        if (lookup)
            gate.plain_token(seqs[0].gen.back());
        if (streamer && seqs.size() == 1 && status == StreamStatus::Running)
            status = stream_pending(seqs[0]);
    }
    // Upstream's stateful loop streams a token while the inference that feeds it is already running, so after a
    // STOP/CANCEL the KV cache holds that token too. Only a chat keeps the cache: feed it there as well, so the
    // next turn reuses exactly what GenAI's does.
    if (backend_->feeds_last_token_after_stop() && chat_ && status != StreamStatus::Running && seqs.size() == 1 &&
        !seqs[0].finished) {
        const Seq& s = seqs[0];
        feed_step({s.gen.back()}, {static_cast<int32_t>(s.row)}, total_len);
        Timer t;
        infer_prepared();
        infer_total_us += t.us();
        kv_tokens_.push_back(s.gen.back());
        ++total_len;
    }
    // a streamer's STOP ends an unfinished sequence with reason STOP, a CANCEL with NONE (as GenAI)
    if (status == StreamStatus::Stop && seqs.size() == 1 && !seqs[0].finished)
        seqs[0].reason = 1;
    if (streamer && status == StreamStatus::Running && seqs.size() == 1) {
        seqs[0].finished = true;
        status = stream_pending(seqs[0]);
    }
    if (ts) {
        StreamStatus st = ts->end();
        if (status == StreamStatus::Running)
            status = st;
    }
    perf.raw.inference_us.push_back(infer_total_us);
    if (kv_batch_ != 1 && chat_)
        reset_kv();

    std::vector<size_t> order(seqs.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    if (seqs.size() > 1)
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return seqs[a].score > seqs[b].score; });
    const size_t nout = std::min(cfg.num_return_sequences, seqs.size());
    for (size_t k = 0; k < nout; ++k) {
        rr.tokens.push_back(seqs[order[k]].gen);
        rr.finish_reasons.push_back(seqs[order[k]].reason);
        rr.scores.push_back(seqs[order[k]].score);
    }
    rr.status = status;
    return rr;
}

}  // namespace ovgc
