"""Run one program through ctensor's public API and through the oracle, and classify the outcome.

Outcomes (`run_one` returns a dict with ``outcome`` and details):
  ``match``           both computed, equal everywhere compared
  ``mismatch``        both computed, a value differs (``where``: the scalar, an int cell, or a Limit
                      probe beside a breakpoint of a real mode, as `test_fuzz_multidim.compare`)
  ``refused-valid``   ctensor raised InvalidProgramError / KernelError, the oracle evaluated it
                      (``category``: `refusal_category` of the message)
  ``oracle-refused``  the oracle raised (invalid program, or beyond the oracle); ``ct``: what
                      ctensor did (``computed`` or its refusal category)
  ``crash``           ctensor raised anything else (``error``) — or the worker died (`runner`)
  ``timeout``         a phase took longer than the per-program limit
  ``oracle-defect``   the oracle's evaluation orders disagree (`OrderDependent`; with
                      CTENSOR_ORACLE_ALL_ORDERS=1, `--all-orders`)
Compile time: ``compile_s`` = `ct.compile` plus the first call of the new kernel (the fresh
CTENSOR_CACHE_DIR of the runner keeps the disk cache from hiding it).
"""
from __future__ import annotations

import itertools
import math
import re
import signal
import time
import traceback

import ctensor as ct
from ctensor import Limit

from ..helpers import breakpoints_1d, close, probes, to_pieces
from ..oracle import evaluate
from .programs import generate

MAX_PROBES = 3000          # probe points compared per output (a deterministic subsample beyond)


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


# messages of ctensor's refusals -> a short category (documented limitations are marked in `KNOWN`)
CATEGORIES = [
    ("STATUS_COUNT_AT_RUN_BOUND", "counting over an outer run-list level (run time)"),
    ("runs of an outer SparseRunList", "counting over an outer run-list level (run time)"),
    ("must bin the same indices", "grid tensors binning different indices"),
    ("outside the ∨ over", "nested ∨: counting on a real index outside it (not lowered)"),
    ("is a disjunction (∨) inside it", "nested ∨ under a non-idempotent ⊕: the expression is not boolean"),
    ("reduce with ∨ inside the other indices", "nested ∨ under a non-idempotent ⊕: no loop order"),
    ("the boolean measure", "nested ∨ under a non-idempotent ⊕: order= puts it outside"),
    ("declares no repeat=", "non-idempotent user ⊕ without repeat= weighing a length"),
    ("integer literal exponents", "** with a non-literal exponent"),
    ("the loops over the grid", "grid: binned loops not consecutive"),
    ("a diagonal access on real index", "diagonal under counting, not a factor with fill 0"),
    ("is not a factor of the product with fill 0", "grid tensor under counting whose fill does not annihilate"),
    ("diagonal", "diagonal access"),
    ("repeats an index", "diagonal access"),
    ("storage order", "transposed access / output (storage order)"),
    ("coordinate order", "output written out of coordinate order"),
    ("position order", "output written out of position order"),
    ("transposed", "transposed access / output (storage order)"),
    ("invalid program", "invalid program (validity check)"),
    ("is invalid on this data", "index value needed on an interval (run time)"),
    ("on an interval", "index value needed on an interval"),
    ("not constant", "expression not piecewise constant"),
    ("not piecewise constant", "expression not piecewise constant"),
    ("is a Fig. 5 partition is undecided", "counting weight undecided in every order"),
    ("is an output index: grids index reductions only", "grid-binned output index"),
    ("is binned by a UniformGrid", "grid mode read through a negative/non-literal scale"),
    ("needs an idempotent", "boolean measure needs an idempotent semiring"),
    ("negative coefficient", "negative scale on a cell level"),
    ("reversed", "negative scale on a cell level"),
    ("not lowered", "not lowered"),
    ("not supported", "not supported"),
    ("not implemented", "not implemented"),
]


def refusal_category(err) -> str:
    """A short category of a refusal (an exception or its message)."""
    msg = str(err)
    for needle, cat in CATEGORIES:
        if needle.lower() in msg.lower():
            return cat
    msg = re.sub(r"'[^']*'", "'.'", msg.splitlines()[0] if msg else type(err).__name__)
    return re.sub(r"-?\d+(\.\d+)?", "N", msg)[:90]


def _breaks(tensors, axis_ref):
    return sorted(set(breakpoints_1d(*tensors)) | {float(v) for v in axis_ref if math.isfinite(v)})


def nontrivial(got, ref) -> bool:
    """Does the result hold anything but the reduction's identity (a program whose answer is its
    fill everywhere tests little: the summary counts these)."""
    if not isinstance(got, ct.Tensor):
        return not close(got, ref.fill)
    return any(not close(v, ref.fill) for _, v in ref.cells.items())


