"""native/src/json: parser strictness, round trips and Python-compatible serialisation."""
from __future__ import annotations

import json
import math
import random
import struct

import pytest


def test_cpp_api_selftest(ct_harness):
    import subprocess

    res = subprocess.run([str(ct_harness.exe), "--selftest"], capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout == b"OK"


DOCS = [
    '{"a": 1, "b": [true, false, null], "c": {"d": "e"}, "f": -0.5, "g": 1e-7, "h": 10000000000000000.0}',
    '[]',
    '{}',
    '"just a string"',
    '123',
    '-9223372036854775808',
    '9223372036854775807',
    '[1.0, 2.50, 3e2, -0.0, 0.1, 1e16, 1e15, 123456789.123456789, 5e-324, 1.7976931348623157e308]',
    '{"unicode": "Ünïcödé ✓ 日本語 🙂", "esc": "\\"\\\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\\u00e9\\ud83d\\ude00"}',
    '{"dup": 1, "dup": 2, "x": 3}',
    '  \r\n\t[ 1 , { "k" : [ ] } ]  \n',
    '[[[[[[[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]]]]]]]',
]


@pytest.mark.parametrize("doc", DOCS)
def test_roundtrip_compact_matches_python(ct_harness, doc):
    res = ct_harness.json_roundtrip(doc)
    assert res.returncode == 0, res.stderr
    expected = json.dumps(json.loads(doc), ensure_ascii=False, separators=(",", ":"))
    assert res.stdout.decode("utf-8") == expected


@pytest.mark.parametrize("doc", DOCS)
def test_roundtrip_pretty_sorted_ascii_matches_python(ct_harness, doc):
    res = ct_harness.json_roundtrip(doc, "--indent", "2", "--sort-keys", "--ensure-ascii", "--key-sep", ": ")
    assert res.returncode == 0, res.stderr
    expected = json.dumps(json.loads(doc), ensure_ascii=True, indent=2, sort_keys=True)
    assert res.stdout.decode("ascii") == expected


def test_python_default_separators(ct_harness):
    doc = '{"a": [1, 2, {"b": null}], "c": "d"}'
    res = ct_harness.json_roundtrip(doc, "--item-sep", ", ", "--key-sep", ": ")
    assert res.stdout.decode() == json.dumps(json.loads(doc))


def test_indent_zero_like_python(ct_harness):
    doc = '{"a": [1, 2]}'
    res = ct_harness.json_roundtrip(doc, "--indent", "0", "--key-sep", ": ")
    assert res.stdout.decode() == json.dumps(json.loads(doc), indent=0)


def test_floats_shortest_roundtrip_like_python_repr(ct_harness):
    rng = random.Random(1234)
    vals = [0.1, 0.2, 0.30000000000000004, 1e-7, 1e-5, 1e-4, 1e16, 1e15, 1e22, 1e-300, 2.5e-308, 5e-324,
            1.7976931348623157e308, -1.5, 3.141592653589793, 100.0, 123456789012345678.0, 0.0001234]
    for _ in range(3000):
        vals.append(struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0])
        vals.append(rng.uniform(-1e6, 1e6))
        vals.append(float(rng.randint(-10**17, 10**17)))
    vals = [v for v in vals if math.isfinite(v)]
    doc = json.dumps(vals)
    res = ct_harness.json_roundtrip(doc)
    assert res.returncode == 0, res.stderr
    assert res.stdout.decode() == json.dumps(vals, separators=(",", ":"))


def test_huge_numbers_become_floats_or_infinity(ct_harness):
    res = ct_harness.json_roundtrip("[1e400, -1e400, 1e-400, 18446744073709551616]")
    assert res.returncode == 0
    assert res.stdout.decode() == "[Infinity,-Infinity,0.0,1.8446744073709552e+19]"


def test_bom_accepted(ct_harness):
    res = ct_harness.json_roundtrip(b"\xef\xbb\xbf{\"a\": 1}")
    assert res.returncode == 0
    assert res.stdout == b'{"a":1}'


BAD = [
    b"",
    b"   ",
    b"[1, 2,]",
    b"{\"a\": 1,}",
    b"[01]",
    b"[1.]",
    b"[.5]",
    b"[+1]",
    b"[-]",
    b"[1e]",
    b"NaN",
    b"[Infinity]",
    b"{'a': 1}",
    b"{a: 1}",
    b"[\"tab\there\"]",
    b"[\"nl\nhere\"]",
    b"\"unterminated",
    b"[\"bad escape \\x41\"]",
    b"[\"\\u12\"]",
    b"[\"\\ud800\"]",
    b"[\"\\udc00\"]",
    b"[\"\\ud800\\u0041\"]",
    b"[\"\\ud800x\"]",
    b"\"\xff\"",
    b"\"\xc0\xaf\"",
    b"\"\xe0\x80\xaf\"",
    b"\"\xed\xa0\x80\"",
    b"\"\xf4\x90\x80\x80\"",
    b"\"\xe6\x97\"",
    b"[1] [2]",
    b"{\"a\" 1}",
    b"[1 2]",
    b"tru",
    b"nul",
    b"[" * 513 + b"]" * 513,
]


@pytest.mark.parametrize("doc", BAD, ids=range(len(BAD)))
def test_invalid_json_rejected_with_offset(ct_harness, doc):
    res = ct_harness.json_roundtrip(doc)
    assert res.returncode == 2, (doc, res.stdout)
    err = res.stderr.decode()
    assert err.startswith("ERROR: JSON parse error at offset "), err


def test_depth_limit_boundary(ct_harness):
    ok = b"[" * 512 + b"]" * 512
    res = ct_harness.json_roundtrip(ok)
    assert res.returncode == 0
    assert res.stdout == ok


def test_deep_nesting_does_not_crash(ct_harness):
    res = ct_harness.json_roundtrip(b"[" * 200000)
    assert res.returncode == 2
    assert b"nesting too deep" in res.stderr


def test_escaping_like_python(ct_harness):
    s = "".join(chr(c) for c in range(0, 0x80)) + "é€🙂\u2028"
    doc = json.dumps([s])
    res = ct_harness.json_roundtrip(doc)
    assert res.stdout.decode("utf-8") == json.dumps([s], ensure_ascii=False, separators=(",", ":"))
    res = ct_harness.json_roundtrip(doc, "--ensure-ascii")
    assert res.stdout.decode("ascii") == json.dumps([s], separators=(",", ":"))
