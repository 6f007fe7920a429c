#!/usr/bin/env python3
"""The interpreters against the kernel's JIT on every testdata seccomp filter.

Runs `bpfconv bench --format json` (FORMATS-EXTENSIONS.md §5b) once per
filter with the engines cbpf, ebpf, fast and kernel-jit, and prints one
Markdown table: the deepest input's and the mix's ns per engine, each
interpreter's ratio to kernel-jit (the goal of issue 28: cbpf and ebpf
within 2x, fast at most 1x), then every (arch, nr) class where `fast`
costs more than `cbpf`.

Two mixes: `mix` is bench's (our engines evaluate every input in turn, so
their branches see a new input each time; kernel-jit's mix is the mean of
its per-input figures, each input repeated by BPF_PROG_TEST_RUN) and
`mean`, the mean of every engine's per-input figures, kernel-jit's
definition applied to all, a like-for-like comparison; and `cycled`,
bench's mix again, against kernel-jit's mix with the inputs in turn
(`kernel_jit.cycled_mix`: one copy of the filter looping over 32 inputs
per test run), the other like-for-like comparison. kernel-jit
figures are per filter run: the kernel's whole-nanosecond mean of a test
run holding N copies of the filter back to back (the `jit N` column,
`kernel_jit.copies`: 32 for short filters, fewer for longer ones, 1 from
508 eBPF instructions on) less the same harness around `r0 = 0`, divided
by N, so their resolution is 1/N ns;
ours include each engine's call (bench's `call_floor_ns`, the timing loop
around a call that does no work, printed with the floors). The script
measures that floor first, on
a one-instruction `ret ALLOW` filter, prints it, and marks every cell over
the goal where the goal (2x the JIT for cbpf and ebpf, 1x for fast) is
below the engine's floor: no evaluation of that engine, however short its
path, gets there. Every figure of one filter comes from one run, so the
ratios are side by side; runs of different filters are not.

`--runs N` benches every filter (and the floor) N times and prints, per
cell, the median of its N figures and the median of its N per-run ratios
(each still side by side within its run): on a shared machine one run can
read a cell 2x off, so a goal judged from one run is not settled.

usage: benches/engine_table.py [--bpfconv PATH] [--time S] [--runs N] [--json DIR] [FILTER...]
(default: target/release/bpfconv, every filter of testdata/filters and the
libseccomp-compiled profiles; build it with `cargo build --release -p bpfconv-cli`).
"""

import argparse
import json
import pathlib
import struct
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
ENGINES = ["cbpf", "ebpf", "fast", "kernel-jit"]
# Filters that are not raw little-endian records need flags.
EXTRA = {"s390x.bpf": ["--endian", "big"]}


def default_filters():
    filters = sorted((ROOT / "testdata/filters").glob("*.bpf"))
    filters += [ROOT / "testdata/profiles" / n for n in ("docker_like.bpf", "docker_like_opt2.bpf", "s390x.bpf")]
    return filters


