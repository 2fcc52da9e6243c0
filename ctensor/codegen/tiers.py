"""Size tiers of the JIT (`engine` module docstring): O3 for a module whose lines × loops stay under
`LARGE_MODULE`, else a light pass list and an O1 code generator, and beyond `HUGE_MODULE` an O0
code generator; `CTENSOR_LARGE_MODULE` / `CTENSOR_HUGE_MODULE` move the thresholds (read at each
compile)."""
from __future__ import annotations

import os

LARGE_MODULE = 10_000_000    # lines × loops of the unoptimised LLVM IR
HUGE_MODULE = 20_000_000     # O1 code generation took 13 s at 5.5e7 (engine docstring)
# no NewGVN: llvmlite's LLVM is built with assertions, and NewGVN's `verifyIterationSettled` aborted
# the process on a fuzzed kernel (3-D point tensors under counting); llvmlite offers no other GVN
# the first tier of a tiered compile (`driver.tiering`): the light passes and an O0 code generator,
# whatever the size (the optimised tier follows in the background)
QUICK_TIER = "quick-cg0"
LIGHT_PASSES = ("sroa", "instruction_combine", "simplify_cfg", "sccp", "instruction_combine", "simplify_cfg")
# the first tier's: registers for the `mut` variables (SROA) and a clean CFG, ~5x cheaper than the
# light list on the KPConv kernel (0.011 vs 0.06 s)
QUICK_PASSES = ("sroa", "simplify_cfg")


def _threshold(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def tier_of(text: str, opt: int) -> str:
    """The compile path of the LLVM module `text` at `opt`: "O0".."O3", "light-cg1" or "light-cg0"."""
    # loops: the headers `llvm_emit` names (hand-built modules, `runtime.pyentry`'s, are small)
    work = text.count("\n") * max(text.count("\nwhile.cond") + text.count("\nfor.cond"), 1)
    if opt == 0 or work <= _threshold("CTENSOR_LARGE_MODULE", LARGE_MODULE):
        return f"O{opt}"
    return "light-cg0" if work > _threshold("CTENSOR_HUGE_MODULE", HUGE_MODULE) else "light-cg1"
