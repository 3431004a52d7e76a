"""One rule, two paths: every GenerationConfig rule an Ollama-style option maps onto gives the same verdict
through ``GenerationConfig`` and through the provider's ``check_options`` (whose error names the option), and
upstream's own ``openvino_genai.GenerationConfig.validate()`` (test-only oracle) agrees on the ranges."""
from __future__ import annotations

import math

import pytest

from ovgenai_c import config
from ovgenai_c.config import RANGE_RULES, SIZE_MAX, WHEN_SAMPLING, GenerationConfig, Interval
from ovgenai_c.errors import InvalidParameterError
from ovgenai_c.provider import OptionError, check_options
from ovgenai_c.provider.options import OPTION_FIELDS, OPTIONS

OPTION_OF_FIELD = {field: option for option, field in OPTION_FIELDS.items()}


def _edges(interval: Interval):
    """Values at, just inside and beyond each finite bound of ``interval``, and one well inside."""
    out = []
    for bound in (interval.lo, interval.hi):
        if math.isfinite(bound):
            out += [bound - 0.5, bound - 0.001, bound, bound + 0.001, bound + 0.5]
    return sorted(set(out))


RANGE_CASES = [(field, v) for field, rule in RANGE_RULES.items() for v in _edges(rule.interval)]


def _config_ok(field: str, value: float) -> bool:
    """The config path: assign, then validate() with the rule's condition on (sampling or no beams)."""
    cfg = GenerationConfig(max_new_tokens=5, **{field: value})
    if RANGE_RULES[field].applies == WHEN_SAMPLING:
        cfg.do_sample = True
    return not [p for p in cfg.problems() if p.startswith(field + " ")]


def test_every_option_sets_a_real_config_field_and_every_range_rule_has_its_option():
    assert set(OPTION_FIELDS) == set(OPTIONS)
    assert all(field in config.FIELDS for field in OPTION_FIELDS.values())
    assert set(RANGE_RULES) <= set(OPTION_FIELDS.values())  # no config range the options could slip past


@pytest.mark.parametrize("field, value", RANGE_CASES)
def test_range_rules_agree_on_both_paths(field, value):
    option = OPTION_OF_FIELD[field]
    config_ok = _config_ok(field, value)
    assert config_ok == (config.check_value(field, value) in RANGE_RULES[field].interval)
    if option == "temperature" and value == 0:  # Ollama's temperature 0 means greedy, not "sample at 0"
        assert not config_ok and check_options({option: value}) == {option: 0.0}
        return
    if config_ok:
        assert check_options({option: value}) == {option: float(value)}
        return
    with pytest.raises(OptionError) as ei:
        check_options({option: value})
    assert ei.value.option == option and f"option {option!r}" in str(ei.value)
    interval = RANGE_RULES[field].interval
    shown = interval.including_lo() if option == "temperature" else interval
    assert f"must be {shown}, got" in str(ei.value)


@pytest.mark.parametrize("field, value", RANGE_CASES)
def test_range_rules_are_upstreams(field, value):
    ov_genai = pytest.importorskip("openvino_genai", reason="openvino_genai (the test oracle) is not installed")
    o = ov_genai.GenerationConfig()
    o.max_new_tokens = 5
    o.do_sample = RANGE_RULES[field].applies == WHEN_SAMPLING
    setattr(o, field, value)
    try:
        o.validate()
        upstream_ok = True
    except Exception:
        upstream_ok = False
    assert _config_ok(field, value) == upstream_ok, (field, value)


def test_min_p_is_upstreams_half_open_range():
    """The rule that disagreed: the provider took min_p = 1; upstream's validate() wants [0, 1) when sampling."""
    with pytest.raises(OptionError, match=r"option 'min_p' must be in \[0, 1\), got 1\.0") as ei:
        check_options({"min_p": 1})
    assert ei.value.option == "min_p"
    assert check_options({"min_p": 0.999}) == {"min_p": 0.999} and check_options({"min_p": 0}) == {"min_p": 0.0}
    assert GenerationConfig(max_new_tokens=5, do_sample=True, min_p=1.0).problems() == \
        ["min_p must be in [0, 1) when sampling, got 1.0"]


# value rules of the field's type (assigning refuses them): per option, values the config refuses
TYPE_CASES = [
    ("temperature", "hot"), ("temperature", True), ("temperature", math.inf), ("temperature", math.nan),
    ("temperature", 1e39), ("top_p", "0.5"), ("min_p", [0.1]), ("repeat_penalty", math.inf),
    ("presence_penalty", "x"), ("frequency_penalty", -1e39),
    ("top_k", -1), ("top_k", SIZE_MAX + 1), ("top_k", "40"), ("top_k", 2.5),
    ("seed", -3), ("seed", SIZE_MAX + 1), ("seed", True),
    ("num_predict", SIZE_MAX + 1), ("num_predict", "10"),
    ("stop", [""]), ("stop", ["a\0b"]), ("stop", ["\ud800"]), ("stop", ["ok", 3]),
]


@pytest.mark.parametrize("option, value", TYPE_CASES)
def test_type_and_representation_rules_agree_on_both_paths(option, value):
    field = OPTION_FIELDS[option]
    with pytest.raises(InvalidParameterError):  # a list of stops is a set in the config
        GenerationConfig(**{field: set(value) if option == "stop" else value})
    with pytest.raises(OptionError) as ei:
        check_options({option: value})
    assert ei.value.option == option and f"option {option!r}" in str(ei.value)


def test_the_config_check_names_the_subject_it_is_given():
    with pytest.raises(InvalidParameterError, match=r"^GenerationConfig\.top_k must be >= 0, got -1$"):
        GenerationConfig(top_k=-1)
    with pytest.raises(InvalidParameterError, match=r"^option 'seed' must be in \[0, 18446744073709551615\]"):
        config.check_value("rng_seed", SIZE_MAX + 1, "option 'seed'")
    with pytest.raises(OptionError, match=r"^profile: option 'stop' item 'a\\x00' contains a NUL character$"):
        check_options({"stop": "a\0"}, where="profile: ")


def test_ollama_meanings_and_json_leniency_stay_the_providers():
    # values whose meaning is Ollama's (not a config value) and integral floats from JSON
    assert check_options({"num_predict": -1}) == {"num_predict": -1}
    assert check_options({"num_predict": -2}) == {"num_predict": -2}
    assert check_options({"top_k": 0, "temperature": 0}) == {"top_k": 0, "temperature": 0.0}
    assert check_options({"top_k": 40.0, "seed": 7.0}) == {"top_k": 40, "seed": 7}
    with pytest.raises(OptionError, match=r"'top_k' must be >= 0, got -2 \(0 = off\)"):
        check_options({"top_k": -2})
