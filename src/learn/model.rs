//! The learned model of one device: per direction (reads, writes), request-size class and
//! in-flight bucket, decayed counts of intervals and requests, the time requests spent in
//! flight, the per-interval mean latencies' first two moments (for the baseline's standard
//! error), the most IOPS seen, and a small sparse latency histogram (p50/p95/p99). Fed one
//! [`Point`] per interval and direction; bounded (at most 2 × 3 × [`NBUCKETS`] buckets, each
//! with at most [`HIST_BINS`] bins); ageing is deterministic given the points' timestamps.
//! Pure.
//! Imports only: analysis/state.rs, analysis/learned.rs.

use serde::{Deserialize, Serialize};

/// Upper edges of the in-flight buckets (requests in flight = Δtime_ms / Δt_ms, Little's law).
/// Bucket 0 is [0, 1.5): a request mostly alone, what a baseline is; then [1.5, 3) ≈ 2,
/// [3, 6) ≈ 4, … doubling like the sweep's levels 1, 2, 4, …; the last bucket is 192 and more.
pub const INFLIGHT_EDGES: [f64; NBUCKETS - 1] = [1.5, 3.0, 6.0, 12.0, 24.0, 48.0, 96.0, 192.0];
pub const NBUCKETS: usize = 9;

/// The bucket of an interval's mean requests in flight.
pub fn bucket_of(in_flight: f64) -> usize {
    INFLIGHT_EDGES
        .iter()
        .position(|&e| in_flight < e)
        .unwrap_or(NBUCKETS - 1)
}

/// Ageing: a point's weight halves every week, so last month's traffic still counts but a
/// device's behaviour this week decides.
pub const HALF_LIFE_NS: i64 = 7 * 24 * 3600 * 1_000_000_000;
/// Weights are aged in steps of an hour (not at every point: that would touch every bucket
/// each second); within an hour, a point weighs 1.
pub const DECAY_STEP_NS: i64 = 3600 * 1_000_000_000;

/// Latency histogram: 4 bins per octave (a bin's geometric centre is within 9 % of any value
/// in it) from 1.024 µs (bin 0 holds everything faster) to 2^36 ns (69 s, the last bin).
pub const HIST_BINS_PER_OCTAVE: f64 = 4.0;
const HIST_MIN_LOG2: f64 = 10.0;
pub const HIST_BINS: usize = 26 * 4;

/// The quarter-octave steps 2^(1/4), 2^(2/4), 2^(3/4): a mantissa in [1, 2) at or above k of
/// them is in the octave's k-th bin.
const QUARTER_OCTAVES: [f64; 3] = [
    1.189_207_115_002_721,
    std::f64::consts::SQRT_2,
    1.681_792_830_507_429,
];

/// floor((log2 ns − 10) × 4), clamped to the bins: the octave from the float's exponent and
/// the quarter from three comparisons of its mantissa (a log2 per point was a tenth of
/// learning's cost with 1,000 devices).
fn hist_bin(ns: f64) -> u8 {
    if ns.is_nan() || ns <= 0.0 {
        return 0;
    }
    if !ns.is_normal() {
        // Subnormal (far below the first bin) or infinite (the last).
        return if ns.is_infinite() {
            (HIST_BINS - 1) as u8
        } else {
            0
        };
    }
    let bits = ns.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mantissa = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    let quarter = QUARTER_OCTAVES.iter().filter(|&&q| mantissa >= q).count() as i64;
    let b = (exp - HIST_MIN_LOG2 as i64) * HIST_BINS_PER_OCTAVE as i64 + quarter;
    b.clamp(0, (HIST_BINS - 1) as i64) as u8
}

/// The geometric centre of a bin in ns.
fn hist_centre_ns(bin: u8) -> f64 {
    (HIST_MIN_LOG2 + (f64::from(bin) + 0.5) / HIST_BINS_PER_OCTAVE).exp2()
}

/// [`hist_centre_ns`] as a learned figure ([`figure`]), each bin's worked out once: every
/// estimate reads a p95 and a p99 per level, each an `exp2` and a rounding.
fn hist_centre_figure(bin: u8) -> f64 {
    static CENTRES: std::sync::OnceLock<[f64; HIST_BINS]> = std::sync::OnceLock::new();
    CENTRES.get_or_init(|| std::array::from_fn(|b| figure(hist_centre_ns(b as u8))))
        [usize::from(bin).min(HIST_BINS - 1)]
}

/// The one direction type (analysis/state.rs), here under learning's old name.
pub use crate::analysis::state::Dir;

pub use crate::analysis::learned::{SizeClass, MERGE_TOLERANCE};

