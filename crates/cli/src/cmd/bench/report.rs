//! The report of a run: the text table, the JSON document
//! (FORMATS-EXTENSIONS.md, "bench") and the SVG chart.

use std::fmt::Write as _;

use engine::EngineKind;
use serde_json::{json, Value};

use super::{jit, Cell, Input, Results, KERNEL_FORCED};

/// ns with a decimal point always (the golden test masks `digits.digits`).
pub(super) fn fmt_ns(ns: f64) -> String {
    if ns.abs() < 10.0 {
        format!("{ns:.2}")
    } else {
        format!("{ns:.1}")
    }
}

/// The result as the filter's mode names it.
pub(super) fn fmt_ret(mode: cbpf::Mode, ret: u32) -> String {
    match mode {
        cbpf::Mode::Seccomp => seccomp::Action::from_u32(ret).to_string(),
        _ => ret.to_string(),
    }
}

/// One row shown: name, slot (the column index of its cells), result,
/// and the classic, eBPF and optimised paths.
pub(super) type Row = (String, usize, String, String, String, String);

/// The rows shown: every input, then `deepest` and `mix`.
pub(super) fn rows(r: &Results) -> Vec<Row> {
    let opt = |p: Option<u64>| p.map_or("-".to_string(), |p| p.to_string());
    let mut rows: Vec<Row> = r
        .inputs
        .iter()
        .enumerate()
        .map(|(i, input)| {
            (
                input.name.clone(),
                i,
                fmt_ret(r.mode, input.ret),
                input.cbpf_path.to_string(),
                input.ebpf_path.to_string(),
                opt(input.optimized_path),
            )
        })
        .collect();
    if let Some(d) = r.inputs.get(r.deepest) {
        rows.push((
            format!("deepest ({})", d.name),
            r.deepest,
            fmt_ret(r.mode, d.ret),
            d.cbpf_path.to_string(),
            d.ebpf_path.to_string(),
            opt(d.optimized_path),
        ));
    }
    let (c, e, o) = mean_paths(&r.inputs);
    rows.push((
        format!("mix ({} inputs)", r.inputs.len()),
        r.inputs.len(),
        "-".to_string(),
        format!("{c:.1}"),
        format!("{e:.1}"),
        o.map_or("-".to_string(), |o| format!("{o:.1}")),
    ));
    rows
}

/// Mean classic, eBPF and optimised paths (the last when every input has
/// one).
pub(super) fn mean_paths(inputs: &[Input]) -> (f64, f64, Option<f64>) {
    let n = inputs.len().max(1) as f64;
    let optimized: Option<Vec<u64>> = inputs.iter().map(|i| i.optimized_path).collect();
    (
        inputs.iter().map(|i| i.cbpf_path as f64).sum::<f64>() / n,
        inputs.iter().map(|i| i.ebpf_path as f64).sum::<f64>() / n,
        optimized.map(|o| o.iter().map(|&p| p as f64).sum::<f64>() / n),
    )
}

