"""ovgenai_c.SchedulerConfig against openvino_genai.SchedulerConfig (fields, defaults, value checks, to_string)
and scheduler_properties: what each library kind is sent, and refusals by field name."""
from __future__ import annotations

import copy
import sys

import numpy as np
import pytest

import ovgenai_c
from ovgenai_c.errors import NotSupportedError
from ovgenai_c.scheduler import BUNDLED_KEYS, FIELDS, SIZE_MAX, SchedulerConfig, scheduler_properties

og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")

SCALARS = [f for f in FIELDS if f not in ("cache_eviction_config", "sparse_attention_config")]


def test_exported_and_fields_are_upstreams():
    assert ovgenai_c.SchedulerConfig is SchedulerConfig
    upstream = {a for a in dir(og.SchedulerConfig()) if not a.startswith("_") and a != "to_string"}
    assert set(FIELDS) == upstream


def test_defaults_equal_pybind_field_by_field():
    ours, theirs = SchedulerConfig(), og.SchedulerConfig()
    for f in SCALARS:
        assert getattr(ours, f) == getattr(theirs, f), f
        assert type(getattr(ours, f)) is type(getattr(theirs, f)), f
    assert ours.cache_eviction_config is None and ours.sparse_attention_config is None


@pytest.mark.parametrize("field,value", [("max_num_batched_tokens", sys.maxsize), ("max_num_batched_tokens", SIZE_MAX),
                                         ("num_kv_blocks", np.int64(7)), ("cache_size", True),
                                         ("cache_interval_multiplier", 3), ("cache_interval_multiplier", None),
                                         ("enable_prefix_caching", 1), ("dynamic_split_fuse", None),
                                         ("use_cache_eviction", np.bool_(True)), ("max_num_seqs", 0)])
def test_accepted_values_convert_as_pybind(field, value):
    ours, theirs = SchedulerConfig(), og.SchedulerConfig()
    setattr(ours, field, value)
    setattr(theirs, field, value)
    assert getattr(ours, field) == getattr(theirs, field)
    assert type(getattr(ours, field)) is type(getattr(theirs, field))


@pytest.mark.parametrize("field,value", [("max_num_batched_tokens", -1), ("max_num_batched_tokens", 1.5),
                                         ("max_num_batched_tokens", 2**64), ("num_kv_blocks", "3"),
                                         ("cache_size", 2.0), ("cache_interval_multiplier", -1),
                                         ("cache_interval_multiplier", "a"), ("enable_prefix_caching", "x"),
                                         ("dynamic_split_fuse", [True])])
def test_rejected_values_raise_type_error_as_pybind(field, value):
    with pytest.raises(TypeError):
        setattr(og.SchedulerConfig(), field, value)
    cfg = SchedulerConfig()
    with pytest.raises(TypeError, match=field):
        setattr(cfg, field, value)
    assert getattr(cfg, field) == getattr(SchedulerConfig(), field)


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError):
        SchedulerConfig().max_batch = 3
    with pytest.raises(TypeError, match="max_batch"):
        SchedulerConfig(max_batch=3)


@pytest.mark.parametrize("fields", [{}, {"max_num_batched_tokens": sys.maxsize, "enable_prefix_caching": True},
                                    {"cache_interval_multiplier": 4, "num_kv_blocks": 100, "cache_size": 2,
                                     "dynamic_split_fuse": False, "max_num_seqs": 3, "num_linear_attention_blocks": 5}])
def test_to_string_equals_pybind(fields):
    theirs = og.SchedulerConfig()
    for k, v in fields.items():
        setattr(theirs, k, v)
    assert SchedulerConfig(**fields).to_string() == theirs.to_string()


def test_equality_and_copies():
    a = SchedulerConfig(max_num_batched_tokens=64)
    b = copy.copy(a)
    assert a == b and a is not b and a == a.copy() and a == copy.deepcopy(a)
    b.enable_prefix_caching = True
    assert a != b and a.enable_prefix_caching is False
    assert SchedulerConfig() == SchedulerConfig()
    assert SchedulerConfig() != "SchedulerConfig"


def test_bundled_sends_pa_and_one_key_per_honoured_field():
    props = scheduler_properties(SchedulerConfig(max_num_batched_tokens=sys.maxsize, enable_prefix_caching=False,
                                                 num_kv_blocks=40), "bundled")
    assert props[0] == ("ATTENTION_BACKEND", "PA")
    d = dict(props[1:])
    assert set(d) == set(BUNDLED_KEYS.values())
    assert d["OVGENAI_C_MAX_NUM_BATCHED_TOKENS"] == str(sys.maxsize)
    assert d["OVGENAI_C_ENABLE_PREFIX_CACHING"] == "NO"
    assert d["OVGENAI_C_DYNAMIC_SPLIT_FUSE"] == "YES"
    assert d["OVGENAI_C_NUM_KV_BLOCKS"] == "40" and d["OVGENAI_C_CACHE_SIZE"] == "0"
    assert scheduler_properties(None, "bundled") == []


@pytest.mark.parametrize("field,value", [("use_cache_eviction", True), ("use_sparse_attention", True),
                                         ("cache_eviction_config", object()), ("sparse_attention_config", object())])
def test_bundled_refuses_what_it_cannot_honour_by_name(field, value):
    with pytest.raises(NotSupportedError, match=f"SchedulerConfig.{field}=.*bundled"):
        scheduler_properties(SchedulerConfig(**{field: value}), "bundled")


def test_official_takes_only_the_latency_oriented_config():
    ok = SchedulerConfig(max_num_batched_tokens=SIZE_MAX, enable_prefix_caching=True)
    assert scheduler_properties(ok, "official") == [("ATTENTION_BACKEND", "PA")]
    ok.max_num_batched_tokens = sys.maxsize
    assert scheduler_properties(ok, "official") == [("ATTENTION_BACKEND", "PA")]


@pytest.mark.parametrize("fields,name", [({}, "max_num_batched_tokens"),
                                         ({"max_num_batched_tokens": SIZE_MAX}, "enable_prefix_caching"),
                                         ({"max_num_batched_tokens": SIZE_MAX, "enable_prefix_caching": True,
                                           "num_kv_blocks": 8}, "num_kv_blocks"),
                                         ({"max_num_batched_tokens": SIZE_MAX, "enable_prefix_caching": True,
                                           "dynamic_split_fuse": False}, "dynamic_split_fuse")])
@pytest.mark.parametrize("kind", ["official", "other"])
def test_official_refuses_other_fields_by_name(fields, name, kind):
    with pytest.raises(NotSupportedError, match=f"SchedulerConfig.{name}=.*{kind} library") as exc:
        scheduler_properties(SchedulerConfig(**fields), kind)
    assert isinstance(exc.value, RuntimeError)  # NotImplementedError: `except RuntimeError` keeps working


def test_validate_as_upstream():
    with pytest.raises(RuntimeError, match="cache_interval_multiplier must be greater than 0"):
        scheduler_properties(SchedulerConfig(enable_prefix_caching=True, cache_interval_multiplier=0), "bundled")
    scheduler_properties(SchedulerConfig(cache_interval_multiplier=0), "bundled")


def test_pybind_scheduler_config_is_taken_field_by_field():
    theirs = og.SchedulerConfig()
    theirs.max_num_batched_tokens = 32
    props = dict(scheduler_properties(theirs, "bundled"))
    assert props["OVGENAI_C_MAX_NUM_BATCHED_TOKENS"] == "32"
    with pytest.raises(TypeError, match="SchedulerConfig"):
        scheduler_properties({"max_num_batched_tokens": 32}, "bundled")
