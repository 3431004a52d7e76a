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
