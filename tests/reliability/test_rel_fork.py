"""os.fork() with a live pipeline (e.g. multiprocessing's default 'fork' start method on Linux): the child has
the pipeline object but not its owner thread. The child must neither hang on a call nor at exit."""
from __future__ import annotations

import pytest

from relsupport import STATS, last_json, run_snippet

_FORK = """
import signal, time, tempfile
import ovgenai_c
from ovgenai_c.pipeline import IR_FILES
model = tempfile.mkdtemp()
for n in IR_FILES:
    open(os.path.join(model, n), "w").close()
p = ovgenai_c.LLMPipeline(model, library=DOUBLE)
assert str(p.generate("parent", max_new_tokens=3)) == "Echo: parent"
MODE = %r
pid = os.fork()
if pid == 0:
    if MODE == "generate":
        try:
            p.generate("child", max_new_tokens=3, timeout=1)
        except Exception as e:
            print("child error", type(e).__name__, e, flush=True)
    sys.exit(0)          # runs the atexit hooks, as a forked worker that returns normally does
t0 = time.time()
status = None
while time.time() - t0 < 5:
    done, st = os.waitpid(pid, os.WNOHANG)
    if done:
        status = st
        break
    time.sleep(0.02)
if status is None:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
took = time.time() - t0
assert str(p.generate("parent again", max_new_tokens=3)) == "Echo: parent again"
p.close()
print(json.dumps({"child_finished": status is not None, "status": status, "took": took}))
"""


# Regression: a forked child must neither hang on calls nor at exit (inherited pipelines are closed there).
@pytest.mark.parametrize("mode", ["exit", "generate"])
def test_forked_child_neither_hangs_on_calls_nor_at_exit(mode, double_lib_path):
    STATS.case("shutdown")
    proc = run_snippet(_FORK % mode, double=double_lib_path, timeout=60, group=f"fork:{mode}")
    out = last_json(proc)
    assert out["child_finished"], f"the forked child hung ({mode}); killed after {out['took']:.1f} s"
    assert out["status"] == 0