/// One interval of one direction: one point of Little's law.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub dir: Dir,
    /// The interval's end (wall clock), for ageing.
    pub wall_ns: i64,
    /// The part of the interval the device was busy (points.rs; the whole interval when
    /// nearly all of it was): the requests' rate while busy, what the curve is made of.
    pub interval_s: f64,
    /// The whole interval: the rate over it is what the device served, and what its
    /// headroom is counted from.
    pub whole_s: f64,
    /// Requests completed in the interval (Δios).
    pub requests: f64,
    /// Time those requests spent in flight (Δtime_ms, in ms).
    pub busy_ms: f64,
    /// Bytes moved (Δsectors · 512).
    pub bytes: f64,
    /// Block-layer percentiles of the interval, when that source runs.
    pub pcts_ns: Option<[f64; 3]>,
    /// The device's own mean time per request (issue 40: the block layer's split), when
    /// most of the direction's requests were split.
    pub device_ns: Option<f64>,
    /// The other direction's requests in the same interval (reads for a write point): what
    /// else the device served while this point's level was learned, so that a ceiling
    /// learned beside few writes is not read as headroom beside many.
    pub other_requests: f64,
}

impl Point {
    pub fn in_flight(&self) -> f64 {
        self.busy_ms / (self.interval_s * 1e3)
    }
    pub fn iops(&self) -> f64 {
        self.requests / self.interval_s
    }
    /// Requests per second over the whole interval, idle part included.
    pub fn interval_iops(&self) -> f64 {
        self.requests / self.whole_s
    }
    /// The other direction's requests per second over the whole interval.
    pub fn other_interval_iops(&self) -> f64 {
        self.other_requests / self.whole_s
    }
    pub fn mean_latency_ns(&self) -> f64 {
        self.busy_ms * 1e6 / self.requests
    }
    pub fn size_class(&self) -> SizeClass {
        SizeClass::of(self.bytes / self.requests)
    }
    /// Is there something to learn (requests completed over a positive interval)?
    pub fn usable(&self) -> bool {
        self.requests >= 1.0 && self.interval_s > 0.0 && self.busy_ms.is_finite()
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// One in-flight bucket of one series. All weights are decayed (see [`HALF_LIFE_NS`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Bucket {
    /// Σ w: intervals.
    #[serde(skip_serializing_if = "is_zero")]
    pub intervals: f64,
    /// Σ w²: for the effective number of intervals (Kish), (Σw)² / Σw².
    #[serde(skip_serializing_if = "is_zero")]
    pub intervals_sq: f64,
    /// Σ w · requests.
    #[serde(skip_serializing_if = "is_zero")]
    pub requests: f64,
    /// Σ w · interval seconds.
    #[serde(skip_serializing_if = "is_zero")]
    pub seconds: f64,
    /// Σ w · Δtime_ms: with `requests` the request-weighted mean latency, with `seconds` the
    /// mean in flight.
    #[serde(skip_serializing_if = "is_zero")]
    pub busy_ms: f64,
    /// Σ w · bytes.
    #[serde(skip_serializing_if = "is_zero")]
    pub bytes: f64,
    /// Σ w · m and Σ w · m² of the per-interval mean latencies m (ms): their spread.
    #[serde(skip_serializing_if = "is_zero")]
    pub lat_ms: f64,
    #[serde(skip_serializing_if = "is_zero")]
    pub lat_ms_sq: f64,
    /// Σ w · requests of intervals with block-layer percentiles: the histogram holds real
    /// percentiles, not interval means, when these are most of the requests.
    #[serde(skip_serializing_if = "is_zero")]
    pub pct_requests: f64,
    /// Σ w · requests of intervals with the device's own time (issue 40), and Σ w · their
    /// device time (ms): the device-time baseline at the baseline's level.
    #[serde(skip_serializing_if = "is_zero")]
    pub dev_requests: f64,
    #[serde(skip_serializing_if = "is_zero")]
    pub dev_ms: f64,
    /// Σ w · the other direction's requests, and Σ w · whole-interval seconds of the intervals
    /// that carried that figure (none before it was kept: an older state's bucket has no
    /// such figure, not a zero one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub other_requests: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub other_seconds: f64,
    /// The most IOPS an interval of this bucket served (not aged: a peak is a peak).
    #[serde(skip_serializing_if = "is_zero")]
    pub max_iops: f64,
    /// Sparse latency histogram: (bin, Σ w · requests), bins ascending.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hist: Vec<(u8, f32)>,
}

impl Bucket {
    pub fn is_empty(&self) -> bool {
        self.intervals == 0.0
    }

    fn add_hist(&mut self, ns: f64, w: f64) {
        let b = hist_bin(ns);
        match self.hist.binary_search_by_key(&b, |e| e.0) {
            Ok(i) => self.hist[i].1 += w as f32,
            Err(i) => self.hist.insert(i, (b, w as f32)),
        }
    }

