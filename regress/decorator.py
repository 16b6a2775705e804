"""`@regress.benchmark(...)`: sugar that produces the same Timers a `bench_*` function would.

    @regress.benchmark(params={"n": [64, 1024]}, threads=[1, 2], description="mul/sum")
    def batched_dot(n):
        x = torch.randn(n, n)
        return lambda: x.mul(x).sum(-1)

The decorated function gets one value of every parameter (the cartesian
product of `params`) and returns either a zero-argument callable (timed as a
call) or, when `stmt=` is given, a dict of globals for that statement.
"""

from __future__ import annotations

import itertools
import string
from typing import Any, Callable, Iterator, Mapping, Sequence


def _format(template: str | None, values: Mapping[str, Any], default: str | None) -> str | None:
    if template is None:
        return default
    try:
        return template.format(**values)
    except (KeyError, IndexError) as exc:
        raise ValueError(f"{template!r} names {exc} which is not a parameter") from None


def _fields(template: str | None) -> set[str]:
    if not template:
        return set()
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


class BenchmarkDefinition:
    # Discovery recognises definitions by this marker, not by class, so a
    # suite importing another copy of regress still works.
    __regress_benchmark__ = True

    def __init__(self, fn: Callable, *, params, threads, label, sub_label, description, stmt, setup):
        self.fn = fn
        self.__wrapped__ = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.params: dict[str, Sequence[Any]] = {k: list(v) for k, v in (params or {}).items()}
        self.threads = [int(t) for t in threads]
        self.label = label
        self.sub_label = sub_label
        self.description = description
        self.stmt = stmt
        self.setup = setup
        for name, values in self.params.items():
            if not values:
                raise ValueError(f"parameter {name!r} of {fn.__name__} has no values")
        if not self.threads or any(t < 1 for t in self.threads):
            raise ValueError(f"threads of {fn.__name__} must be positive integers")

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def grid(self) -> Iterator[dict[str, Any]]:
        names = list(self.params)
        for combo in itertools.product(*(self.params[n] for n in names)):
            yield dict(zip(names, combo))

    def timers(self) -> Iterator[Any]:
        from torch.utils.benchmark import Timer

        for values in self.grid():
            made = self.fn(**values)
            # Parameters the description already shows are left out of the row name.
            shown = _fields(self.description)
            default_sub = ", ".join(f"{k}={v}" for k, v in values.items() if k not in shown) or None
            sub_label = _format(self.sub_label, values, default_sub)
            description = _format(self.description, values, None)
            if self.stmt is not None:
                if not isinstance(made, Mapping):
                    raise TypeError(f"{self.__name__} must return a dict of globals for stmt={self.stmt!r}")
                stmt, glob = self.stmt, dict(made)
            else:
                if not callable(made):
                    raise TypeError(
                        f"{self.__name__} must return a zero-argument callable to time "
                        "(or pass stmt= and return its globals)"
                    )
                stmt, glob = f"{self.__name__}()", {self.__name__: made}
            for threads in self.threads:
                yield Timer(
                    stmt=stmt,
                    setup=self.setup,
                    globals=glob,
                    num_threads=threads,
                    label=self.label,
                    sub_label=sub_label,
                    description=description,
                )


def benchmark(
    fn: Callable | None = None,
    *,
    params: Mapping[str, Sequence[Any]] | None = None,
    threads: Sequence[int] = (1,),
    label: str | None = None,
    sub_label: str | None = None,
    description: str | None = None,
    stmt: str | None = None,
    setup: str = "pass",
):
    """Mark a function as a benchmark; see the module docstring."""

    def wrap(f: Callable) -> BenchmarkDefinition:
        return BenchmarkDefinition(
            f,
            params=params,
            threads=threads,
            label=label,
            sub_label=sub_label,
            description=description,
            stmt=stmt,
            setup=setup,
        )

    return wrap(fn) if fn is not None else wrap
