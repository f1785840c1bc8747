//! Inline SVG line charts for the HTML report: labelled axes with units, optional log scales, x
//! ticks at given values (the levels measured) or on a wall-clock (UTC) axis, a legend below the
//! plot (so it covers no marker, label or line), a colour-blind-safe palette (Okabe–Ito), point
//! markers with optional labels, gaps where a series has none, vertical annotations; and dot charts
//! of percentiles per row. Pure: returns a string, does no IO.
//! Imports only: nothing.

use std::fmt::Write as _;

/// Okabe–Ito palette: distinguishable under the common forms of colour blindness.
pub const PALETTE: [&str; 7] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000",
];

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
    /// Palette index to use instead of the series' position (pairs such as avg/p99 of one
    /// thing share a colour, solid and dashed).
    pub colour: Option<usize>,
    /// A label beside each point (the concurrency on a latency-vs-throughput chart); empty
    /// for none, else one per point.
    pub labels: Vec<String>,
    /// Drawn as one line whatever the chart's gap (a threshold across the whole axis).
    pub unbroken: bool,
    /// A warning on a point (a level behind schedule, a disturbed level): a red ring around it
    /// and the word under it, drawn whatever the series' style; empty for none, else one per
    /// point ("" for a point without one).
    pub flags: Vec<String>,
}

impl Series {
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points,
            dashed: false,
            colour: None,
            labels: Vec::new(),
            unbroken: false,
            flags: Vec::new(),
        }
    }
    pub fn dashed(mut self) -> Self {
        self.dashed = true;
        self
    }
    pub fn colour(mut self, palette_index: usize) -> Self {
        self.colour = Some(palette_index);
        self
    }
    /// [`Series::flags`], one per point.
    pub fn flagged(mut self, flags: Vec<String>) -> Self {
        self.flags = flags;
        self
    }
}

/// A vertical marker line at x with a label (e.g. "knee").
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub x: f64,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_log: bool,
    pub y_log: bool,
    pub series: Vec<Series>,
    pub markers: Vec<Marker>,
    /// Draw a second series set against a right-hand axis (e.g. %util beside IOPS).
    pub right: Option<(String, Vec<Series>)>,
    /// Values the x axis must span besides the data (charts that share a time axis).
    pub x_extent: Vec<f64>,
    /// The x ticks to draw instead of the axis' own (the levels measured: 1, 2, 4 … 256).
    pub x_ticks: Vec<f64>,
    /// Label x ticks as wall-clock UTC time of day (x in seconds since the epoch).
    pub x_clock: bool,
    /// Break a series' line where consecutive points are further apart than this in x (a
    /// direction with no I/O draws a gap, not a straight line across it).
    pub x_gap: Option<f64>,
}

const W: f64 = 720.0;
const H: f64 = 360.0;
const L: f64 = 78.0;
const R: f64 = 78.0;
const T: f64 = 40.0;
const B: f64 = 56.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Compact number for tick labels: 1.5k, 2M, 0.25.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    let (d, s) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let t = if d == d.round() {
        format!("{d:.0}")
    } else if d.abs() >= 10.0 {
        format!("{d:.1}")
    } else if d.abs() >= 0.1 {
        format!("{d:.2}")
    } else {
        format!("{d:.3}")
    };
    let t = if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    };
    format!("{t}{s}")
}

