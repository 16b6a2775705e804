"""The summary's entries are pickles of records: read back with an allow-list, never running code.

The summary may come from a restored folder or a CI cache, so loading an
entry builds only regress's record classes (as `codec` does for result files).
"""

from __future__ import annotations

import dataclasses
import io
import pickle

from regress.core import records
from regress.core.kinds import FailureKind
from regress.storage.light import LightResult

_RECORDS = [v for v in vars(records).values() if isinstance(v, type) and dataclasses.is_dataclass(v)]
_ALLOWED = {(cls.__module__, cls.__name__): cls for cls in (*_RECORDS, LightResult, FailureKind)}
# What a garbled entry raises on the way back: the caller rebuilds it from its file.
ERRORS = (pickle.UnpicklingError, EOFError, TypeError, ValueError, AttributeError)


class Unpickler(pickle.Unpickler):
    """Builds only regress's records (and plain Python values); any other class is refused."""

    def find_class(self, module: str, name: str):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}") from None


def load(blob: bytes, kind: type):
    value = Unpickler(io.BytesIO(blob)).load()
    if not isinstance(value, kind):
        raise pickle.UnpicklingError(f"not a {kind.__name__}")
    return value


def dump(value) -> bytes:
    return pickle.dumps(value, protocol=5)
