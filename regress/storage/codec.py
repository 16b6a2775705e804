"""A results file's bytes <-> a CommitResult, refusing anything that is not one.

Result files come from CI jobs and from anyone who can push to the results
branch, so loading is a trust boundary. The unpickler builds only the record
classes and plain containers (nothing else is ever imported or called), and
then every field of every record is checked against its declared type and a
size limit (`core/checks.py`, the same checks a worker's messages pass), so
a crafted file is refused in bounded time instead of hanging whatever reads it.

Format versions: every change is listed in `upgrade.py`, with how older files read.
"""

from __future__ import annotations

import dataclasses
import io
import pickle

from regress.core import checks, records
from regress.core.errors import RegressError
from regress.core.kinds import FailureKind
from regress.storage import container, upgrade

FORMAT = "regress-results"
FORMAT_VERSION = 7
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6, 7)

# The record classes: the dataclasses `core/records.py` defines.
_RECORDS = {
    name: cls
    for name, cls in vars(records).items()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == records.__name__
}
_ALLOWED: dict[tuple[str, str], type] = {("regress.core.records", name): cls for name, cls in _RECORDS.items()}
_ALLOWED.update({("regress.model", name): cls for name, cls in _RECORDS.items()})  # formats 1-3
_ALLOWED[("regress.core.kinds", "FailureKind")] = FailureKind


class Refused(pickle.UnpicklingError):
    pass


class Unpickler(pickle.Unpickler):
    """Builds only the classes of `allowed` (and plain Python values); any other raises Refused."""

    allowed = _ALLOWED

    def find_class(self, module: str, name: str):
        try:
            return self.allowed[(module, name)]
        except KeyError:
            raise Refused(f"refusing to load {module}.{name}") from None


_CHECK_RESULT = checks.checker(records.CommitResult)


def encode(result: records.CommitResult) -> bytes:
    envelope = {"format": FORMAT, "version": FORMAT_VERSION, "result": result}
    return container.pack(pickle.dumps(envelope, protocol=pickle.HIGHEST_PROTOCOL))


def decode(data: bytes, where: str) -> records.CommitResult:
    data = container.unpack(data, where)  # format 7 compresses; older files are the pickle itself
    try:
        envelope = Unpickler(io.BytesIO(data)).load()
    except Refused as exc:
        raise RegressError(
            f"{where} is not a regress result file ({exc}); nothing was run from it; delete or move it away"
        ) from None
    except Exception as exc:  # noqa: BLE001 - truncated or garbage bytes raise many kinds
        raise RegressError(
            f"{where} is corrupt ({type(exc).__name__}); delete it and measure that commit again"
        ) from None
    if type(envelope) is not dict or envelope.get("format") != FORMAT:
        raise RegressError(f"{where} is not a regress result file; delete or move it away")
    version = envelope.get("version")
    if type(version) is not int:
        raise RegressError(f"{where} has no format version; delete it and measure that commit again")
    if version > FORMAT_VERSION:
        raise RegressError(
            f"{where} was written by a newer regress (format {version}, this one reads {FORMAT_VERSION}); "
            "upgrade regress (pip install -U regress)"
        )
    if version not in READABLE_VERSIONS:
        raise RegressError(
            f"{where} uses result format {version}, which this regress no longer reads; measure that commit again"
        )
    result = envelope.get("result")
    try:
        _CHECK_RESULT(result, checks.Walk())
    except (checks.Invalid, RecursionError) as exc:
        why = exc.under("result") if isinstance(exc, checks.Invalid) else exc
        raise RegressError(
            f"{where} is not a valid regress result file ({why}); delete it and measure that commit again"
        ) from None
    assert isinstance(result, records.CommitResult)  # what _CHECK_RESULT passes
    return result if version >= 6 else upgrade.one_run(result)
