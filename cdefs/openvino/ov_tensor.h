/* openvino/c/ov_tensor.h (subset) */
typedef struct ov_tensor ov_tensor_t;
ov_status_e ov_tensor_create_from_host_ptr(const ov_element_type_e type, const ov_shape_t shape, void* host_ptr,
                                           ov_tensor_t** tensor);
ov_status_e ov_tensor_create(const ov_element_type_e type, const ov_shape_t shape, ov_tensor_t** tensor);
ov_status_e ov_tensor_create_from_string_array(const char** string_array, const size_t array_size,
                                               const ov_shape_t shape, ov_tensor_t** tensor);
ov_status_e ov_tensor_get_shape(const ov_tensor_t* tensor, ov_shape_t* shape);
ov_status_e ov_tensor_get_element_type(const ov_tensor_t* tensor, ov_element_type_e* type);
ov_status_e ov_tensor_get_size(const ov_tensor_t* tensor, size_t* elements_size);
ov_status_e ov_tensor_get_byte_size(const ov_tensor_t* tensor, size_t* byte_size);
ov_status_e ov_tensor_data(const ov_tensor_t* tensor, void** data);
void ov_tensor_free(ov_tensor_t* tensor);
