"""Benchmarks time steady-state code: every kernel is compiled in full before its first call
(`CTENSOR_TIERED=0`, `ctensor.driver.tiering`), so no timed round runs a first tier while the
optimised code compiles in the background.  Compile latency, tiers included, is
`compile_report.py`'s table."""
import os

os.environ.setdefault("CTENSOR_TIERED", "0")
