"""Markdown tables from a bench_genomics_peers_e2e.py run.

    python benchmarks/genomics_e2e_report.py genomics_e2e.json

One table per operation: a row per workload, ctensor's end-to-end median, then each peer's
median and ratio peer / ctensor (> 1: ctensor faster), the best one-thread peer last.  A second
table per indexed operation shows index build and query apart (ctensor, NCLS, superintervals,
AIList).
"""
from __future__ import annotations

import json
import sys

PEERS = [("pyranges1", "pyranges1"), ("polars_bio1t", "polars-bio"), ("polars_bio2t", "polars-bio 2 thr"),
         ("superintervals", "superintervals"), ("ncls", "NCLS"), ("ailist", "AIList"), ("bioframe", "bioframe"),
         ("pybedtools", "bedtools")]
ONE_THREAD = [k for k, _ in PEERS if k != "polars_bio2t"]
TITLES = {
    "count": "count_overlaps (bedtools intersect -c)",
    "overlap": "overlap, all pairs (bedtools intersect -wa -wb)",
    "coverage": "coverage (bedtools coverage)",
    "merge": "merge (bedtools merge)",
    "closest": "closest, every tied nearest + distance (bedtools closest -d -t all)",
    "closest1": "closest, one nearest per query (bedtools closest -d -t first)",
}
NOTES = {
    "count": "Contract: one row per query, in query order (every peer keeps it).  Same answer "
             "everywhere (0-based half-open; superintervals stores [s, e) as closed [s, e-1], the same "
             "for the non-empty intervals here).  NCLS has no count query: all pairs + bincount.  "
             "polars-bio: naive_query=True, its default (False was 10-15x slower here and drops the "
             "query's columns).  NCLS / superintervals / AIList: per-chromosome indexes built by user glue, "
             "timed; AIList counts with nhits_from_array.",
    "overlap": "Contract: ctensor returns the pairs grouped by query in query order; pyranges1 "
               "(preserve_input_order=True, its default), bioframe and bedtools do too; a peer marked "
               "† returned another order (not sorted afterwards: the ratio is against a weaker contract).  "
               "Pair multisets equal everywhere.  polars-bio: the faster of algorithm=Coitrees (default) "
               "and SuperIntervals, per workload.  superintervals: search_values_batch (Python lists) "
               "with the row ids stored as values (search_idxs numbers its own sorted order).  "
               "AIList: intersect_ids.  NCLS / superintervals / AIList: the output frame is assembled as "
               "ctensor assembles its own (a take per column, the chromosome once).",
    "coverage": "ctensor, bedtools, NCLS, superintervals answer count, covered bases, length, fraction; "
                "pyranges1 count_overlaps(calculate_coverage=True) count + fraction (covered = fraction x "
                "length checked); polars-bio and bioframe only the covered bases (no count).  "
                "superintervals has no batch coverage: one coverage() call per query on merged runs.  "
                "Checked columns are named in the check list below.",
    "merge": "bedtools semantics: book-ended intervals merge.  pyranges1 needs slack=1 and polars-bio "
             "min_dist=1 for that (their defaults keep book-ended runs apart: polars-bio's default gives "
             "22,356 runs instead of 22,327 on the exons); superintervals merge_overlaps on [s, e] "
             "closed (touching runs meet).  NCLS has no merge.  Sorted by chromosome, start everywhere "
             "except where marked †.",
    "closest": "Every tied nearest interval with bedtools' distance (0 overlapping, gap + 1: book-ended = 1).  "
               "pyranges1 nearest_ranges(ties='all') (same convention); bedtools closest -d -t all (inputs "
               "sorted first, timed: bedtools requires it).  polars-bio and bioframe have no all-ties mode "
               "(see closest1); NCLS and superintervals have no nearest query.  Triples (query, data, "
               "distance) equal ctensor's.",
    "closest1": "One nearest interval per query, ties broken by each tool (ctensor ties='first', pyranges1 "
                "ties='first', bedtools -t first, polars-bio nearest k=1, bioframe closest k=1).  polars-bio "
                "and bioframe measure the half-open gap (book-ended = 0, bedtools 1).  Checked: every pick is "
                "as near as ctensor's (half-open gap); picks that differ among ties are counted in the check list.",
}


def _ms(t):
    return f"{t * 1e3:.3g}"


def _cell(r, base, key="e2e"):
    if r is None:
        return "—"
    if not r["check"].startswith("ok") and r["check"] != "reference":
        return f"✗ {_ms(r[key])}"
    mark = "" if r.get("ordered", True) else "†"
    return f"{_ms(r[key])} ({r[key] / base:.2g}×){mark}"


