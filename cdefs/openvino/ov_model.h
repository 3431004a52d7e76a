/* openvino/c/ov_model.h (subset) */
typedef struct ov_model ov_model_t;
void ov_model_free(ov_model_t* model);
ov_status_e ov_model_inputs_size(const ov_model_t* model, size_t* input_size);
ov_status_e ov_model_outputs_size(const ov_model_t* model, size_t* output_size);
