"""The compiler driver: the one place that sequences the stages (DESIGN.md §1; Finch's
`lower_global`).  Every kernel, and every sibling kernel a call needs, is made here:

    einsum text ──parse──► Einsum ──make_plan──► Plan (dimensions, loop order, measures; validity,
    continuous paper §4.3, decided by z3) ──read_args──► the tensors and scalars it reads
    ──output_format──► the output level ──lower_program──► IR function (notation, looplets,
    simplification, z3 guard proofs, §6.3) ──compile_function──► LLVM, O3, object code, MCJIT
    ──► Kernel (runtime: the artifact and its call)

with the on-disk kernel cache (`kernel_store`) in front: a kernel compiled before, in this
process or another, is loaded without any of the stages.  It is looked up first by the request as
made, before the text rewrites (`grid_offsets`, `dense_split`, which parse the text), and its
machine code comes from the entry's shared library (`codegen.library`): a warm start imports
neither the stages nor llvmlite (issue 27 item 5: ready in a few ms).
"""
from __future__ import annotations

import time

from ..analysis.guards import enabled_by_default
from ..errors import InvalidProgramError
from ..formats.level import Level
from ..formats.tensor import Tensor
from ..lang.semiring import Semiring
from ..runtime.args import read_args, split_args, user_measures
from ..runtime.kernel import Kernel
from ..runtime.merge_output import revisited
from ..runtime.output_format import check_output_format, default_output, output_key
from ..runtime.recursion import deep
from ..runtime.spec import KernelSpec
from . import kernel_store

# IR statements above which a kernel with a revisited output is compiled merged at once (`_compile`):
# ~1 s of LLVM work (a fuzzed kernel of 21k statements took 6.5 s, then 6.5 s again for its sibling)
MERGE_FIRST_AT = 4000


def compile_kernel(text, kwargs, *, semiring=None, order=None, out=None, assume_valid=False,
                   prove_guards=None, split_sums=True, merge_output=False, use_store=True, split_dense=True) -> Kernel:
    """Compile `text` for the formats of the tensors in `kwargs` (with its scalars and user
    measures), or load it from the on-disk kernel cache (`use_store=False`: always run every stage,
    e.g. to time them; the object cache still applies).  Options as `ct.compile`; `split_sums` and
    `merge_output` choose the variants `Kernel` runs as siblings; `split_dense`: a trailing dense
    contraction runs in BLAS (`dense_split`).  Raises as `ct.compile`."""
    if out is not None and not isinstance(out, (Tensor, Level)):
        raise TypeError(f"out= must be a ct.Tensor or a level format such as ct.Dense(ct.Element(0.0)), "
                        f"got {type(out).__name__}")
    # the request as made, before the rewrites below (which parse the text): a kernel loaded by it
    # skips them too (`kernel_store.alias`)
    request = _store_key(text, kwargs, _options(semiring, order, out, assume_valid, prove_guards, split_sums,
                                                merge_output), (("split_dense", bool(split_dense)),)) \
        if use_store else None
    kernel = _load(request) if request is not None else None
    if kernel is None and request is not None:
        kernel = _load_split(request, text, order, semiring=semiring, out=out, assume_valid=assume_valid,
                             prove_guards=prove_guards, split_sums=split_sums, merge_output=merge_output)
    if kernel is not None:
        return kernel
    from .grid_offsets import rewrite
    shifted = rewrite(text, kwargs)          # In[x + r] on a grid-binned mode -> In[a] (r = a - x)
    if shifted is not None:
        text, renamed = shifted
        order = None if order is None else [renamed.get(i, i) for i in order]
    if split_dense:
        split = dense_split(text, kwargs, semiring=semiring, order=order, out=out, assume_valid=assume_valid,
                            prove_guards=prove_guards, split_sums=split_sums, merge_output=merge_output,
                            use_store=use_store)
        if split is not None:
            if request is not None and split.inner_key is not None:
                kernel_store.alias_split(request, split.split, split.inner_key)
            return split
    options = _options(semiring, order, out, assume_valid, prove_guards, split_sums, merge_output)
    key = _store_key(text, kwargs, options) if use_store else None
    kernel = _load(key) if key is not None else None
    if kernel is None:
        # the store gets the optimised kernel: now, or when its background tier is done (`tiering`)
        kernel = _compile(text, kwargs, options,
                          on_final=None if key is None else lambda spec, fn: kernel_store.store(key, spec, fn))
    if request is not None and key is not None and request != key:
        kernel_store.alias(request, key)
    return kernel


