"""GGUF -> OpenVINO IR with openvino_genai, in its own interpreter:

    python -m ovgenai_c_tools.convert_gguf MODEL.gguf   (the IR files appear beside the GGUF; prints the
                                                         versions as JSON)

Standalone on purpose (no package imports): ``ovgenai_c.models`` runs it as ``python -m`` (the optional tool
``convert_gguf``: the ``ovgenai_c.tools`` entry point, see ovgenai_c.optional_tools) with whichever interpreter
has the ``convert`` extra. Exit status NO_GENAI_EXIT means openvino_genai could not be imported there."""
import json
import sys

NO_GENAI_EXIT = 3


def main(argv: list) -> int:
    try:
        import openvino_genai
    except ImportError as e:
        sys.stderr.write("openvino_genai import failed: %s\n" % e)
        return NO_GENAI_EXIT
    import openvino

    pipe = openvino_genai.LLMPipeline(argv[0], "CPU", enable_save_ov_model=True)
    del pipe
    print(json.dumps({"openvino_genai": getattr(openvino_genai, "__version__", "?"),
                      "openvino": openvino.get_version()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
