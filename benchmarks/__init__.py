"""Speed and detection-quality benchmarks: ``python -m benchmarks.<name> [--quick]``."""
