// llm_pipeline.h: decoded results and the pipeline over ovgc::LLMEngine.
#include "c_api/capi.hpp"
#include "c_api/pipeline_call.hpp"

using ovgc::guard;
using ovgc::null_arg;

using ovgc::deliver;
using ovgc::PipeLock;
using ovgc::run_generate;

extern "C" {

ov_status_e ov_genai_decoded_results_create(ov_genai_decoded_results** results) {
    if (!results)
        return null_arg(__func__, "results", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        *results = new ov_genai_decoded_results_opaque();
        return OK;
    });
}

void ov_genai_decoded_results_free(ov_genai_decoded_results* results) { delete results; }

ov_status_e ov_genai_decoded_results_get_perf_metrics(const ov_genai_decoded_results* results,
                                                      ov_genai_perf_metrics** metrics) {
    return ovgc::results_get_perf_metrics(__func__, results, metrics);
}

void ov_genai_decoded_results_perf_metrics_free(ov_genai_perf_metrics* metrics) { delete metrics; }

ov_status_e ov_genai_decoded_results_get_string(const ov_genai_decoded_results* results, char* output,
                                                size_t* output_size) {
    return ovgc::results_get_string(__func__, results, output, output_size);
}

ov_status_e ov_genai_llm_pipeline_create(const char* models_path, const char* device, const size_t property_args_size,
                                         ov_genai_llm_pipeline** pipe, ...) {
    if (!models_path)
        return null_arg(__func__, "models_path", INVALID_C_PARAM);
    if (!device)
        return null_arg(__func__, "device", INVALID_C_PARAM);
    if (!pipe)
        return null_arg(__func__, "pipe", INVALID_C_PARAM);
    va_list ap;
    va_start(ap, pipe);
    const ovgc::CreateProperties props = ovgc::read_create_properties(property_args_size, ap);
    va_end(ap);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        if (property_args_size % 2 != 0)
            throw std::invalid_argument("property_args_size must be even (key, value pairs), got " +
                                        std::to_string(property_args_size));
        if (props.has_null)
            throw std::invalid_argument("a property key or value is NULL");
        auto p = std::make_unique<ov_genai_llm_pipeline_opaque>();
        p->engine = std::make_unique<ovgc::LLMEngine>(models_path, device, props.pairs);
        *pipe = p.release();
        return OK;
    });
}

void ov_genai_llm_pipeline_free(ov_genai_llm_pipeline* pipe) {
    try {
        delete pipe;
    } catch (...) {
    }
}

ov_status_e ov_genai_llm_pipeline_generate(ov_genai_llm_pipeline* pipe, const char* inputs,
                                           const ov_genai_generation_config* config, const streamer_callback* streamer,
                                           ov_genai_decoded_results** results) {
    return run_generate(__func__, pipe, inputs, "inputs", config, streamer, results,
                        [&](ovgc::LLMEngine& engine, const ovgc::GenerationConfig* cfg, ovgc::StreamCallback* cb) {
                            return engine.generate(inputs, cfg, cb);
                        });
}

ov_status_e ov_genai_llm_pipeline_generate_with_history(ov_genai_llm_pipeline* pipe,
                                                        const ov_genai_chat_history* history,
                                                        const ov_genai_generation_config* config,
                                                        const streamer_callback* streamer,
                                                        ov_genai_decoded_results** results) {
    return run_generate(__func__, pipe, history, "history", config, streamer, results,
                        [&](ovgc::LLMEngine& engine, const ovgc::GenerationConfig* cfg, ovgc::StreamCallback* cb) {
                            return engine.generate_with_history(history->h, cfg, cb);
                        });
}

ov_status_e ov_genai_llm_pipeline_start_chat(ov_genai_llm_pipeline* pipe) {
    if (!pipe || !pipe->engine)
        return null_arg(__func__, "pipe", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        PipeLock lock(pipe);
        pipe->engine->start_chat();
        return OK;
    });
}

ov_status_e ov_genai_llm_pipeline_finish_chat(ov_genai_llm_pipeline* pipe) {
    if (!pipe || !pipe->engine)
        return null_arg(__func__, "pipe", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        PipeLock lock(pipe);
        pipe->engine->finish_chat();
        return OK;
    });
}

ov_status_e ov_genai_llm_pipeline_get_generation_config(const ov_genai_llm_pipeline* pipe,
                                                        ov_genai_generation_config** config) {
    if (!pipe || !pipe->engine)
        return null_arg(__func__, "pipe", INVALID_C_PARAM);
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        PipeLock lock(const_cast<ov_genai_llm_pipeline*>(pipe));
        auto p = std::make_unique<ov_genai_generation_config_opaque>();
        p->cfg = pipe->engine->generation_config();
        *config = p.release();
        return OK;
    });
}

ov_status_e ov_genai_llm_pipeline_set_generation_config(ov_genai_llm_pipeline* pipe,
                                                        ov_genai_generation_config* config) {
    if (!pipe || !pipe->engine)
        return null_arg(__func__, "pipe", INVALID_C_PARAM);
    if (!config)
        return null_arg(__func__, "config", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        PipeLock lock(pipe);
        pipe->engine->set_generation_config(config->cfg);
        return OK;
    });
}

}  // extern "C"
