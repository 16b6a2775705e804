"""One worker's life as the runner sees it: its messages, checked, and how it ended.

Measuring (`one_commit`) and profiling (`profile_commit`) read their workers
through this one loop. It follows which benchmark is running, switches from
the start-up limit to the per-benchmark one once the suite is discovered,
and turns a hang, a death or a malformed message into one `Failure`, blamed
on the benchmark that was running (`blamed`) or on the worker as a whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

from regress.core.kinds import FailureKind
from regress.core.records import Failure
from regress.measure import protocol
from regress.measure.worker_process import Worker, WorkerDied, WorkerHung


class Ending(Enum):
    DONE = "done"
    HUNG = "hung"
    DIED = "died"
    MALFORMED = "malformed"


@dataclass
class Conversation:
    worker: Worker
    timeout: float  # the per-benchmark limit, once the suite is discovered
    listed: tuple[protocol.Listed, ...] = ()
    discovered: bool = False
    current: int | None = None  # the index of the benchmark running
    ending: Ending | None = None
    failure: Failure | None = None  # why it ended, unless DONE

    @property
    def blamed(self) -> protocol.Listed | None:
        """The benchmark the ending is blamed on: the one running when it came."""
        return self.listed[self.current] if self.current is not None and self.ending is not Ending.DONE else None

    @property
    def restart(self) -> bool:
        """Whether a fresh worker should take the benchmarks left."""
        if self.ending is Ending.DONE or not self.discovered:
            return False
        return self.ending is not Ending.HUNG or self.current is not None

    def __enter__(self) -> Conversation:
        return self

    def __exit__(self, *exc) -> None:
        self.worker.kill()  # however the reader stopped (Ctrl-C included)

    def messages(self) -> Iterator:
        """The worker's messages in order, up to `done`; the worker is dead afterwards."""
        try:
            for line in self.worker.lines():
                msg = protocol.parse(line)
                self._follow(msg)
                yield msg
                if isinstance(msg, protocol.Done):
                    self.ending = Ending.DONE
                    return
        except WorkerHung:
            self.worker.kill()
            self._ended(Ending.HUNG, FailureKind.TIMEOUT, self._silence())
        except WorkerDied:
            self._ended(Ending.DIED, FailureKind.CRASH, self._where(self.worker.death()))
        except protocol.Malformed as exc:
            self.worker.kill()
            self._ended(Ending.MALFORMED, FailureKind.CRASH, self._where(f"worker sent {exc}"))
        finally:
            self.worker.kill()

    def _follow(self, msg) -> None:
        if isinstance(msg, protocol.Discovered):
            if self.discovered:
                raise protocol.Malformed("a second discovered message")
            self.listed, self.discovered = msg.benchmarks, True
            self.worker.timeout = self.timeout  # from here on, the per-benchmark limit
        elif isinstance(msg, protocol.ABOUT_ONE):
            if not 0 <= msg.index < len(self.listed):
                raise protocol.Malformed(f"a message about benchmark {msg.index} of {len(self.listed)} listed")
            if isinstance(msg, protocol.Start):
                self.current = msg.index
            elif msg.index != self.current:
                raise protocol.Malformed(f"an end of benchmark {msg.index} while {self.current} runs")
            else:
                self.current = None

    def _ended(self, ending: Ending, kind: FailureKind, message: str) -> None:
        self.ending = ending
        blamed = self.blamed
        self.failure = Failure(kind, message, blamed.origin if blamed is not None else "")

    def _silence(self) -> str:
        if self.current is not None:
            return f"still running after {self.timeout:g}s (timeout; raise it with --timeout)"
        phase = "importing the suites" if not self.discovered else "between benchmarks"
        return f"worker silent for {self.worker.timeout:g}s while {phase}; {self.worker.tail() or 'no output'}"

    def _where(self, why: str) -> str:
        if self.current is not None:
            return why
        return f"{why} while importing the suites" if not self.discovered else f"{why} between benchmarks"
