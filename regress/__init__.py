"""regress: continuous benchmarking for PyTorch code.

Importing regress stays light (no torch, no git): benchmark suites import it
for the decorator, and the worker imports it in every measured process.
"""

from regress.suite.decorator import benchmark
from regress.suite.track import track

__version__ = "0.1.0"
__all__ = ["__version__", "benchmark", "track"]
