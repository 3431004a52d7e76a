/* NOT an upstream header: an optional extra exported only by ovgenai_c's bundled backend.
   Renders a chat template with the bundled C++ Jinja engine (Hugging Face semantics), for Tokenizer.apply_chat_template.
   messages_json: a JSON array of message objects. tools_json: NULL, "" or a JSON array (only a non-empty array
   defines `tools`). extra_context_json: NULL, "" or a JSON object whose keys are added to the context (bos_token,
   eos_token, pad_token, enable_thinking, ...). Two-call string convention: with output NULL, *output_size receives
   the length + 1; with a buffer too small, OUT_OF_BOUNDS; on success the text is copied with its NUL.
   Failures: INVALID_C_PARAM (NULL argument, malformed JSON or wrong JSON shape), GENERAL_ERROR (the template does not
   parse or raises while rendering); ovgenai_c_bundled_last_error() gives the text. */
ov_status_e ovgenai_c_bundled_render_chat_template(const char* chat_template, const char* messages_json,
                                                   const char* tools_json, const char* extra_context_json,
                                                   int add_generation_prompt, char* output, size_t* output_size);
