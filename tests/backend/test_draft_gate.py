"""Prompt lookup's DraftGate (native/src/engine/prompt_lookup.cpp): a proposal is verified while proposals of its
kind took enough tokens to pay for the verification's measured cost against a plain one-token step, one lost
proposal in eight is verified anyway, a refused proposal is scored by the plain tokens after it, and nothing is
refused before it is measured; and its search's drafts (PromptLookup::propose), which continue a repeating text's
period past the end of the text. Compiled with g++ from the engine's source (no OpenVINO). And end to end: with the
one-token form, no step feeds padding alone."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from testsupport import native_unit

pytestmark = pytest.mark.engine_explicit  # prompt lookup always runs the PA engine

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native" / "src"
SOURCES = [NATIVE / "engine" / "prompt_lookup.cpp", Path(__file__).with_name("draft_gate_main.cpp")]
EXPLORE_EVERY = 8  # DraftGate::kExploreEvery


@pytest.fixture(scope="module")
def gate_exe():
    return native_unit("draft-gate", ["-std=c++17", "-O2", "-Wall", "-Werror", "-I", str(NATIVE), *map(str, SOURCES)],
                       SOURCES + [NATIVE / "engine" / "prompt_lookup.hpp"])


def _stdout(exe, lines) -> str:
    out = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _run(exe, lines) -> list:
    return [int(x) for x in _stdout(exe, lines).split()]


def test_nothing_is_refused_before_it_is_measured(gate_exe):
    assert _run(gate_exe, ["worth 2 6",                             # nothing measured
                           "plain 12000", "worth 2 6",              # no verification cost, no yield yet
                           "verified 9 6 4 25000", "worth 2 6",     # kind of match 2 still unmeasured
                           "worth 9 11"]) == [1, 1, 1, 1]           # a shape not measured yet


def test_a_kind_that_does_not_pay_loses_but_one_in_eight_is_explored(gate_exe):
    # one plain step 12 ms; a 6-token verification 25 ms that took 1 token: 1 x 12 < 25
    lines = ["plain 12000", "verified 2 6 1 25000"] + ["worth 2 6"] * (2 * EXPLORE_EVERY)
    got = _run(gate_exe, lines)
    assert got == ([0] * (EXPLORE_EVERY - 1) + [1]) * 2


def test_a_kind_that_pays_is_verified_and_kinds_are_apart(gate_exe):
    # 3 tokens taken for 26 ms against 12 ms a token: worth it; the match-2 kind losing does not touch it
    got = _run(gate_exe, ["plain 12000", "verified 2 6 1 25000", "verified 12 6 3 26000",
                          "worth 12 6", "worth 2 6", "worth 3 6"])
    assert got == [1, 0, 1]  # match 3 is its own kind (3-4 tokens agreed), not measured yet


def test_break_even_counts_as_worth_and_costs_follow_the_machine(gate_exe):
    # exactly paying (2 x 12.5 = 25) is verified; the same yield on a machine where one-token steps cost 8 ms is not
    assert _run(gate_exe, ["plain 12500", "verified 2 6 2 25000", "worth 2 6"]) == [1]
    assert _run(gate_exe, ["plain 8000", "verified 2 6 2 25000", "worth 2 6"]) == [0]


def test_a_kind_wins_again_once_its_drafts_are_accepted(gate_exe):
    lines = ["plain 12000", "verified 2 6 1 25000", "worth 2 6"]
    for _ in range(3):  # the answer starts to copy the input: whole drafts accepted when explored
        lines += ["verified 2 6 6 25000"]
    lines += ["worth 2 6"]
    assert _run(gate_exe, lines) == [0, 1]


def test_a_refused_proposal_is_scored_by_the_plain_tokens_after_it(gate_exe):
    lost = ["plain 12000", "verified 2 6 1 25000"]  # the match-2 kind took 1 token for 25 ms: it loses
    # refused, then the answer follows all 5 drafts: a verification would have taken 6 tokens, averaged in
    # (0.7 x 1 + 0.3 x 6 = 2.5 tokens x 12 ms >= 25 ms): the kind wins again without an exploring verification
    follows = ["refused 2 5 50 51 52 53 54"] + [f"token {t}" for t in (50, 51, 52, 53, 54)]
    assert _run(gate_exe, lost + ["worth 2 6"] + follows + ["worth 2 6"]) == [0, 1]
    # the answer parts from the first draft: 1 token, the kind still loses
    assert _run(gate_exe, lost + ["refused 2 5 50 51 52 53 54", "token 7", "worth 2 6"]) == [0]
    # a verification in between drops the proposal being scored (its tokens came from that verification)
    assert _run(gate_exe, lost + ["refused 2 5 50 51 52 53 54", "verified 9 6 1 25000"] +
                [f"token {t}" for t in (50, 51, 52, 53, 54)] + ["worth 2 6"]) == [0]
    # while one refused proposal is being scored, another does not replace it: the first one's outcome counts
    # (had the second replaced it, the token 50 would have ended it at 1 token, and the kind would still lose)
    assert _run(gate_exe, lost + ["refused 2 5 50 51 52 53 54", "refused 3 5 60 61 62 63 64"] +
                [f"token {t}" for t in (50, 51, 52, 53, 54)] + ["worth 2 6"]) == [1]


def _propose(exe, limit: int, text: list) -> tuple:
    """The drafts of a fresh search (num_assistant_tokens 5, max_ngram_size 3) and its match length."""
    drafts, match = _stdout(exe, [f"propose {limit} {len(text)} {' '.join(map(str, text))}"]).splitlines()
    return ([] if drafts.strip() == "-" else [int(x) for x in drafts.split()]), int(match)


def test_a_repeating_text_continues_its_period_past_the_end(gate_exe):
    # the tail [1, 2, 1] also starts at index 2: the text repeats with period 2, and the drafts go on repeating it
    # (before: only the 2 tokens between that match and the end were proposed)
    assert _propose(gate_exe, 32, [9, 8, 1, 2, 1, 2, 1]) == ([2, 1, 2, 1, 2], 3)  # 5: num_assistant_tokens
    assert _propose(gate_exe, 3, [9, 8, 1, 2, 1, 2, 1]) == ([2, 1, 2], 3)          # and never past the limit
    # a period of 3 tokens: the match [4, 5, 3] at index 1 (one more token of context agrees) is followed by the
    # 3 tokens up to the end, then by the same 3 again
    assert _propose(gate_exe, 32, [3, 4, 5, 3, 4, 5, 3]) == ([4, 5, 3, 4, 5], 4)


def test_a_continuation_inside_the_text_is_copied_as_it_is(gate_exe):
    # the match [5, 6, 7] at the start is followed by 6 tokens before the end: the first 5 are the drafts
    assert _propose(gate_exe, 32, [5, 6, 7, 8, 9, 1, 5, 6, 7]) == ([8, 9, 1, 5, 6], 3)
    # a lone token without agreeing context proposes at most 2 drafts; no match, none
    assert _propose(gate_exe, 32, [3, 4, 5, 6, 7, 3]) == ([4, 5], 1)
    assert _propose(gate_exe, 32, [1, 2, 3, 4]) == ([], 0)


_CHILD = r"""
import sys
import ovgenai_c
with ovgenai_c.LLMPipeline(sys.argv[1], "CPU", prompt_lookup=True) as p:
    for prompt in sys.argv[2:]:
        p.generate(prompt, max_new_tokens=96, num_assistant_tokens=5, max_ngram_size=3)
"""


def test_with_the_one_token_form_no_step_feeds_padding_alone(smol_dir):
    """A step with no drafts runs on the one-token form, which leaves the main form's shape as it was: padding it to
    that shape (as without the form) would pay a several-token inference for one token."""
    prompts = ["Repeat the following text exactly:\n\nThe old lighthouse stood at the edge of the cliff for more than "
               "a hundred years. Every night its keeper climbed the narrow stairs and lit the lamp.",
               "Write a poem about the first snow of winter."]
    env = {**os.environ, "OVGENAI_C_LOOKUP_TRACE": "1", "OVGENAI_C_STATIC_DECODE": "YES"}
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(smol_dir), *prompts], env=env, cwd=str(ROOT),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    steps = [tuple(int(x) for x in m) for m in
             re.findall(r"lookup step: fed (\d+) taken (\d+) .* match (\d+)", proc.stderr)]
    assert len(steps) > 20
    assert any(fed > 1 for fed, _t, _m in steps), "no verification ran: the test shows nothing"
    padding_alone = [s for s in steps if s[0] > 1 and s[2] == 0]
    assert padding_alone == []