/// The text table.
pub(super) fn text(r: &Results) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} filter, {} classic / {} eBPF instructions, {} inputs, median of {} rounds (ns per evaluation)",
        r.file,
        r.mode,
        r.insns,
        r.ebpf_insns,
        r.inputs.len(),
        r.rounds
    );
    let rows = rows(r);
    let name_w = rows.iter().map(|row| row.0.len()).max().unwrap_or(5).max(5);
    let act_w = rows.iter().map(|row| row.2.len()).max().unwrap_or(6).max(6);
    let _ = write!(out, "{:<name_w$}  {:<act_w$}  {:>6}  {:>6}  {:>6}", "input", "result", "cbpf#", "ebpf#", "opt#");
    let widths: Vec<usize> = r.columns.iter().map(|c| c.name.len().max(7)).collect();
    for (c, w) in r.columns.iter().zip(&widths) {
        let _ = write!(out, "  {:>w$}", c.name);
    }
    out.push('\n');
    let mut notes: Vec<String> = Vec::new();
    for (name, slot, action, cp, ep, op) in &rows {
        let _ = write!(out, "{name:<name_w$}  {action:<act_w$}  {cp:>6}  {ep:>6}  {op:>6}");
        for (c, w) in r.columns.iter().zip(&widths) {
            let shown = match c.cells.get(*slot) {
                Some(Cell::Measured(s)) => {
                    let cached = c.name == "kernel" && c.cached.get(*slot).copied().flatten() == Some(true);
                    format!("{}{}", fmt_ns(s.median), if cached { "c" } else { "" })
                }
                Some(Cell::Unavailable(why)) => {
                    let n = match notes.iter().position(|n| n == why) {
                        Some(i) => i + 1,
                        None => {
                            notes.push(why.clone());
                            notes.len()
                        }
                    };
                    format!("n/a[{n}]")
                }
                None => "-".to_string(),
            };
            let _ = write!(out, "  {shown:>w$}");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "cbpf# / ebpf#: instructions executed by the classic program and by its eBPF conversion.");
    match r.optimized_insns {
        Some(n) => {
            let _ = writeln!(
                out,
                "opt#: classic instructions executed by `bpfconv optimize`'s output ({n} instructions, proved equal): \
                 the dispatch and argument trees beside the filter as written."
            );
        }
        None if r.mode == cbpf::Mode::Seccomp => {
            let _ = writeln!(out, "opt#: no optimised filter (see the note above).");
        }
        None => {}
    }
    // Without argument switches there is nothing to say of their form.
    match &r.fast {
        None => {}
        Some(f) if f.switches == 0 => {}
        Some(f) if f.native_code_bytes > 0 => {
            let _ = writeln!(
                out,
                "fast: its {} argument-check switches ran as x86-64 code ({} bytes), compares and branches.",
                f.switches, f.native_code_bytes
            );
        }
        Some(f) => {
            let why = f.native_refusal.as_deref().unwrap_or("no native code");
            let _ = writeln!(out, "fast: its {} argument-check switches were walked as tables ({why}).", f.switches);
        }
    }
    if let Some(floor) = &r.call_floor {
        let _ = writeln!(
            out,
            "call floor: {} ns per evaluation, the loop the in-process engines are timed by around a call that does \
             no work (each of their figures includes it; kernel-jit's has its harness and call subtracted).",
            fmt_ns(floor.median)
        );
    }
    if r.columns.iter().any(|c| c.name == KERNEL_FORCED) {
        let _ = writeln!(
            out,
            "kernel-forced: ns per x86_64 system call with the filter installed and run, minus the same call refused by a \
             one-instruction filter ({} calls per sample; every ret refuses, so the call never runs and the \
             constant-action cache never skips the filter). kernel: as installed: where the cache skips the filter \
             (marked c), the cache's own cost (getppid under an always-allow filter minus getppid unfiltered{}).",
            r.kernel_iterations,
            match &r.cache_hit {
                Some(Cell::Measured(s)) => format!(": {} ns", fmt_ns(s.median)),
                _ => String::new(),
            }
        );
    }
    if let Some(jit::JitSummary { rounds: rounds @ 1.., baseline, copies, cycled_mix, cycle_inputs }) = &r.jit {
        let copies = copies.unwrap_or(1);
        let _ = writeln!(
            out,
            "kernel-jit: ns per run of the filter in the running kernel's JIT (its loadable conversion behind a tc \
             harness run {copies}x back to back per BPF_PROG_TEST_RUN run; the kernel's own mean over runs \
             lasting about 1 ms each, in whole ns), minus the same harness around `r0 = 0` measured in the same \
             round{}, divided by {copies}; median of {rounds} rounds; mix: the mean of the inputs' figures.",
            match baseline {
                Cell::Measured(s) => format!(" ({} ns)", fmt_ns(s.median)),
                Cell::Unavailable(_) => String::new(),
            }
        );
        let _ = match (cycled_mix, cycle_inputs) {
            (Cell::Measured(s), Some(n)) => writeln!(
                out,
                "kernel-jit, inputs in turn: {} ns per run (min {}, max {}), one copy of the filter looping over {n} \
                 input{} per BPF_PROG_TEST_RUN run, as the other engines' mix cycles through them; minus the same loop \
                 around `r0 = 0`.",
                fmt_ns(s.median),
                fmt_ns(s.min),
                fmt_ns(s.max),
                if *n == 1 { "" } else { "s" }
            ),
            (Cell::Unavailable(why), _) => writeln!(out, "kernel-jit, inputs in turn: unavailable ({why})."),
            _ => Ok(()),
        };
    }
    for (i, n) in notes.iter().enumerate() {
        let _ = writeln!(out, "[{}] {n}", i + 1);
    }
    out
}

