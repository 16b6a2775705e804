"""The command line: parses, calls one function below, prints; the only place that exits."""