def compare(prog, got, ref):
    """None if `got` (ctensor) equals `ref` (oracle Result) everywhere compared, else where not."""
    if not isinstance(got, ct.Tensor):
        return None if close(got, ref.value) else {"at": "scalar", "ct": repr(got), "oracle": repr(ref.value)}
    axes = []
    for k, m in enumerate(got.modes()):
        if m.coord == "int":
            axes.append(list(range(m.shape)))
        else:
            axes.append(probes(_breaks([got], ref.breakpoints(k))))
    points = list(itertools.product(*axes))
    if len(points) > MAX_PROBES:
        step = len(points) / MAX_PROBES
        points = [points[int(n * step)] for n in range(MAX_PROBES)]
    for ix in points:
        want = ref.at(*[(p.value, p.eps) if isinstance(p, Limit) else p for p in ix])
        have = got[ix]
        if not close(have, want):
            return {"at": repr(ix), "ct": repr(have), "oracle": repr(want)}
    return None


def _semiring_args(prog):
    sr = prog.semiring
    if sr is None or isinstance(sr, str):
        return sr, sr
    return sr.compiled, sr.oracle


def run_program(prog, timeout=60.0) -> dict:
    """Outcome of one generated program (see the module docstring)."""
    rec = {"seed": prog.seed, "k": prog.k, "program": prog.describe()}
    ct_sr, or_sr = _semiring_args(prog)
    args = {**prog.tensors, **prog.scalars, **{n: ct.Measure(w) for n, (w, _) in prog.measures.items()}}
    kw = {"semiring": ct_sr} if ct_sr is not None else {}
    if prog.order:
        kw["order"] = prog.order
    old = signal.signal(signal.SIGALRM, _alarm)
    phase = "compile"
    try:
        signal.setitimer(signal.ITIMER_REAL, timeout)
        got, ct_err = None, None
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            kern = ct.compile(prog.text, **kw, **args)
            phase = "run"
            got = kern(**args)
            rec["compile_s"] = time.perf_counter() - t0
            rec["compile_cpu_s"] = time.process_time() - c0      # the machine is shared: CPU time too
        except (ct.InvalidProgramError, ct.KernelError) as e:
            ct_err = e
        except Timeout:
            raise
        except Exception as e:                                  # noqa: BLE001 - a crash, reported
            rec.update(outcome="crash", phase=phase, error=f"{type(e).__name__}: {e}",
                       trace=traceback.format_exc(limit=-6))
            return rec
        phase = "oracle"
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            ref = evaluate(prog.text, {n: to_pieces(t) for n, t in prog.tensors.items()}, prog.scalars or None,
                           or_sr, {n: f for n, (_, f) in prog.measures.items()})
        except Timeout:
            raise
        except Exception as e:                                  # noqa: BLE001 - the oracle refuses
            if type(e).__name__ == "OrderDependent":            # two evaluation orders disagree
                rec.update(outcome="oracle-defect", error=str(e)[:500],
                           ct="computed" if ct_err is None else refusal_category(ct_err))
                return rec
            rec.update(outcome="oracle-refused", category=f"{type(e).__name__}: {refusal_category(e)}",
                       ct="computed" if ct_err is None else refusal_category(ct_err))
            return rec
        if ct_err is not None:
            rec.update(outcome="refused-valid", category=f"{type(ct_err).__name__}: {refusal_category(ct_err)}",
                       error=str(ct_err)[:500])
            return rec
        phase = "compare"
        where = compare(prog, got, ref)
        rec.update(outcome="match" if where is None else "mismatch", nontrivial=nontrivial(got, ref))
        if where:
            rec["where"] = where
        return rec
    except Timeout:
        if phase == "oracle":           # the reference interpreter is slow on purpose: not a ctensor failure
            rec.update(outcome="oracle-refused", category=f"Timeout: the oracle took over {timeout:.0f} s",
                       ct="computed" if ct_err is None else refusal_category(ct_err))
        else:
            rec.update(outcome="timeout", phase=phase)
        return rec
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_one(seed: int, k: int, timeout=60.0) -> dict:
    t0 = time.perf_counter()
    rec = _run_one(seed, k, timeout)
    rec["total_s"] = round(time.perf_counter() - t0, 3)
    return rec


def _run_one(seed, k, timeout):
    try:
        prog = generate(seed, k)
    except Exception as e:                                      # noqa: BLE001 - a generator defect
        return {"seed": seed, "k": k, "outcome": "crash", "phase": "generate",
                "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc(limit=-6)}
    return run_program(prog, timeout)
