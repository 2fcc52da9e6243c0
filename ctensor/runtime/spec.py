"""`KernelSpec`: everything a call of a compiled kernel needs besides its machine code — what the
compiler decided (plan, output format, argument block layout, sums split term by term, passes
merged by the runtime) and what it was compiled for (formats and facts, scalar kinds, options).

It is small and picklable: the on-disk kernel cache (`driver.kernel_store`) stores it next to the
object code, so a new process loads a cached kernel without parsing, planning or lowering again.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class KernelSpec:
    text: str                   # the einsum as written
    es: object                  # parsed einsum (`lang.parser`)
    plan: object                # `lang.program.Plan`: kinds, measures, order, op, fill, source
    formats: dict               # input name -> format key (with data facts) compiled for
    format_strs: dict           # input name -> format string, for messages
    scalar_kinds: dict          # scalar name -> 'bool' | 'int' | 'float'
    out_fmt: object             # output Level (empty), or None for a 0-d output
    getters: list               # one per argument-block slot (`driver.build`)
    params: list                # (name, IR type string) per slot
    options: dict               # semiring, order, out, assume_valid, prove_guards, merge_output, split_sums
    measures: dict              # user measures (ct.Measure) by name
    split_sums: bool
    merge_output: bool
    prove_guards: bool
    guard_stats: dict | None
    symbol: str                 # the compiled function's symbol (`codegen.engine`)
    compile_seconds: dict = field(default_factory=dict)
