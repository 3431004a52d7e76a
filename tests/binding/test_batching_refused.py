"""ContinuousBatchingPipeline on a library without the batching extra (the ABI double stands in for the official
library): refused by name before any C call, with NotSupportedError."""
from __future__ import annotations

import pytest

from ovgenai_c import errors
from ovgenai_c.batching import ContinuousBatchingPipeline


def test_refused_without_the_batching_abi(double, model_dir):
    calls_before = len(double.thread_log())
    with pytest.raises(errors.NotSupportedError, match="needs the bundled backend"):
        ContinuousBatchingPipeline(model_dir, None, "CPU", library=double.library)
    assert len(double.thread_log()) == calls_before