    fn add(&mut self, p: &Point) {
        let m_ms = p.busy_ms / p.requests;
        self.intervals += 1.0;
        self.intervals_sq += 1.0;
        self.requests += p.requests;
        self.seconds += p.interval_s;
        self.busy_ms += p.busy_ms;
        self.bytes += p.bytes;
        self.lat_ms += m_ms;
        self.lat_ms_sq += m_ms * m_ms;
        self.max_iops = self.max_iops.max(p.iops());
        self.other_requests += p.other_requests;
        self.other_seconds += p.whole_s;
        if let Some(d) = p.device_ns {
            self.dev_requests += p.requests;
            self.dev_ms += p.requests * d / 1e6;
        }
        match p.pcts_ns {
            // The interval's distribution as three masses: half at its p50, 45 % at its p95,
            // 5 % at its p99, so that merging identical intervals gives back their p50, p95
            // and p99 (to the bin).
            Some([p50, p95, p99]) => {
                self.pct_requests += p.requests;
                self.add_hist(p50, 0.50 * p.requests);
                self.add_hist(p95, 0.45 * p.requests);
                self.add_hist(p99, 0.05 * p.requests);
            }
            None => self.add_hist(m_ms * 1e6, p.requests),
        }
    }

    fn scale(&mut self, f: f64) {
        self.intervals *= f;
        self.intervals_sq *= f * f;
        self.requests *= f;
        self.seconds *= f;
        self.busy_ms *= f;
        self.bytes *= f;
        self.lat_ms *= f;
        self.lat_ms_sq *= f * f;
        self.pct_requests *= f;
        self.dev_requests *= f;
        self.dev_ms *= f;
        self.other_requests *= f;
        self.other_seconds *= f;
        for e in &mut self.hist {
            e.1 *= f as f32;
        }
    }

    /// The other direction's IOPS while this bucket's intervals were learned (over the
    /// whole intervals, as the headroom counts the traffic); None where no interval kept it.
    pub fn other_iops(&self) -> Option<f64> {
        (self.other_seconds > 0.0).then(|| figure(self.other_requests / self.other_seconds))
    }

    /// The request-weighted mean latency (Σ time / Σ requests).
    pub fn mean_latency_ns(&self) -> Option<f64> {
        (self.requests > 0.0).then(|| figure(self.busy_ms * 1e6 / self.requests))
    }

    /// The device's own mean time per request (issue 40), when at least half the bucket's
    /// requests came with it.
    pub fn device_latency_ns(&self) -> Option<f64> {
        (self.dev_requests > 0.0 && self.dev_requests * 2.0 >= self.requests)
            .then(|| figure(self.dev_ms * 1e6 / self.dev_requests))
    }

    /// The mean requests in flight over the bucket's intervals.
    pub fn in_flight(&self) -> f64 {
        if self.seconds > 0.0 {
            figure(self.busy_ms / (self.seconds * 1e3))
        } else {
            0.0
        }
    }

    pub fn iops(&self) -> f64 {
        if self.seconds > 0.0 {
            figure(self.requests / self.seconds)
        } else {
            0.0
        }
    }

    pub fn bytes_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            figure(self.bytes / self.seconds)
        } else {
            0.0
        }
    }

    /// The effective number of intervals (Kish): decayed weights count less.
    pub fn effective_intervals(&self) -> f64 {
        if self.intervals_sq > 0.0 {
            self.intervals * self.intervals / self.intervals_sq
        } else {
            0.0
        }
    }

    /// The standard error of the mean of per-interval mean latencies, in ns.
    pub fn latency_se_ns(&self) -> Option<f64> {
        let n = self.effective_intervals();
        if n < 2.0 || self.intervals <= 0.0 {
            return None;
        }
        let mean = self.lat_ms / self.intervals;
        // In f64, rounding can make a zero variance slightly negative.
        let var = (self.lat_ms_sq / self.intervals - mean * mean).max(0.0) * n / (n - 1.0);
        Some((var / n).sqrt() * 1e6)
    }

    /// The `q` quantile of the histogram (a bin's centre), in ns.
    pub fn quantile_ns(&self, q: f64) -> Option<f64> {
        self.quantile_bin(q).map(hist_centre_figure)
    }

    /// The bin the `q` quantile falls in.
    fn quantile_bin(&self, q: f64) -> Option<u8> {
        let total: f64 = self.hist.iter().map(|e| f64::from(e.1)).sum();
        if total <= 0.0 {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * total;
        let mut below = 0.0;
        for &(b, w) in &self.hist {
            below += f64::from(w);
            // A tolerance for f32 sums: identical intervals put exactly q of the mass here.
            if below >= rank * (1.0 - 1e-6) {
                return Some(b);
            }
        }
        self.hist.last().map(|e| e.0)
    }

    /// An upper quantile (p95, p99) at `q`: its bin's centre, but, from interval means, never
    /// below the bucket's mean when the mean falls in the same bin. The centre is within 9 %
    /// of any value in its bin, and a device whose every request takes 1.00 ms read "1.00 ms
    /// mean, 0.962 ms p95": a p95 below the mean of the values that make it, which no steady
    /// device has. Raised to the mean it stays in the bin (the values' mean is in it). From
    /// block-layer percentiles the bin holds other percentiles' masses, whose mean is not the
    /// bucket's: the centre.
    fn upper_quantile_ns(&self, q: f64) -> Option<f64> {
        let b = self.quantile_bin(q)?;
        let centre = hist_centre_figure(b);
        if self.has_percentiles() {
            return Some(centre);
        }
        Some(match self.mean_latency_ns() {
            Some(m) if m > centre && hist_bin(m) == b => m,
            _ => centre,
        })
    }

    /// The bucket's p95 and p99 (ns), each by one rule wherever a level is read. From interval
    /// means: their 95th and 99th percentiles. From the block layer's percentiles (each
    /// interval's p50, p95, p99 as masses of 50, 45 and 5 % of its requests): the typical
    /// interval's p95 and p99, the middle of their masses (0.5 + 0.45/2 and 0.95 + 0.05/2).
    /// The masses' own 0.95 quantile lands on the edge of the p99 masses: on a busy host, or a
    /// device whose p99 is several times its p95, the baseline's level would then read
    /// above the target drawn from its own p95 (issue 37, case 7; CI on 2026-11-29).
    pub fn p95_ns(&self) -> Option<f64> {
        self.upper_quantile_ns(if self.has_percentiles() {
            0.5 + 0.45 / 2.0
        } else {
            0.95
        })
    }

    /// See [`Bucket::p95_ns`].
    pub fn p99_ns(&self) -> Option<f64> {
        self.upper_quantile_ns(if self.has_percentiles() {
            0.95 + 0.05 / 2.0
        } else {
            0.99
        })
    }

    /// Do most of its requests come with block-layer percentiles?
    pub fn has_percentiles(&self) -> bool {
        self.requests > 0.0 && self.pct_requests >= 0.5 * self.requests
    }

    /// Round the stored figures to what they are worth (four significant digits; histogram
    /// weights to three), so a state file stays small.
    fn compact(&mut self) {
        let r = |x: &mut f64| *x = round_sig(*x, 4);
        for x in [
            &mut self.intervals,
            &mut self.intervals_sq,
            &mut self.requests,
            &mut self.seconds,
            &mut self.busy_ms,
            &mut self.bytes,
            &mut self.lat_ms,
            &mut self.lat_ms_sq,
            &mut self.pct_requests,
            &mut self.max_iops,
            &mut self.other_requests,
            &mut self.other_seconds,
        ] {
            r(x);
        }
        self.hist.retain(|e| e.1 > 1e-3);
        for e in &mut self.hist {
            e.1 = round_sig(f64::from(e.1), 3) as f32;
        }
    }
}

