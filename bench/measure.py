"""What every benchmark measures of a command run in a fresh process: its time and its peak memory.

kg runs without PYTHONDONTWRITEBYTECODE: with it set, every fresh process compiles kgrdf from source
again (about 0.3 s), which no installed kg pays.
"""

import os
import subprocess
import sys
import time

KG = [sys.executable, "-m", "kgrdf"]


def environment() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run(args: list[str], *, ok=(0,)) -> tuple[float, float]:
    """(seconds, peak resident memory in MB) of ``kg args`` in a fresh process; raises with its
    stderr when it exits with a code not in ``ok``."""
    start = time.perf_counter()
    process = subprocess.Popen(
        KG + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment(), text=True
    )
    stderr = process.stderr.read()
    _pid, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in ok:
        raise RuntimeError(f"kg {' '.join(args)} exited {process.returncode}: {stderr.strip()}")
    return seconds, usage.ru_maxrss / 1024  # ru_maxrss is in KB on Linux


def best_of(repeat: int, run) -> float:
    """The least time of ``repeat`` calls of ``run`` (the noise a shared machine adds is never negative)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)
