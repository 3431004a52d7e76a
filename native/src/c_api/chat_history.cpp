// chat_history.h: messages (array of objects), tools (array), extra context (object).
#include "c_api/capi.hpp"

using ovgc::guard;
using ovgc::null_arg;
using ovgc::JsonValue;

namespace {
constexpr auto kErr = OV_GENAI_CHAT_HISTORY_ERROR;

ov_genai_chat_history_status_e out_json(ov_genai_json_container** out, const JsonValue& v, const char* fn) {
    return guard(fn, kErr, [&] {
        auto p = std::make_unique<ov_genai_json_container_opaque>();
        p->v = v;
        *out = p.release();
        return OV_GENAI_CHAT_HISTORY_OK;
    });
}

ov_genai_chat_history_status_e fail(const char* fn, ov_genai_chat_history_status_e st, const std::string& why) {
    ovgc::set_last_error(std::string(fn) + ": " + why);
    return st;
}

ov_genai_chat_history_status_e invalid_json(const char* fn, const std::string& why) {
    ovgc::set_last_error(std::string(fn) + ": " + why);
    return OV_GENAI_CHAT_HISTORY_INVALID_JSON;
}
using ovgc::ChatHistoryData;

// set_tools / set_extra_context: check the arguments and the JSON kind, then copy into `member`.
ov_genai_chat_history_status_e set_json_member(const char* fn, ov_genai_chat_history* history,
                                               const ov_genai_json_container* value, const char* name,
                                               bool (JsonValue::*kind_ok)() const, const char* kind_error,
                                               JsonValue ChatHistoryData::*member) {
    if (!history)
        return null_arg(fn, "history", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    if (!value)
        return null_arg(fn, name, OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    if (!(value->v.*kind_ok)())
        return invalid_json(fn, kind_error);
    return guard(fn, kErr, [&] {
        history->h.*member = value->v;
        return OV_GENAI_CHAT_HISTORY_OK;
    });
}

// get_tools / get_extra_context: a new container holding a copy of `member`.
ov_genai_chat_history_status_e get_json_member(const char* fn, const ov_genai_chat_history* history,
                                               ov_genai_json_container** out, const char* name,
                                               JsonValue ChatHistoryData::*member) {
    if (!history)
        return null_arg(fn, "history", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    if (!out)
        return null_arg(fn, name, OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    return out_json(out, history->h.*member, fn);
}
}  // namespace

extern "C" {

ov_genai_chat_history_status_e ov_genai_chat_history_create(ov_genai_chat_history** history) {
    if (!history)
        return null_arg(__func__, "history", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    return guard(__func__, kErr, [&] {
        *history = new ov_genai_chat_history_opaque();
        return OV_GENAI_CHAT_HISTORY_OK;
    });
}

ov_genai_chat_history_status_e ov_genai_chat_history_create_from_json_container(
    ov_genai_chat_history** history, const ov_genai_json_container* messages) {
    if (!history)
        return null_arg(__func__, "history", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    if (!messages)
        return null_arg(__func__, "messages", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    if (!messages->v.is_array())
        return invalid_json(__func__, "messages must be a JSON array");
    return guard(__func__, kErr, [&] {
        auto p = std::make_unique<ov_genai_chat_history_opaque>();
        p->h.messages = messages->v;
        *history = p.release();
        return OV_GENAI_CHAT_HISTORY_OK;
    });
}

void ov_genai_chat_history_free(ov_genai_chat_history* history) { delete history; }

ov_genai_chat_history_status_e ov_genai_chat_history_push_back(ov_genai_chat_history* history,
                                                               const ov_genai_json_container* message) {
    if (!history)
        return null_arg(__func__, "history", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    if (!message)
        return null_arg(__func__, "message", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    if (!message->v.is_object())
        return invalid_json(__func__, "a message must be a JSON object");
    return guard(__func__, kErr, [&] {
        history->h.messages.push_back(message->v);
        return OV_GENAI_CHAT_HISTORY_OK;
    });
}

ov_genai_chat_history_status_e ov_genai_chat_history_pop_back(ov_genai_chat_history* history) {
    if (!history)
        return null_arg(__func__, "history", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    auto& arr = history->h.messages.as_array();
    if (arr.empty())
        return fail(__func__, OV_GENAI_CHAT_HISTORY_EMPTY, "the chat history is empty");
    arr.pop_back();
    return OV_GENAI_CHAT_HISTORY_OK;
}

ov_genai_chat_history_status_e ov_genai_chat_history_get_messages(const ov_genai_chat_history* history,
                                                                  ov_genai_json_container** messages) {
    if (!history)
        return null_arg(__func__, "history", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    if (!messages)
        return null_arg(__func__, "messages", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    return out_json(messages, history->h.messages, __func__);
}

ov_genai_chat_history_status_e ov_genai_chat_history_get_message(const ov_genai_chat_history* history, size_t index,
                                                                 ov_genai_json_container** message) {
    if (!history)
        return null_arg(__func__, "history", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    if (!message)
        return null_arg(__func__, "message", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    const auto& arr = history->h.messages.as_array();
    if (index >= arr.size())
        return fail(__func__, OV_GENAI_CHAT_HISTORY_OUT_OF_BOUNDS,
                    "index " + std::to_string(index) + " is out of bounds (size " + std::to_string(arr.size()) + ")");
    return out_json(message, arr[index], __func__);
}

ov_genai_chat_history_status_e ov_genai_chat_history_get_first(const ov_genai_chat_history* history,
                                                               ov_genai_json_container** message) {
    if (!history)
        return null_arg(__func__, "history", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    if (!message)
        return null_arg(__func__, "message", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    const auto& arr = history->h.messages.as_array();
    if (arr.empty())
        return fail(__func__, OV_GENAI_CHAT_HISTORY_EMPTY, "the chat history is empty");
    return out_json(message, arr.front(), __func__);
}

ov_genai_chat_history_status_e ov_genai_chat_history_get_last(const ov_genai_chat_history* history,
                                                              ov_genai_json_container** message) {
    if (!history)
        return null_arg(__func__, "history", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    if (!message)
        return null_arg(__func__, "message", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    const auto& arr = history->h.messages.as_array();
    if (arr.empty())
        return fail(__func__, OV_GENAI_CHAT_HISTORY_EMPTY, "the chat history is empty");
    return out_json(message, arr.back(), __func__);
}

ov_genai_chat_history_status_e ov_genai_chat_history_clear(ov_genai_chat_history* history) {
    if (!history)
        return null_arg(__func__, "history", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    history->h.messages.as_array().clear();
    return OV_GENAI_CHAT_HISTORY_OK;
}

ov_genai_chat_history_status_e ov_genai_chat_history_size(const ov_genai_chat_history* history, size_t* size) {
    if (!history)
        return null_arg(__func__, "history", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    if (!size)
        return null_arg(__func__, "size", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    *size = history->h.messages.size();
    return OV_GENAI_CHAT_HISTORY_OK;
}

ov_genai_chat_history_status_e ov_genai_chat_history_empty(const ov_genai_chat_history* history, int* empty) {
    if (!history)
        return null_arg(__func__, "history", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    if (!empty)
        return null_arg(__func__, "empty", OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    *empty = history->h.messages.size() == 0 ? 1 : 0;
    return OV_GENAI_CHAT_HISTORY_OK;
}

ov_genai_chat_history_status_e ov_genai_chat_history_set_tools(ov_genai_chat_history* history,
                                                               const ov_genai_json_container* tools) {
    return set_json_member(__func__, history, tools, "tools", &ovgc::JsonValue::is_array,
                           "tools must be a JSON array", &ChatHistoryData::tools);
}

ov_genai_chat_history_status_e ov_genai_chat_history_get_tools(const ov_genai_chat_history* history,
                                                               ov_genai_json_container** tools) {
    return get_json_member(__func__, history, tools, "tools", &ChatHistoryData::tools);
}

ov_genai_chat_history_status_e ov_genai_chat_history_set_extra_context(ov_genai_chat_history* history,
                                                                       const ov_genai_json_container* extra_context) {
    return set_json_member(__func__, history, extra_context, "extra_context", &ovgc::JsonValue::is_object,
                           "extra context must be a JSON object", &ChatHistoryData::extra_context);
}

ov_genai_chat_history_status_e ov_genai_chat_history_get_extra_context(const ov_genai_chat_history* history,
                                                                       ov_genai_json_container** extra_context) {
    return get_json_member(__func__, history, extra_context, "extra_context", &ChatHistoryData::extra_context);
}

}  // extern "C"
