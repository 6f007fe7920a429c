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
    /// Palette index: the engine's place in the fixed column list
    /// ([`crate::report::columns`]), so an engine keeps its colour in every
    /// chart, whichever engines have points there.
    pub color: usize,
}

/// How the x axis is scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XScale {
    Linear,
    /// Logarithmic: points are placed at log2(x), ticks labelled with x.
    Log2,
}

/// Draws `series` as lines with markers, log-scaled y axis.
pub fn line_chart(path: &Path, title: &str, x_label: &str, x_scale: XScale, series: &[Series]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("plot {}: {e}", path.display());
    let placed: Vec<Series> = series
        .iter()
        .map(|s| Series {
            name: s.name.clone(),
            color: s.color,
            points: s
                .points
                .iter()
                .filter(|p| p.0 > 0.0 || x_scale == XScale::Linear)
                .map(|&(x, y)| (if x_scale == XScale::Log2 { x.log2() } else { x }, y))
                .collect(),
        })
        .collect();
    let series = placed.as_slice();
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
    let x_ticks = |x: &f64| match x_scale {
        XScale::Linear => format!("{x}"),
        XScale::Log2 => format!("{:.0}", x.exp2()),
    };
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc("ns per evaluation (log scale)")
        .x_label_formatter(&x_ticks)
        .draw()
        .map_err(|e| err(&e))?;
    for s in series {
        let color = Palette99::pick(s.color).mix(0.9);
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

    #[test]
    fn charts_render_text_without_system_fonts() {
        let dir = std::env::temp_dir().join(format!("bpfconv-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.svg");
        let series = vec![
            Series { name: "cbpf".into(), points: vec![(1.0, 5.0), (153.0, 40.0), (306.0, 80.0)], color: 0 },
            Series { name: "kernel (filter cost)".into(), points: vec![(1.0, 20.0), (306.0, 600.0)], color: 1 },
        ];
        line_chart(&path, "cost vs position", "position", XScale::Linear, &series).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100]);
        for text in ["cost vs position", "cbpf", "kernel (filter cost)", "position"] {
            assert!(svg.contains(text), "missing {text}");
        }
        line_chart(&path, "cost vs length", "insns", XScale::Log2, &series).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.lines().any(|l| l.trim() == "256"), "log2 ticks not labelled with x");
        assert!(line_chart(&path, "empty", "x", XScale::Linear, &[]).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

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
