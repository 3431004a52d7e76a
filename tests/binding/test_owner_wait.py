"""The owner's signal-aware wait (ovgenai_c._owner.Wakeup) on the main thread: Ctrl-C gets through and Python's
signal wakeup fd is the caller's again afterwards. Each case runs in its own interpreter: a broken wait hangs or
spins, and the timeout then fails the test instead of the whole run."""
from __future__ import annotations

import subprocess
import sys
import textwrap

_PRELUDE = """
import _thread, os, signal, threading, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from ovgenai_c import _owner

def wait_for(delay_set, delay_interrupt=None, real_signal=False):
    '''A one-shot Wakeup set after delay_set s, waited on by the main thread; interrupt_main() (or a real SIGINT
    sent to the process) after delay_interrupt s. Returns "set" or "interrupted".'''
    wk = _owner.Wakeup(once=True)
    threading.Timer(delay_set, wk.set).start()
    if delay_interrupt is not None:
        interrupt = (lambda: os.kill(os.getpid(), signal.SIGINT)) if real_signal else _thread.interrupt_main
        threading.Timer(delay_interrupt, interrupt).start()
    try:
        wk.wait()
    except KeyboardInterrupt:
        time.sleep(delay_set + 0.05)
        return "interrupted"
    return "set"
"""


def _run(body: str) -> str:
    code = _PRELUDE + textwrap.dedent(body)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_ctrl_c_interrupts_a_long_wait_and_the_outer_wakeup_fd_comes_back():
    out = _run("""
        r, w = os.pipe(); os.set_blocking(w, False); os.set_blocking(r, False)
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)   # e.g. an asyncio loop's own
        print(wait_for(0.4, 0.1, real_signal=True))          # (a real one: PyPy's interrupt_main writes no number)
        print(wait_for(0.05))                                # a plain wait still ends
        print(signal.set_wakeup_fd(-1) == w)                 # the caller's fd is back
        print(os.read(r, 64).count(bytes([signal.SIGINT])) >= 1)  # and it got the signal's number
    """)
    assert out.split() == ["interrupted", "set", "True", "True"]


def test_a_wait_after_one_left_its_pipe_installed_does_not_spin():
    """Regression: a Ctrl-C landing between set_wakeup_fd() and the wait's bookkeeping left the wait's own pipe as
    the wakeup fd; the next long wait took that as the caller's fd and forwarded the signal numbers it drained back
    into the same pipe, for ever (a hang at 100 % CPU seen in the reliability battery)."""
    out = _run("""
        r, w = _owner._main_pipe()
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)   # what the interrupted wait left behind
        print(wait_for(0.4, 0.1))                            # its signal number stays in the pipe
        print(wait_for(0.3))                                 # the next long wait drains it and ends
        print(signal.set_wakeup_fd(-1))                      # and does not leave the pipe installed
    """)
    assert out.split() == ["interrupted", "set", "-1"]


def test_without_a_python_sigint_handler_a_long_wait_is_a_plain_one():
    # Ctrl-C ignored or left to the OS (nohup, an embedding host): nothing can interrupt the wait, so it does not
    # take over Python's wakeup fd; with Python's handler back, it does again
    out = _run("""
        installs = []
        install = _owner._install_wakeup_fd
        _owner._install_wakeup_fd = lambda w: installs.append(w) or install(w)
        def installed_during(delay_set):
            installs.clear()
            return wait_for(delay_set) + ("/pipe" if installs else "/plain")
        for handler in (signal.SIG_IGN, signal.SIG_DFL):
            signal.signal(signal.SIGINT, handler)
            print(_owner._python_sigint_handler(), installed_during(0.3))
        signal.signal(signal.SIGINT, signal.default_int_handler)
        print(_owner._python_sigint_handler(), installed_during(0.3))
    """)
    assert out.splitlines() == ["False set/plain", "False set/plain", "True set/pipe"]


def test_a_long_wait_hands_other_unraisable_errors_down_and_puts_the_hook_back():
    """While the main thread waits, the hook that takes a Ctrl-C a finalizer swallowed is ovgenai_c's; any other
    error a finalizer raises goes to the hook below it, which is back once the wait ends — also after a hook
    installed over ours during a wait (ours then stays under it and passes everything down)."""
    out = _run("""
        import gc, sys
        seen = []
        def mine(u):
            seen.append(type(u.exc_value).__name__)
        sys.unraisablehook = mine
        class Raising:
            def __del__(self):
                raise ValueError("from a finalizer")
        def during():
            print(sys.unraisablehook is _owner._on_unraisable)
            Raising(); gc.collect()
        threading.Timer(0.1, during).start()  # (off the main thread: the hook is process-wide)
        print(wait_for(0.3))
        print(seen, sys.unraisablehook is mine)
        theirs = []
        def install_theirs():
            sys.unraisablehook = theirs.append
        threading.Timer(0.1, install_theirs).start()
        print(wait_for(0.3))
        print(sys.unraisablehook == theirs.append, wait_for(0.3))  # the next wait leaves theirs on top
        print(sys.unraisablehook == theirs.append)
    """)
    assert out.split("\n") == ["True", "set", "['ValueError'] True", "set", "True set", "True"]