/// `x` to `digits` significant digits, as the nearest float to that decimal (so it prints as
/// it: scaled by an exact power of ten, multiplied or divided, never by a float such as 1e-3
/// that is not one). Every learned figure goes through it when a curve is estimated (nine
/// digits, [`figure`]): `log10`, `powi` and `round` were two fifths of an estimate's
/// instructions (issue 37's cost). Now the decimal exponent is found in a table
/// ([`decimal_exponent`]: the exponent `x` prints with, where `log10`'s floor was one off
/// for a float within an ulp or two of a power of ten), the power taken from the table (what
/// `powi` gave: products of exact powers of ten) and rounded by [`round`] (the library's,
/// bit for bit).
fn round_sig(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let e = digits - 1 - decimal_exponent(x.abs());
    match e {
        0..=22 => {
            let p = DECADES[22 + e as usize];
            round(x * p) / p
        }
        -22..=-1 => {
            let p = DECADES[22 + (-e) as usize];
            round(x / p) * p
        }
        // Beyond the exact powers of ten: nothing a figure of a device reaches.
        _ => x,
    }
}

/// 10^-22 to 10^22 as literals, each the float nearest its power: the decimal exponents
/// [`decimal_exponent`] finds, and from 10^0 up the powers exactly (5^22 < 2^53) that
/// [`round_sig`] scales by.
const DECADES: [f64; 45] = [
    1e-22, 1e-21, 1e-20, 1e-19, 1e-18, 1e-17, 1e-16, 1e-15, 1e-14, 1e-13, 1e-12, 1e-11, 1e-10,
    1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
    1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The decimal exponent of a finite `a` > 0: that of the shortest decimal that gives `a`
/// back (what it prints as: 0.001 is 1e-3, the float below it 9.999999999999998e-4), which
/// is k where DECADES' literal for 10^k <= a < its literal for 10^(k+1) (the float nearest
/// a power prints as that power; a float below it, below). Outside the table (no figure of
/// a device), from that decimal itself.
fn decimal_exponent(a: f64) -> i32 {
    if (DECADES[0]..1e23).contains(&a) {
        // The table's entry at or below `a`, started from floor(log2 a) (the exponent's bits:
        // `a` is normal here) times log10 2 in fixed point (exact for exponents this small),
        // which is that entry or the one above or below it: a comparison or two instead of a
        // search of the table (round_sig was ~90 instructions a figure, a third of an
        // estimate's: issue 37's cost).
        let e2 = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        let mut i = (((e2 * 78_913) >> 18) + 22).clamp(0, 44) as usize;
        while i > 0 && DECADES[i] > a {
            i -= 1;
        }
        while i < 44 && DECADES[i + 1] <= a {
            i += 1;
        }
        return i as i32 - 22;
    }
    let s = format!("{a:e}");
    s[s.find('e').expect("{:e} writes an exponent") + 1..]
        .parse()
        .expect("{:e} writes an integer exponent")
}

/// `y.round()` (half away from zero), exactly, without the library call it is on a CPU
/// baseline without SSE4.1: below 2^52 the integer part by conversion, the half compared
/// exactly (no `y + 0.5`, which rounds 0.49999999999999994 up); at or above, `y` is whole.
pub(super) fn round(y: f64) -> f64 {
    let a = y.abs();
    if a >= 4_503_599_627_370_496.0 || a.is_nan() {
        // 2^52 and above (whole already), infinities and NaN.
        return y;
    }
    // Through i64 (a < 2^52 fits): one conversion each way, where u64's take several.
    let t = a as i64 as f64;
    let r = if a - t >= 0.5 { t + 1.0 } else { t };
    r.copysign(y)
}

/// A learned figure as it is given (a bucket's mean latency, in flight, IOPS, bytes): to nine
/// significant digits. Sums of thousands of interval lengths and times carry float noise
/// (1,000 IOPS read 1000.000000000015, one in flight 1.0000000000000135, and headroom
/// 400.000000000015 from them) that no counter measured; nine digits keep every digit a
/// counter can give. Computed when a curve is estimated, not per interval.
pub(super) fn figure(x: f64) -> f64 {
    round_sig(x, 9)
}

/// The buckets of one direction and request-size class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub dir: Dir,
    pub size_class: SizeClass,
    pub buckets: Vec<Bucket>,
}

