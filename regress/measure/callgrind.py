"""Instruction counts (recipe step 8) for a whole suite in ONE valgrind process.

torch's `collect_callgrind` starts a valgrind process per benchmark, and each
pays for importing torch under full instrumentation (about 90 s here). regress
starts the worker under callgrind with instrumentation *off*, imports and
discovers at a fraction of that cost, switches instrumentation on once, and
then brackets each measured loop with collection toggles and a dump.

The client requests come from a tiny C helper compiled against valgrind's
callgrind.h (START_INSTRUMENTATION has no binding in torch). Without a C
compiler it falls back to torch's `_valgrind_toggle*` bindings with
instrumentation on from the start: slower, same counts.

Parent side: `prepare`, `command`. Worker side: `Counter`. `parse_total` is pure.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from regress.core.errors import RegressError

_HELPER_C = r"""
#include <callgrind.h>
void regress_start_instrumentation(void) { CALLGRIND_START_INSTRUMENTATION; }
void regress_toggle_collect(void) { CALLGRIND_TOGGLE_COLLECT; }
void regress_dump_stats(void) { CALLGRIND_DUMP_STATS; }
void regress_zero_stats(void) { CALLGRIND_ZERO_STATS; }
"""


def parse_total(dump: bytes) -> int:
    """Total instructions (Ir) in a callgrind dump; `totals:` wins over `summary:`."""
    found: dict[bytes, int] = {}
    for m in re.finditer(rb"^(totals|summary):\s*(\d+)", dump, re.MULTILINE):
        found[m.group(1)] = int(m.group(2))
    if not found:
        raise ValueError("no totals or summary line in callgrind output")
    return found[b"totals"] if b"totals" in found else found[b"summary"]


def _header_dirs() -> list[Path]:
    dirs = [Path("/usr/include/valgrind"), Path("/usr/local/include/valgrind")]
    spec = importlib.util.find_spec("torch")  # locates torch without importing it
    if spec and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            dirs.append(Path(loc) / "utils" / "benchmark" / "utils" / "valgrind_wrapper")
    return [d for d in dirs if (d / "callgrind.h").is_file()]


@dataclass(frozen=True)
class Plan:
    """How the worker will be run under valgrind."""

    out_dir: Path
    helper: Path | None  # compiled client-request helper, or None for torch's bindings


def prepare(work_dir: Path) -> Plan:
    """Check valgrind is there and compile the helper (parent side)."""
    if shutil.which("valgrind") is None:
        raise RegressError(
            "--mode instructions needs valgrind, which is not on PATH; install it "
            "(Debian/Ubuntu: apt-get install valgrind; Fedora: dnf install valgrind; macOS: not supported)"
        )
    out_dir = work_dir / "callgrind"
    out_dir.mkdir(parents=True, exist_ok=True)
    return Plan(out_dir, _compile_helper(work_dir))


def _compile_helper(work_dir: Path) -> Path | None:
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    headers = _header_dirs()
    if cc is None or not headers:
        return None
    src = work_dir / "regress_callgrind.c"
    lib = work_dir / "regress_callgrind.so"
    src.write_text(_HELPER_C)
    proc = subprocess.run(
        [cc, "-O1", "-shared", "-fPIC", f"-I{headers[0]}", "-o", str(lib), str(src)],
        capture_output=True,
    )
    return lib if proc.returncode == 0 else None


def command(plan: Plan, python: str) -> list[str]:
    return [
        "valgrind",
        "--tool=callgrind",
        f"--instr-atstart={'no' if plan.helper else 'yes'}",
        "--collect-atstart=no",
        "--dump-instr=no",
        "--dump-line=no",
        "--trace-children=yes",  # interpreters behind shims exec the real one
        f"--callgrind-out-file={plan.out_dir}/cg.%p",
        "--log-file=" + str(plan.out_dir / "valgrind.%p.log"),
        python,
    ]


class Counter:
    """Worker side: counts the instructions of `timer` loops."""

    def __init__(self, out_dir: str, helper: str | None) -> None:
        self.out_dir = Path(out_dir)
        self.seen: set[str] = set()
        self._toggle: Callable[[], object]
        self._dump: Callable[[], object]
        if helper:
            lib = ctypes.CDLL(helper)
            self._toggle = lib.regress_toggle_collect
            self._dump = lib.regress_dump_stats
            lib.regress_start_instrumentation()
            self._dump_separately = True
        else:
            import torch

            if not torch._C._valgrind_supported_platform():
                raise RuntimeError("this torch build has no valgrind support")
            self._toggle = torch._C._valgrind_toggle
            self._dump = torch._C._valgrind_toggle_and_dump_stats  # toggles off and dumps
            self._dump_separately = False

    def _collect(self, fn) -> int:
        self._toggle()
        fn()
        if self._dump_separately:
            self._toggle()
            self._dump()
        else:
            self._dump()
        return self._read_new_dump()

    def _read_new_dump(self) -> int:
        new = [p for p in self.out_dir.glob("cg.*") if p.name not in self.seen]
        if not new:
            raise RuntimeError(f"callgrind wrote no dump in {self.out_dir}: is the worker running under valgrind?")
        newest = max(new, key=lambda p: p.stat().st_mtime_ns)
        self.seen.update(p.name for p in new)
        total = parse_total(newest.read_bytes())
        for p in new:
            p.unlink(missing_ok=True)
        return total

    def count(self, timer, *, number: int, repeats: int) -> tuple[int, ...]:
        """Instructions per call, one value per repeat (the first, while Python
        specialises its bytecode, is dropped by the caller's median)."""
        per_call = []
        for _ in range(repeats):
            empty = self._collect(lambda: timer._timeit(0))
            full = self._collect(lambda: timer._timeit(number))
            per_call.append(max(0, full - empty) // number)
        return tuple(per_call)


# Calls per measured loop and repeats per benchmark (the first repeat is dropped).
NUMBER = 20
REPEATS = 6  # five kept: an odd count, so the median is a measured value
