/* openvino/genai/c/whisper_pipeline.h (20 functions; optional to the loader, as cdefs/07). generate takes raw float
   PCM (16 kHz mono, near [-1, 1]) and NO streamer: the C ABI has no way to cancel a running transcription. The perf
   metrics are a base ov_genai_perf_metrics, freed with ov_genai_decoded_results_perf_metrics_free of
   cdefs/05; Whisper's own (feature extraction, encode/decode inference durations) are not reachable. */
typedef struct ov_genai_whisper_decoded_result_chunk_opaque ov_genai_whisper_decoded_result_chunk;
typedef struct ov_genai_whisper_decoded_results_opaque ov_genai_whisper_decoded_results;
typedef struct ov_genai_whisper_pipeline_opaque ov_genai_whisper_pipeline;

ov_status_e ov_genai_whisper_decoded_result_chunk_create(ov_genai_whisper_decoded_result_chunk** chunk);
void ov_genai_whisper_decoded_result_chunk_free(ov_genai_whisper_decoded_result_chunk* chunk);
ov_status_e ov_genai_whisper_decoded_result_chunk_get_start_ts(const ov_genai_whisper_decoded_result_chunk* chunk, float* start_ts);
ov_status_e ov_genai_whisper_decoded_result_chunk_get_end_ts(const ov_genai_whisper_decoded_result_chunk* chunk, float* end_ts);
ov_status_e ov_genai_whisper_decoded_result_chunk_get_text(const ov_genai_whisper_decoded_result_chunk* chunk, char* text, size_t* text_size);
ov_status_e ov_genai_whisper_decoded_results_create(ov_genai_whisper_decoded_results** results);
void ov_genai_whisper_decoded_results_free(ov_genai_whisper_decoded_results* results);
ov_status_e ov_genai_whisper_decoded_results_get_perf_metrics(const ov_genai_whisper_decoded_results* results, ov_genai_perf_metrics** metrics);
ov_status_e ov_genai_whisper_decoded_results_get_texts_count(const ov_genai_whisper_decoded_results* results, size_t* count);
ov_status_e ov_genai_whisper_decoded_results_get_text_at(const ov_genai_whisper_decoded_results* results, size_t index, char* text, size_t* text_size);
ov_status_e ov_genai_whisper_decoded_results_get_score_at(const ov_genai_whisper_decoded_results* results, size_t index, float* score);
ov_status_e ov_genai_whisper_decoded_results_has_chunks(const ov_genai_whisper_decoded_results* results, bool* has_chunks);
ov_status_e ov_genai_whisper_decoded_results_get_chunks_count(const ov_genai_whisper_decoded_results* results, size_t* count);
ov_status_e ov_genai_whisper_decoded_results_get_chunk_at(const ov_genai_whisper_decoded_results* results, size_t index, ov_genai_whisper_decoded_result_chunk** chunk);
ov_status_e ov_genai_whisper_decoded_results_get_string(const ov_genai_whisper_decoded_results* results, char* output, size_t* output_size);
ov_status_e ov_genai_whisper_pipeline_create(const char* models_path, const char* device, const size_t property_args_size, ov_genai_whisper_pipeline** pipeline, ...);
void ov_genai_whisper_pipeline_free(ov_genai_whisper_pipeline* pipeline);
ov_status_e ov_genai_whisper_pipeline_generate(ov_genai_whisper_pipeline* pipeline, const float* raw_speech, size_t raw_speech_size, const ov_genai_whisper_generation_config* config, ov_genai_whisper_decoded_results** results);
ov_status_e ov_genai_whisper_pipeline_get_generation_config(const ov_genai_whisper_pipeline* pipeline, ov_genai_whisper_generation_config** config);
ov_status_e ov_genai_whisper_pipeline_set_generation_config(ov_genai_whisper_pipeline* pipeline, ov_genai_whisper_generation_config* config);
