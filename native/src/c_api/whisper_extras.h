/* ovgenai_c bundled-backend extras for Whisper (not part of GenAI's C ABI; exported by the bundled library only).
   Strings and arrays follow the two-call rule: a NULL buffer asks for the size. */

/* The log-mel features of `pcm` (n float32 samples) as the pipeline computes them, for the feature extractor
   settings of `preprocessor_config_json` (a path; a missing file means Whisper's defaults). out == NULL: sets
   *feature_size and *n_frames only; else out must hold feature_size * n_frames floats, [feature_size, n_frames]. */
ov_status_e ovgenai_c_bundled_whisper_features(const char* preprocessor_config_json, const float* pcm, size_t n,
                                               float* out, size_t* feature_size, size_t* n_frames);

/* The language of the transcription ("en", detected or given). */
ov_status_e ovgenai_c_bundled_whisper_decoded_results_get_language(const ov_genai_whisper_decoded_results* results,
                                                                   char* language, size_t* language_size);

/* Whisper's own durations in microseconds, one per call of that stage: which = "features_extraction",
   "encode_inference" or "decode_inference" (decode: one per decoder step whose token was kept). */
ov_status_e ovgenai_c_bundled_whisper_decoded_results_get_durations(const ov_genai_whisper_decoded_results* results,
                                                                    const char* which, float* durations, size_t* count);
