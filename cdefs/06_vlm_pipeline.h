/* openvino/genai/c/vlm_pipeline.h. ov_tensor_t is libopenvino_c's (cdefs/openvino/ov_tensor.h, parsed after this
   file: the struct is named here, the typedef there). The loader treats these functions as optional: a library
   without them still loads, and VLMPipeline names the missing ones. */
typedef struct ov_genai_vlm_decoded_results_opaque ov_genai_vlm_decoded_results;
typedef struct ov_genai_vlm_pipeline_opaque ov_genai_vlm_pipeline;

ov_status_e ov_genai_vlm_decoded_results_create(ov_genai_vlm_decoded_results** results);
void ov_genai_vlm_decoded_results_free(ov_genai_vlm_decoded_results* results);
ov_status_e ov_genai_vlm_decoded_results_get_perf_metrics(const ov_genai_vlm_decoded_results* results, ov_genai_perf_metrics** metrics);
void ov_genai_vlm_decoded_results_perf_metrics_free(ov_genai_perf_metrics* metrics);
ov_status_e ov_genai_vlm_decoded_results_get_string(const ov_genai_vlm_decoded_results* results, char* output, size_t* output_size);
ov_status_e ov_genai_vlm_pipeline_create(const char* models_path, const char* device, const size_t property_args_size, ov_genai_vlm_pipeline** pipe, ...);
void ov_genai_vlm_pipeline_free(ov_genai_vlm_pipeline* pipe);
ov_status_e ov_genai_vlm_pipeline_generate(ov_genai_vlm_pipeline* pipe, const char* text_inputs, const struct ov_tensor** rgbs, size_t num_images, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_vlm_decoded_results** results);
ov_status_e ov_genai_vlm_pipeline_generate_with_history(ov_genai_vlm_pipeline* pipe, const ov_genai_chat_history* history, const struct ov_tensor** rgbs, size_t num_images, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_vlm_decoded_results** results);
ov_status_e ov_genai_vlm_pipeline_start_chat(ov_genai_vlm_pipeline* pipe);
ov_status_e ov_genai_vlm_pipeline_finish_chat(ov_genai_vlm_pipeline* pipe);
ov_status_e ov_genai_vlm_pipeline_get_generation_config(const ov_genai_vlm_pipeline* pipe, ov_genai_generation_config** config);
ov_status_e ov_genai_vlm_pipeline_set_generation_config(ov_genai_vlm_pipeline* pipe, ov_genai_generation_config* config);
