//! What learning (learn/) says of a device, as every view reads it: the `learned` object of a
//! row, the request-size classes and the baseline estimate it names. Data only, here below the
//! monitor so that the monitor's rows can carry it without naming learn/ (issue 36.2: learning
//! is an observer of the monitor's intervals). learn/ computes it and re-exports these types.
//! Imports only: analysis/state.rs.

use super::state::{Dir, State};
use serde::{Deserialize, Serialize};

/// The `learned` object of a device in an interval (stat --json, analyze --json): null
/// fields until known. The figures are the series (direction and request-size class) that
/// carried most of the interval's requests (when idle: the one learned most); `state` is the
/// worst state of the directions with I/O.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Learned {
    pub state: State,
    /// Intervals learned from (not aged).
    pub intervals: u64,
    /// Seconds of traffic learned from.
    pub learned_s: f64,
    pub direction: Option<Dir>,
    pub size_class: Option<SizeClass>,
    pub baseline_latency_ns: Option<f64>,
    pub baseline_p95_ns: Option<f64>,
    /// The baseline's own device time (issue 40: the block layer's split at about one in
    /// flight), when most of its requests were split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_device_ns: Option<f64>,
    /// 95 % interval of the baseline's mean latency.
    pub baseline_interval_ns: Option<[f64; 2]>,
    pub knee_concurrency: Option<u32>,
    pub knee_range: Option<[u32; 2]>,
    pub knee_at_least: Option<f64>,
    pub max_iops: Option<f64>,
    pub max_iops_at_least: Option<bool>,
    pub headroom_iops: Option<f64>,
    /// Current p95 (or mean) ÷ the baseline's, the ratio the state is judged on.
    pub ratio: Option<f64>,
    pub fit_r_squared: Option<f64>,
    /// Without a baseline at about one in flight: the learner's estimate in full (its point
    /// where the data gives one, its bounds, the level, the method); `flags.estimate` is what
    /// every view renders (issue 37). Never named a baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_estimate: Option<std::sync::Arc<Estimate>>,
    /// The machine's CPUs (no idle time, or steal) may explain the interval's slow latency at
    /// the baseline's level: not learned (a step of 2x is still evidence of a change).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cpu_busy: bool,
    /// The swept profile's baseline disagrees with the traffic at its own level (about one
    /// in flight, the profile's direction and request size) the way a change of the device
    /// would (change.rs: 2x apart for [`change::REPORT_AFTER_S`] of evidence): from the
    /// profile's, to the traffic's, with the evidence. The judgement by the sweep carries it
    /// as its `change` (monitor::judge); on the direction it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_change: Option<std::sync::Arc<super::state::Change>>,
    pub summary: Option<Summary>,
    /// What the judgement cannot claim (estimate, change, ceiling at least, mixed sizes):
    /// learning fills them, every view renders them through the judgement.
    #[serde(flatten, default)]
    pub flags: super::state::Flags,
    /// Each direction's own judgement (reads, writes: the exporter serves them apart), its
    /// `directions` empty; a direction without I/O in the interval is idle and judged by its
    /// series learned most. Not in the JSON (the object above is the device's).
    #[serde(skip)]
    pub directions: Vec<Learned>,
}

/// The curve's judgement in words, shared by every interval's [`Learned`] until the next
/// estimate (a string copied per device and interval was a tenth of learning's cost), and
/// written only when something reads it: a curve is re-estimated every 10 to 60 intervals
/// of every device, and its words (floats formatted exactly) were a third of learning's
/// instructions while the text view reads them for no row (issue 37's cost).
#[derive(Clone)]
pub struct Summary(std::sync::Arc<SummaryText>);

struct SummaryText {
    text: std::sync::OnceLock<Box<str>>,
    make: Option<Box<dyn Fn() -> String + Send + Sync>>,
}

impl Summary {
    /// Words already written.
    pub fn text(s: impl Into<String>) -> Summary {
        let text = std::sync::OnceLock::new();
        let _ = text.set(s.into().into_boxed_str());
        Summary(std::sync::Arc::new(SummaryText { text, make: None }))
    }

