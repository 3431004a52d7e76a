/* openvino/genai/c/chat_history.h */
typedef enum {
    OV_GENAI_CHAT_HISTORY_OK = 0,
    OV_GENAI_CHAT_HISTORY_INVALID_PARAM = -1,
    OV_GENAI_CHAT_HISTORY_OUT_OF_BOUNDS = -2,
    OV_GENAI_CHAT_HISTORY_EMPTY = -3,
    OV_GENAI_CHAT_HISTORY_INVALID_JSON = -4,
    OV_GENAI_CHAT_HISTORY_ERROR = -5
} ov_genai_chat_history_status_e;

typedef struct ov_genai_chat_history_opaque ov_genai_chat_history;

ov_genai_chat_history_status_e ov_genai_chat_history_create(ov_genai_chat_history** history);
ov_genai_chat_history_status_e ov_genai_chat_history_create_from_json_container(ov_genai_chat_history** history, const ov_genai_json_container* messages);
void ov_genai_chat_history_free(ov_genai_chat_history* history);
ov_genai_chat_history_status_e ov_genai_chat_history_push_back(ov_genai_chat_history* history, const ov_genai_json_container* message);
ov_genai_chat_history_status_e ov_genai_chat_history_pop_back(ov_genai_chat_history* history);
ov_genai_chat_history_status_e ov_genai_chat_history_get_messages(const ov_genai_chat_history* history, ov_genai_json_container** messages);
ov_genai_chat_history_status_e ov_genai_chat_history_get_message(const ov_genai_chat_history* history, size_t index, ov_genai_json_container** message);
ov_genai_chat_history_status_e ov_genai_chat_history_get_first(const ov_genai_chat_history* history, ov_genai_json_container** message);
ov_genai_chat_history_status_e ov_genai_chat_history_get_last(const ov_genai_chat_history* history, ov_genai_json_container** message);
ov_genai_chat_history_status_e ov_genai_chat_history_clear(ov_genai_chat_history* history);
ov_genai_chat_history_status_e ov_genai_chat_history_size(const ov_genai_chat_history* history, size_t* size);
ov_genai_chat_history_status_e ov_genai_chat_history_empty(const ov_genai_chat_history* history, int* empty);
ov_genai_chat_history_status_e ov_genai_chat_history_set_tools(ov_genai_chat_history* history, const ov_genai_json_container* tools);
ov_genai_chat_history_status_e ov_genai_chat_history_get_tools(const ov_genai_chat_history* history, ov_genai_json_container** tools);
ov_genai_chat_history_status_e ov_genai_chat_history_set_extra_context(ov_genai_chat_history* history, const ov_genai_json_container* extra_context);
ov_genai_chat_history_status_e ov_genai_chat_history_get_extra_context(const ov_genai_chat_history* history, ov_genai_json_container** extra_context);
