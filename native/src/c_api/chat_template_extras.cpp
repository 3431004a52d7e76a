// ovgenai_c_bundled_render_chat_template (cdefs/91_ovgenai_c_chat_template.h): the bundled Jinja renderer,
// exposed for Tokenizer.apply_chat_template in the binding.
#include <string>

#include "c_api/capi.hpp"
#include "chat_template/chat_template.hpp"

#pragma GCC visibility push(default)
extern "C" {
#include "91_ovgenai_c_chat_template.h"
}
#pragma GCC visibility pop

namespace {

struct InvalidInput : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The two-call convention renders twice with the same arguments; the last result on this thread is reused.
struct LastRender {
    std::string key;
    std::string text;
};
thread_local LastRender t_last;

void append_part(std::string& key, const char* part) {
    if (!part) {
        key += "N;";
        return;
    }
    const std::string s(part);
    key += std::to_string(s.size());
    key += ':';
    key += s;
}

ovgc::JsonValue parse_part(const char* text, const char* what) {
    try {
        return ovgc::json_parse(text);
    } catch (const ovgc::JsonError& e) {
        throw InvalidInput(std::string(what) + " is not valid JSON: " + e.what());
    }
}

std::string render(const char* chat_template, const char* messages_json, const char* tools_json,
                   const char* extra_context_json, int add_generation_prompt) {
    using ovgc::JsonValue;
    JsonValue messages = parse_part(messages_json, "messages_json");
    if (!messages.is_array())
        throw InvalidInput("messages_json must be a JSON array of message objects");
    JsonValue ctx = JsonValue::object();
    ctx.set("messages", std::move(messages));
    ctx.set("add_generation_prompt", add_generation_prompt != 0);
    if (tools_json && *tools_json) {
        JsonValue tools = parse_part(tools_json, "tools_json");
        if (!tools.is_array())
            throw InvalidInput("tools_json must be a JSON array");
        if (tools.size() > 0)
            ctx.set("tools", std::move(tools));
    }
    if (extra_context_json && *extra_context_json) {
        JsonValue extra = parse_part(extra_context_json, "extra_context_json");
        if (!extra.is_object())
            throw InvalidInput("extra_context_json must be a JSON object");
        for (auto& [k, v] : extra.as_object())
            ctx.set(k, v);
    }
    ovgc::ChatTemplate tpl(chat_template);
    return tpl.render(ctx);
}

}  // namespace

extern "C" ov_status_e ovgenai_c_bundled_render_chat_template(const char* chat_template, const char* messages_json,
                                                              const char* tools_json, const char* extra_context_json,
                                                              int add_generation_prompt, char* output,
                                                              size_t* output_size) {
    const char* fn = __func__;
    if (!chat_template)
        return ovgc::null_arg(fn, "chat_template", INVALID_C_PARAM);
    if (!messages_json)
        return ovgc::null_arg(fn, "messages_json", INVALID_C_PARAM);
    if (!output_size)
        return ovgc::null_arg(fn, "output_size", INVALID_C_PARAM);
    return ovgc::guard(fn, UNKNOW_EXCEPTION, [&]() -> ov_status_e {
        std::string key;
        for (const char* part : {chat_template, messages_json, tools_json, extra_context_json})
            append_part(key, part);
        key += add_generation_prompt != 0 ? "1" : "0";
        if (t_last.key != key) {
            t_last.key.clear();
            try {
                t_last.text = render(chat_template, messages_json, tools_json, extra_context_json,
                                     add_generation_prompt);
            } catch (const InvalidInput& e) {
                ovgc::set_last_error(std::string(fn) + ": " + e.what());
                return INVALID_C_PARAM;
            } catch (const std::exception& e) {
                ovgc::set_last_error(std::string(fn) + ": " + e.what());
                return GENERAL_ERROR;
            }
            t_last.key = std::move(key);
        }
        if (ovgc::copy_out_string(t_last.text, output, output_size) != 0) {
            ovgc::set_last_error(std::string(fn) + ": buffer of " + std::to_string(*output_size) +
                                 " bytes is too small for " + std::to_string(t_last.text.size() + 1));
            return OUT_OF_BOUNDS;
        }
        return OK;
    });
}
