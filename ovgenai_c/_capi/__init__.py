"""The binding layer over a GenAI C library: the only code that calls into it or handles its cffi objects.

One module per C header of ``cdefs/``, each a few functions over plain Python values and opaque handles:

  checked               the checked call (:class:`CApi`): a function's status family from its return type, the
                        library's own error text attached
  json_container        01_json_container.h    JSON containers from Python values
  chat_history          02_chat_history.h      a native chat history from a conversation
  generation_config     03_generation_config.h a native config from a GenerationConfig
  perf_metrics          04_perf_metrics.h      PerfMetrics read from a native object
  llm_pipeline          05_llm_pipeline.h      pipelines, generate calls, decoded results, the streamer callback
  vlm_pipeline          06_vlm_pipeline.h      VLM pipelines, generate calls with image tensors, their results
  whisper_generation_config  07_whisper_generation_config.h  native Whisper configs from and to field values
  whisper_pipeline      08_whisper_pipeline.h  Whisper pipelines, transcription calls, results and chunks
  bundled               90_ovgenai_c_bundled.h the bundled backend's extras (last error, live handles, token input
                        and streaming, per-sequence results, apply_chat_template, GGUF -> IR)
  chat_template         91_ovgenai_c_chat_template.h  the bundled Jinja renderer
  bundled_perf_metrics  92_ovgenai_c_perf_metrics.h   the raw series behind perf metrics
  batching              93_ovgenai_c_batching.h       the continuous-batching pipeline and its generation handles
"""
from __future__ import annotations

from .checked import CApi, bind

__all__ = ["CApi", "bind"]
