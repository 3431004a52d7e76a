"""Tools around ovgenai_c that use ``openvino_genai`` (the pybind wheel) or other conversion-only packages: the
side-by-side benchmark, whose comparison engine openvino_genai is; the GGUF -> OpenVINO IR converter
(openvino_genai); and the CTranslate2 Whisper -> IR converter (``convert_whisper_ct2`` over ``ct2_model`` and
``whisper_ir``: OpenVINO's graph API, openvino_tokenizers and transformers' tokenizer classes). The converters run
in a child interpreter. Kept out of the ``ovgenai_c`` package so that nothing in the binding's runtime path can
reach them; all are reached only on request (``ovgenai-c bench --compare``, ``ovgenai-c convert``, a default
model's first fetch)."""
