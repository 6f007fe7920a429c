//! SVG line charts of evaluation cost, one line per engine.
//!
//! plotters with only its SVG backend: no font files or fontconfig are
//! needed. Text is emitted as SVG `<text>` (the viewer renders it) and laid
//! out with plotters' built-in size estimate.

use plotters::prelude::*;

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend entry (engine name).
    pub name: String,
    /// `(x, ns)` points, sorted by x.
    pub points: Vec<(f64, f64)>,
    /// Palette index: the engine's place in a fixed engine list, so an
    /// engine keeps its colour in every chart, whichever engines have
    /// points there.
    pub color: usize,
}

/// How the x axis is scaled and labelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum XScale {
    Linear,
    /// Logarithmic: points are placed at log2(x), ticks labelled with x.
    Log2,
    /// Categories: point `x = i` is labelled `labels[i]` (inputs of
    /// `bpfconv bench`, one per syscall).
    Labels(Vec<String>),
}

/// Draws `series` as lines with markers, log-scaled y axis, and returns the
/// SVG text (the library does no IO: callers write it, the CLI atomically).
pub fn line_chart_svg(title: &str, x_label: &str, x_scale: &XScale, series: &[Series]) -> Result<String, String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let log2 = *x_scale == XScale::Log2;
    let placed: Vec<Series> = series
        .iter()
        .map(|s| Series {
            name: s.name.clone(),
            color: s.color,
            points: s
                .points
                .iter()
                .filter(|p| p.0 > 0.0 || !log2)
                .map(|&(x, y)| (if log2 { x.log2() } else { x }, y))
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
    let labels = match x_scale {
        XScale::Labels(l) => l.len(),
        _ => 0,
    };
    // Wide enough for one readable label per category.
    let width = (900 + labels.saturating_sub(12) * 40).min(8000) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let x_pad = match x_scale {
            XScale::Labels(_) => 0.5,
            _ => ((x_max - x_min) * 0.05).max(1.0),
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(if labels > 0 { 110 } else { 45 })
            .y_label_area_size(70)
            .build_cartesian_2d((x_min - x_pad)..(x_max + x_pad), ((y_min / 1.5)..(y_max * 1.5)).log_scale())
            .map_err(|e| err(&e))?;
        let x_ticks = |x: &f64| match x_scale {
            XScale::Linear => format!("{x}"),
            XScale::Log2 => format!("{:.0}", x.exp2()),
            XScale::Labels(l) => {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    l.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            }
        };
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(x_label).y_desc("ns per evaluation (log scale)").x_label_formatter(&x_ticks);
        if labels > 0 {
            mesh.x_labels(labels.max(1) * 2 + 1)
                .x_label_style(("sans-serif", 12).into_font().transform(FontTransform::Rotate90));
        }
        mesh.draw().map_err(|e| err(&e))?;
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
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_render_text_without_system_fonts() {
        let series = vec![
            Series { name: "cbpf".into(), points: vec![(1.0, 5.0), (153.0, 40.0), (306.0, 80.0)], color: 0 },
            Series { name: "kernel (filter cost)".into(), points: vec![(1.0, 20.0), (306.0, 600.0)], color: 1 },
        ];
        let svg = line_chart_svg("cost vs position", "position", &XScale::Linear, &series).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100]);
        for text in ["cost vs position", "cbpf", "kernel (filter cost)", "position"] {
            assert!(svg.contains(text), "missing {text}");
        }
        let svg = line_chart_svg("cost vs length", "insns", &XScale::Log2, &series).unwrap();
        assert!(svg.lines().any(|l| l.trim() == "256"), "log2 ticks not labelled with x");
        assert!(line_chart_svg("empty", "x", &XScale::Linear, &[]).is_err());
        let labelled = vec![Series { name: "fast".into(), points: vec![(0.0, 2.0), (1.0, 3.0), (2.0, 4.0)], color: 5 }];
        let labels = XScale::Labels(vec!["x86_64:read".into(), "x86_64:write".into(), "mix".into()]);
        let svg = line_chart_svg("cost per input", "input", &labels, &labelled).unwrap();
        for text in ["x86_64:read", "x86_64:write", "mix"] {
            assert!(svg.contains(text), "missing category label {text}");
        }
    }
}
