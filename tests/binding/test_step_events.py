"""StepEvents (ovgenai_c._step_events): asyncio waits on a batching pipeline's step signal, here on a plain pipe
standing in for the native one (the native signal itself: tests/backend/test_batching.py)."""
from __future__ import annotations

import asyncio
import os
import threading

import pytest

from ovgenai_c._step_events import StepEvents


@pytest.fixture
def signal():
    r, w = os.pipe()
    events = StepEvents(os.dup(r))  # as the pipeline does: its own descriptor
    os.close(r)
    yield events, w
    try:
        os.close(w)
    except OSError:
        pass


def _watched(loop, fd) -> bool:
    return fd in loop._selector.get_map()  # the selector loop's registrations


def test_a_step_wakes_the_waiter_and_the_loop_stops_watching(signal):
    events, w = signal

    async def main():
        loop = asyncio.get_running_loop()
        mark = events.mark()
        task = asyncio.ensure_future(events.wait(mark, 10))
        await asyncio.sleep(0.05)
        assert not task.done() and _watched(loop, events._fd)
        os.write(w, b"\1")
        assert await asyncio.wait_for(task, 5) is True
        assert events.mark() == mark + 1
        assert not _watched(loop, events._fd)  # watched only while someone waits
        with pytest.raises(BlockingIOError):
            os.read(events._fd, 1)  # drained

    asyncio.run(main())


def test_a_step_between_mark_and_wait_is_not_missed(signal):
    events, w = signal

    async def main():
        mark = events.mark()
        os.write(w, b"\1")  # the step lands while the caller looks at its handle
        assert await asyncio.wait_for(events.wait(mark, 10), 5) is True
        # drained by that wake: an older mark returns at once, a fresh one waits
        assert await events.wait(mark, 10) is True
        assert await events.wait(events.mark(), 0.05) is False

    asyncio.run(main())


def test_timeout_and_cancel_leave_nothing_watched(signal):
    events, _ = signal

    async def main():
        loop = asyncio.get_running_loop()
        assert await events.wait(events.mark(), 0.05) is False
        task = asyncio.ensure_future(events.wait(events.mark()))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not _watched(loop, events._fd) and not events._waiters

    asyncio.run(main())


def test_end_of_file_ends_every_wait_for_good(signal):
    events, w = signal

    async def main():
        loop = asyncio.get_running_loop()
        waits = [asyncio.ensure_future(events.wait(events.mark(), 10)) for _ in range(3)]
        await asyncio.sleep(0.02)
        os.close(w)  # the pipeline was freed
        assert await asyncio.wait_for(asyncio.gather(*waits), 5) == [True, True, True]
        assert events.ended and not _watched(loop, events._fd)
        assert await events.wait(events.mark(), 10) is True  # at once: nothing will ring again

    asyncio.run(main())


def test_one_step_wakes_the_waiters_of_two_loops(signal):
    """Whichever loop drains the pipe wakes the other's waiters too (a drained byte is gone for both)."""
    events, w = signal
    ready = threading.Barrier(3)
    woken = []

    def run_loop():
        async def main():
            task = asyncio.ensure_future(events.wait(events.mark(), 10))
            await asyncio.sleep(0.02)
            ready.wait(5)
            woken.append(await task)

        asyncio.run(main())

    threads = [threading.Thread(target=run_loop) for _ in range(2)]
    for t in threads:
        t.start()
    ready.wait(5)
    os.write(w, b"\1")
    for t in threads:
        t.join(10)
    assert woken == [True, True]


def test_the_descriptor_is_closed_with_the_object():
    import gc

    r, w = os.pipe()
    events = StepEvents(r)
    del events
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(r)
    os.close(w)
