/* NOT an upstream header: optional extras exported only by ovgenai_c's bundled backend.
   The loader treats these symbols as optional; the official library does not have them. */
const char* ovgenai_c_bundled_version(void);
const char* ovgenai_c_bundled_last_error(void);
long ovgenai_c_bundled_live_handles(const char* kind);
/* On the calling thread, generate calls give the streamer an empty string per token instead of text (no
   detokenisation): for callers that use the callback only to cancel. Off by default. */
void ovgenai_c_bundled_set_cancel_only_streaming(int on);
/* GenerationConfig.apply_chat_template (default 1). 0: a plain generate call tokenises the prompt as it is, with
   the tokenizer's special tokens added (GenAI's rule without a template); chat calls always apply the template. */
ov_status_e ovgenai_c_bundled_generation_config_set_apply_chat_template(ov_genai_generation_config* config, int apply);
ov_status_e ovgenai_c_bundled_generation_config_get_apply_chat_template(const ov_genai_generation_config* config,
                                                                        int* apply);
/* Generate from token ids (one sequence), as GenAI's generate(TokenizedInputs): the ids are the whole prompt,
   used as they are; positions whose attention_mask is 0 are left out (attention_mask may be NULL: all 1).
   Outside a chat only. The results also carry the generated ids (below). */
ov_status_e ovgenai_c_bundled_llm_pipeline_generate_tokens(ov_genai_llm_pipeline* pipe, const int64_t* input_ids,
                                                           size_t input_size, const int64_t* attention_mask,
                                                           const ov_genai_generation_config* config,
                                                           const streamer_callback* streamer,
                                                           ov_genai_decoded_results** results);
/* The number of sequences in results, and the generated token ids of one of them (two-call: tokens NULL sets
   *size to the count; else *size is the capacity in, the count out; too small: OUT_OF_BOUNDS). */
ov_status_e ovgenai_c_bundled_decoded_results_get_num_sequences(const ov_genai_decoded_results* results, size_t* size);
ov_status_e ovgenai_c_bundled_decoded_results_get_tokens(const ov_genai_decoded_results* results, size_t index,
                                                         int64_t* tokens, size_t* size);
/* GenAI's DecodedResults.scores[index]: the sum of the log-probabilities of the generated tokens (beam search:
   the hypothesis score). */
ov_status_e ovgenai_c_bundled_decoded_results_get_score(const ov_genai_decoded_results* results, size_t index,
                                                        float* score);
/* Token streaming, per thread: while a callback is set, generate calls on this thread give each generated token
   id to it (ids, n = 1, args) instead of text to their streamer_callback, which may then be NULL (the streaming
   rules, one sequence and no beam search, still apply). Its return value is a ov_genai_streaming_status_e.
   NULL clears it. */
typedef ov_genai_streaming_status_e (*ovgenai_c_bundled_token_callback)(const int64_t* tokens, size_t size, void* args);
void ovgenai_c_bundled_set_token_streamer(ovgenai_c_bundled_token_callback callback, void* args);
/* GenAI's DecodedResults.finish_reasons[index] (GenerationFinishReason): 0 NONE (e.g. a streamer CANCEL), 1 STOP
   (stop token, stop string or a streamer STOP), 2 LENGTH (max_new_tokens / max_length / context). */
ov_status_e ovgenai_c_bundled_decoded_results_get_finish_reason(const ov_genai_decoded_results* results, size_t index,
                                                                int* reason);
/* Inferences a pipeline has run since its create on the PagedAttention engine's static one-token form (a single
   sequence's one-token steps, OVGENAI_C_STATIC_DECODE) and on its main form; both 0 on the SDPA engine. */
ov_status_e ovgenai_c_bundled_llm_pipeline_get_form_steps(const ov_genai_llm_pipeline* pipe, size_t* one_token_form,
                                                          size_t* main_form);
/* A GGUF file (llama, qwen2, qwen3) as OpenVINO IR, built as the bundled backend builds it to run it (what GenAI's
   enable_save_ov_model writes), without compiling anything: into the existing folder out_dir, parts 1 writes
   openvino_model.xml/.bin, 2 openvino_tokenizer / openvino_detokenizer .xml/.bin, 3 both. */
ov_status_e ovgenai_c_bundled_convert_gguf(const char* gguf_path, const char* out_dir, int parts);
