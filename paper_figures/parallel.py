"""Run several reproductions at once, one worker process per core (``zoo figure --all --jobs 2``).

Each figure runs in its own ``zoo figure NAME`` process pinned to one core: XLA on a shared core is many times
slower than on its own, and a figure that crashes its process (or a compiler) takes no other figure with it.
A figure's output goes to ``OUT/NAME/log.txt``; a failed figure's log is printed, and the run still runs the rest.
"""

import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path


def available_cores() -> list[int]:
    """The cores this process may run on, in order."""
    return sorted(os.sched_getaffinity(0))


def _figure_command(name: str, quick: bool, out: Path) -> list[str]:
    command = [sys.executable, "-m", "zoo_cli", "figure", name, "--out", str(out)]
    return command + (["--quick"] if quick else [])


def _pinned(core: int, command: list[str]) -> list[str]:
    # taskset rather than a preexec_fn: a preexec_fn makes Python fork the JAX-threaded parent (JAX warns that
    # this can deadlock); without taskset the figures still run, unpinned
    taskset = shutil.which("taskset")
    return [taskset, "-c", str(core), *command] if taskset else command


def run_figures_in_parallel(names: list[str], quick: bool, out: Path, jobs: int) -> list[str]:
    """Run ``names`` on ``jobs`` pinned worker processes; returns the names that failed (in run order)."""
    cores = available_cores()
    pending: queue.Queue[tuple[int, str]] = queue.Queue()
    for index, name in enumerate(names, start=1):
        pending.put((index, name))
    failed: list[str] = []
    lock = threading.Lock()

    def worker(core: int) -> None:
        while True:
            try:
                index, name = pending.get_nowait()
            except queue.Empty:
                return
            log = out / name / "log.txt"
            log.parent.mkdir(parents=True, exist_ok=True)
            start = time.perf_counter()
            with log.open("w") as handle:
                command = _pinned(core, _figure_command(name, quick, out))
                status = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT).returncode
            seconds = time.perf_counter() - start
            with lock:
                verdict = "" if status == 0 else f" FAILED (exit {status}); its log:"
                print(f"[{index}/{len(names)}] {name}: {seconds:.0f} s on core {core}{verdict}", file=sys.stderr)
                if status != 0:
                    print(log.read_text(), file=sys.stderr)
                    failed.append(name)
                sys.stderr.flush()

    threads = [threading.Thread(target=worker, args=(cores[i % len(cores)],)) for i in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failed
