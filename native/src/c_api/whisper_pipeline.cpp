// whisper_pipeline.h: decoded results, their chunks and the pipeline over ovgc::WhisperEngine. The ABI has no
// streamer for Whisper, so a transcription cannot be cancelled once started.
#include <cstdarg>

#include "c_api/whisper_handles.hpp"

using ovgc::guard;
using ovgc::null_arg;

extern "C" {

// ---------------------------------------------------------------- chunks

ov_status_e ov_genai_whisper_decoded_result_chunk_create(ov_genai_whisper_decoded_result_chunk** chunk) {
    if (!chunk)
        return null_arg(__func__, "chunk", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        *chunk = new ov_genai_whisper_decoded_result_chunk_opaque();
        return OK;
    });
}

void ov_genai_whisper_decoded_result_chunk_free(ov_genai_whisper_decoded_result_chunk* chunk) { delete chunk; }

ov_status_e ov_genai_whisper_decoded_result_chunk_get_start_ts(const ov_genai_whisper_decoded_result_chunk* chunk,
                                                               float* start_ts) {
    if (!chunk)
        return null_arg(__func__, "chunk", INVALID_C_PARAM);
    if (!start_ts)
        return null_arg(__func__, "start_ts", INVALID_C_PARAM);
    *start_ts = chunk->chunk.start_ts;
    return OK;
}

ov_status_e ov_genai_whisper_decoded_result_chunk_get_end_ts(const ov_genai_whisper_decoded_result_chunk* chunk,
                                                             float* end_ts) {
    if (!chunk)
        return null_arg(__func__, "chunk", INVALID_C_PARAM);
    if (!end_ts)
        return null_arg(__func__, "end_ts", INVALID_C_PARAM);
    *end_ts = chunk->chunk.end_ts;
    return OK;
}

ov_status_e ov_genai_whisper_decoded_result_chunk_get_text(const ov_genai_whisper_decoded_result_chunk* chunk,
                                                           char* text, size_t* text_size) {
    if (!chunk)
        return null_arg(__func__, "chunk", INVALID_C_PARAM);
    if (!text_size)
        return null_arg(__func__, "text_size", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] { return ovgc::string_out(__func__, chunk->chunk.text, text, text_size); });
}

// ---------------------------------------------------------------- results

ov_status_e ov_genai_whisper_decoded_results_create(ov_genai_whisper_decoded_results** results) {
    if (!results)
        return null_arg(__func__, "results", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        *results = new ov_genai_whisper_decoded_results_opaque();
        return OK;
    });
}

void ov_genai_whisper_decoded_results_free(ov_genai_whisper_decoded_results* results) { delete results; }

ov_status_e ov_genai_whisper_decoded_results_get_perf_metrics(const ov_genai_whisper_decoded_results* results,
                                                              ov_genai_perf_metrics** metrics) {
    return ovgc::results_get_perf_metrics(__func__, results, metrics);
}

ov_status_e ov_genai_whisper_decoded_results_get_texts_count(const ov_genai_whisper_decoded_results* results,
                                                             size_t* count) {
    if (!results)
        return null_arg(__func__, "results", INVALID_C_PARAM);
    if (!count)
        return null_arg(__func__, "count", INVALID_C_PARAM);
    *count = results->r.texts.size();
    return OK;
}

ov_status_e ov_genai_whisper_decoded_results_get_text_at(const ov_genai_whisper_decoded_results* results, size_t index,
                                                         char* text, size_t* text_size) {
    if (!results)
        return null_arg(__func__, "results", INVALID_C_PARAM);
    if (!text_size)
        return null_arg(__func__, "text_size", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        if (index >= results->r.texts.size()) {
            ovgc::set_last_error(std::string(__func__) + ": index " + std::to_string(index) + " is out of range (" +
                                 std::to_string(results->r.texts.size()) + " texts)");
            return OUT_OF_BOUNDS;
        }
        return ovgc::string_out(__func__, results->r.texts[index], text, text_size);
    });
}

ov_status_e ov_genai_whisper_decoded_results_get_score_at(const ov_genai_whisper_decoded_results* results,
                                                          size_t index, float* score) {
    if (!results)
        return null_arg(__func__, "results", INVALID_C_PARAM);
    if (!score)
        return null_arg(__func__, "score", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        if (index >= results->r.scores.size()) {
            ovgc::set_last_error(std::string(__func__) + ": index " + std::to_string(index) + " is out of range (" +
                                 std::to_string(results->r.scores.size()) + " scores)");
            return OUT_OF_BOUNDS;
        }
        *score = results->r.scores[index];
        return OK;
    });
}

ov_status_e ov_genai_whisper_decoded_results_has_chunks(const ov_genai_whisper_decoded_results* results,
                                                        bool* has_chunks) {
    if (!results)
        return null_arg(__func__, "results", INVALID_C_PARAM);
    if (!has_chunks)
        return null_arg(__func__, "has_chunks", INVALID_C_PARAM);
    *has_chunks = results->r.chunks.has_value();
    return OK;
}