impl Series {
    fn new(dir: Dir, size_class: SizeClass) -> Series {
        Series {
            dir,
            size_class,
            buckets: vec![Bucket::default(); NBUCKETS],
        }
    }

    pub fn intervals(&self) -> f64 {
        self.buckets.iter().map(|b| b.intervals).sum()
    }
}

/// Everything learned about one device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceModel {
    /// The time the weights are relative to (the last ageing step).
    pub ref_wall_ns: Option<i64>,
    /// The first and the last interval learned from (wall clock).
    pub first_wall_ns: Option<i64>,
    pub last_wall_ns: Option<i64>,
    /// Intervals with traffic learned from, not aged (what "learned from N intervals" says).
    pub intervals_seen: u64,
    /// Seconds of those intervals, not aged.
    pub seconds_seen: f64,
    pub series: Vec<Series>,
}

impl DeviceModel {
    /// Age the weights to `wall_ns` when an ageing step has passed.
    fn age_to(&mut self, wall_ns: i64) {
        let r = *self.ref_wall_ns.get_or_insert(wall_ns);
        // Timestamps come from recordings too (any i64): the difference is taken wide, so two
        // far-apart stamps age everything rather than overflow.
        let dt = i128::from(wall_ns) - i128::from(r);
        if dt < i128::from(DECAY_STEP_NS) {
            // Time going back (a clock step) ages nothing.
            return;
        }
        let f = 0.5f64.powf(dt as f64 / HALF_LIFE_NS as f64);
        for s in &mut self.series {
            for b in &mut s.buckets {
                b.scale(f);
            }
        }
        self.ref_wall_ns = Some(wall_ns);
    }

    /// One interval of a device: the points of its directions (at most one each).
    /// Intervals without traffic teach nothing and are not counted ("learned from N
    /// intervals" counts traffic).
    pub fn add_interval(&mut self, wall_ns: i64, interval_s: f64, points: &[Point]) {
        self.add_interval_watching(wall_ns, interval_s, points, |_, _| (0, 0));
    }

    /// [`DeviceModel::add_interval`], saying whether the bucket of a point rose in
    /// `standing` (what the estimator can make of a bucket, by its index in the series, and
    /// the most it can make of that bucket: estimate::standing), so that a level the curve
    /// can use now is estimated at once.
    pub fn add_interval_watching(
        &mut self,
        wall_ns: i64,
        interval_s: f64,
        points: &[Point],
        standing: impl Fn(&Bucket, usize) -> (u8, u8),
    ) -> bool {
        if !points.iter().any(Point::usable) {
            return false;
        }
        self.age_to(wall_ns);
        self.first_wall_ns.get_or_insert(wall_ns);
        self.last_wall_ns = Some(wall_ns);
        self.intervals_seen += 1;
        self.seconds_seen += interval_s;
        let mut rose = false;
        for p in points.iter().filter(|p| p.usable()) {
            let class = p.size_class();
            let i = match self
                .series
                .iter()
                .position(|s| s.dir == p.dir && s.size_class == class)
            {
                Some(i) => i,
                None => {
                    self.series.push(Series::new(p.dir, class));
                    self.series.len() - 1
                }
            };
            let b = bucket_of(p.in_flight());
            let bucket = &mut self.series[i].buckets[b];
            let (before, most) = standing(bucket, b);
            bucket.add(p);
            // A bucket at the most it can be (the baseline's, a level's) rises no further:
            // asked once (a steady device's every interval).
            rose |= before < most && standing(bucket, b).0 > before;
        }
        rose
    }

