"""Tools around ovgenai_c that use ``openvino_genai`` (the pybind wheel): the side-by-side benchmark, whose
comparison engine it is, and the GGUF -> OpenVINO IR converter, run in a child interpreter. Kept out of the
``ovgenai_c`` package so that nothing in the binding's runtime path can reach ``openvino_genai``; both are
reached only on request (``ovgenai-c bench --compare``, ``ovgenai-c convert``, the default model's first fetch)."""
