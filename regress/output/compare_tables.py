"""Terminal tables: torch's own Compare, rebuilt from stored records."""

from __future__ import annotations

from regress.core.records import CommitResult


def measurements(result: CommitResult) -> list:
    """torch Measurements for every successful benchmark, rounds merged.

    Each carries the result's environment as torch's `env`, so results of
    several environments in one Compare get torch's "(env)" row prefix.
    """
    from torch.utils.benchmark.utils.common import Measurement
    from torch.utils.benchmark.utils.common import TaskSpec as TorchTaskSpec

    out = []
    for r in result.results:
        if not r.ok:
            continue
        spec = TorchTaskSpec(
            stmt=r.spec.stmt,
            setup=r.spec.setup,
            global_setup=r.spec.global_setup,
            label=r.spec.label,
            sub_label=r.spec.sub_label,
            description=r.spec.description or "",  # torch's Compare fails on None columns
            env=result.env,
            num_threads=r.spec.num_threads,
        )
        rounds = [Measurement(s.number_per_run, list(s.raw_times), spec) for s in r.samples]
        out.extend(Measurement.merge(rounds))
    return out


def compare_table(results: CommitResult | list[CommitResult], *, color: bool) -> str:
    """One Compare over one result, or over several environments' results (A/B)."""
    from torch.utils.benchmark import Compare

    results = results if isinstance(results, list) else [results]
    ms = [m for result in results for m in measurements(result)]
    if not ms:
        return ""
    table = Compare(ms)
    table.trim_significant_figures()
    if color:
        table.colorize(rowwise=True)
    return str(table).rstrip()


def instruction_table(result: CommitResult) -> str:
    """Instruction counts per call, grouped by label like Compare (never mixed with times)."""
    rows = [r for r in result.results if r.counted]
    if not rows:
        return ""
    out = []
    for label in dict.fromkeys(r.id.label for r in rows):
        group = [r for r in rows if r.id.label == label]
        names = [
            f"{r.id.sub_label}" + (f" / {r.id.description}" if r.id.description else "") + f" [{r.id.num_threads}t]"
            for r in group
        ]
        width = max(len(n) for n in names)
        out.append(f"[{label}] instructions per call (callgrind)")
        for name, r in zip(names, group):
            out.append(f"  {name:<{width}}  {r.instructions:>14,}")
        out.append("")
    return "\n".join(out).rstrip()