    pub fn series(&self, dir: Dir, class: SizeClass) -> Option<&Series> {
        self.series
            .iter()
            .find(|s| s.dir == dir && s.size_class == class)
    }

    /// Rounded for storage (see [`Bucket::compact`]).
    pub fn compacted(&self) -> DeviceModel {
        let mut m = self.clone();
        m.seconds_seen = round_sig(m.seconds_seen, 6);
        for s in &mut m.series {
            for b in &mut s.buckets {
                b.compact();
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(dir: Dir, in_flight: f64, lat_ms: f64, kib: f64) -> Point {
        let busy_ms = in_flight * 1000.0;
        let requests = busy_ms / lat_ms;
        Point {
            dir,
            wall_ns: 0,
            interval_s: 1.0,
            whole_s: 1.0,
            requests,
            busy_ms,
            bytes: requests * kib * 1024.0,
            pcts_ns: None,
            device_ns: None,
            other_requests: 0.0,
        }
    }

    #[test]
    fn the_device_time_is_the_baselines_where_most_of_its_requests_had_it() {
        let mut b = Bucket::default();
        // 500 requests at 2 ms with 1.5 ms on the device, 500 at 2 ms with 1.7 ms.
        for d in [1.5e6, 1.7e6] {
            b.add(&Point {
                device_ns: Some(d),
                ..pt(Dir::Read, 1.0, 2.0, 4.0)
            });
        }
        assert!((b.device_latency_ns().unwrap() - 1.6e6).abs() < 1.0);
        // Ageing scales both sums alike: the mean stays.
        b.scale(0.5);
        assert!((b.device_latency_ns().unwrap() - 1.6e6).abs() < 1.0);
        // Unsplit intervals outweighing the split ones: no device time.
        for _ in 0..2 {
            b.add(&pt(Dir::Read, 1.0, 2.0, 4.0));
        }
        assert_eq!(b.device_latency_ns(), None);
        // An old state file (no such fields) loads with none.
        let old: Bucket = serde_json::from_str(r#"{"intervals":1.0,"requests":5.0}"#).unwrap();
        assert_eq!(old.device_latency_ns(), None);
    }

    #[test]
    fn histogram_bins_are_quarter_octaves_of_log2() {
        let by_log = |ns: f64| {
            let b = ((ns.log2() - HIST_MIN_LOG2) * HIST_BINS_PER_OCTAVE).floor();
            b.clamp(0.0, (HIST_BINS - 1) as f64) as u8
        };
        let mut x = 1.0f64;
        while x < 1e12 {
            // Exact powers of the quarter steps may round either way in log2: compare away
            // from them.
            let frac = (x.log2() * 4.0).fract();
            if frac > 1e-9 && frac < 1.0 - 1e-9 {
                assert_eq!(hist_bin(x), by_log(x), "{x}");
            }
            x *= 1.0137;
        }
        assert_eq!(hist_bin(2048.0), 4);
        assert_eq!(hist_bin(0.0), 0);
        assert_eq!(hist_bin(f64::INFINITY), (HIST_BINS - 1) as u8);
        assert_eq!(hist_bin(1e300), (HIST_BINS - 1) as u8);
        assert_eq!(hist_bin(f64::NAN), 0);
    }

    #[test]
    fn buckets_double_like_the_sweep_levels() {
        assert_eq!(bucket_of(0.0), 0);
        assert_eq!(bucket_of(1.49), 0);
        assert_eq!(bucket_of(1.5), 1);
        assert_eq!(bucket_of(4.0), 2);
        assert_eq!(bucket_of(8.0), 3);
        assert_eq!(bucket_of(191.0), 7);
        assert_eq!(bucket_of(1e6), 8);
    }

    #[test]
    fn little_law_per_point_and_bucket() {
        // 4 in flight at 2 ms: 2000 IOPS.
        let p = pt(Dir::Read, 4.0, 2.0, 4.0);
        assert!((p.iops() - 2000.0).abs() < 1e-9);
        assert!((p.mean_latency_ns() - 2e6).abs() < 1e-6);
        assert_eq!(p.size_class(), SizeClass::Small);
        let mut m = DeviceModel::default();
        for _ in 0..10 {
            m.add_interval(0, 1.0, &[p, pt(Dir::Write, 1.0, 1.0, 128.0)]);
        }
        let s = m.series(Dir::Read, SizeClass::Small).unwrap();
        let b = &s.buckets[2];
        assert_eq!(b.intervals, 10.0);
        assert!((b.in_flight() - 4.0).abs() < 1e-9);
        assert!((b.iops() - 2000.0).abs() < 1e-9);
        assert!((b.mean_latency_ns().unwrap() - 2e6).abs() < 1e-3);
        assert_eq!(b.latency_se_ns(), Some(0.0));
        // The histogram's quantile is the bin centre: within 9 %.
        let q = b.quantile_ns(0.95).unwrap();
        assert!((q / 2e6 - 1.0).abs() < 0.09, "{q}");
        assert!(m.series(Dir::Write, SizeClass::Large).is_some());
        assert_eq!(m.intervals_seen, 10);
    }

    #[test]
    fn an_upper_percentile_from_interval_means_is_never_below_the_mean_in_its_bin() {
        // Every request 1.00 ms: the bin's centre is 0.962 ms; the p95 and p99 are the mean.
        let mut b = Bucket::default();
        for _ in 0..40 {
            b.add(&pt(Dir::Read, 1.0, 1.0, 4.0));
        }
        assert_eq!(b.quantile_ns(0.95), Some(961_548.432));
        assert_eq!(b.p95_ns(), Some(1e6));
        assert_eq!(b.p99_ns(), Some(1e6));
        // A mean in another bin than the p95 (most intervals fast, a slow tail): the centre.
        let mut t = Bucket::default();
        for i in 0..40 {
            let ms = if i < 38 { 1.0 } else { 40.0 };
            t.add(&pt(Dir::Read, 1.0, ms, 4.0));
        }
        assert!(hist_bin(t.mean_latency_ns().unwrap()) > hist_bin(1e6));
        assert_eq!(t.p95_ns(), t.quantile_ns(0.95));
        assert!(t.p95_ns().unwrap() < 1e6, "{:?}", t.p95_ns());
        // From block-layer percentiles the bin holds other masses: its centre.
        let mut p = pt(Dir::Read, 1.0, 1.0, 4.0);
        p.pcts_ns = Some([1e6, 1e6, 1e6]);
        let mut k = Bucket::default();
        k.add(&p);
        assert_eq!(k.p95_ns(), k.quantile_ns(0.725));
    }

    #[test]
    fn learned_figures_carry_no_float_noise_from_their_sums() {
        // Six hundred 10 ms intervals at one in flight, ten requests each: 1,000 IOPS at
        // 1 ms, whose sums read 1000.0000000000139 IOPS unrounded.
        let mut b = Bucket::default();
        let p = Point {
            interval_s: 0.01,
            whole_s: 0.01,
            requests: 10.0,
            busy_ms: 10.0,
            bytes: 10.0 * 4096.0,
            ..pt(Dir::Read, 1.0, 1.0, 4.0)
        };
        for _ in 0..600 {
            b.add(&p);
        }
        assert_ne!(
            b.requests / b.seconds,
            1000.0,
            "the sum has noise to remove"
        );
        assert_eq!(b.iops(), 1000.0);
        assert_eq!(b.in_flight(), 1.0);
        assert_eq!(b.mean_latency_ns(), Some(1e6));
        assert_eq!(b.bytes_per_s(), 4.096e6);
        // Nine digits kept, printed as the decimal they are, large figures included.
        assert_eq!(figure(961_548.431_607_381_3), 961_548.432);
        assert_eq!(figure(2.0 / 3.0).to_string(), "0.666666667");
        assert_eq!(figure(1_234_567_890_123.0).to_string(), "1234567890000");
        assert_eq!(round_sig(0.000_123_456, 4).to_string(), "0.0001235");
    }

    /// A fixed sequence of pseudo-random words (xorshift64) from `seed`.
    fn xorshift(mut s: u64) -> impl FnMut() -> u64 {
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    /// round_sig with the decimal exponent read from the shortest decimal that gives `x`
    /// back (exact), the power by `powi` and the library's `round`; with `log10` = true, the
    /// exponent as round_sig took it before, `log10`'s floor.
    fn round_sig_by_library(x: f64, digits: i32, log10: bool) -> f64 {
        if x == 0.0 || !x.is_finite() {
            return x;
        }
        let k: i32 = if log10 {
            x.abs().log10().floor() as i32
        } else {
            let s = format!("{:e}", x.abs());
            s[s.find('e').unwrap() + 1..].parse().unwrap()
        };
        match digits - 1 - k {
            e @ 0..=22 => {
                let p = 10f64.powi(e);
                (x * p).round() / p
            }
            e @ -22..=-1 => {
                let p = 10f64.powi(-e);
                (x / p).round() * p
            }
            _ => x,
        }
    }

    #[test]
    fn round_sig_gives_the_librarys_floats_bit_for_bit() {
        // A fixed xorshift: figures over 10^-26 to 10^26, both signs, and the floats beside
        // every power of ten (where the exponent turns), at the digits used.
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut xs = Vec::new();
        for _ in 0..200_000 {
            let u = (next() >> 11) as f64 / (1u64 << 53) as f64;
            let x = 10f64.powf(-26.0 + 52.0 * u);
            xs.push(if next() & 1 == 0 { x } else { -x });
        }
        for k in -26..=26 {
            let p: f64 = format!("1e{k}").parse().unwrap();
            let (mut lo, mut hi) = (p, p);
            for _ in 0..200 {
                xs.extend([lo, hi]);
                lo = f64::from_bits(lo.to_bits() - 1);
                hi = f64::from_bits(hi.to_bits() + 1);
            }
            for f in [
                1.0 - 2e-15,
                1.0 - 1e-15,
                1.0 + 1e-15,
                1.0 + 2e-15,
                1.0 + 1e-12,
            ] {
                xs.push(p * f);
            }
        }
        // Halves, whose rounding the exact comparison decides.
        xs.extend([
            1.5,
            2.5,
            0.125,
            1234.5,
            123_456_789.5,
            0.499_999_999_999_999_94,
            1e22,
        ]);
        xs.extend([
            9.9e21,
            0.0,
            -0.0,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            f64::INFINITY,
        ]);
        xs.push(f64::NAN);
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        let mut by_log10_differs = 0;
        for &x in &xs {
            for digits in [3, 4, 6, 9] {
                let (a, b) = (round_sig(x, digits), round_sig_by_library(x, digits, false));
                assert!(
                    same(a, b),
                    "round_sig({x:e}, {digits}) = {a:e}, exactly {b:e}"
                );
                // As before (log10's floor) but for floats within an ulp or two of a power of
                // ten, where that floor was one off.
                let old = round_sig_by_library(x, digits, true);
                if !same(a, old) {
                    let l = x.abs().log10();
                    assert!(
                        (l - l.round()).abs() < 1e-14,
                        "{x:e}: {a:e}, before {old:e}"
                    );
                    by_log10_differs += 1;
                }
            }
        }
        // Those floats are there to be told apart (else this test checks no boundary).
        assert!(by_log10_differs > 0);
    }

    #[test]
    fn round_is_the_librarys_round_bit_for_bit() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let mut ys: Vec<f64> = (0..400_000)
            .map(|_| {
                let u = (next() >> 11) as f64 / (1u64 << 53) as f64;
                let y = 2f64.powf(-4.0 + 60.0 * u);
                if next() & 1 == 0 {
                    y
                } else {
                    -y
                }
            })
            .collect();
        for h in [0.5f64, 1.5, 2.5, 1e15 + 0.5, 4_503_599_627_370_495.5] {
            ys.extend([
                h,
                -h,
                f64::from_bits(h.to_bits() - 1),
                f64::from_bits(h.to_bits() + 1),
            ]);
        }
        ys.extend([
            0.0,
            -0.0,
            0.499_999_999_999_999_94,
            -0.3,
            4_503_599_627_370_496.0,
        ]);
        ys.extend([f64::MAX, f64::INFINITY, f64::NEG_INFINITY, f64::NAN]);
        for &y in &ys {
            let (a, b) = (round(y), y.round());
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "round({y:e}) = {a:e}, the library's {b:e}"
            );
        }
    }

    #[test]
    fn percentile_masses_give_back_the_percentiles() {
        let mut m = DeviceModel::default();
        let mut p = pt(Dir::Read, 1.0, 1.0, 4.0);
        p.pcts_ns = Some([0.8e6, 3e6, 9e6]);
        for _ in 0..50 {
            m.add_interval(0, 1.0, std::slice::from_ref(&p));
        }
        let b = &m.series(Dir::Read, SizeClass::Small).unwrap().buckets[0];
        assert!(b.has_percentiles());
        for (q, want) in [(0.5, 0.8e6), (0.95, 3e6), (0.99, 9e6)] {
            let got = b.quantile_ns(q).unwrap();
            assert!((got / want - 1.0).abs() < 0.09, "q {q}: {got} vs {want}");
        }
    }

    #[test]
    fn stamps_at_the_ends_of_i64_age_without_overflow() {
        // A recording may carry any timestamp (the fuzz test found i64::MIN then a later one).
        let mut m = DeviceModel::default();
        let p = pt(Dir::Read, 1.0, 1.0, 4.0);
        m.add_interval(i64::MIN, 1.0, std::slice::from_ref(&p));
        m.add_interval(i64::MAX, 1.0, std::slice::from_ref(&p));
        m.add_interval(i64::MIN, 1.0, std::slice::from_ref(&p));
        let b = &m.series(Dir::Read, SizeClass::Small).unwrap().buckets[0];
        // The first interval aged away entirely; the clock step back ages nothing.
        assert!((b.intervals - 2.0).abs() < 1e-9, "{}", b.intervals);
    }

    #[test]
    fn weights_halve_each_week_deterministically() {
        let mut m = DeviceModel::default();
        let p = pt(Dir::Read, 1.0, 1.0, 4.0);
        m.add_interval(0, 1.0, std::slice::from_ref(&p));
        // Within the hour: no ageing.
        m.add_interval(DECAY_STEP_NS - 1, 1.0, std::slice::from_ref(&p));
        let b = |m: &DeviceModel| m.series(Dir::Read, SizeClass::Small).unwrap().buckets[0].clone();
        assert_eq!(b(&m).intervals, 2.0);
        m.add_interval(HALF_LIFE_NS, 1.0, std::slice::from_ref(&p));
        assert!((b(&m).intervals - 2.0).abs() < 1e-9, "{}", b(&m).intervals);
        // A clock step back ages nothing.
        m.add_interval(0, 1.0, &[p]);
        assert!((b(&m).intervals - 3.0).abs() < 1e-9);
        assert_eq!(m.intervals_seen, 4);
    }
}
