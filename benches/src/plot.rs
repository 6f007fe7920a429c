//! The tables' SVG charts: which points each engine's line gets. Drawing is
//! [`timing::plot`]'s, shared with `bpfconv bench`.

use crate::engines::KERNEL;
use crate::report::{Report, RowResult, TableResult};
use crate::tables::TableId;

pub use timing::plot::{line_chart_svg, Series, XScale};

/// The cost one engine's column shows for `row`; for the kernel, the filter
/// cost ([`RowResult::kernel_filter_cost`]).
fn cost(table: &TableResult, row: &RowResult, engine: &str, native_row: &str) -> Option<f64> {
    if engine == KERNEL {
        row.kernel_filter_cost(table.row(native_row).and_then(|r| r.ns(KERNEL)))
    } else {
        row.ns(engine)
    }
}

fn series_over(points: impl Fn(&str) -> Vec<(f64, f64)>, engines: &[&str]) -> Vec<Series> {
    engines
        .iter()
        .enumerate()
        .map(|(color, e)| {
            let mut pts = points(e);
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let name = if *e == KERNEL { "kernel (filter cost)".to_string() } else { e.to_string() };
            Series { name, points: pts, color }
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

/// Table D: cost against getppid's position in the 306-entry allow-list
/// (comparison #1, #153, #306, testdata/filters/README.md).
pub fn position_series(report: &Report) -> Vec<Series> {
    let Some(d) = report.table(TableId::D) else {
        return Vec::new();
    };
    let positions = [("front", 1.0), ("middle", 153.0), ("end", 306.0)];
    let engines = crate::report::columns();
    let mut series = series_over(
        |e| positions.iter().filter_map(|(id, pos)| Some((*pos, cost(d, d.row(id)?, e, "native")?))).collect(),
        &engines,
    );
    // The same lists after `bpfconv optimize`, in the kernel: a colour
    // after every engine's.
    let optimised = [("front_optimised", 1.0), ("middle_optimised", 153.0), ("end_optimised", 306.0)];
    let points: Vec<(f64, f64)> =
        optimised.iter().filter_map(|(id, pos)| Some((*pos, cost(d, d.row(id)?, KERNEL, "native")?))).collect();
    if !points.is_empty() {
        series.push(Series { name: "kernel, optimised (filter cost)".to_string(), points, color: engines.len() });
    }
    series
}

/// The length sweep: cost against the filter's length in instructions.
pub fn length_series(report: &Report) -> Vec<Series> {
    let sweep = TableResult { id: TableId::D, rows: report.sweep.clone() };
    let engines = crate::report::columns();
    series_over(
        |e| sweep.rows.iter().filter_map(|row| Some((row.insns? as f64, cost(&sweep, row, e, "native")?))).collect(),
        &engines,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine's colour is fixed by its column, not by which other engines
    /// have points in a chart (position.svg and length.svg once disagreed).
    #[test]
    fn an_engine_keeps_its_colour_when_others_have_no_points() {
        let engines = ["cbpf", "ebpf", "fast"];
        let all = series_over(|_| vec![(1.0, 2.0)], &engines);
        let without_ebpf = series_over(|e| if e == "ebpf" { Vec::new() } else { vec![(1.0, 2.0)] }, &engines);
        let color_of = |s: &[Series], name: &str| s.iter().find(|s| s.name == name).map(|s| s.color);
        assert_eq!(without_ebpf.len(), 2);
        assert_eq!(color_of(&all, "fast"), color_of(&without_ebpf, "fast"));
        assert_ne!(color_of(&all, "fast"), color_of(&all, "cbpf"));
    }
}
