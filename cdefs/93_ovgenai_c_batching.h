/* NOT an upstream header: an optional extra exported only by ovgenai_c's bundled backend.
   Continuous batching (what openvino_genai.ContinuousBatchingPipeline offers through pybind): one compiled
   PagedAttention model serves many requests; their decode steps and new prompts share inferences. A native thread
   owned by the pipeline runs the step loop from create to free; every function below may be called from any
   thread. Statuses are ov_status_e; a failure leaves its text in ovgenai_c_bundled_last_error() (this thread).
   Live objects are counted by ovgenai_c_bundled_live_handles("batching_pipeline" / "generation_handle"). */
typedef struct ovgenai_c_bundled_batching_pipeline_opaque ovgenai_c_bundled_batching_pipeline;
typedef struct ovgenai_c_bundled_generation_handle_opaque ovgenai_c_bundled_generation_handle;

/* models_path, device and the (key, value) string properties as ov_genai_llm_pipeline_create takes them
   (OVGENAI_C_* scheduler keys: max_num_batched_tokens, dynamic_split_fuse, max_num_seqs, num_kv_blocks,
   cache_size); ATTENTION_BACKEND, when given, must be PA. */
ov_status_e ovgenai_c_bundled_batching_pipeline_create(const char* models_path, const char* device,
                                                       size_t property_args_size,
                                                       ovgenai_c_bundled_batching_pipeline** pipe, ...);
/* Stops the step loop (after the running inference) and frees the pipeline; unfinished requests end with status
   IGNORED. Handles stay valid until freed. NULL: nothing. */
void ovgenai_c_bundled_batching_pipeline_free(ovgenai_c_bundled_batching_pipeline* pipe);
/* Queues a request. templated 1: the prompt is encoded as ov_genai_llm_pipeline_generate does (the config's
   apply_chat_template rule); 0: as GenAI's add_request(prompt) (the text as it is, special tokens added).
   config NULL: the model's generation config. Beam search, num_return_sequences > 1 and echo are refused
   (INVALID_C_PARAM). */
ov_status_e ovgenai_c_bundled_batching_pipeline_add_request(ovgenai_c_bundled_batching_pipeline* pipe,
                                                            const char* prompt, int templated,
                                                            const ov_genai_generation_config* config,
                                                            ovgenai_c_bundled_generation_handle** handle);
/* The same with a chat history, encoded as ov_genai_llm_pipeline_generate_with_history encodes it on a fresh
   pipeline (the template over its messages, tools and extra context; nothing of an earlier request is reused). */
ov_status_e ovgenai_c_bundled_batching_pipeline_add_request_history(ovgenai_c_bundled_batching_pipeline* pipe,
                                                                    const ov_genai_chat_history* history,
                                                                    const ov_genai_generation_config* config,
                                                                    ovgenai_c_bundled_generation_handle** handle);
/* The same with the prompt as token ids, used as they are. */
ov_status_e ovgenai_c_bundled_batching_pipeline_add_request_tokens(ovgenai_c_bundled_batching_pipeline* pipe,
                                                                   const int64_t* input_ids, size_t input_size,
                                                                   const ov_genai_generation_config* config,
                                                                   ovgenai_c_bundled_generation_handle** handle);
/* GenAI's step(): the first call hands the stepping to the caller for good (the pipeline's thread stops stepping);
   each call runs one step (one inference, if anything can run) on the calling thread. */
ov_status_e ovgenai_c_bundled_batching_pipeline_step(ovgenai_c_bundled_batching_pipeline* pipe);
/* *unfinished: 1 while requests are queued or running. */
ov_status_e ovgenai_c_bundled_batching_pipeline_has_unfinished(const ovgenai_c_bundled_batching_pipeline* pipe,
                                                               int* unfinished);
/* Counters of the step loop: inferences run, inferences that served two or more requests, the most requests in
   one inference, requests admitted now, requests waiting now, KV blocks in use, the block limit (0: none),
   requests preempted (their blocks taken back and recomputed later), prompt tokens admitted, and of them those
   taken from a running request's KV cache instead of prefilled (a common prefix; enable_prefix_caching). Any
   pointer may be NULL. */
