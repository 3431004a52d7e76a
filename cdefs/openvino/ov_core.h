/* openvino/c/ov_core.h (subset). ov_core_compile_model takes property_args_size (2 x the number of properties)
   then key, value, ... as const char* pairs. */
typedef struct ov_core ov_core_t;
typedef struct ov_version {
    const char* buildNumber;
    const char* description;
} ov_version_t;
ov_status_e ov_get_openvino_version(ov_version_t* version);
void ov_version_free(ov_version_t* version);
ov_status_e ov_core_create(ov_core_t** core);
void ov_core_free(ov_core_t* core);
ov_status_e ov_core_read_model(const ov_core_t* core, const char* model_path, const char* bin_path,
                               ov_model_t** model);
ov_status_e ov_core_read_model_from_memory_buffer(const ov_core_t* core, const char* model_str, const size_t str_len,
                                                  const ov_tensor_t* weights, ov_model_t** model);
ov_status_e ov_core_compile_model(const ov_core_t* core, const ov_model_t* model, const char* device_name,
                                  const size_t property_args_size, ov_compiled_model_t** compiled_model, ...);
ov_status_e ov_core_add_extension(const ov_core_t* core, const char* path);
typedef struct {
    char** devices;
    size_t size;
} ov_available_devices_t;
ov_status_e ov_core_get_available_devices(const ov_core_t* core, ov_available_devices_t* devices);
void ov_available_devices_free(ov_available_devices_t* devices);
ov_status_e ov_core_get_property(const ov_core_t* core, const char* device_name, const char* property_key,
                                 char** property_value);