    /// Words written by `make` when first read.
    pub fn lazy(make: impl Fn() -> String + Send + Sync + 'static) -> Summary {
        Summary(std::sync::Arc::new(SummaryText {
            text: std::sync::OnceLock::new(),
            make: Some(Box::new(make)),
        }))
    }

    pub fn as_str(&self) -> &str {
        let t = &*self.0;
        t.text
            .get_or_init(|| t.make.as_ref().map_or_else(String::new, |m| m()).into())
    }

    /// The same words, not only equal ones (no string compared).
    pub fn same(&self, other: &Summary) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::ops::Deref for Summary {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for Summary {
    fn eq(&self, other: &Summary) -> bool {
        self.same(other) || self.as_str() == other.as_str()
    }
}

impl Serialize for Summary {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Summary {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Summary, D::Error> {
        String::deserialize(d).map(Summary::text)
    }
}

/// Request-size class of an interval's mean request: 4 KiB reads are never judged against
/// 1 MiB ones (a large request takes longer on any device). The block-latency program classes
/// each request by these edges (bpf/iolat.bpf.c's SMALL_MAX_BYTES, MEDIUM_MAX_BYTES); without
/// it only the mean is known and a mean between classes is mixed (learn/points.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeClass {
    /// ≤ 8 KiB (and its merges): database pages, random I/O.
    Small,
    /// ≤ 64 KiB (and its merges).
    Medium,
    /// Larger: sequential, bulk.
    Large,
}

/// A request merged from pages is a little larger than its class's edge (8 KiB read ahead into
/// 8.05 KiB): a class's edge tolerates this share over it.
pub const MERGE_TOLERANCE: f64 = 1.25;

impl SizeClass {
    /// The class of a mean request size, its edges tolerating merges: up to 10 KiB is the
    /// small class (8 KiB × [`MERGE_TOLERANCE`]), up to 80 KiB the medium one.
    pub fn of(bytes: f64) -> SizeClass {
        if bytes <= 8192.0 * MERGE_TOLERANCE {
            SizeClass::Small
        } else if bytes <= 65536.0 * MERGE_TOLERANCE {
            SizeClass::Medium
        } else {
            SizeClass::Large
        }
    }

    /// A mean size between two classes: above a class's edge by more than a merge, and below
    /// the next power of two by more than one (10–12.8 KiB, 80–102.4 KiB). Requests come in
    /// powers of two (pages, database blocks, read-ahead windows), so such a mean is two classes
    /// each carrying a real share, not one class's requests.
    pub fn mixed(bytes: f64) -> bool {
        [8192.0, 65536.0]
            .iter()
            .any(|&edge| bytes > edge * MERGE_TOLERANCE && bytes < 2.0 * edge / MERGE_TOLERANCE)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SizeClass::Small => "<=8KiB",
            SizeClass::Medium => "<=64KiB",
            SizeClass::Large => ">64KiB",
        }
    }
}

/// How an [`Estimate`] was come by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EstimateMethod {
    /// About one in flight, but fewer intervals than a baseline needs.
    Thin,
    /// The two lowest levels' latencies agree (within `learn::estimate::FLAT`): both below the units, where
    /// latency is the service time, so the lowest level's latency is the baseline's.
    Flat,
    /// One level only, or levels whose IOPS no longer grew: only the bounds.
    Bounds,
}

/// The baseline estimated where the traffic never came down to about one request in flight
/// (issue 37): from the lowest learned level L. Why these bounds: a closed loop of c requests
/// on U parallel units of service S answers in S while c ≤ U and in c·S/U past them, so the
/// lowest level's latency L(c) is at most c/U times S and at least S... turned round, S lies
/// in [L(c)/c, L(c)] (U between 1 and c). A point estimate is only given when the next level
/// up, with at least half again the in-flight, answered within `learn::estimate::FLAT` of it: latency flat
/// between them means both are at or below the units, where latency is S. This is the lowest
/// levels' extrapolation (a flat line to one in flight), not an M/M/c-style correction, which
/// would need the number of units and the arrival process, neither of which the counters give.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Estimate {
    /// The mean in flight of the level it came from.
    pub from_in_flight: f64,
    /// The estimated single-request latency; None: only the bounds are known.
    pub latency_ns: Option<f64>,
    /// Where the single-request latency lies.
    pub interval_ns: [f64; 2],
    pub method: EstimateMethod,
}