def _options(semiring, order, out, assume_valid, prove_guards, split_sums, merge_output) -> dict:
    """The driver's normalised options (part of a kernel's key and of its spec)."""
    return dict(semiring=semiring, order=tuple(order) if order is not None else None,
                out=(out.level if isinstance(out, Tensor) else out).empty() if out is not None else None,
                assume_valid=bool(assume_valid),
                prove_guards=enabled_by_default() if prove_guards is None else bool(prove_guards),
                split_sums=bool(split_sums), merge_output=bool(merge_output))


def _store_key(text, kwargs, options, extra=()) -> str | None:
    """The kernel store's key of compiling `text` for `kwargs` with `options` (None: store off)."""
    tensors, scalars = split_args(kwargs)
    return kernel_store.key_of(
        text, tuple(sorted((k, t.level.format_key()) for k, t in tensors.items())),
        tuple(sorted((k, s[1]) for k, s in scalars.items())),
        tuple((k, _option_key(v)) for k, v in options.items()) + extra
        + tuple(sorted((k, m.weight) for k, m in user_measures(kwargs).items())))


def dense_split(text, kwargs, *, order=None, **options):
    """The `dense_split.SplitKernel` of `text`, or None where the split does not apply (its rules:
    `ctensor.driver.dense_split`)."""
    from .dense_split import SplitKernel, all_dense_output, plan_split
    written_order = order
    split = plan_split(text, kwargs, options["semiring"], options["out"])
    if split is None:
        return None
    if order is not None:
        kept = set(split.dense_idxs) - set(split.contracted)
        order = [i for i in order if i not in kept]
    inner_kwargs = {k: v for k, v in kwargs.items() if k != split.dense}
    try:
        inner = compile_kernel(split.text, inner_kwargs, order=order, split_dense=False, **options)
    except (InvalidProgramError, TypeError, ValueError):
        return None          # the program as written is compiled, and reports its own error
    if not all_dense_output(inner):
        return None
    # the program as written, compiled on first need for the tensors of that call
    whole = lambda kw: compile_kernel(text, kw, order=written_order, split_dense=False, **options)  # noqa: E731
    kernel = SplitKernel(inner, split, unsplit=whole)
    # the inner kernel's request key: a warm start finds it from the split's record (`_load_split`)
    o = {k: v for k, v in options.items() if k != "use_store"}
    kernel.inner_key = _store_key(split.text, inner_kwargs, _options(order=order, **o), (("split_dense", False),)) \
        if options.get("use_store", True) else None
    return kernel


def _load_split(request, text, order, **options):
    """The `dense_split.SplitKernel` stored for the request key `request` (`kernel_store.alias_split`:
    the split and its inner kernel's key), or None: a warm start neither parses nor plans the split."""
    record = kernel_store.load_split(request)
    if record is None:
        return None
    split, inner_key = record
    inner = _load(inner_key)
    if inner is None:
        return None
    from .dense_split import SplitKernel
    # the program as written (its own grid rewrite, no split), compiled on first need
    whole = lambda kw: compile_kernel(text, kw, order=order, split_dense=False, **options)  # noqa: E731
    return SplitKernel(inner, split, unsplit=whole)


def _option_key(v):
    if isinstance(v, Semiring):        # its definition (parsed expressions, typed constants), not its name
        return v.key()
    return output_key(v) if isinstance(v, Level) else v


def _load(key) -> Kernel | None:
    """The kernel stored for `key`, with its object code, or None."""
    t0 = time.perf_counter()
    entry = kernel_store.load(key)
    if entry is None:
        return None
    spec, fn_loader = entry
    from ..codegen import load_compiled
    compiled = load_compiled(spec.symbol)
    if compiled is None:
        return None
    spec.compile_seconds = {"load": time.perf_counter() - t0, "total": time.perf_counter() - t0}
    return Kernel(spec, compiled, fn_loader=fn_loader, source="disk")


