"""The summary of a fuzz run: counts per outcome, refusal categories, compile times, failures."""
from __future__ import annotations

from collections import Counter

from .check import refusal_category

FAILURES = ("mismatch", "crash", "timeout", "oracle-defect")
OUTCOMES = ("match", "mismatch", "refused-valid", "oracle-refused", "crash", "timeout", "oracle-defect")
# refusals that are documented limitations (README "What is in the box", issue 31) or known open work
KNOWN = {
    "counting over an outer run-list level (run time)": "issue 31 item 2 (another engineer)",
    "diagonal access": "documented: diagonals of grid-binned tensors or beside index sums are not lowered",
    "transposed access / output (storage order)": "README: a transposed access is refused",
    "output written out of coordinate order": "documented: continuous output revisited",
    "output written out of position order": "documented: sparse output level out of order",
    "negative scale on a cell level": "documented: UnitCells, no reversed iteration",
    "index value needed on an interval": "documented (test_fuzz_affine xfail)",
    "index value needed on an interval (run time)": "documented (test_fuzz_affine xfail)",
    "invalid program (validity check)": "by design: validity is static (paper §4.3, every data of the "
                                        "format); the oracle checks constancy on this data only",
    "grid mode read through a negative/non-literal scale": "documented: a binned mode is read as i, i + c, c*i + b (c > 0)",
    "grid-binned output index": "documented: grids index reductions only",
    "grid tensors binning different indices": "documented: one binning per einsum",
    "diagonal under counting, not a factor with fill 0": "documented (lang/diagonal.py)",
    "grid tensor under counting whose fill does not annihilate": "documented (lower/tile.py, d8e7ecf)",
    "nested ∨ under a non-idempotent ⊕: the expression is not boolean": "documented (lang/nesting.py)",
    "nested ∨ under a non-idempotent ⊕: no loop order": "documented (lang/nesting.py)",
    "nested ∨: counting on a real index outside it (not lowered)": "documented (lang/nesting.py)",
    "nested ∨ under a non-idempotent ⊕: order= puts it outside": "documented (lang/nesting.py)",
    "non-idempotent user ⊕ without repeat= weighing a length": "documented (lang/semiring.py)",
    "** with a non-literal exponent": "fixed at 526b9e8 (llvm.pow)",
    "grid: binned loops not consecutive": "documented (lower/tile.py)",
}


def percentile(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def summarize(records: list, seed: int) -> dict:
    counts = Counter(r["outcome"] for r in records)
    # categories from the message again: a run's records keep the categories of the day they ran
    refusals = Counter(r["category"].split(": ", 1)[0] + ": " + refusal_category(r["error"]) if r.get("error")
                       else r["category"] for r in records if r["outcome"] == "refused-valid")
    oracle = Counter(f"{r['category']}  [ctensor: {r['ct']}]" for r in records if r["outcome"] == "oracle-refused")
    times = [r["compile_s"] for r in records if "compile_s" in r]
    cpu = [r["compile_cpu_s"] for r in records if "compile_cpu_s" in r]
    fails = [r for r in records if r["outcome"] in FAILURES]
    return {
        "seed": seed, "programs": len(records),
        "outcomes": {o: counts.get(o, 0) for o in OUTCOMES},
        "match_nontrivial": sum(1 for r in records if r["outcome"] == "match" and r.get("nontrivial")),
        "refusal_categories": dict(refusals.most_common()),
        "oracle_refusals": dict(oracle.most_common()),
        "compile_s": {"n": len(times), "max": max(times, default=float("nan")), "p50": percentile(times, 0.5),
                      "p99": percentile(times, 0.99), "over_10s": sum(t > 10 for t in times),
                      "cpu_max": max(cpu, default=float("nan")), "cpu_over_10s": sum(t > 10 for t in cpu),
                      "slowest": sorted(((round(r["compile_s"], 2), r["k"]) for r in records if "compile_s" in r),
                                        reverse=True)[:5]},
        "failures": [{k: r.get(k) for k in ("k", "outcome", "phase", "program", "error", "where")}
                     | {"repro": f"python -m tests.fuzz --seed {seed} --only {r['k']}"} for r in fails],
    }


def render(s: dict) -> str:
    out = [f"fuzz run: seed {s['seed']}, {s['programs']} programs", "", "outcome            count"]
    out += [f"  {o:<16} {n:>6}" for o, n in s["outcomes"].items()]
    out.append(f"  (matches whose result is not the reduction's identity everywhere: {s['match_nontrivial']})")
    c = s["compile_s"]
    out += ["", f"compile time (compile + first call, cold cache), {c['n']} kernels: "
                f"max {c['max']:.2f} s, p50 {c['p50']:.3f} s, p99 {c['p99']:.2f} s, over 10 s: {c['over_10s']}",
            f"  CPU time: max {c['cpu_max']:.2f} s, over 10 s: {c['cpu_over_10s']}; slowest (s, program): {c['slowest']}"]
    out += ["", "refused-valid (ctensor refused, the oracle evaluated), by category:"]
    for cat, n in s["refusal_categories"].items():
        short = cat.split(": ", 1)[-1]
        note = f"   <- known: {KNOWN[short]}" if short in KNOWN else ""
        out.append(f"  {n:>5}  {cat}{note}")
    out += ["", "oracle-refused (invalid program or beyond the oracle), by category:"]
    out += [f"  {n:>5}  {cat}" for cat, n in s["oracle_refusals"].items()]
    out += ["", f"failures (mismatch / crash / timeout / oracle-defect): {len(s['failures'])}"]
    for f in s["failures"]:
        out += [f"  [{f['outcome']}] program {f['k']} ({f.get('phase') or ''}): {f['repro']}",
                "    " + (f.get("program") or "").replace("\n", "\n    ")]
        if f.get("error"):
            out.append(f"    error: {f['error'][:300]}")
        if f.get("where"):
            out.append(f"    where: {f['where']}")
    return "\n".join(out)
