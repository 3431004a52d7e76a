/* NOT an upstream header: an optional extra exported only by ovgenai_c's bundled backend.
   The raw series behind a perf metrics object, named as openvino_genai.RawPerfMetrics names them:
   generate_durations, tokenization_durations, detokenization_durations, chat_template_durations,
   inference_durations, token_infer_durations, sampling_durations, m_times_to_first_token, m_durations
   (microseconds),
   m_batch_sizes (counts) and m_new_token_times (milliseconds of the steady clock); and, for speculative decoding
   with a draft model (empty otherwise), draft_infer_durations (microseconds) and draft_fed_tokens (counts) per
   draft inference, draft_proposed_tokens and draft_accepted_tokens (counts) per verification step.
   Two-call convention: with values NULL, *size receives the number of values; with *size too small,
   OUT_OF_BOUNDS; on success the values are copied and *size is their number.
   Failures: INVALID_C_PARAM (NULL argument), NOT_FOUND (an unknown series name; ovgenai_c_bundled_last_error()
   names it). */
ov_status_e ovgenai_c_bundled_perf_metrics_get_raw(const ov_genai_perf_metrics* metrics, const char* series,
                                                   double* values, size_t* size);
