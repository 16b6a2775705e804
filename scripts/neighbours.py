"""Neighbours for the evaluations: processes that share the machine with a measurement.

Each `start_*` returns a handle with `stop()`; `start(name)` picks one by name.
Run alone, `python scripts/neighbours.py NAME` keeps that neighbour running
until Ctrl-C (to watch what it does to `regress run` by hand).

    none     nothing
    hog      one busy loop: one of the two cores taken throughout
    bursty   one busy loop that comes and goes: busy 0.2-2 s, idle as long
    modal    the machine flips between two speeds at random moments: while
             slow, a real-time process on every CPU takes 40% of each
             millisecond, so everything else runs about 1.6x slower, every
             block of every round alike (a VM whose host steals time, a
             frequency state, a co-tenant on the sibling thread). Phases last
             0.5-6 s, about half of the time slow. Needs root (SCHED_FIFO);
             without it, one line says so and the neighbour does nothing.
    install  installs packages and imports modules in a loop: `pip install
             --target` of a few wheels from a local folder, byte-compiling
             them, importing them and numpy/scipy in a fresh interpreter,
             removing them (bursts of CPU and disk, as a CI job beside yours).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path


class Neighbour:
    def __init__(self, name: str, procs: list[subprocess.Popen], cleanup=None):
        self.name, self.procs, self.cleanup = name, procs, cleanup

    def stop(self) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()
        if self.cleanup is not None:
            self.cleanup()


def _python(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args])


def start_none() -> Neighbour:
    return Neighbour("none", [])


def start_hog() -> Neighbour:
    return Neighbour("hog", [_python("while True: pass")])


BURSTY = """
import random, time
while True:
    end = time.time() + random.uniform(0.2, 2.0)
    while time.time() < end: pass
    time.sleep(random.uniform(0.2, 2.0))
"""


def start_bursty() -> Neighbour:
    return Neighbour("bursty", [_python(BURSTY)])


# One per CPU: follows the shared phase schedule (seed, start), taking BUSY of each PERIOD while slow.
MODAL = """
import os, random, sys, time
cpu, seed, start, busy = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
parent = os.getppid()
os.sched_setaffinity(0, {cpu})
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
except PermissionError:
    if cpu == 0:
        print("neighbours.py: the modal neighbour needs root (SCHED_FIFO); it does nothing", file=sys.stderr)
    sys.exit(0)
rng = random.Random(seed)
ends, t, slow = [], start, False
while t < start + 6 * 3600:
    t += rng.uniform(0.5, 6.0)
    ends.append((t, slow))
    slow = not slow
PERIOD = 0.001
k = 0
while os.getppid() == parent:
    now = time.time()
    while ends[k][0] < now:
        k += 1
    end, is_slow = ends[k]
    if not is_slow:
        time.sleep(min(0.05, end - now))
        continue
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < busy * PERIOD:
        pass
    time.sleep(PERIOD * (1 - busy))
"""


def start_modal(busy: float = 0.4, seed: int | None = None) -> Neighbour:
    seed = random.randrange(1 << 30) if seed is None else seed
    start = time.time()
    cpus = sorted(os.sched_getaffinity(0))
    return Neighbour("modal", [_python(MODAL, str(c), str(seed), str(start), str(busy)) for c in cpus])


# Wheels the install neighbour installs again and again (downloaded once into its folder).
WHEELS = ["rich", "pygments", "markdown-it-py", "mdurl", "jinja2", "markupsafe", "requests", "idna", "certifi"]

INSTALL = """
import subprocess, sys, tempfile, shutil
wheels, names = sys.argv[1], sys.argv[2:]
while True:
    target = tempfile.mkdtemp(prefix="regress-neighbour-")
    try:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--find-links", wheels,
                        "--target", target, *names], check=False, capture_output=True)
        subprocess.run([sys.executable, "-m", "compileall", "-q", "-f", target], check=False, capture_output=True)
        code = (f"import sys; sys.path.insert(0, {target!r}); import rich.console, pygments.lexers, jinja2, requests; "
                "import numpy, scipy.stats, scipy.optimize")
        subprocess.run([sys.executable, "-c", code], check=False, capture_output=True)
    finally:
        shutil.rmtree(target, ignore_errors=True)
"""


def start_install(wheels: Path | None = None) -> Neighbour:
    wheels = wheels or Path(tempfile.gettempdir()) / "regress-neighbour-wheels"
    if not any(wheels.glob("*.whl")):
        wheels.mkdir(parents=True, exist_ok=True)
        got = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:", "-d", str(wheels)]
            + WHEELS,
            capture_output=True,
            text=True,
        )
        if got.returncode != 0:
            sys.exit(f"neighbours.py: could not download the install neighbour's wheels: {got.stderr.strip()[-300:]}")
    names = [w.name.split("-")[0].replace("_", "-") for w in wheels.glob("*.whl")]
    return Neighbour("install", [_python(INSTALL, str(wheels), *names)], cleanup=None)


STARTERS = {
    "none": start_none,
    "hog": start_hog,
    "bursty": start_bursty,
    "modal": start_modal,
    "install": start_install,
}


def start(name: str) -> Neighbour:
    if name not in STARTERS:
        sys.exit(f"neighbours.py: no neighbour {name!r}; one of {', '.join(STARTERS)}")
    return STARTERS[name]()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    n = start(sys.argv[1])
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        n.stop()