@deep
def _compile(text, kwargs, options, on_final=None) -> Kernel:
    """Run every stage (module docstring), tiered (`tiering`): a large kernel is returned at its
    first tier and promoted to its optimised code in the background.  `on_final(spec, fn)` is called
    with the optimised kernel (now, or when the background tier is done)."""
    # the stages are imported here: a process whose kernels all come from the disk cache never
    # loads the lowering stack
    from ..codegen import compile_function
    from ..lang.parser import parse
    from ..lang.program import make_plan
    from . import tiering
    from .build import lower_program
    t0 = time.perf_counter()
    tensors, scalars = split_args(kwargs)
    measures = user_measures(kwargs)
    es = parse(text)
    plan = make_plan(es, tensors, scalars, options["semiring"], options["order"],
                     assume_valid=options["assume_valid"], measures=measures)
    tensors, scalars = read_args(es, plan, tensors, scalars)
    out_fmt = output_format(es, plan, options["out"])

    def lower(merge_output, cut_at=None):
        return lower_program(es, plan, tensors, scalars, out_fmt, prove_guards=options["prove_guards"],
                             split_sums=options["split_sums"], merge_output=merge_output, cut_at=cut_at)

    def build(lowered, t_start, quick=False):
        t1 = time.perf_counter()
        compiled = compile_function(lowered.fn, quick=quick)
        spec = KernelSpec(
            text=text, es=es, plan=plan,
            formats={k: t.level.format_key() for k, t in tensors.items()},
            format_strs={k: t.level.format_str() for k, t in tensors.items()},
            scalar_kinds={k: s[1] for k, s in scalars.items()},
            out_fmt=out_fmt, getters=lowered.getters,
            params=[(p.name, str(p.type)) for p in lowered.fn.params],
            options=options, measures=measures, split_sums=lowered.split_sums,
            merge_output=lowered.merge_output, prove_guards=options["prove_guards"],
            guard_stats=lowered.guard_stats, symbol=compiled.name,
            compile_seconds={"lower": t1 - t_start, **compiled.compile_seconds,
                             "total": time.perf_counter() - t_start})
        return spec, compiled, lowered.fn

    tiered = tiering.enabled()
    # tiered: the guard proofs stop once the kernel is large enough for a first tier (`tiering`)
    cut_at = tiering.work_threshold() if tiered else None
    lowered = lower(options["merge_output"], cut_at)
    if not lowered.merge_output and revisited(out_fmt, plan) and statements(lowered.fn) > MERGE_FIRST_AT:
        # a large kernel whose output a loop revisits is compiled merged from the start: if the
        # checked kernel stopped with STATUS_OUTPUT_ORDER at its first call, the merged sibling
        # would cost a second compile of seconds, more than merging the output costs at run time
        lowered = lower(True, cut_at)
    cut = bool(lowered.guard_stats and lowered.guard_stats["cut"])
    if tiered and (cut or tiering.first_tier(lowered.fn)):
        kernel = Kernel(*build(lowered, t0, quick=True))
        first = lowered

        def optimised():
            # with the proofs the first tier went without, in the same variant (merged or not)
            return build(lower(first.merge_output) if cut else first, time.perf_counter())
        tiering.upgrade(kernel, optimised, on_final)
        return kernel
    spec, compiled, fn = build(lowered, t0)
    if on_final is not None:
        on_final(spec, fn)
    return Kernel(spec, compiled, fn=fn)


def statements(fn) -> int:
    """The number of IR statements of a function, nested ones included (its size before LLVM)."""
    from .tiering import size
    return size(fn)[0]


def output_format(es, plan, out) -> Level | None:
    """The output level: `out` (an empty level) checked against the program, or the default
    (`runtime.output_format.default_output`); None for a 0-d output.  Raises InvalidProgramError."""
    out_fmt = out
    if es.out_idxs and out_fmt is None:
        out_fmt = default_output(plan)
    if out_fmt is not None and out_fmt.ndim != len(es.out_idxs):
        raise InvalidProgramError(f"out= format has {out_fmt.ndim} modes but {es.out} has {len(es.out_idxs)}")
    if out is not None:
        check_output_format(out_fmt, plan)
    return out_fmt
