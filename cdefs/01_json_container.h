/* openvino/genai/c/json_container.h */
typedef enum {
    OV_GENAI_JSON_CONTAINER_OK = 0,
    OV_GENAI_JSON_CONTAINER_INVALID_PARAM = -1,
    OV_GENAI_JSON_CONTAINER_INVALID_JSON = -2,
    OV_GENAI_JSON_CONTAINER_OUT_OF_BOUNDS = -3,
    OV_GENAI_JSON_CONTAINER_ERROR = -4
} ov_genai_json_container_status_e;

typedef struct ov_genai_json_container_opaque ov_genai_json_container;

ov_genai_json_container_status_e ov_genai_json_container_create(ov_genai_json_container** container);
ov_genai_json_container_status_e ov_genai_json_container_create_from_json_string(ov_genai_json_container** container, const char* json_str);
ov_genai_json_container_status_e ov_genai_json_container_create_object(ov_genai_json_container** container);
ov_genai_json_container_status_e ov_genai_json_container_create_array(ov_genai_json_container** container);
void ov_genai_json_container_free(ov_genai_json_container* container);
ov_genai_json_container_status_e ov_genai_json_container_to_json_string(const ov_genai_json_container* container, char* output, size_t* output_size);
ov_genai_json_container_status_e ov_genai_json_container_copy(const ov_genai_json_container* source, ov_genai_json_container** target);
