//! `--svg`: unregister latency distributions per mode, as cumulative curves on a log axis.

use std::fmt::Write as _;

use crate::qdisc::RunResult;

const W: f64 = 720.0;
const H: f64 = 420.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 160.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 50.0;
const COLORS: [&str; 6] = [
    "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02",
];

/// An SVG document: for each mode, the fraction of unregisters (y) that took at most x µs.
pub fn latency_svg(results: &[RunResult]) -> String {
    let all = results.iter().flat_map(|r| r.samples_ns.iter().copied());
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
    let y = |frac: f64| TOP + (1.0 - frac) * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(s, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"18\">qdisc-churn: key unregister latency (cumulative)</text>"
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
    for f in [0.0, 0.5, 0.99, 1.0] {
        let _ = writeln!(
            s,
            "<line x1=\"{LEFT}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{f}</text>",
            y(f),
            LEFT + pw,
            y(f),
            LEFT - 6.0,
            y(f) + 4.0
        );
    }
    for (i, r) in results.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let n = r.samples_ns.len();
        if n == 0 {
            continue;
        }
        // At most ~400 points per curve.
        let step = n.div_ceil(400);
        let mut pts = String::new();
        for (k, &ns) in r.samples_ns.iter().enumerate().step_by(step) {
            let _ = write!(pts, "{:.1},{:.1} ", x(ns), y((k + 1) as f64 / n as f64));
        }
        let _ = write!(pts, "{:.1},{:.1}", x(r.samples_ns[n - 1]), y(1.0));
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
            r.mode.name()
        );
    }
    s.push_str("</svg>\n");
    s
}