/// An axis mapping data values to pixels.
#[derive(Debug, Clone, Copy)]
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Axis {
    fn fit(values: impl Iterator<Item = f64>, log: bool, zero: bool) -> Axis {
        let vals: Vec<f64> = values
            .filter(|v| v.is_finite() && (!log || *v > 0.0))
            .collect();
        let (mut lo, mut hi) = vals
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        if vals.is_empty() {
            (lo, hi) = (if log { 1.0 } else { 0.0 }, 1.0);
        }
        if log {
            // Nice bounds that fit the data (1..16 gives 1..20, not 1..100).
            lo = nice_log_floor(lo);
            hi = nice_log_ceil(hi);
            if hi <= lo {
                hi = nice_log_ceil(lo * 1.5);
            }
            // Near f64::MAX the nice bound overflows: keep every bound finite.
            (lo, hi) = (lo.min(f64::MAX / 10.0), hi.min(f64::MAX));
        } else {
            if zero {
                lo = lo.min(0.0);
            }
            // A span lost in the values' own rounding (1e16 .. 1e16+1) or none at all: widen
            // it to something a step can cross, so ticks always advance.
            if hi <= lo {
                hi = lo + 1.0;
            }
            let mag = lo.abs().max(hi.abs());
            if (hi - lo).is_nan() || hi - lo <= mag * 1e-9 {
                let pad = (mag * 1e-3).max(0.5);
                (lo, hi) = (lo - pad, hi + pad);
            }
            // Keep the span finite (values near ±f64::MAX).
            (lo, hi) = (lo.max(-f64::MAX / 4.0), hi.min(f64::MAX / 4.0));
            let step = nice_step((hi - lo) / 5.0);
            lo = (lo / step).floor() * step;
            hi = (hi / step).ceil() * step;
        }
        Axis { lo, hi, log }
    }

    fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.max(self.lo * 1e-3).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            // Powers of ten inside the range.
            let first = 10f64.powf(self.lo.log10().floor());
            // At most the ~630 decades f64 has: the loop ends for any bounds.
            let mut t: Vec<f64> = std::iter::successors(Some(first), |d| Some(d * 10.0))
                .take(MAX_TICKS)
                .take_while(|&d| d <= self.hi * 1.0001)
                .filter(|&d| d >= self.lo * 0.9999)
                .collect();
            // Few decades: add 2x and 5x ticks so the axis stays readable.
            if t.len() <= 3 {
                let extra: Vec<f64> = std::iter::successors(Some(first), |d| Some(d * 10.0))
                    .take(MAX_TICKS)
                    .take_while(|&d| d < self.hi)
                    .flat_map(|d| [d * 2.0, d * 5.0])
                    .filter(|&v| v > self.lo * 1.0001 && v < self.hi * 0.9999)
                    .collect();
                t.extend(extra);
            }
            // The ends are always labelled.
            for end in [self.lo, self.hi] {
                if !t.iter().any(|&v| (v / end - 1.0).abs() < 1e-6) {
                    t.push(end);
                }
            }
            t.sort_by(f64::total_cmp);
            t.dedup_by(|a, b| (*a / *b - 1.0).abs() < 1e-6);
            t
        } else {
            // Counted, not accumulated: a step below the values' resolution cannot loop.
            let step = nice_step((self.hi - self.lo) / 5.0);
            let n = ((self.hi - self.lo) / step + 1e-9).floor();
            let n = if n.is_finite() {
                n.min(MAX_TICKS as f64) as usize
            } else {
                0
            };
            (0..=n).map(|i| self.lo + i as f64 * step).collect()
        }
    }
}

/// No axis has more ticks than this, whatever its bounds.
const MAX_TICKS: usize = 700;

/// The largest of 1, 2, 3, 5 × 10^k that is ≤ v.
fn nice_log_floor(v: f64) -> f64 {
    let d = 10f64.powf(v.log10().floor());
    [5.0, 3.0, 2.0, 1.0]
        .into_iter()
        .map(|m| m * d)
        .find(|&c| c <= v * (1.0 + 1e-9))
        .unwrap_or(d)
}

/// The smallest of 1, 2, 3, 5 × 10^k that is ≥ v.
fn nice_log_ceil(v: f64) -> f64 {
    let d = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 3.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * d)
        .find(|&c| c >= v * (1.0 - 1e-9))
        .unwrap_or(d * 10.0)
}

fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let n = raw / mag;
    let m = if n <= 1.0 {
        1.0
    } else if n <= 2.0 {
        2.0
    } else if n <= 2.5 {
        2.5
    } else if n <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// The vertical grid lines and x tick labels of a plot area `ph` high whose top is at `top`.
fn x_grid(
    s: &mut String,
    ticks: &[(f64, String)],
    px: impl Fn(f64) -> f64,
    top: f64,
    ph: f64,
    stroke: &str,
) {
    for (t, label) in ticks {
        let x = px(*t);
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{top}" y2="{}" stroke="{stroke}"/><text class="xtick" x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            top + ph,
            top + ph + 16.0,
            esc(label)
        );
    }
}

