/* openvino/genai/c/llm_pipeline.h */
typedef struct ov_genai_decoded_results_opaque ov_genai_decoded_results;
typedef struct ov_genai_llm_pipeline_opaque ov_genai_llm_pipeline;

typedef enum {
    OV_GENAI_STREAMING_STATUS_RUNNING = 0,
    OV_GENAI_STREAMING_STATUS_STOP = 1,
    OV_GENAI_STREAMING_STATUS_CANCEL = 2
} ov_genai_streaming_status_e;

typedef struct {
    ov_genai_streaming_status_e (*callback_func)(const char* str, void* args);
    void* args;
} streamer_callback;

ov_status_e ov_genai_decoded_results_create(ov_genai_decoded_results** results);
void ov_genai_decoded_results_free(ov_genai_decoded_results* results);
ov_status_e ov_genai_decoded_results_get_perf_metrics(const ov_genai_decoded_results* results, ov_genai_perf_metrics** metrics);
void ov_genai_decoded_results_perf_metrics_free(ov_genai_perf_metrics* metrics);
ov_status_e ov_genai_decoded_results_get_string(const ov_genai_decoded_results* results, char* output, size_t* output_size);
ov_status_e ov_genai_llm_pipeline_create(const char* models_path, const char* device, const size_t property_args_size, ov_genai_llm_pipeline** pipe, ...);
void ov_genai_llm_pipeline_free(ov_genai_llm_pipeline* pipe);
ov_status_e ov_genai_llm_pipeline_generate(ov_genai_llm_pipeline* pipe, const char* inputs, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_decoded_results** results);
ov_status_e ov_genai_llm_pipeline_generate_with_history(ov_genai_llm_pipeline* pipe, const ov_genai_chat_history* history, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_decoded_results** results);
ov_status_e ov_genai_llm_pipeline_start_chat(ov_genai_llm_pipeline* pipe);
ov_status_e ov_genai_llm_pipeline_finish_chat(ov_genai_llm_pipeline* pipe);
ov_status_e ov_genai_llm_pipeline_get_generation_config(const ov_genai_llm_pipeline* pipe, ov_genai_generation_config** config);
ov_status_e ov_genai_llm_pipeline_set_generation_config(ov_genai_llm_pipeline* pipe, ov_genai_generation_config* config);
