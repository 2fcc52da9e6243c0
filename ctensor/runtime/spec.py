"""`KernelSpec`: everything a call of a compiled kernel needs besides its machine code — what the
compiler decided (plan, output format, argument block layout, sums split term by term, passes
merged by the runtime) and what it was compiled for (formats and facts, scalar kinds, options).

It is small and picklable: the on-disk kernel cache (`driver.kernel_store`) stores it next to the
object code, so a new process loads a cached kernel without parsing, planning or lowering again.
Unpickling it imports the modules of the classes it holds; the plan's validity verdict
(`analysis.validity.Verdict`) would import the analysis stack (~3 ms with bytecode caches, 12 ms
without), so it is pickled as a nested blob (`LazyVerdict`), unpickled on first use.
"""
from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field


class LazyVerdict:
    """A pickled `analysis.validity.Verdict`, unpickled when an attribute is first read
    (`k.plan.validity.valid` works on a kernel loaded from the disk cache)."""
    __slots__ = ("blob", "_value")

    def __init__(self, blob: bytes):
        self.blob, self._value = blob, None

    def __reduce__(self):
        return LazyVerdict, (self.blob,)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if self._value is None:
            self._value = pickle.loads(self.blob)    # idempotent: two threads may both load it
        return getattr(self._value, name)

    def __repr__(self):
        return repr(self._value) if self._value is not None else "LazyVerdict(...)"


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

    def __getstate__(self):
        state = dict(self.__dict__)
        verdict = getattr(self.plan, "validity", None)
        if verdict is not None and not isinstance(verdict, LazyVerdict):
            state["plan"] = dataclasses.replace(self.plan, validity=LazyVerdict(
                pickle.dumps(verdict, protocol=pickle.HIGHEST_PROTOCOL)))
        return state