ov_status_e ov_genai_whisper_decoded_results_get_chunks_count(const ov_genai_whisper_decoded_results* results,
                                                              size_t* count) {
    if (!results)
        return null_arg(__func__, "results", INVALID_C_PARAM);
    if (!count)
        return null_arg(__func__, "count", INVALID_C_PARAM);
    *count = results->r.chunks ? results->r.chunks->size() : 0;
    return OK;
}

ov_status_e ov_genai_whisper_decoded_results_get_chunk_at(const ov_genai_whisper_decoded_results* results, size_t index,
                                                          ov_genai_whisper_decoded_result_chunk** chunk) {
    if (!results)
        return null_arg(__func__, "results", INVALID_C_PARAM);
    if (!chunk)
        return null_arg(__func__, "chunk", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        if (!results->r.chunks) {
            ovgc::set_last_error(std::string(__func__) + ": the results have no chunks (return_timestamps was off)");
            return NOT_FOUND;
        }
        if (index >= results->r.chunks->size()) {
            ovgc::set_last_error(std::string(__func__) + ": index " + std::to_string(index) + " is out of range (" +
                                 std::to_string(results->r.chunks->size()) + " chunks)");
            return OUT_OF_BOUNDS;
        }
        auto c = std::make_unique<ov_genai_whisper_decoded_result_chunk_opaque>();
        c->chunk = (*results->r.chunks)[index];
        *chunk = c.release();
        return OK;
    });
}

ov_status_e ov_genai_whisper_decoded_results_get_string(const ov_genai_whisper_decoded_results* results, char* output,
                                                        size_t* output_size) {
    return ovgc::results_get_string(__func__, results, output, output_size);
}

// ---------------------------------------------------------------- pipeline

ov_status_e ov_genai_whisper_pipeline_create(const char* models_path, const char* device,
                                             const size_t property_args_size, ov_genai_whisper_pipeline** pipeline,
                                             ...) {
    if (!models_path)
        return null_arg(__func__, "models_path", INVALID_C_PARAM);
    if (!device)
        return null_arg(__func__, "device", INVALID_C_PARAM);
    if (!pipeline)
        return null_arg(__func__, "pipeline", INVALID_C_PARAM);
    if (property_args_size % 2 != 0) {
        ovgc::set_last_error(std::string(__func__) + ": property_args_size must be even (key, value pairs), got " +
                             std::to_string(property_args_size));
        return INVALID_C_PARAM;
    }
    va_list ap;
    va_start(ap, pipeline);
    const ovgc::CreateProperties props = ovgc::read_create_properties(property_args_size, ap);
    va_end(ap);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        if (props.has_null)
            throw std::invalid_argument("a property key or value is NULL");
        auto p = std::make_unique<ov_genai_whisper_pipeline_opaque>();
        p->engine = std::make_unique<ovgc::WhisperEngine>(models_path, device, props.pairs);
        *pipeline = p.release();
        return OK;
    });
}

void ov_genai_whisper_pipeline_free(ov_genai_whisper_pipeline* pipeline) {
    try {
        delete pipeline;
    } catch (...) {
    }
}

ov_status_e ov_genai_whisper_pipeline_generate(ov_genai_whisper_pipeline* pipeline, const float* raw_speech,
                                               size_t raw_speech_size, const ov_genai_whisper_generation_config* config,
                                               ov_genai_whisper_decoded_results** results) {
    return ovgc::whisper_generate(__func__, pipeline, raw_speech, raw_speech_size, config, nullptr, results);
}

ov_status_e ov_genai_whisper_pipeline_get_generation_config(const ov_genai_whisper_pipeline* pipeline,
                                                            ov_genai_whisper_generation_config** config) {
    if (!pipeline || !pipeline->engine)
        return null_arg(__func__, "pipeline", INVALID_C_PARAM);
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        auto* p = const_cast<ov_genai_whisper_pipeline*>(pipeline);
        ovgc::WhisperPipeLock lock(p);
        auto c = std::make_unique<ov_genai_whisper_generation_config_opaque>();
        c->cfg = pipeline->engine->generation_config();
        *config = c.release();
        return OK;
    });
}

ov_status_e ov_genai_whisper_pipeline_set_generation_config(ov_genai_whisper_pipeline* pipeline,
                                                            ov_genai_whisper_generation_config* config) {
    if (!pipeline || !pipeline->engine)
        return null_arg(__func__, "pipeline", INVALID_C_PARAM);
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        ovgc::WhisperPipeLock lock(pipeline);
        pipeline->engine->set_generation_config(config->cfg);
        return OK;
    });
}

}  // extern "C"
