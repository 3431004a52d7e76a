/* NOT an upstream header: an optional extra exported only by ovgenai_c's bundled backend
   (native/src/c_api/whisper_extras.h declares it for the library).
   The language of a transcription as GenAI's WhisperDecodedResults.language holds it, without "<|" "|>": "en" for
   an English-only model, the one the config asked for, else the one the model detected. Two-call convention:
   language NULL sets *language_size to the bytes needed (with the terminating NUL); too small: OUT_OF_BOUNDS.
   Failures: INVALID_C_PARAM (NULL results or language_size). */
ov_status_e ovgenai_c_bundled_whisper_decoded_results_get_language(const ov_genai_whisper_decoded_results* results,
                                                                   char* language, size_t* language_size);
/* Whisper's own stage durations of a transcription in microseconds (GenAI's WhisperRawPerfMetrics), one per call of
   that stage: which = "features_extraction", "encode_inference" or "decode_inference" (one per decoder step whose
   token was kept). Two-call: durations NULL sets *count; else *count is the room in, the number out (too small:
   OUT_OF_BOUNDS). An unknown `which`: INVALID_C_PARAM. */
ov_status_e ovgenai_c_bundled_whisper_decoded_results_get_durations(const ov_genai_whisper_decoded_results* results,
                                                                    const char* which, float* durations, size_t* count);
