"""The provider layer: catalog, strict per-model profiles, Ollama-style options, a session pool and the
:class:`Provider` facade ("chat with model X"). Built only on the public ``ovgenai_c`` API."""
from __future__ import annotations

from .catalog import Catalog, ModelEntry, default_root
from .errors import (CapabilityNotSupportedError, CatalogError, ContextLengthExceededError, OptionError,
                     PoolClosedError, ProfileError, RemoteAuthError, RemoteError, RemoteUnavailableError)
from .model_info import ModelInfo, model_info
from .options import OPTIONS, check_options, to_generation_kwargs
from .pool import Lease, SessionPool, default_pool, model_digest
from .profile import PROFILE_NAME, Profile, load_profile, profile_for, profile_path_for
from .provider import IMAGES_REFUSED, Capabilities, ChatResult, ChatStream, Provider, library_kind, resolve_device
from .remote import RemoteChatStream, RemoteProvider, is_remote_spec, open_provider
from .tools import parse_tool_calls
from .transcription import TranscriptionResult, is_whisper_folder

__all__ = [
    "Catalog", "ModelEntry", "default_root", "CapabilityNotSupportedError", "CatalogError",
    "ContextLengthExceededError", "OptionError",
    "PoolClosedError", "ProfileError", "ModelInfo", "model_info", "OPTIONS", "check_options",
    "to_generation_kwargs", "Lease", "SessionPool", "default_pool", "model_digest", "PROFILE_NAME", "Profile",
    "load_profile", "profile_for", "profile_path_for", "Capabilities", "ChatResult", "ChatStream", "Provider",
    "resolve_device", "library_kind", "parse_tool_calls", "IMAGES_REFUSED", "TranscriptionResult", "is_whisper_folder",
    "RemoteProvider", "RemoteChatStream", "open_provider", "is_remote_spec", "RemoteError", "RemoteAuthError",
    "RemoteUnavailableError",
]