ov_status_e ovgenai_c_bundled_batching_pipeline_get_stats(const ovgenai_c_bundled_batching_pipeline* pipe,
                                                          size_t* steps, size_t* shared_steps, size_t* max_batch,
                                                          size_t* running, size_t* waiting, size_t* used_blocks,
                                                          size_t* block_limit, size_t* preempted,
                                                          size_t* prompt_tokens, size_t* reused_tokens);

/* For event loops: *fd becomes readable after every step (once the step's tokens, text and statuses are
   published; also after the free fails what was unfinished). Non-blocking: drain it (read until EAGAIN), then poll
   the handles, so that a later step leaves a byte behind. Owned by the pipeline and closed by its free: dup() it to
   keep watching, and the dup then reads end of file once the pipeline is freed. */
ov_status_e ovgenai_c_bundled_batching_pipeline_get_event_fd(const ovgenai_c_bundled_batching_pipeline* pipe, int* fd);

/* GenAI's GenerationStatus: 0 RUNNING, 1 FINISHED, 2 IGNORED (failed: the handle's error says why), 3 CANCEL,
   4 STOP. */
ov_status_e ovgenai_c_bundled_generation_handle_get_status(const ovgenai_c_bundled_generation_handle* handle,
                                                           int* status);
/* Blocks until the handle has unread tokens or text, or has ended, or timeout_ms passed (< 0: no limit);
   *ready is 1 when there is something to read or the request has ended. */
ov_status_e ovgenai_c_bundled_generation_handle_wait(const ovgenai_c_bundled_generation_handle* handle,
                                                     long timeout_ms, int* ready);
/* Takes up to *size unread generated ids (and their log-probabilities when log_probs is not NULL); *size is set to
   the number taken. tokens NULL: *size is set to the number unread, nothing taken. */
ov_status_e ovgenai_c_bundled_generation_handle_read(ovgenai_c_bundled_generation_handle* handle, int64_t* tokens,
                                                     float* log_probs, size_t* size);
/* Takes the unread streamed text (complete UTF-8, as a TextStreamer chunks it; all of it once the request ended).
   The first call turns text streaming on for the request (before it, no token is detokenised on the way: the
   text is decoded once at the end).
   Two-call: text NULL sets *size to the bytes needed (with the NUL); too small: OUT_OF_BOUNDS, nothing taken. */
ov_status_e ovgenai_c_bundled_generation_handle_read_text(ovgenai_c_bundled_generation_handle* handle, char* text,
                                                          size_t* size);
/* All the streamed text so far, not a cursor (final once the status is not RUNNING); two-call as read_text. */
ov_status_e ovgenai_c_bundled_generation_handle_get_text(const ovgenai_c_bundled_generation_handle* handle, char* text,
                                                         size_t* size);
/* Every id given out so far (not a cursor; final once the status is not RUNNING). Two-call as read_text, in ids. */
ov_status_e ovgenai_c_bundled_generation_handle_get_tokens(const ovgenai_c_bundled_generation_handle* handle,
                                                           int64_t* tokens, size_t* size);
/* The score (sum of the log-probabilities), GenerationFinishReason (0 NONE, 1 STOP, 2 LENGTH) and the number of
   prompt tokens. Any pointer may be NULL. */
ov_status_e ovgenai_c_bundled_generation_handle_get_result(const ovgenai_c_bundled_generation_handle* handle,
                                                           float* score, int* finish_reason, size_t* prompt_tokens);
/* Why an IGNORED request failed (empty otherwise); two-call as read_text. */
ov_status_e ovgenai_c_bundled_generation_handle_get_error(const ovgenai_c_bundled_generation_handle* handle,
                                                          char* text, size_t* size);
/* Ends the request at the next step boundary (so at most one more token is computed, never given out).
   cancel: status CANCEL, finish reason NONE; stop: status STOP, finish reason STOP, held-back tokens given out. */
ov_status_e ovgenai_c_bundled_generation_handle_cancel(ovgenai_c_bundled_generation_handle* handle);
ov_status_e ovgenai_c_bundled_generation_handle_stop(ovgenai_c_bundled_generation_handle* handle);
/* Frees the handle; a request still running is cancelled. NULL: nothing. */
void ovgenai_c_bundled_generation_handle_free(ovgenai_c_bundled_generation_handle* handle);
