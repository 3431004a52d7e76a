// vlm_pipeline.h on the bundled backend: VLMs are not implemented here (no small VLM that GenAI's VLMPipeline
// supports is available to build and check a pipeline against). ov_genai_vlm_pipeline_create answers
// NOT_IMPLEMENTED, with a last-error text saying that the official GenAI C library is needed; as no VLM pipeline
// is ever made, every pipeline function refuses its handle (INVALID_C_PARAM, never dereferenced). The results
// functions work on results made by ov_genai_vlm_decoded_results_create (empty text, empty perf metrics).
#include "c_api/capi.hpp"

using ovgc::guard;
using ovgc::null_arg;

namespace {

const char kNeedOfficial[] =
    "VLMs are not implemented by the bundled backend (ovgenai_c's own C++ library); VLMPipeline needs the official "
    "OpenVINO GenAI C library (libopenvino_genai_c), e.g. through OVGENAI_C_LIBRARY or OPENVINO_GENAI_DIR";

// A pipeline handle this library cannot have made: NULL, or anything (it makes none).
ov_status_e no_pipeline(const char* fn, const void* pipe) noexcept {
    if (!pipe)
        return null_arg(fn, "pipe", INVALID_C_PARAM);
    try {
        ovgc::set_last_error(std::string(fn) + ": not a VLM pipeline of this library (it makes none: " +
                             kNeedOfficial + ")");
    } catch (...) {
    }
    return INVALID_C_PARAM;
}

}  // namespace

extern "C" {

ov_status_e ov_genai_vlm_decoded_results_create(ov_genai_vlm_decoded_results** results) {
    if (!results)
        return null_arg(__func__, "results", INVALID_C_PARAM);
    return guard(__func__, UNKNOW_EXCEPTION, [&] {
        *results = new ov_genai_vlm_decoded_results_opaque();
        return OK;
    });
}

void ov_genai_vlm_decoded_results_free(ov_genai_vlm_decoded_results* results) { delete results; }

ov_status_e ov_genai_vlm_decoded_results_get_perf_metrics(const ov_genai_vlm_decoded_results* results,
                                                          ov_genai_perf_metrics** metrics) {
    return ovgc::results_get_perf_metrics(__func__, results, metrics);
}

void ov_genai_vlm_decoded_results_perf_metrics_free(ov_genai_perf_metrics* metrics) { delete metrics; }

ov_status_e ov_genai_vlm_decoded_results_get_string(const ov_genai_vlm_decoded_results* results, char* output,
                                                    size_t* output_size) {
    return ovgc::results_get_string(__func__, results, output, output_size);
}

ov_status_e ov_genai_vlm_pipeline_create(const char* models_path, const char* device, const size_t property_args_size,
                                         ov_genai_vlm_pipeline** pipe, ...) {
    (void)property_args_size;
    if (!models_path)
        return null_arg(__func__, "models_path", INVALID_C_PARAM);
    if (!device)
        return null_arg(__func__, "device", INVALID_C_PARAM);
    if (!pipe)
        return null_arg(__func__, "pipe", INVALID_C_PARAM);
    *pipe = nullptr;
    const char* fn = __func__;
    return guard(fn, UNKNOW_EXCEPTION, [&] {
        ovgc::set_last_error(std::string(fn) + ": " + kNeedOfficial);
        return NOT_IMPLEMENTED;
    });
}

void ov_genai_vlm_pipeline_free(ov_genai_vlm_pipeline* pipe) { (void)pipe; }  // none is ever made: nothing to free

ov_status_e ov_genai_vlm_pipeline_generate(ov_genai_vlm_pipeline* pipe, const char* text_inputs,
                                           const struct ov_tensor** rgbs, size_t num_images,
                                           const ov_genai_generation_config* config,
                                           const streamer_callback* streamer, ov_genai_vlm_decoded_results** results) {
    (void)text_inputs, (void)rgbs, (void)num_images, (void)config, (void)streamer, (void)results;
    return no_pipeline(__func__, pipe);
}

ov_status_e ov_genai_vlm_pipeline_generate_with_history(ov_genai_vlm_pipeline* pipe,
                                                        const ov_genai_chat_history* history,
                                                        const struct ov_tensor** rgbs, size_t num_images,
                                                        const ov_genai_generation_config* config,
                                                        const streamer_callback* streamer,
                                                        ov_genai_vlm_decoded_results** results) {
    (void)history, (void)rgbs, (void)num_images, (void)config, (void)streamer, (void)results;
    return no_pipeline(__func__, pipe);
}

ov_status_e ov_genai_vlm_pipeline_start_chat(ov_genai_vlm_pipeline* pipe) { return no_pipeline(__func__, pipe); }

ov_status_e ov_genai_vlm_pipeline_finish_chat(ov_genai_vlm_pipeline* pipe) { return no_pipeline(__func__, pipe); }

ov_status_e ov_genai_vlm_pipeline_get_generation_config(const ov_genai_vlm_pipeline* pipe,
                                                        ov_genai_generation_config** config) {
    (void)config;
    return no_pipeline(__func__, pipe);
}

ov_status_e ov_genai_vlm_pipeline_set_generation_config(ov_genai_vlm_pipeline* pipe,
                                                        ov_genai_generation_config* config) {
    (void)config;
    return no_pipeline(__func__, pipe);
}

}  // extern "C"
