//! SVG line charts of evaluation cost, one line per engine.
//!
//! plotters with only its SVG backend: no font files or fontconfig are
//! needed. Text is emitted as SVG `<text>` (the viewer renders it) and laid
//! out with plotters' built-in size estimate.

use std::path::Path;

use plotters::prelude::*;

use crate::engines::KERNEL;
use crate::report::{Report, RowResult, TableResult};
use crate::tables::TableId;

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend entry (engine name).
    pub name: String,
    /// `(x, ns)` points, sorted by x.
    pub points: Vec<(f64, f64)>,
}

/// Draws `series` as lines with markers, log-scaled y axis.
pub fn line_chart(path: &Path, title: &str, x_label: &str, series: &[Series]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("plot {}: {e}", path.display());
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).filter(|y| *y > 0.0);
    let (y_min, y_max) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (x_min, x_max) = xs.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    if y_min > y_max || x_min > x_max {
        return Err(err(&"no data points"));
    }
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let x_pad = ((x_max - x_min) * 0.05).max(1.0);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((x_min - x_pad)..(x_max + x_pad), ((y_min / 1.5)..(y_max * 1.5)).log_scale())
        .map_err(|e| err(&e))?;
    chart.configure_mesh().x_desc(x_label).y_desc("ns per evaluation (log scale)").draw().map_err(|e| err(&e))?;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).mix(0.9);
        let points: Vec<(f64, f64)> = s.points.iter().copied().filter(|p| p.1 > 0.0).collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(s.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled()))).map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// The cost one engine's column shows for `row`; for the kernel, the filter
/// cost (running filters minus the no-filter baseline of the same call).
fn cost(table: &TableResult, row: &RowResult, engine: &str, native_row: &str) -> Option<f64> {
    if engine == KERNEL {
        let native = table.row(native_row)?.ns(KERNEL)?;
        Some(row.kernel_running_ns()? - native)
    } else {
        row.ns(engine)
    }
}

fn series_over(points: impl Fn(&str) -> Vec<(f64, f64)>, engines: &[&str]) -> Vec<Series> {
    engines
        .iter()
        .map(|e| {
            let mut pts = points(e);
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series { name: if *e == KERNEL { "kernel (filter cost)".to_string() } else { e.to_string() }, points: pts }
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
    series_over(
        |e| positions.iter().filter_map(|(id, pos)| Some((*pos, cost(d, d.row(id)?, e, "native")?))).collect(),
        &engines,
    )
}

/// Tables A, B and D: cost against the classic instructions executed.
pub fn length_series(report: &Report) -> Vec<Series> {
    let engines = crate::report::columns();
    series_over(
        |e| {
            let mut pts = Vec::new();
            for table in report.tables.iter().filter(|t| t.id != TableId::C) {
                for row in table.rows.iter().filter(|r| r.insns.is_some()) {
                    let native = match (table.id, row.syscall.starts_with("brk")) {
                        (TableId::B, true) => "native_brk",
                        (TableId::B, false) => "native_chdir",
                        _ => "native",
                    };
                    if let Some(ns) = cost(table, row, e, native) {
                        pts.push((row.path as f64, ns));
                    }
                }
            }
            pts
        },
        &engines,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_render_text_without_system_fonts() {
        let dir = std::env::temp_dir().join(format!("bpfconv-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.svg");
        let series = vec![
            Series { name: "cbpf".into(), points: vec![(1.0, 5.0), (153.0, 40.0), (306.0, 80.0)] },
            Series { name: "kernel (filter cost)".into(), points: vec![(1.0, 20.0), (306.0, 600.0)] },
        ];
        line_chart(&path, "cost vs position", "position", &series).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100]);
        for text in ["cost vs position", "cbpf", "kernel (filter cost)", "position"] {
            assert!(svg.contains(text), "missing {text}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(line_chart(&path, "empty", "x", &[]).is_err());
    }
}
