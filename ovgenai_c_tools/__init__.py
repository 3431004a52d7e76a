"""Tools around ovgenai_c that use ``openvino_genai`` (the pybind wheel) or other conversion-only packages: the
side-by-side benchmark, whose comparison engine openvino_genai is; and the CTranslate2 Whisper -> IR converter
(``convert_whisper_ct2`` over ``ct2_model`` and ``whisper_ir``: OpenVINO's graph API, openvino_tokenizers and
transformers' tokenizer classes), which runs in a child interpreter. (GGUF -> IR needs no tool: the bundled backend
converts, ``ovgenai_c.gguf_ir``.) Kept out of the ``ovgenai_c`` package so that nothing in the binding's runtime
path can reach them; all are reached only on request (``ovgenai-c bench --compare``, ``ovgenai-c convert
--whisper``, a default Whisper model's first fetch)."""