def bench(bpfconv, path, seconds):
    cmd = [bpfconv, "bench", str(path), "--format", "json", "--engines", ",".join(ENGINES), "--time", str(seconds)]
    cmd += EXTRA.get(path.name, [])
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{path.name}: exit {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def cells(doc):
    """{(input, engine): ns or None}, plus ("mean", engine): the mean of
    the engine's per-input figures (None if one is missing)."""
    got = {(c["input"], c["engine"]): c["ns"] for c in doc["cells"]}
    for engine in ENGINES:
        per_input = [got.get((inp["input"], engine)) for inp in doc["inputs"]]
        ok = per_input and all(ns is not None for ns in per_input)
        got[("mean", engine)] = sum(per_input) / len(per_input) if ok else None
        got[("cycled", engine)] = got.get(("mix", engine))
    got[("cycled", "kernel-jit")] = ((doc.get("kernel_jit") or {}).get("cycled_mix") or {}).get("ns")
    got[("call floor", "")] = doc.get("call_floor_ns")
    return got


def median(values):
    """The median of the values that are not None (None if there are none)."""
    xs = sorted(v for v in values if v is not None)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def merged(runs):
    """One `cells` dict from several: each cell's median."""
    keys = set().union(*runs)
    return {k: median(r.get(k) for r in runs) for k in keys}


def run_ratio(runs, key, engine):
    """The median over runs of engine/kernel-jit for `key`, each ratio from
    one run; inf when the JIT read 0 or less in every run."""
    pairs = [(r.get((key, engine)), r.get((key, "kernel-jit"))) for r in runs]
    pairs = [(ns, jit) for ns, jit in pairs if ns is not None and jit is not None]
    if not pairs:
        return None
    ratios = [ns / jit for ns, jit in pairs if jit > 0]
    return median(ratios) if ratios else float("inf")


def fmt(ns):
    return "-" if ns is None else f"{ns:.2f}"


def fmt_ratio(r):
    if r is None:
        return "-"
    if r == float("inf"):
        # Below the harness's resolution (1/N ns), or noise around 0.
        return "inf"
    return f"{r:.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bpfconv", default=str(ROOT / "target/release/bpfconv"))
    ap.add_argument("--time", default="1")
    ap.add_argument("--runs", type=int, default=1, help="bench each filter this many times; print medians")
    ap.add_argument("--json", help="keep each filter's JSON document in this directory")
    ap.add_argument("filters", nargs="*")
    args = ap.parse_args()
    filters = [pathlib.Path(f) for f in args.filters] or default_filters()
    # Each engine's floor: a one-instruction `ret ALLOW` (BPF_RET|BPF_K).
    with tempfile.TemporaryDirectory() as tmp:
        ret = pathlib.Path(tmp, "ret.bpf")
        ret.write_bytes(struct.pack("<HBBI", 0x06, 0, 0, 0x7FFF0000))
        floor = merged([cells(bench(args.bpfconv, ret, args.time)) for _ in range(max(args.runs, 1))])
    floors = {e: floor.get(("deepest", e)) for e in ENGINES}
    runs_note = f", medians of {args.runs} runs" if args.runs > 1 else ""
    print(
        f"floor (one-instruction `ret ALLOW` filter, ns{runs_note}): "
        + ", ".join(f"{e} {fmt(floors[e])}" for e in ENGINES)
        + f"; of ours, the timing loop and a call alone (bench's call_floor_ns): {fmt(floor.get(('call floor', '')))}"
    )
    print()
    head = "| filter | input | " + " | ".join(ENGINES) + " | jit N | cbpf/jit | ebpf/jit | fast/jit |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    slow_fast = []
    over = []
    for path in filters:
        try:
            docs = [bench(args.bpfconv, path, args.time) for _ in range(max(args.runs, 1))]
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr)
            continue
        doc = docs[0]
        if args.json:
            for i, d in enumerate(docs):
                suffix = f".{i + 1}" if len(docs) > 1 else ""
                pathlib.Path(args.json, path.stem + suffix + ".json").write_text(json.dumps(d))
        runs = [cells(d) for d in docs]
        got = merged(runs)
        for row in ("deepest", "mix", "mean", "cycled"):
            ns = [got.get((row, e)) for e in ENGINES]
            jit = ns[3]
            rs = [run_ratio(runs, row, e) for e in ENGINES[:3]]
            copies = (doc.get("kernel_jit") or {}).get("copies")
            cols = list(map(fmt, ns)) + ["-" if copies is None else str(copies)] + list(map(fmt_ratio, rs))
            print(f"| {path.name} | {row} | " + " | ".join(cols) + " |")
            for engine, r, limit in zip(ENGINES, rs, (2.0, 2.0, 1.0)):
                if r == float("inf"):
                    over.append(f"{path.name} {row} {engine} inf (the JIT reads 0)")
                elif r is not None and r > limit:
                    goal, low = limit * jit, floors.get(engine)
                    why = f" (goal {goal:.2f} ns < floor {low:.2f})" if low is not None and goal < low else ""
                    over.append(f"{path.name} {row} {engine} {r:.2f}x{why}")
        for inp in doc["inputs"]:
            name = inp["input"]
            c, f = got.get((name, "cbpf")), got.get((name, "fast"))
            if c is not None and f is not None and f > c:
                slow_fast.append(f"{path.name} {name}: fast {f:.2f} > cbpf {c:.2f}")
    print(
        "\nover the goal (cbpf, ebpf > 2x kernel-jit; fast > 1x; mix: bench's; mean and cycled: like for like,"
        " each input alone and inputs in turn):"
    )
    print("\n".join(over) or "none")
    print("\n(arch, nr) classes where fast > cbpf:")
    print("\n".join(slow_fast) or "none")


if __name__ == "__main__":
    main()
