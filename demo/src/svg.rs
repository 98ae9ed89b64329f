//! `--svg`: unregister latency distributions per mode, as cumulative curves on a log axis.

use std::fmt::Write as _;

use crate::report::ModeRounds;

const W: f64 = 720.0;
const H: f64 = 420.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 160.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 50.0;
const FONT_PX: f64 = 12.0;
/// Fractions marked on the y axis: evenly spaced, so their labels never crowd (the tail is
/// read from the curves' right ends and the table's p99).
const Y_TICKS: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];
const COLORS: [&str; 6] = [
    "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02",
];

/// The y pixel of cumulative fraction `frac` (0 at the bottom of the plot, 1 at the top).
fn y(frac: f64) -> f64 {
    TOP + (1.0 - frac) * (H - TOP - BOTTOM)
}

/// An SVG document: for each mode, the fraction of unregisters (y) that took at most x µs,
/// all rounds together.
pub fn latency_svg(results: &[ModeRounds]) -> String {
    let samples: Vec<(&str, Vec<u64>)> = results
        .iter()
        .map(|m| (m.mode.name(), m.all_samples_ns()))
        .collect();
    let all = samples.iter().flat_map(|(_, v)| v.iter().copied());
    let (lo, hi) = all.fold((u64::MAX, 1u64), |(lo, hi), x| {
        (lo.min(x.max(1)), hi.max(x))
    });
    let lo = if lo == u64::MAX { 1 } else { lo };
    // Decades of microseconds that cover the samples.
    let dmin = ((lo as f64 / 1e3).log10().floor()).min(0.0);
    let dmax = ((hi as f64 / 1e3).log10().ceil()).max(dmin + 1.0);
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let x = |ns: u64| LEFT + ((ns.max(1) as f64 / 1e3).log10() - dmin) / (dmax - dmin) * pw;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"{FONT_PX}\">"
    );
    let _ = writeln!(s, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"18\">qdisc-churn: key unregister latency, all rounds (cumulative)</text>"
    );
    let mut d = dmin;
    while d <= dmax {
        let px = LEFT + (d - dmin) / (dmax - dmin) * pw;
        let _ = writeln!(
            s,
            "<line x1=\"{px:.1}\" y1=\"{TOP}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/><text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            TOP + ph,
            TOP + ph + 16.0,
            10f64.powf(d)
        );
        d += 1.0;
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">µs (log)</text>",
        LEFT + pw / 2.0,
        H - 10.0
    );
    for f in Y_TICKS {
        let _ = writeln!(
            s,
            "<line x1=\"{LEFT}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{:.0}%</text>",
            y(f),
            LEFT + pw,
            y(f),
            LEFT - 6.0,
            y(f) + 4.0,
            f * 100.0
        );
    }
    let _ = writeln!(
        s,
        "<text transform=\"translate(14 {:.1}) rotate(-90)\" text-anchor=\"middle\">unregisters taking ≤ x</text>",
        TOP + ph / 2.0
    );
    for (i, (name, samples)) in samples.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let n = samples.len();
        if n == 0 {
            continue;
        }
        // At most ~400 points per curve.
        let step = n.div_ceil(400);
        let mut pts = String::new();
        for (k, &ns) in samples.iter().enumerate().step_by(step) {
            let _ = write!(pts, "{:.1},{:.1} ", x(ns), y((k + 1) as f64 / n as f64));
        }
        let _ = write!(pts, "{:.1},{:.1}", x(samples[n - 1]), y(1.0));
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{pts}\"/>"
        );
        let ly = TOP + 20.0 * i as f64 + 10.0;
        let _ = writeln!(
            s,
            "<line x1=\"{:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke=\"{color}\" stroke-width=\"3\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            W - RIGHT + 10.0,
            W - RIGHT + 30.0,
            W - RIGHT + 36.0,
            ly + 4.0,
            name
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The y axis' labels are at least a line of text apart, so none overlap.
    #[test]
    fn y_labels_do_not_overlap() {
        let mut px: Vec<f64> = Y_TICKS.iter().map(|&f| y(f)).collect();
        px.sort_by(f64::total_cmp);
        for pair in px.windows(2) {
            assert!(pair[1] - pair[0] >= FONT_PX + 2.0, "{px:?}");
        }
    }

    /// Every `<text>` of a drawn document is well inside the canvas, and the y labels it
    /// draws are the ticks' (read back from the document, not from the constants).
    #[test]
    fn drawn_labels_are_apart_and_on_canvas() {
        let svg = latency_svg(&[]);
        let mut label_ys = Vec::new();
        for part in svg.split("<text ").skip(1) {
            let attr = |name: &str| -> Option<f64> {
                let start = part.find(&format!("{name}=\""))? + name.len() + 2;
                part[start..].split('"').next()?.parse().ok()
            };
            if let (Some(x), Some(yv)) = (attr("x"), attr("y")) {
                assert!((0.0..=W).contains(&x) && (0.0..=H).contains(&yv), "{part}");
                if part.contains("text-anchor=\"end\"") {
                    label_ys.push(yv);
                }
            }
        }
        assert_eq!(label_ys.len(), Y_TICKS.len(), "{svg}");
        label_ys.sort_by(f64::total_cmp);
        for pair in label_ys.windows(2) {
            assert!(pair[1] - pair[0] >= FONT_PX + 2.0, "{label_ys:?}");
        }
    }
}
