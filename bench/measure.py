"""What every benchmark measures of a command run in a fresh process: its time and its peak memory.

kg runs without PYTHONDONTWRITEBYTECODE: with it set, every fresh process compiles kgrdf from source
again (about 0.3 s), which no installed kg pays.
"""

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KG = [sys.executable, "-m", "kgrdf"]


@contextlib.contextmanager
def work_folder(given: Path | None, prefix: str):
    """The folder a benchmark works in: ``given``, made if missing and left as it is, or else a new
    temporary folder, removed when the benchmark ends, by an error or Ctrl-C as well (a 100k import
    leaves 1.6 GB of knowledge bases, N-Quads and stores behind)."""
    if given is not None:
        given.mkdir(parents=True, exist_ok=True)
        yield given
        return
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def environment() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run(args: list[str], *, ok=(0,)) -> tuple[float, float]:
    """(seconds, peak resident memory in MB) of ``kg args`` in a fresh process; raises with its
    stderr when it exits with a code not in ``ok``.

    The peak is the process's own high-water mark (VmHWM in /proc), read every 10 ms while it
    runs: not its rusage, which Linux counts from the benchmark's own memory at the fork (a
    benchmark that bulk-loaded a million quads in-process made every later command seem to take
    900 MB)."""
    import threading

    start = time.perf_counter()
    process = subprocess.Popen(
        KG + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment(), text=True
    )
    peak = [0]
    done = threading.Event()

    def watch() -> None:
        status = f"/proc/{process.pid}/status"
        while not done.is_set():
            try:
                with open(status, encoding="ascii") as text:
                    for line in text:
                        if line.startswith("VmHWM:"):
                            peak[0] = max(peak[0], int(line.split()[1]))
            except (OSError, ValueError):
                pass  # exited (a zombie has no memory left to read), or not yet there
            done.wait(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    stderr = process.stderr.read()
    _pid, status, _usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    done.set()
    watcher.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in ok:
        raise RuntimeError(f"kg {' '.join(args)} exited {process.returncode}: {stderr.strip()}")
    return seconds, peak[0] / 1024  # VmHWM is in kB


def best_of(repeat: int, run) -> float:
    """The least time of ``repeat`` calls of ``run`` (the noise a shared machine adds is never negative)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)