/// The JSON document (FORMATS-EXTENSIONS.md, "bench").
pub(super) fn json(r: &Results) -> Value {
    let rows = rows(r);
    let (mc, me, _) = mean_paths(&r.inputs);
    let mut cells = Vec::new();
    for (i, (_, slot, _, _, _, _)) in rows.iter().enumerate() {
        let (input, cbpf_path, ebpf_path) = if i < r.inputs.len() {
            let x = r.inputs.get(*slot);
            (
                x.map(|x| x.name.clone()).unwrap_or_default(),
                json!(x.map(|x| x.cbpf_path)),
                json!(x.map(|x| x.ebpf_path)),
            )
        } else if i == r.inputs.len() && r.inputs.get(r.deepest).is_some() {
            let x = r.inputs.get(*slot);
            ("deepest".to_string(), json!(x.map(|x| x.cbpf_path)), json!(x.map(|x| x.ebpf_path)))
        } else {
            ("mix".to_string(), json!(mc), json!(me))
        };
        for c in &r.columns {
            let mut cell =
                object(json!({"input": input, "engine": c.name, "cbpf_path": cbpf_path, "ebpf_path": ebpf_path}));
            match c.cells.get(*slot) {
                Some(Cell::Measured(s)) => {
                    cell.insert("ns".into(), json!(s.median));
                    cell.insert("min_ns".into(), json!(s.min));
                    cell.insert("max_ns".into(), json!(s.max));
                    cell.insert("samples".into(), json!(s.samples));
                }
                Some(Cell::Unavailable(why)) => {
                    cell.insert("ns".into(), Value::Null);
                    cell.insert("min_ns".into(), Value::Null);
                    cell.insert("max_ns".into(), Value::Null);
                    cell.insert("unavailable".into(), json!(why));
                }
                None => continue,
            }
            if let Some(Some(cached)) = c.cached.get(*slot) {
                cell.insert("kernel_cached".into(), json!(cached));
            }
            cells.push(Value::Object(cell));
        }
    }
    let inputs: Vec<Value> = r
        .inputs
        .iter()
        .map(|i| {
            let mut v =
                object(json!({"input": i.name, "ret": i.ret, "cbpf_path": i.cbpf_path, "ebpf_path": i.ebpf_path}));
            if let Some(p) = i.optimized_path {
                v.insert("optimized_path".into(), json!(p));
            }
            if r.mode == cbpf::Mode::Seccomp {
                v.insert("arch".into(), json!(i.data.arch));
                v.insert("nr".into(), json!(i.data.nr));
                v.insert("args".into(), json!(i.data.args));
                v.insert("ip".into(), json!(i.data.instruction_pointer));
            }
            Value::Object(v)
        })
        .collect();
    let mut doc = object(json!({
        "filter": r.file,
        "mode": r.mode.to_string(),
        "insns": r.insns,
        "ebpf_insns": r.ebpf_insns,
        "rounds": r.rounds,
        "engines": r.columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
        "inputs": inputs,
        "deepest": r.inputs.get(r.deepest).map(|i| i.name.clone()),
        "cells": cells,
    }));
    if let Some(n) = r.optimized_insns {
        doc.insert("optimized_insns".into(), json!(n));
    }
    if let Some(floor) = &r.call_floor {
        doc.insert("call_floor_ns".into(), json!(floor.median));
    }
    if let Some(f) = &r.fast {
        doc.insert(
            "fast".into(),
            json!({"switches": f.switches, "native_code_bytes": f.native_code_bytes, "native_refusal": f.native_refusal}),
        );
    }
    if let Some(jit::JitSummary { rounds, baseline, copies, cycled_mix, cycle_inputs }) = &r.jit {
        let baseline = match baseline {
            Cell::Measured(s) => json!(s.median),
            Cell::Unavailable(_) => Value::Null,
        };
        let cycled = match cycled_mix {
            Cell::Measured(s) => {
                json!({"ns": s.median, "min_ns": s.min, "max_ns": s.max, "inputs_per_run": cycle_inputs})
            }
            Cell::Unavailable(why) => json!({"ns": null, "min_ns": null, "max_ns": null, "unavailable": why}),
        };
        doc.insert(
            "kernel_jit".into(),
            json!({"rounds": rounds, "baseline_ns": baseline, "copies": copies, "cycled_mix": cycled}),
        );
    }
    if let Some(hit) = &r.cache_hit {
        doc.insert(
            "kernel".into(),
            json!({
                "iterations": r.kernel_iterations,
                "cache_hit_ns": match hit { Cell::Measured(s) => json!(s.median), Cell::Unavailable(_) => Value::Null },
            }),
        );
    }
    Value::Object(doc)
}

/// The map of a `json!({...})` object literal.
pub(super) fn object(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

/// Cost per input and engine; the kernel line is the forced cost.
pub(super) fn svg(r: &Results) -> std::result::Result<String, String> {
    use timing::plot::{line_chart_svg, XScale};
    let mut labels: Vec<String> = r.inputs.iter().map(|i| i.name.clone()).collect();
    labels.push("mix".to_string());
    line_chart_svg(&format!("{}: cost per input", r.file), "input", &XScale::Labels(labels), &series(r))
}

/// The chart's lines: each column but `kernel` (the installed filter,
/// whose cached cells are the cache's cost) with its positive medians (the
/// y axis is logarithmic), x the input's slot. Colours follow the fixed
/// engine order (`EngineKind::ALL`, then the kernel's), so an engine keeps
/// its colour whichever engines ran.
pub(super) fn series(r: &Results) -> Vec<timing::plot::Series> {
    let fixed: Vec<&str> = EngineKind::ALL.iter().map(|k| k.name()).chain([KERNEL_FORCED]).collect();
    r.columns
        .iter()
        .filter(|c| c.name != "kernel")
        .map(|c| timing::plot::Series {
            name: c.name.clone(),
            points: c
                .cells
                .iter()
                .enumerate()
                .filter_map(|(i, cell)| match cell {
                    Cell::Measured(s) if s.median > 0.0 => Some((i as f64, s.median)),
                    _ => None,
                })
                .collect(),
            color: fixed.iter().position(|f| *f == c.name).unwrap_or(fixed.len()),
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}
