/* NOT an upstream header: an optional extra exported only by ovgenai_c's bundled backend
   (native/src/c_api/whisper_extras.h declares it for the library).
   The language of a transcription as GenAI's WhisperDecodedResults.language holds it, without "<|" "|>": "en" for
   an English-only model, the one the config asked for, else the one the model detected. Two-call convention:
   language NULL sets *language_size to the bytes needed (with the terminating NUL); too small: OUT_OF_BOUNDS.
   Failures: INVALID_C_PARAM (NULL results or language_size). */
ov_status_e ovgenai_c_bundled_whisper_decoded_results_get_language(const ov_genai_whisper_decoded_results* results,
                                                                   char* language, size_t* language_size);
/* Whisper's own stage durations of a transcription in microseconds (GenAI's WhisperRawPerfMetrics), one per call of
   that stage: which = "features_extraction", "encode_inference", "decode_inference" (one per decoder step whose
   token was kept) or "word_level_timestamps_processing" (one: the word timestamps' time over all windows, 0
   without). Two-call: durations NULL sets *count; else *count is the room in, the number out (too small:
   OUT_OF_BOUNDS). An unknown `which`: INVALID_C_PARAM. */
ov_status_e ovgenai_c_bundled_whisper_decoded_results_get_durations(const ov_genai_whisper_decoded_results* results,
                                                                    const char* which, float* durations, size_t* count);

/* Cancelling a transcription (GenAI's C ABI cannot). A cancel handle is a reference to a pipeline's cancel switch:
   get it on the thread that owns the pipeline (not during its generate); it stays valid after the pipeline is freed,
   until ovgenai_c_bundled_whisper_cancel_free. ovgenai_c_bundled_whisper_cancel may be called from any thread at any
   time: the pipeline's running ov_genai_whisper_pipeline_generate stops at its next decoder step or 30 s window and
   returns INFER_CANCELLED (no results); *was_running (may be NULL) is 1 then, 0 when no transcription was running
   (nothing is remembered for a later one). Failures: INVALID_C_PARAM (NULL pipeline, handle or out pointer). */
typedef struct ovgenai_c_whisper_cancel_opaque ovgenai_c_whisper_cancel;
ov_status_e ovgenai_c_bundled_whisper_pipeline_get_cancel(ov_genai_whisper_pipeline* pipeline,
                                                          ovgenai_c_whisper_cancel** handle);
ov_status_e ovgenai_c_bundled_whisper_cancel(ovgenai_c_whisper_cancel* handle, int* was_running);
void ovgenai_c_bundled_whisper_cancel_free(ovgenai_c_whisper_cancel* handle);

/* A transcription that streams (GenAI's C ABI cannot): as ov_genai_whisper_pipeline_generate, with `streamer` getting
   text chunks by GenAI's TextStreamer rules — without timestamps each decoded token as it comes, with
   return_timestamps (and for audio longer than 30 s) each window's text once decoded — and the rest at the end. With
   a token streamer set on this thread (ovgenai_c_bundled_set_token_streamer, cdefs/90) it gets the token ids
   instead, as GenAI's StreamerBase.write(), and `streamer` may be NULL. A callback's STOP or CANCEL ends the
   transcription early with OK and the results of what was decoded (GenAI keeps the token whose inference was under
   way). Failures: INVALID_C_PARAM (NULL pipeline, raw_speech, results, or no streamer at all), those of
   ov_genai_whisper_pipeline_generate, an error status for a callback calling back into its pipeline, and
   NOT_IMPLEMENTED for a config with beam search (num_beams > 1: beams are not streamed). */
ov_status_e ovgenai_c_bundled_whisper_pipeline_generate_with_streamer(
    ov_genai_whisper_pipeline* pipeline, const float* raw_speech, size_t raw_speech_size,
    const ov_genai_whisper_generation_config* config, const streamer_callback* streamer,
    ov_genai_whisper_decoded_results** results);

/* Word-level timestamps (GenAI's WhisperDecodedResults.words and the config's word_timestamps; the C ABI has neither).
   A pipeline makes them when created with the property "word_timestamps" = "true" (its decoder then exposes the
   cross-attention of the model's alignment heads; that property also sets its config's word_timestamps) and a call's
   config has word_timestamps set; a config asking for them on a pipeline created without the property fails
   (UNKNOW_EXCEPTION, the reason in the last error). Failures: INVALID_C_PARAM (NULL config or value). */
ov_status_e ovgenai_c_bundled_whisper_generation_config_set_word_timestamps(ov_genai_whisper_generation_config* config,
                                                                           bool word_timestamps);
ov_status_e ovgenai_c_bundled_whisper_generation_config_get_word_timestamps(
    const ov_genai_whisper_generation_config* config, bool* word_timestamps);
/* The words of a transcription, in order: NOT_FOUND when the call asked for none (GenAI's words None), else *count.
   Word `index` (OUT_OF_BOUNDS past the last): its start and end in seconds (either pointer may be NULL), its text
   (two-call: word NULL sets *word_size to the bytes needed with the NUL; too small: OUT_OF_BOUNDS) and its token
   ids (two-call: token_ids NULL sets *token_ids_count; else *token_ids_count is the room in, the number out).
   Failures: INVALID_C_PARAM (NULL results or size pointer). */
ov_status_e ovgenai_c_bundled_whisper_decoded_results_get_words_count(const ov_genai_whisper_decoded_results* results,
                                                                      size_t* count);
ov_status_e ovgenai_c_bundled_whisper_decoded_results_get_word(const ov_genai_whisper_decoded_results* results,
                                                               size_t index, float* start_ts, float* end_ts,
                                                               char* word, size_t* word_size);
ov_status_e ovgenai_c_bundled_whisper_decoded_results_get_word_token_ids(
    const ov_genai_whisper_decoded_results* results, size_t index, int64_t* token_ids, size_t* token_ids_count);
/* The base GenerationConfig fields of a Whisper config (GenAI's WhisperGenerationConfig derives from
   GenerationConfig; the C ABI reads them through ov_genai_whisper_generation_config_get_generation_config but sets
   none): every one of them set to `base`'s (max_new_tokens, max_length, eos and stop ids, sampling, penalties,
   beams...); the Whisper fields stay. Failures: INVALID_C_PARAM (NULL config or base). */
ov_status_e ovgenai_c_bundled_whisper_generation_config_set_generation_config(
    ov_genai_whisper_generation_config* config, const ov_genai_generation_config* base);