/// An axis' own ticks, labelled compactly.
fn own_ticks(a: &Axis) -> Vec<(f64, String)> {
    a.ticks().into_iter().map(|t| (t, fmt_num(t))).collect()
}

/// Seconds since the epoch → `HH:MM:SS` UTC (the date is in the page's context header).
pub fn clock(epoch_s: f64) -> String {
    let s = epoch_s.floor().rem_euclid(86_400.0) as u64;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Ticks on a wall-clock axis: whole seconds, minutes or hours, about six of them.
fn clock_ticks(a: &Axis) -> Vec<(f64, String)> {
    const STEPS: [f64; 14] = [
        1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0,
    ];
    let span = a.hi - a.lo;
    let step = STEPS
        .into_iter()
        .find(|&st| span / st <= 7.0)
        .unwrap_or_else(|| (span / 6.0 / 3600.0).ceil() * 3600.0);
    let first = (a.lo / step).ceil() * step;
    (0..MAX_TICKS)
        .map(|i| first + i as f64 * step)
        .take_while(|&t| t <= a.hi + 1e-9)
        .map(|t| (t, clock(t)))
        .collect()
}

/// Where the legend entries go, below the plot (never over a marker or a line): their
/// column width and rows.
fn legend_grid(names: &[String]) -> (f64, usize, usize) {
    let wmax = names.iter().map(|n| n.chars().count()).max().unwrap_or(0) as f64;
    let col_w = 40.0 + wmax * 6.6;
    let cols = (((W - L) / col_w).floor() as usize).max(1);
    let rows = names.len().div_ceil(cols);
    (col_w, cols, rows)
}

const LEGEND_ROW: f64 = 16.0;

impl LineChart {
    pub fn new(id: &str, title: &str, x_label: &str, y_label: &str) -> Self {
        LineChart {
            id: id.to_string(),
            title: title.to_string(),
            x_label: x_label.to_string(),
            y_label: y_label.to_string(),
            x_log: false,
            y_log: false,
            series: Vec::new(),
            markers: Vec::new(),
            right: None,
            x_extent: Vec::new(),
            x_ticks: Vec::new(),
            x_clock: false,
            x_gap: None,
        }
    }

    /// Render as a standalone `<svg>` element (inline in HTML, or saved as a .svg file). The
    /// legend sits below the plot, so it covers no marker, label or line.
    pub fn to_svg(&self) -> String {
        let plot = self.plot();
        let legend = self.legend_entries();
        let names: Vec<String> = legend.iter().map(|l| l.0.clone()).collect();
        let (col_w, cols, rows) = legend_grid(&names);
        let h = H + rows as f64 * LEGEND_ROW + if rows > 0 { 6.0 } else { 0.0 };
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" id="{id}" class="chart" viewBox="0 0 {W} {h}" width="{W}" height="{h}" role="img" aria-labelledby="{id}-title" font-family="sans-serif" font-size="12">"#,
            id = esc(&self.id)
        );
        let _ = write!(
            s,
            r##"<title id="{}-title">{}</title><rect x="0" y="0" width="{W}" height="{h}" fill="#fff"/>"##,
            esc(&self.id),
            esc(&self.title)
        );
        let _ = write!(
            s,
            r#"<text x="{}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
            W / 2.0,
            esc(&self.title)
        );
        self.grid(&mut s, &plot);
        self.axis_labels(&mut s);
        self.draw_markers(&mut s, &plot);
        plot.draw_series(&mut s, &self.series, &plot.y, 0, self.x_gap);
        if let (Some((_, r)), Some(ra)) = (&self.right, &plot.right) {
            plot.draw_series(&mut s, r, ra, self.series.len(), self.x_gap);
        }
        // Legend, below the plot and its axis label.
        for (i, (name, colour, dashed)) in legend.iter().enumerate() {
            let x = L + (i % cols) as f64 * col_w;
            let y = H + 4.0 + (i / cols) as f64 * LEGEND_ROW;
            let dash = if *dashed {
                r#" stroke-dasharray="6 4""#
            } else {
                ""
            };
            let _ = write!(
                s,
                r##"<g class="legend"><line x1="{x:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{colour}" stroke-width="2"{dash}/><text x="{:.1}" y="{:.1}">{}</text></g>"##,
                x + 20.0,
                x + 26.0,
                y + 4.0,
                esc(name)
            );
        }
        s.push_str("</svg>");
        s
    }

    /// The axes fitted to the data, markers and extent.
    fn plot(&self) -> Plot {
        let all = |ss: &[Series], x: bool| -> Vec<f64> {
            ss.iter()
                .flat_map(|s| s.points.iter().map(move |p| if x { p.0 } else { p.1 }))
                .collect()
        };
        let mut xs = all(&self.series, true);
        if let Some((_, r)) = &self.right {
            xs.extend(all(r, true));
        }
        xs.extend(self.markers.iter().map(|m| m.x));
        xs.extend(self.x_extent.iter().copied());
        Plot {
            x: Axis::fit(xs.into_iter(), self.x_log, false),
            y: Axis::fit(all(&self.series, false).into_iter(), self.y_log, true),
            right: self
                .right
                .as_ref()
                .map(|(_, r)| Axis::fit(all(r, false).into_iter(), false, true)),
        }
    }

    /// The legend's entries (name, colour, dashed): the left axis' series, then the right's.
    fn legend_entries(&self) -> Vec<(String, &'static str, bool)> {
        let right_series = self.right.as_ref().map_or(&[][..], |(_, r)| &r[..]);
        self.series
            .iter()
            .chain(right_series)
            .enumerate()
            .map(|(i, se)| {
                let side = if i >= self.series.len() {
                    " (right axis)"
                } else {
                    ""
                };
                (
                    format!("{}{side}", se.name),
                    PALETTE[se.colour.unwrap_or(i) % PALETTE.len()],
                    se.dashed,
                )
            })
            .collect()
    }

    /// The grid lines and tick labels of both axes (the right one's labels only).
    fn grid(&self, s: &mut String, p: &Plot) {
        for t in p.y.ticks() {
            let y = p.py(&p.y, t);
            let _ = write!(
                s,
                r##"<line x1="{L}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                L + PW,
                L - 6.0,
                y + 4.0,
                fmt_num(t)
            );
        }
        let xa = &p.x;
        let xticks: Vec<(f64, String)> = if !self.x_ticks.is_empty() {
            self.x_ticks
                .iter()
                .filter(|&&t| t.is_finite() && t >= xa.lo && t <= xa.hi)
                .map(|&t| (t, fmt_num(t)))
                .collect()
        } else if self.x_clock {
            clock_ticks(xa)
        } else {
            own_ticks(xa)
        };
        x_grid(s, &xticks, |v| p.px(v), T, PH, "#eee");
        if let Some(ra) = &p.right {
            for t in ra.ticks() {
                let _ = write!(
                    s,
                    r#"<text x="{}" y="{:.1}" text-anchor="start">{}</text>"#,
                    L + PW + 6.0,
                    p.py(ra, t) + 4.0,
                    fmt_num(t)
                );
            }
        }
    }

    /// The plot's frame and the axes' labels (with their scale).
    fn axis_labels(&self, s: &mut String) {
        let _ = write!(
            s,
            r##"<rect class="plot" x="{L}" y="{T}" width="{PW}" height="{PH}" fill="none" stroke="#333"/>"##
        );
        let xl = format!(
            "{}{}",
            self.x_label,
            if self.x_log { " (log scale)" } else { "" }
        );
        let yl = format!(
            "{}{}",
            self.y_label,
            if self.y_log { " (log scale)" } else { "" }
        );
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle" class="xlabel">{}</text>"#,
            L + PW / 2.0,
            H - 12.0,
            esc(&xl)
        );
        let _ = write!(
            s,
            r#"<text transform="translate(18 {}) rotate(-90)" text-anchor="middle" class="ylabel">{}</text>"#,
            T + PH / 2.0,
            esc(&yl)
        );
        if let Some((label, _)) = &self.right {
            let _ = write!(
                s,
                r#"<text transform="translate({} {}) rotate(90)" text-anchor="middle" class="ylabel">{}</text>"#,
                W - 14.0,
                T + PH / 2.0,
                esc(label)
            );
        }
    }

    /// Markers; labels of markers close together are stacked, not drawn over each other.
    fn draw_markers(&self, s: &mut String, p: &Plot) {
        let mut placed: Vec<f64> = Vec::new();
        for m in &self.markers {
            let x = p.px(m.x);
            let row = placed.iter().filter(|&&q| (q - x).abs() < 90.0).count();
            placed.push(x);
            // Near the right edge the label goes to the left of its line.
            let (lx, anchor) = if x > L + PW * 0.7 {
                (x - 4.0, "end")
            } else {
                (x + 4.0, "start")
            };
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{T}" y2="{}" stroke="#555" stroke-dasharray="2 3"/><text class="marker" x="{lx:.1}" y="{}" text-anchor="{anchor}" font-size="11" stroke="#fff" stroke-width="3" paint-order="stroke">{}</text>"##,
                T + PH,
                T + 12.0 + row as f64 * 14.0,
                esc(&m.label)
            );
        }
    }
}

