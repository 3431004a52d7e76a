/* openvino/c/ov_infer_request.h (subset) */
typedef struct ov_infer_request ov_infer_request_t;
ov_status_e ov_infer_request_set_tensor(ov_infer_request_t* infer_request, const char* tensor_name,
                                        const ov_tensor_t* tensor);
ov_status_e ov_infer_request_set_input_tensor_by_index(ov_infer_request_t* infer_request, const size_t idx,
                                                       const ov_tensor_t* tensor);
ov_status_e ov_infer_request_get_tensor(const ov_infer_request_t* infer_request, const char* tensor_name,
                                        ov_tensor_t** tensor);
ov_status_e ov_infer_request_get_output_tensor_by_index(const ov_infer_request_t* infer_request, const size_t idx,
                                                        ov_tensor_t** tensor);
ov_status_e ov_infer_request_infer(ov_infer_request_t* infer_request);
void ov_infer_request_free(ov_infer_request_t* infer_request);
