"""A commit's `build_command`, run once in its checkout before any round."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from pathlib import Path

from regress.core.config import Config
from regress.core.kinds import FailureKind
from regress.core.records import Failure

# A build_command compiles; a per-benchmark timeout is no limit for it.
BUILD_TIMEOUT_FLOOR = 3600.0


def build(cfg: Config, code_dir: Path) -> Failure | None:
    if not cfg.build_command:
        return None
    limit = max(cfg.timeout, BUILD_TIMEOUT_FLOOR)
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            cfg.build_command,
            shell=True,
            cwd=code_dir,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a timeout or Ctrl-C stops the compiler too, not just the shell
        )
        try:
            code = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            return Failure(FailureKind.BUILD, f"build_command still running after {limit:g}s", cfg.build_command)
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if code != 0:
            out.seek(0)
            tail = " | ".join(out.read().decode(errors="replace").strip().splitlines()[-3:])
            return Failure(FailureKind.BUILD, f"exited with status {code}: {tail}", cfg.build_command)
    return None