/// The plot area's width and height inside the margins.
const PW: f64 = W - L - R;
const PH: f64 = H - T - B;

/// A line chart's axes, fitted: data to pixels.
struct Plot {
    x: Axis,
    y: Axis,
    right: Option<Axis>,
}

impl Plot {
    fn px(&self, v: f64) -> f64 {
        L + self.x.frac(v) * PW
    }

    fn py(&self, a: &Axis, v: f64) -> f64 {
        T + (1.0 - a.frac(v)) * PH
    }

    /// The series against axis `a`: one polyline per run of points no further apart than
    /// `gap`, a dot per point (a long or dashed series keeps only lone points' dots), labels.
    fn draw_series(
        &self,
        s: &mut String,
        ss: &[Series],
        a: &Axis,
        offset: usize,
        gap: Option<f64>,
    ) {
        for (i, se) in ss.iter().enumerate() {
            let colour = PALETTE[se.colour.unwrap_or(i + offset) % PALETTE.len()];
            let gap = if se.unbroken { None } else { gap };
            let kept: Vec<(usize, f64, f64)> = se
                .points
                .iter()
                .enumerate()
                .filter(|(_, p)| p.0.is_finite() && p.1.is_finite() && (!a.log || p.1 > 0.0))
                .map(|(j, &(x, y))| (j, x, y))
                .collect();
            let dash = if se.dashed {
                r#" stroke-dasharray="6 4""#
            } else {
                ""
            };
            // One polyline per run of points no further apart than the gap.
            let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
            let mut prev: Option<f64> = None;
            for &(_, x, y) in &kept {
                let broken = matches!((prev, gap), (Some(p), Some(g)) if x - p > g);
                if runs.is_empty() || broken {
                    runs.push(Vec::new());
                }
                runs.last_mut()
                    .expect("pushed")
                    .push((self.px(x), self.py(a, y)));
                prev = Some(x);
            }
            if runs.is_empty() {
                runs.push(Vec::new());
            }
            for run in &runs {
                let pts: Vec<String> = run.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
                let _ = write!(
                    s,
                    r#"<polyline class="series" data-series="{}" fill="none" stroke="{colour}" stroke-width="2"{dash} points="{}"/>"#,
                    esc(&se.name),
                    pts.join(" ")
                );
            }
            // A dashed series is a fitted curve, and a long time series would be a smear
            // of dots: no point markers then (a lone point between gaps keeps its dot).
            let dots = !se.dashed && kept.len() <= 200;
            for (j, x, y) in kept.iter().copied() {
                let (cx, cy) = (self.px(x), self.py(a, y));
                if let Some(f) = se.flags.get(j).filter(|f| !f.is_empty()) {
                    let _ = write!(
                        s,
                        r##"<circle class="flag" cx="{cx:.1}" cy="{cy:.1}" r="7" fill="none" stroke="#c00" stroke-width="2"/><text class="flaglabel" x="{cx:.1}" y="{:.1}" text-anchor="middle" font-size="10" fill="#c00" stroke="#fff" stroke-width="3" paint-order="stroke">{}</text>"##,
                        // Under the ring, or over it near the plot's bottom (the ticks and
                        // the legend are below the plot).
                        if cy > T + PH * 0.8 {
                            cy - 11.0
                        } else {
                            cy + 18.0
                        },
                        esc(f)
                    );
                }
                let lone = runs.iter().any(|r| r.len() == 1 && r[0] == (cx, cy));
                if !(dots || lone) {
                    continue;
                }
                let _ = write!(
                    s,
                    r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="3" fill="{colour}"/>"#
                );
                if let Some(l) = se.labels.get(j) {
                    // Near the right edge the label goes to the left of its point.
                    let (lx, anchor) = if cx > L + PW * 0.85 {
                        (cx - 5.0, "end")
                    } else {
                        (cx + 5.0, "start")
                    };
                    let _ = write!(
                        s,
                        r##"<text class="pointlabel" x="{lx:.1}" y="{:.1}" text-anchor="{anchor}" font-size="10" fill="#333" stroke="#fff" stroke-width="3" paint-order="stroke">{}</text>"##,
                        cy - 5.0,
                        esc(l)
                    );
                }
            }
        }
    }
}

