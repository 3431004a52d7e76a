/* openvino/genai/c/perf_metrics.h */
typedef struct ov_genai_perf_metrics_opaque ov_genai_perf_metrics;

ov_status_e ov_genai_perf_metrics_get_load_time(const ov_genai_perf_metrics* metrics, float* load_time);
ov_status_e ov_genai_perf_metrics_get_num_generation_tokens(const ov_genai_perf_metrics* metrics, size_t* num_generation_tokens);
ov_status_e ov_genai_perf_metrics_get_num_input_tokens(const ov_genai_perf_metrics* metrics, size_t* num_input_tokens);
ov_status_e ov_genai_perf_metrics_get_ttft(const ov_genai_perf_metrics* metrics, float* mean, float* std);
ov_status_e ov_genai_perf_metrics_get_tpot(const ov_genai_perf_metrics* metrics, float* mean, float* std);
ov_status_e ov_genai_perf_metrics_get_ipot(const ov_genai_perf_metrics* metrics, float* mean, float* std);
ov_status_e ov_genai_perf_metrics_get_throughput(const ov_genai_perf_metrics* metrics, float* mean, float* std);
ov_status_e ov_genai_perf_metrics_get_inference_duration(const ov_genai_perf_metrics* metrics, float* mean, float* std);
ov_status_e ov_genai_perf_metrics_get_generate_duration(const ov_genai_perf_metrics* metrics, float* mean, float* std);
ov_status_e ov_genai_perf_metrics_get_tokenization_duration(const ov_genai_perf_metrics* metrics, float* mean, float* std);
ov_status_e ov_genai_perf_metrics_get_detokenization_duration(const ov_genai_perf_metrics* metrics, float* mean, float* std);
ov_status_e ov_genai_perf_metrics_get_chat_template_duration(const ov_genai_perf_metrics* metrics, float* mean, float* std);
ov_status_e ov_genai_perf_metrics_add_in_place(ov_genai_perf_metrics* left, const ov_genai_perf_metrics* right);
