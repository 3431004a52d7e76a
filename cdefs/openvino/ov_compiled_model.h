/* openvino/c/ov_compiled_model.h (subset) */
typedef struct ov_compiled_model ov_compiled_model_t;
ov_status_e ov_compiled_model_inputs_size(const ov_compiled_model_t* compiled_model, size_t* size);
ov_status_e ov_compiled_model_outputs_size(const ov_compiled_model_t* compiled_model, size_t* size);
ov_status_e ov_compiled_model_create_infer_request(const ov_compiled_model_t* compiled_model,
                                                   ov_infer_request_t** infer_request);
void ov_compiled_model_free(ov_compiled_model_t* compiled_model);