def op_table(op, workloads):
    head = ["workload", "ctensor ms"] + [name for _, name in PEERS] + ["best 1-thread peer"]
    lines = [f"### {TITLES[op]}", "", NOTES[op], "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    checks, tie_lines, variants = [], [], []
    for wname, w in workloads.items():
        ties = []
        row = w["ops"].get(op, {})
        ct = row.get("ctensor")
        if ct is None:
            continue
        base = ct["e2e"]
        cells = [wname, _ms(base)]
        best = None
        for key, name in PEERS:
            r = row.get(key)
            cells.append(_cell(r, base) if r is not None or key not in w.get("skipped", [])
                         else "skipped")
            if r is not None:
                if not r["check"].startswith("ok"):
                    checks.append(f"{wname} {name}: {r['check']}")
                elif op == "closest1":    # "ok (n other tie picks)": ties broken otherwise
                    ties.append(f"{name} {r['check'][4:].split()[0]}")
                if r.get("variant"):
                    variants.append(f"{wname} {name}: {r['variant']}")
                if key in ONE_THREAD and r["check"].startswith("ok") and (best is None or r["e2e"] < best[1]):
                    best = (name, r["e2e"])
        cells.append(f"{best[0]} {best[1] / base:.2g}×" if best else "—")
        lines.append("| " + " | ".join(cells) + " |")
        if ties:
            tie_lines.append(f"{wname}: " + ", ".join(ties))
    if checks:
        lines += ["", "Answers that differ: " + "; ".join(checks) + "."]
    if tie_lines:
        lines += ["", "Queries whose pick differs from ctensor's among equally near intervals: "
                  + "; ".join(tie_lines) + "."]
    if variants:
        lines += ["", "Variant kept: " + "; ".join(variants) + "."]
    return lines + [""]


def index_table(workloads):
    lines = ["### With a prebuilt index (build and query apart)", "",
             "ctensor: `g.index(d, ops=(op,))` then the operation on the index; NCLS / superintervals / "
             "AIList: per-chromosome indexes, then the query and the result frame.  Ratios: peer query / "
             "ctensor query.", ""]
    head = ["workload", "op", "ctensor build", "ctensor query", "NCLS build", "NCLS query",
            "superintervals build", "superintervals query", "AIList build", "AIList query"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for wname, w in workloads.items():
        for op in ("count", "overlap", "coverage", "closest", "closest1"):
            row = w["ops"].get(op, {})
            ct = row.get("ctensor")
            if not ct or "query" not in ct:
                continue
            cells = [wname, op, _ms(ct["build"]), _ms(ct["query"])]
            for key in ("ncls", "superintervals", "ailist"):
                r = row.get(key)
                cells += ["—", "—"] if r is None else [_ms(r["build"]), _cell(r, ct["query"], "query")]
            lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def summary(workloads):
    """One line per operation: the best one-thread peer's time / ctensor's per workload
    (> 1: ctensor faster than every peer), the peer named."""
    names = list(workloads)
    lines = ["| operation | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
    short = dict(PEERS)
    for op in TITLES:
        cells = []
        for w in names:
            row = workloads[w]["ops"].get(op, {})
            ok = [(r["e2e"], k) for k, r in row.items() if k in ONE_THREAD and r["check"].startswith("ok")]
            ct = row.get("ctensor")
            if not ct or not ok:
                cells.append("—")
                continue
            t, k = min(ok)
            cells.append(f"{t / ct['e2e']:.2g} ({short[k]})")
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    return lines


def render(data):
    meta, workloads = data["meta"], data["workloads"]
    stat = "Minimum" if meta.get("stat") == "min" else "Median"
    unit = "CPU ms (process and waited-for children)" if meta.get("clock") == "cpu" else "ms"
    lines = [f"{stat} {unit}, one thread (polars-bio also at 2); (ratio) = peer / ctensor end to end, "
             "> 1 means ctensor is faster; — = the peer has no such operation; ✗ = answer differs "
             "(not ranked); † = rows not in query order.  "
             f"ctensor {meta.get('commit') or meta['ctensor']}.  "
             f"Machine: {meta['cpus']} cores shared with other jobs (load average "
             f"{meta['load'][0]:.1f} at start, {meta.get('load_end', meta['load'])[0]:.1f} at end): "
             "compare ratios within this run, not absolute times across runs.", ""]
    sizes = ", ".join(f"{k}: {w['n_query']:,} × {w['n_data']:,}" for k, w in workloads.items())
    lines += [f"Workloads (queries × data): {sizes}.", ""]
    lines += ["### Summary: best one-thread peer / ctensor, end to end (> 1: ctensor faster than every peer)", ""]
    lines += summary(workloads) + [""]
    for op in TITLES:
        lines += op_table(op, workloads)
    lines += index_table(workloads)
    return "\n".join(lines)


def main(paths):
    """Full tables of the first run; the summary line of each further run (same code, other
    moment: on a shared machine the ratios move between runs, this shows by how much)."""
    runs = []
    for path in paths or ["genomics_e2e.json"]:
        with open(path) as f:
            runs.append(json.load(f))
    print(render(runs[0]))
    for path, data in zip(paths[1:], runs[1:]):
        meta = data["meta"]
        print(f"### Summary of another run ({path}, ctensor {meta.get('commit') or meta['ctensor']}, "
              f"load average {meta['load'][0]:.1f})\n")
        print("\n".join(summary(data["workloads"])) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
