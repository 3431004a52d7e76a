// json_container.h over ovgc::JsonValue (a new container is an empty object, like upstream).
#include "c_api/capi.hpp"

using ovgc::guard;
using ovgc::null_arg;

namespace {
ov_genai_json_container_status_e make(ov_genai_json_container** c, ovgc::JsonValue v, const char* fn) {
    return guard(fn, OV_GENAI_JSON_CONTAINER_ERROR, [&] {
        auto p = std::make_unique<ov_genai_json_container_opaque>();
        p->v = std::move(v);
        *c = p.release();
        return OV_GENAI_JSON_CONTAINER_OK;
    });
}
}  // namespace

extern "C" {

ov_genai_json_container_status_e ov_genai_json_container_create(ov_genai_json_container** container) {
    if (!container)
        return null_arg(__func__, "container", OV_GENAI_JSON_CONTAINER_INVALID_PARAM);
    return make(container, ovgc::JsonValue::object(), __func__);
}

ov_genai_json_container_status_e ov_genai_json_container_create_from_json_string(ov_genai_json_container** container,
                                                                                 const char* json_str) {
    if (!container)
        return null_arg(__func__, "container", OV_GENAI_JSON_CONTAINER_INVALID_PARAM);
    if (!json_str)
        return null_arg(__func__, "json_str", OV_GENAI_JSON_CONTAINER_INVALID_PARAM);
    ovgc::JsonValue v;
    auto st = guard(__func__, OV_GENAI_JSON_CONTAINER_INVALID_JSON, [&] {
        v = ovgc::json_parse(json_str);
        return OV_GENAI_JSON_CONTAINER_OK;
    });
    if (st != OV_GENAI_JSON_CONTAINER_OK)
        return st;
    return make(container, std::move(v), __func__);
}

ov_genai_json_container_status_e ov_genai_json_container_create_object(ov_genai_json_container** container) {
    if (!container)
        return null_arg(__func__, "container", OV_GENAI_JSON_CONTAINER_INVALID_PARAM);
    return make(container, ovgc::JsonValue::object(), __func__);
}

ov_genai_json_container_status_e ov_genai_json_container_create_array(ov_genai_json_container** container) {
    if (!container)
        return null_arg(__func__, "container", OV_GENAI_JSON_CONTAINER_INVALID_PARAM);
    return make(container, ovgc::JsonValue::array(), __func__);
}

void ov_genai_json_container_free(ov_genai_json_container* container) { delete container; }

ov_genai_json_container_status_e ov_genai_json_container_to_json_string(const ov_genai_json_container* container,
                                                                        char* output, size_t* output_size) {
    if (!container)
        return null_arg(__func__, "container", OV_GENAI_JSON_CONTAINER_INVALID_PARAM);
    if (!output_size)
        return null_arg(__func__, "output_size", OV_GENAI_JSON_CONTAINER_INVALID_PARAM);
    return guard(__func__, OV_GENAI_JSON_CONTAINER_ERROR, [&] {
        std::string s = ovgc::json_dump(container->v);
        if (ovgc::copy_out_string(s, output, output_size) != 0) {
            ovgc::set_last_error(std::string(__func__) + ": buffer of " + std::to_string(*output_size) +
                                 " bytes is too small, need " + std::to_string(s.size() + 1));
            return OV_GENAI_JSON_CONTAINER_OUT_OF_BOUNDS;
        }
        return OV_GENAI_JSON_CONTAINER_OK;
    });
}

ov_genai_json_container_status_e ov_genai_json_container_copy(const ov_genai_json_container* source,
                                                              ov_genai_json_container** target) {
    if (!source)
        return null_arg(__func__, "source", OV_GENAI_JSON_CONTAINER_INVALID_PARAM);
    if (!target)
        return null_arg(__func__, "target", OV_GENAI_JSON_CONTAINER_INVALID_PARAM);
    return make(target, source->v, __func__);
}

}  // extern "C"
