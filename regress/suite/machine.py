"""Fingerprint of the host and the interpreter/torch build a worker runs with."""

from __future__ import annotations

import os
import platform
import socket
import sys

from regress.core.records import Fingerprint


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(("model name", "Hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 0


def fingerprint(machine: str) -> Fingerprint:
    """Call in the worker: it describes the torch that will be measured."""
    import torch

    cuda_version = torch.version.cuda or ""
    device = driver = ""
    if torch.cuda.is_available():
        idx = torch.cuda.current_device()
        device = torch.cuda.get_device_name(idx)
        try:
            driver = str(torch.cuda.driver_version()) if hasattr(torch.cuda, "driver_version") else ""
        except Exception:  # noqa: BLE001 - best effort, never fatal
            driver = ""
        if not driver:
            driver = _nvidia_driver()
    return Fingerprint(
        machine=machine,
        hostname=socket.gethostname(),
        platform=platform.platform(),
        cpu=_cpu_model(),
        cores=cores(),
        python=sys.version.split()[0],
        executable=sys.executable,
        torch_version=str(torch.__version__),
        torch_git=str(getattr(torch.version, "git_version", "")),
        torch_debug=bool(getattr(torch.version, "debug", False)),
        torch_config=_torch_config(torch),
        cuda_version=cuda_version,
        cuda_device=device,
        cuda_driver=driver,
    )


def _torch_config(torch) -> str:
    bits = []
    try:
        bits.append(f"threads={torch.get_num_threads()}")
        bits.append(f"mkldnn={torch.backends.mkldnn.is_available()}")
        bits.append(f"openmp={torch.backends.openmp.is_available()}")
    except Exception:  # noqa: BLE001
        pass
    return " ".join(bits)


def _nvidia_driver() -> str:
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as fh:
            first = fh.readline()
    except OSError:
        return ""
    for token in first.split():
        if token.count(".") >= 1 and token.replace(".", "").isdigit():
            return token
    return ""