/// A horizontal dot chart: one row per category, several named values per row on a shared
/// (optionally log) x axis, drawn as distinct shapes joined by a grey range line. Used for
/// latency percentiles per fsync method.
#[derive(Debug, Clone, PartialEq)]
pub struct DotChart {
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub x_log: bool,
    /// The names of the values in each row (legend order), e.g. p50, p95, p99.
    pub keys: Vec<String>,
    /// (row label, one value per key; None when missing).
    pub rows: Vec<(String, Vec<Option<f64>>)>,
}

const DOT_L: f64 = 230.0;
const ROW_H: f64 = 20.0;

fn shape(i: usize, x: f64, y: f64, colour: &str) -> String {
    match i % 3 {
        0 => format!(r#"<circle class="dot" cx="{x:.1}" cy="{y:.1}" r="4.5" fill="{colour}"/>"#),
        1 => format!(
            r#"<rect class="dot" x="{:.1}" y="{:.1}" width="8" height="8" fill="{colour}"/>"#,
            x - 4.0,
            y - 4.0
        ),
        _ => format!(
            r#"<path class="dot" d="M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{colour}"/>"#,
            y - 5.0,
            x + 5.0,
            y + 4.0,
            x - 5.0,
            y + 4.0
        ),
    }
}

impl DotChart {
    pub fn to_svg(&self) -> String {
        let vals = self.rows.iter().flat_map(|r| r.1.iter().flatten().copied());
        let xa = Axis::fit(vals, self.x_log, !self.x_log);
        let legend_h = 24.0;
        let ph = self.rows.len().max(1) as f64 * ROW_H;
        let h = T + legend_h + ph + B;
        let pw = W - DOT_L - 30.0;
        let top = T + legend_h;
        let px = |v: f64| DOT_L + xa.frac(v) * pw;
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" id="{id}" class="chart" viewBox="0 0 {W} {h}" width="{W}" height="{h}" role="img" aria-labelledby="{id}-title" font-family="sans-serif" font-size="12">"#,
            id = esc(&self.id)
        );
        let _ = write!(
            s,
            r##"<title id="{}-title">{}</title><rect x="0" y="0" width="{W}" height="{h}" fill="#fff"/><text x="{}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"##,
            esc(&self.id),
            esc(&self.title),
            W / 2.0,
            esc(&self.title)
        );
        x_grid(&mut s, &own_ticks(&xa), px, top, ph, "#e4e4e4");
        let _ = write!(
            s,
            r##"<rect class="plot" x="{DOT_L}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/><text x="{}" y="{}" text-anchor="middle" class="xlabel">{}{}</text>"##,
            DOT_L + pw / 2.0,
            h - 12.0,
            esc(&self.x_label),
            if self.x_log { " (log scale)" } else { "" }
        );
        for (k, key) in self.keys.iter().enumerate() {
            let x = DOT_L + k as f64 * 90.0;
            let _ = write!(
                s,
                r#"<g class="legend">{}<text x="{:.1}" y="{:.1}">{}</text></g>"#,
                shape(k, x + 6.0, T + 8.0, PALETTE[k % PALETTE.len()]),
                x + 16.0,
                T + 12.0,
                esc(key)
            );
        }
        for (i, (label, values)) in self.rows.iter().enumerate() {
            let y = top + (i as f64 + 0.5) * ROW_H;
            if i % 2 == 1 {
                let _ = write!(
                    s,
                    r##"<rect x="{DOT_L}" y="{:.1}" width="{pw}" height="{ROW_H}" fill="#f6f6f6"/>"##,
                    y - ROW_H / 2.0
                );
            }
            let _ = write!(
                s,
                r#"<text x="{}" y="{:.1}" text-anchor="end" class="rowlabel">{}</text>"#,
                DOT_L - 8.0,
                y + 4.0,
                esc(label)
            );
            let xs: Vec<f64> = values
                .iter()
                .flatten()
                .filter(|v| v.is_finite() && (!self.x_log || **v > 0.0))
                .map(|&v| px(v))
                .collect();
            if let (Some(a), Some(b)) = (
                xs.iter().copied().reduce(f64::min),
                xs.iter().copied().reduce(f64::max),
            ) {
                let _ = write!(
                    s,
                    r##"<path class="range" d="M{a:.1},{y:.1} H{b:.1}" stroke="#999" stroke-width="2"/>"##
                );
            }
            for (k, v) in values.iter().enumerate() {
                if let Some(v) = v.filter(|v| v.is_finite() && (!self.x_log || *v > 0.0)) {
                    s.push_str(&shape(k, px(v), y, PALETTE[k % PALETTE.len()]));
                }
            }
        }
        s.push_str("</svg>");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_axis_ends_for_any_input() {
        let odd = [
            vec![1e16],
            vec![1e16, 1e16 + 2.0],
            vec![0.0, 1e16],
            vec![f64::MAX],
            vec![-f64::MAX, f64::MAX],
            vec![f64::MIN_POSITIVE],
            vec![5e-324],
            vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY],
            vec![],
            vec![-3.0, -3.0],
        ];
        for vals in &odd {
            for log in [false, true] {
                for zero in [false, true] {
                    let a = Axis::fit(vals.iter().copied(), log, zero);
                    assert!(a.lo.is_finite() && a.hi.is_finite(), "{vals:?} {a:?}");
                    let t = a.ticks();
                    assert!(
                        !t.is_empty() && t.len() <= MAX_TICKS + 3,
                        "{vals:?} {log}: {}",
                        t.len()
                    );
                }
            }
        }
    }

    #[test]
    fn numbers_are_compact() {
        assert_eq!(fmt_num(1500.0), "1500");
        assert_eq!(fmt_num(15000.0), "15k");
        assert_eq!(fmt_num(2_500_000.0), "2.5M");
        assert_eq!(fmt_num(0.25), "0.25");
        assert_eq!(fmt_num(64.0), "64");
    }

    #[test]
    fn log_axis_fits_the_data() {
        let a = Axis::fit([0.14, 1.95].into_iter(), true, false);
        assert_eq!((a.lo, a.hi), (0.1, 2.0));
        let a = Axis::fit([1.0, 2.0, 4.0, 8.0, 16.0].into_iter(), true, false);
        assert_eq!((a.lo, a.hi), (1.0, 20.0));
        assert_eq!(a.ticks(), vec![1.0, 2.0, 5.0, 10.0, 20.0]);
        let a = Axis::fit([5.0, 512.0].into_iter(), true, false);
        assert_eq!((a.lo, a.hi), (5.0, 1000.0));
        assert_eq!(
            a.ticks(),
            vec![5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
        );
        let a = Axis::fit([1.0, 256.0].into_iter(), true, false);
        assert_eq!((a.lo, a.hi), (1.0, 300.0));
        let a = Axis::fit([0.1, 10.0].into_iter(), true, false);
        assert_eq!((a.lo, a.hi), (0.1, 10.0));
        assert!((a.frac(1.0) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn marker_labels_at_the_same_x_are_stacked() {
        let mut c = LineChart::new("t", "t", "x", "y");
        c.series
            .push(Series::new("s", vec![(1.0, 1.0), (64.0, 2.0)]));
        for l in ["knee 64", "overload 64"] {
            c.markers.push(Marker {
                x: 64.0,
                label: l.into(),
            });
        }
        let svg = c.to_svg();
        let ys: Vec<&str> = svg
            .split(r#"class="marker""#)
            .skip(1)
            .map(|t| t.split("y=\"").nth(1).unwrap().split('"').next().unwrap())
            .collect();
        assert_eq!(ys.len(), 2);
        assert_ne!(ys[0], ys[1], "labels drawn at the same place: {ys:?}");
    }

    #[test]
    fn a_flagged_point_is_ringed_and_named_whatever_the_series_style() {
        let mut c = LineChart::new("t", "t", "x", "y");
        c.series.push(
            Series::new("p99", vec![(1.0, 1.0), (2.0, 2.0), (3.0, 9.0)])
                .dashed()
                .flagged(vec![String::new(), String::new(), "behind".into()]),
        );
        let svg = c.to_svg();
        assert_eq!(svg.matches(r#"class="flag""#).count(), 1, "{svg}");
        assert!(svg.contains(">behind</text>"), "{svg}");
    }

    #[test]
    fn chart_has_series_legend_and_axis_labels() {
        let mut c = LineChart::new("t", "IOPS vs concurrency", "concurrency", "IOPS");
        c.x_log = true;
        c.series
            .push(Series::new("IOPS", vec![(1.0, 7113.0), (4.0, 26248.0)]));
        c.markers.push(Marker {
            x: 4.0,
            label: "knee".into(),
        });
        let svg = c.to_svg();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains("concurrency (log scale)"));
        assert!(svg.contains(">knee<"));
        assert!(svg.contains(r#"class="legend""#));
    }

    #[test]
    fn legend_below_the_plot_ticks_at_the_levels_and_gaps_break_lines() {
        let mut c = LineChart::new("t", "t", "x", "y");
        c.x_ticks = vec![1.0, 2.0, 4.0, 8.0, 16.0];
        c.series.push(Series::new(
            "s",
            vec![(1.0, 1.0), (2.0, 2.0), (12.0, 3.0), (16.0, 4.0)],
        ));
        c.x_gap = Some(4.0);
        let svg = c.to_svg();
        // Ticks at the levels, not at 1, 2, 5, 10, 20.
        let ticks: Vec<&str> = svg
            .split(r#"class="xtick""#)
            .skip(1)
            .map(|t| t.split('>').nth(1).unwrap().split('<').next().unwrap())
            .collect();
        assert_eq!(ticks, ["1", "2", "4", "8", "16"]);
        // 2 → 12 is further than the gap: two lines.
        assert_eq!(svg.matches("<polyline").count(), 2);
        // Every legend entry is below the plot area.
        for g in svg.split(r#"<g class="legend">"#).skip(1) {
            let y: f64 = g
                .split("y1=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert!(y > H - B, "legend at {y}, inside the plot");
        }
    }

    #[test]
    fn clock_axis_labels_utc_time_of_day() {
        assert_eq!(clock(1_700_000_000.0), "22:13:20");
        let a = Axis::fit([1_700_000_000.0, 1_700_000_060.0].into_iter(), false, false);
        let t = clock_ticks(&a);
        assert!(t.len() >= 3 && t.len() <= 8, "{t:?}");
        assert!(t.iter().all(|(v, _)| v.fract() == 0.0));
    }

    #[test]
    fn text_is_escaped() {
        let c = LineChart::new("t", "a<b & c", "x", "y");
        assert!(c.to_svg().contains("a&lt;b &amp; c"));
    }

    #[test]
    fn dot_chart_draws_every_row() {
        let c = DotChart {
            id: "d".into(),
            title: "latency".into(),
            x_label: "ms".into(),
            x_log: true,
            keys: vec!["p50".into(), "p95".into(), "p99".into()],
            rows: vec![
                ("fsync 4k".into(), vec![Some(0.4), Some(4.4), Some(11.8)]),
                ("odsync 4k".into(), vec![Some(0.17), None, Some(2.0)]),
            ],
        };
        let svg = c.to_svg();
        assert_eq!(svg.matches(r#"class="range""#).count(), 2);
        // 3 legend shapes + 5 values.
        assert_eq!(svg.matches(r#"class="dot""#).count(), 8);
        assert!(svg.contains(">odsync 4k<") && svg.contains("ms (log scale)"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }
}
