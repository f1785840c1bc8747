//! The `sim` engine: a deterministic, seeded discrete-event simulation of a device with k parallel
//! units, a service-time distribution and optional IOPS / bandwidth caps, run in simulated time
//! (docs/design.md §3.5). Touches no file.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/, sys/.
//!
//! The model is a closed queueing system, the shape of seed 000's experiment: `concurrency`
//! clients each keep exactly one request outstanding and resubmit the instant it completes
//! (zero think time). A request first passes an admission stage (a token bucket one token deep
//! per cap, so the admission rate never exceeds the cap: an EBS-like provisioned limit, seed
//! 003; with `burst=N`, N more tokens deep and full at the start of each level, the short
//! burst such limits give before they hold), then waits in one FIFO queue for the first free of `units` identical servers, then is
//! served for a fixed or exponentially distributed time (with `jitter`, the mean scaled by a
//! seeded factor per sub-window of the level: a device whose speed wanders). Its latency is
//! submission to completion, queueing and cap wait included.
//!
//! Because both stages are FIFO and arrivals are handled in time order, a request's admission,
//! start and completion times are all known the moment it is submitted (the multi-server FIFO
//! recursion: start = max(admitted, earliest free server)). So the event heap only holds one
//! pending completion per client, and the servers are a heap of their next free times; both
//! are allocated once per level and updated in place, nothing is allocated per I/O.

use super::windows::{window_span_ns, WindowClock, SUB_WINDOWS};
use super::{Engine, LevelCtl, LevelSpec, LevelStats, Pattern};
use crate::error::{Error, Result};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::Ordering;

/// Service-time distribution of one unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceDist {
    /// Every request takes exactly the service time (a deterministic device).
    Fixed,
    /// Exponential with the service time as its mean (memoryless, the M/M/k textbook device).
    Exp,
}

/// A simulated device, as given by `--engine sim:units=K,service=DURATION[,dist=fixed|exp]
/// [,cap=IOPS][,bw=MBPS][,burst=N][,jitter=PCT]`. The seed comes from each level's
/// [`LevelSpec::seed`].
#[derive(Debug, Clone, PartialEq)]
pub struct SimSpec {
    /// Parallel execution units (servers).
    pub units: u32,
    /// Service time of one request on one unit (the mean, for `Exp`), nanoseconds.
    pub service_ns: u64,
    pub dist: ServiceDist,
    /// Provisioned IOPS limit on admission, like an EBS volume's.
    pub cap_iops: Option<f64>,
    /// Bandwidth limit on admission, bytes per second (`bw=` is in MB/s, 1 MB = 10^6 bytes).
    pub bw_bytes_per_s: Option<f64>,
    /// Requests the caps let through above their rate at the start of each level (a token
    /// bucket this much deeper, full when the level starts: a cloud volume's burst credit).
    /// None: one token deep, no burst. Needs `cap=` or `bw=`.
    pub burst: Option<u64>,
    /// A device whose speed wanders: in each sub-window of a level (load::windows) every
    /// service time is scaled by one seeded factor drawn uniformly from 1 ± this fraction
    /// (`jitter=` is in percent, below 100). None: a steady device.
    pub jitter: Option<f64>,
}

/// The most units a spec may ask for: far past any real device, small enough that a typo
/// (`units=4000000000`) is an error rather than a silent oddity.
const MAX_UNITS: u32 = 1 << 20;
/// Service times above one hour would overflow the latency histograms' range.
const MAX_SERVICE_NS: u64 = 3_600_000_000_000;
/// A level that would simulate more I/Os than this is refused: at a few tens of nanoseconds
/// per simulated I/O it would take real seconds, which defeats the point of simulating.
const MAX_EVENTS_PER_LEVEL: f64 = 2e8;
/// Fractional bits of the admission pacers' fixed-point clocks, so a cap of 3000 IOPS paces at
/// exactly 333 333.33 ns per token over a level instead of drifting by rounding.
const FRAC_BITS: u32 = 32;

const KEYS: &str = "units, service, dist, cap, bw, burst, jitter";
const EXAMPLE: &str = "e.g. sim:units=4,service=8ms";

impl SimSpec {
    /// The throughput the simulated device can sustain at high concurrency, I/Os per second,
    /// for requests of `block_size` bytes: the tightest of units ÷ mean service time, the IOPS
    /// cap and the bandwidth cap ÷ block size.
    pub fn plateau_iops(&self, block_size: u64) -> f64 {
        let mut iops = f64::from(self.units) * 1e9 / self.service_ns as f64;
        if let Some(cap) = self.cap_iops {
            iops = iops.min(cap);
        }
        if let Some(bw) = self.bw_bytes_per_s {
            iops = iops.min(bw / block_size.max(1) as f64);
        }
        iops
    }
}

fn bad(value: &str, reason: impl Into<String>) -> Error {
    Error::usage("--engine", value, reason)
}

/// A duration with a mandatory unit: `250ns`, `100us`, `8ms`, `1.5ms`, `2s`.
fn parse_duration_ns(text: &str) -> Option<u64> {
    // A unit is required and must touch the number; minutes and hours are no service time.
    let unit_at = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    if !["ns", "us", "µs", "ms", "s"].contains(&&text[unit_at..]) {
        return None;
    }
    let ns = crate::units::parse_duration_ns(text).ok()?;
    (1..=MAX_SERVICE_NS).contains(&ns).then_some(ns)
}

/// A positive, finite decimal number (no sign, no exponent, no `inf`).
fn parse_positive(text: &str) -> Option<f64> {
    if text.is_empty() || !text.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let v: f64 = text.parse().ok()?;
    (v.is_finite() && v > 0.0).then_some(v)
}

impl FromStr for SimSpec {
    type Err = Error;

    /// Parses `sim:units=K,service=DURATION[,dist=fixed|exp][,cap=IOPS][,bw=MBPS]
    /// [,jitter=PCT]`; every error is a usage error on `--engine` naming the key and what is
    /// wrong with it.
    fn from_str(value: &str) -> Result<Self> {
        let body = match value.strip_prefix("sim:") {
            Some(body) => body,
            None if value == "sim" => {
                return Err(bad(value, format!("needs units= and service= ({EXAMPLE})")))
            }
            None => return Err(bad(value, format!("is not a sim engine spec ({EXAMPLE})"))),
        };
        let (mut units, mut service_ns, mut dist, mut cap_iops, mut bw_bytes_per_s) =
            (None, None, None, None, None);
        let mut jitter = None;
        let mut burst = None;
        for item in body.split(',') {
            let Some((key, val)) = item.split_once('=') else {
                return Err(bad(
                    value,
                    format!("sim: '{item}' is not key=value (keys: {KEYS})"),
                ));
            };
            let dup = match key {
                "units" => {
                    let n: u32 = val
                        .parse()
                        .ok()
                        .filter(|n| (1..=MAX_UNITS).contains(n))
                        .ok_or_else(|| {
                            bad(
                                value,
                                format!(
                                    "sim: units={val}: units must be a whole number from 1 to \
                                     {MAX_UNITS}"
                                ),
                            )
                        })?;
                    units.replace(n).is_some()
                }
                "service" => {
                    let ns = parse_duration_ns(val).ok_or_else(|| {
                        bad(
                            value,
                            format!(
                                "sim: service={val}: service must be a duration from 1ns to 1h \
                                 with a unit ns, us, ms or s, like 8ms or 1.5ms"
                            ),
                        )
                    })?;
                    service_ns.replace(ns).is_some()
                }
                "dist" => {
                    let d = match val {
                        "fixed" => ServiceDist::Fixed,
                        "exp" => ServiceDist::Exp,
                        _ => {
                            return Err(bad(
                                value,
                                format!("sim: dist={val}: dist must be fixed or exp"),
                            ))
                        }
                    };
                    dist.replace(d).is_some()
                }
                "cap" => {
                    let v = parse_positive(val).ok_or_else(|| {
                        bad(
                            value,
                            format!("sim: cap={val}: cap must be a positive number of IOPS"),
                        )
                    })?;
                    cap_iops.replace(v).is_some()
                }
                "bw" => {
                    let v = parse_positive(val).ok_or_else(|| {
                        bad(
                            value,
                            format!("sim: bw={val}: bw must be a positive number of MB/s"),
                        )
                    })?;
                    bw_bytes_per_s.replace(v * 1e6).is_some()
                }
                "burst" => {
                    let n: u64 = val.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                        bad(
                            value,
                            format!(
                                "sim: burst={val}: burst must be a whole number of requests \
                                 above 0"
                            ),
                        )
                    })?;
                    burst.replace(n).is_some()
                }
                "jitter" => {
                    let v = parse_positive(val).filter(|&v| v < 100.0).ok_or_else(|| {
                        bad(
                            value,
                            format!("sim: jitter={val}: jitter must be a percentage above 0 and below 100"),
                        )
                    })?;
                    jitter.replace(v / 100.0).is_some()
                }
                _ => {
                    return Err(bad(
                        value,
                        format!("sim: unknown key '{key}' (keys: {KEYS})"),
                    ))
                }
            };
            if dup {
                return Err(bad(value, format!("sim: '{key}' is given twice")));
            }
        }
        let units =
            units.ok_or_else(|| bad(value, format!("sim: units= is missing ({EXAMPLE})")))?;
        let service_ns = service_ns
            .ok_or_else(|| bad(value, format!("sim: service= is missing ({EXAMPLE})")))?;
        if burst.is_some() && cap_iops.is_none() && bw_bytes_per_s.is_none() {
            return Err(bad(
                value,
                "sim: burst= is credit above a cap: it needs cap= or bw=",
            ));
        }
        Ok(SimSpec {
            units,
            service_ns,
            dist: dist.unwrap_or(ServiceDist::Fixed),
            cap_iops,
            bw_bytes_per_s,
            burst,
            jitter,
        })
    }
}

impl fmt::Display for SimSpec {
    /// The canonical spelling, which parses back to the same spec.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.service_ns;
        let (n, unit) = if ns % 1_000_000_000 == 0 {
            (ns / 1_000_000_000, "s")
        } else if ns % 1_000_000 == 0 {
            (ns / 1_000_000, "ms")
        } else if ns % 1_000 == 0 {
            (ns / 1_000, "us")
        } else {
            (ns, "ns")
        };
        write!(f, "sim:units={},service={n}{unit}", self.units)?;
        if self.dist == ServiceDist::Exp {
            f.write_str(",dist=exp")?;
        }
        if let Some(cap) = self.cap_iops {
            write!(f, ",cap={cap}")?;
        }
        if let Some(bw) = self.bw_bytes_per_s {
            write!(f, ",bw={}", bw / 1e6)?;
        }
        if let Some(n) = self.burst {
            write!(f, ",burst={n}")?;
        }
        if let Some(j) = self.jitter {
            write!(f, ",jitter={}", j * 100.0)?;
        }
        Ok(())
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014; the seeding generator of the xoshiro family), written
/// out here rather than taken from `rand`: eight lines, statistically ample for service times
/// and read/write draws, and its output for a seed can never change under us with a crate
/// upgrade (`rand`'s `StdRng` explicitly reserves that right), which the determinism promise
/// of this engine and its tests depend on.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so its logarithm is finite.
    fn next_open01(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `pct` / 100 (multiply-shift: no modulo bias worth the name).
    fn percent(&mut self, pct: u8) -> bool {
        ((self.next_u64() >> 32) * 100) >> 32 < u64::from(pct)
    }
}

/// One outstanding request: when it completes, whose it is (the closed loop's client, the open
/// loop's index in its schedule), when it was submitted and whether it is a read. Ordered by
/// completion time, then client, so ties resolve the same way on every run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Pending {
    pub(super) done_ns: u64,
    pub(super) client: u32,
    pub(super) submit_ns: u64,
    pub(super) is_read: bool,
}

impl Pending {
    /// Count this request's completion in `stats`: its latency from submission in its
    /// sub-window `window` (windows::WindowClock::index of its completion) and in the read or
    /// write histogram, its bytes.
    pub(super) fn count(&self, stats: &mut LevelStats, window: usize, bytes: u64) {
        stats.count(window, self.done_ns - self.submit_ns, self.is_read, bytes);
    }
}

/// The device state of one level: admission pacers, server free times, the PRNG. The closed
/// loop here and the open loop (open/sim.rs) both submit through it.
pub(super) struct Device {
    service_ns: u64,
    dist: ServiceDist,
    /// Per-cap pacer: (theoretical arrival time, token interval), both in fixed point with
    /// FRAC_BITS (GCRA, the virtual-scheduling form of a token bucket).
    iops_pacer: Option<(u128, u128)>,
    bw_pacer: Option<(u128, u128)>,
    /// Burst tolerance in tokens: a request may be admitted this many intervals ahead of its
    /// pacer's theoretical time.
    burst: u128,
    /// Next free time of each unit; min-heap. Only min(units, clients) can ever be busy.
    free_ns: BinaryHeap<Reverse<u64>>,
    pattern: Pattern,
    rng: SplitMix64,
    /// Service-time factor per sub-window (all 1 without jitter), and where windows start.
    factors: [f64; SUB_WINDOWS],
    measure_from_ns: u64,
    span_ns: u64,
}

impl Device {
    pub(super) fn new(spec: &SimSpec, level: &LevelSpec) -> Self {
        let pacer =
            |ns_per_token: f64| (0u128, (ns_per_token * (1u64 << FRAC_BITS) as f64) as u128);
        let units = spec.units.min(level.concurrency()) as usize;
        let mut free_ns = BinaryHeap::with_capacity(units);
        free_ns.extend(std::iter::repeat(Reverse(0)).take(units));
        Device {
            service_ns: spec.service_ns,
            dist: spec.dist,
            iops_pacer: spec.cap_iops.map(|cap| pacer(1e9 / cap)),
            bw_pacer: spec
                .bw_bytes_per_s
                .map(|bw| pacer(level.block_size as f64 * 1e9 / bw)),
            burst: u128::from(spec.burst.unwrap_or(0)),
            free_ns,
            pattern: level.pattern,
            // Mix a constant in so seed 0 and seed 1 do not start one step apart.
            rng: SplitMix64(level.seed ^ 0x6A09_E667_F3BC_C908),
            // A generator of its own, so a steady device draws exactly what it always drew.
            factors: match spec.jitter {
                None => [1.0; SUB_WINDOWS],
                Some(j) => {
                    let mut r = SplitMix64(level.seed ^ 0xBB67_AE85_84CA_A73B);
                    std::array::from_fn(|_| 1.0 + j * (2.0 * r.next_open01() - 1.0))
                }
            },
            measure_from_ns: level.ramp_ns,
            span_ns: window_span_ns(level.duration_ns),
        }
    }

    /// Service time of a request starting at `start_ns`.
    fn service(&mut self, start_ns: u64) -> u64 {
        let w = (start_ns.saturating_sub(self.measure_from_ns) / self.span_ns)
            .min(SUB_WINDOWS as u64 - 1);
        let factor = self.factors[w as usize];
        let mean = self.service_ns as f64 * factor;
        match self.dist {
            ServiceDist::Fixed if factor == 1.0 => self.service_ns,
            ServiceDist::Fixed => (mean.round() as u64).clamp(1, MAX_SERVICE_NS),
            ServiceDist::Exp => {
                let ns = -mean * self.rng.next_open01().ln();
                (ns.round() as u64).min(MAX_SERVICE_NS)
            }
        }
    }

    /// Submit a request at `now` (called in nondecreasing `now` order) and return its fate.
    pub(super) fn submit(&mut self, client: u32, now: u64) -> Pending {
        let is_read = match self.pattern {
            Pattern::RandRead | Pattern::Read => true,
            Pattern::RandWrite | Pattern::Write => false,
            Pattern::RandRw { read_pct } => self.rng.percent(read_pct),
        };
        // Admission: a token from every cap's bucket, FIFO (GCRA: a request is admitted no
        // earlier than its pacer's theoretical time less the burst tolerance). Without a burst
        // the bucket is one token deep: tokens do not pile up while the device is idle, so no
        // burst above the cap. With one, the bucket starts full and refills at the cap's rate.
        let now_fp = u128::from(now) << FRAC_BITS;
        let mut admit_fp = now_fp;
        for (tat, interval) in [self.iops_pacer, self.bw_pacer].into_iter().flatten() {
            admit_fp = admit_fp.max(tat.saturating_sub(self.burst * interval));
        }
        for (tat, interval) in [&mut self.iops_pacer, &mut self.bw_pacer]
            .into_iter()
            .flatten()
        {
            *tat = (*tat).max(admit_fp) + *interval;
        }
        // Round up: a request is never admitted before its token exists.
        let admit_ns = admit_fp.div_ceil(1u128 << FRAC_BITS) as u64;
        let free_ns = self.free_ns.peek().expect("at least one unit").0;
        let start = admit_ns.max(free_ns);
        let service = self.service(start);
        let done_ns = start + service;
        self.free_ns.peek_mut().expect("at least one unit").0 = done_ns;
        Pending {
            done_ns,
            client,
            submit_ns: now,
            is_read,
        }
    }
}

/// The simulated engine; see the module docs for the model.
#[derive(Debug, Clone)]
pub struct SimEngine {
    spec: SimSpec,
}

impl SimEngine {
    pub fn new(spec: SimSpec) -> Self {
        SimEngine { spec }
    }

    pub fn spec(&self) -> &SimSpec {
        &self.spec
    }
}

/// How often (in simulated I/Os) the loop looks at `ctl.stop` and publishes progress.
pub(super) const CHECK_EVERY: u64 = 1024;

impl Engine for SimEngine {
    fn name(&self) -> &str {
        "sim"
    }

    fn run_level(&mut self, level: &LevelSpec, ctl: &LevelCtl) -> Result<LevelStats> {
        let clients = level.concurrency();
        if clients == 0 {
            return Err(Error::usage(
                "--levels",
                clients,
                "concurrency must be at least 1",
            ));
        }
        let end_ns = level.ramp_ns.saturating_add(level.duration_ns);
        let events = self
            .spec
            .plateau_iops(level.block_size)
            .min(f64::from(clients) * 1e9 / self.spec.service_ns as f64)
            * end_ns as f64
            / 1e9;
        if events > MAX_EVENTS_PER_LEVEL {
            return Err(bad(
                &self.spec.to_string(),
                format!(
                    "would simulate about {events:.1e} I/Os in one level (limit \
                     {MAX_EVENTS_PER_LEVEL:.0e}): use a longer service time, a cap, or a \
                     shorter --duration"
                ),
            ));
        }

        let mut stats = LevelStats::new();
        let mut dev = Device::new(&self.spec, level);
        // All clients submit at time 0, in client order.
        let mut pending = BinaryHeap::with_capacity(clients as usize);
        for client in 0..clients {
            pending.push(Reverse(dev.submit(client, 0)));
        }

        let mut now = 0u64;
        let mut measured = 0u64;
        let mut iter = 0u64;
        let bytes = level.block_size;
        let mut clock = WindowClock::new(level.ramp_ns, level.duration_ns);
        loop {
            if iter % CHECK_EVERY == 0 {
                if ctl.stop.load(Ordering::Relaxed) {
                    stats.interrupted = true;
                    break;
                }
                ctl.ops_done.store(measured, Ordering::Relaxed);
            }
            iter += 1;
            let mut top = pending.peek_mut().expect("one request per client");
            let done = top.0;
            if done.done_ns > end_ns {
                break;
            }
            now = done.done_ns;
            // The measured window is (ramp, ramp + duration]: completions during the ramp
            // are the warm-up and are not counted.
            if now > level.ramp_ns {
                done.count(&mut stats, clock.index(now), bytes);
                measured += 1;
            }
            // The client resubmits at once (closed system, zero think time); replacing the
            // top in place re-sifts the heap without allocating.
            top.0 = dev.submit(done.client, now);
        }
        ctl.ops_done.store(measured, Ordering::Relaxed);
        stats.elapsed_ns = if stats.interrupted {
            now.saturating_sub(level.ramp_ns)
        } else {
            level.duration_ns
        };
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> SimSpec {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn err(s: &str) -> String {
        let e = s.parse::<SimSpec>().expect_err(s);
        assert_eq!(e.exit_code(), crate::error::exit::USAGE, "{s}");
        e.to_string()
    }

    #[test]
    fn parses_minimal_and_full_specs() {
        assert_eq!(
            spec("sim:units=4,service=8ms"),
            SimSpec {
                units: 4,
                service_ns: 8_000_000,
                dist: ServiceDist::Fixed,
                cap_iops: None,
                bw_bytes_per_s: None,
                burst: None,
                jitter: None
            }
        );
        assert_eq!(
            spec("sim:units=32,service=1.5ms,dist=exp,cap=2000,bw=125"),
            SimSpec {
                units: 32,
                service_ns: 1_500_000,
                dist: ServiceDist::Exp,
                cap_iops: Some(2000.0),
                bw_bytes_per_s: Some(125e6),
                burst: None,
                jitter: None
            }
        );
        // Keys in any order; dist=fixed spelled out.
        let s = spec("sim:cap=16000,dist=fixed,service=100us,units=8");
        assert_eq!(
            (s.units, s.service_ns, s.dist),
            (8, 100_000, ServiceDist::Fixed)
        );
        assert_eq!(s.cap_iops, Some(16000.0));
    }

    #[test]
    fn durations_take_every_unit() {
        for (text, ns) in [
            ("250ns", 250),
            ("100us", 100_000),
            ("100µs", 100_000),
            ("8ms", 8_000_000),
            ("1.5ms", 1_500_000),
            ("0.1ms", 100_000),
            ("2s", 2_000_000_000),
            ("1.1ms", 1_100_000),
        ] {
            assert_eq!(parse_duration_ns(text), Some(ns), "{text}");
        }
        for text in [
            "", "8", "ms", "8 ms", "8m", "8h", "-8ms", "0ms", "0.4ns", ".5ms", "5.ms", "1e3ms",
            "infms", "2h", "3601s", "1.2.3ms",
        ] {
            assert_eq!(parse_duration_ns(text), None, "{text}");
        }
    }

    #[test]
    fn bad_specs_name_what_is_wrong() {
        for (text, needle) in [
            ("sim", "needs units= and service="),
            ("uring", "not a sim engine spec"),
            ("sim:", "'' is not key=value"),
            ("sim:units=4", "service= is missing"),
            ("sim:service=8ms", "units= is missing"),
            ("sim:units=0,service=8ms", "units must be a whole number"),
            ("sim:units=-1,service=8ms", "units must be a whole number"),
            ("sim:units=four,service=8ms", "units=four:"),
            ("sim:units=4,service=8", "service must be a duration"),
            (
                "sim:units=4,service=8ms,dist=normal",
                "dist=normal: dist must be fixed or exp",
            ),
            (
                "sim:units=4,service=8ms,cap=0",
                "cap must be a positive number",
            ),
            (
                "sim:units=4,service=8ms,cap=-5",
                "cap must be a positive number",
            ),
            (
                "sim:units=4,service=8ms,bw=fast",
                "bw must be a positive number of MB/s",
            ),
            ("sim:units=4,service=8ms,seed=1", "unknown key 'seed'"),
            ("sim:units=4,units=8,service=8ms", "'units' is given twice"),
            ("sim:units=4,service=8ms,", "'' is not key=value"),
            ("sim:units=4;service=8ms", "units must be a whole number"),
            ("sim:units=4,service=8ms,burst=10", "needs cap= or bw="),
            (
                "sim:units=4,service=8ms,cap=10,burst=0",
                "burst must be a whole number",
            ),
        ] {
            let msg = err(text);
            assert!(msg.contains(needle), "{text}: {msg}");
            assert!(msg.starts_with("'--engine' "), "{text}: {msg}");
            assert!(msg.ends_with(&format!("(got '{text}')")), "{text}: {msg}");
            // The whole spec is quoted once, at the end; the bad item is named by key=value.
            assert_eq!(msg.matches("(got ").count(), 1, "{text}: {msg}");
        }
    }

    #[test]
    fn jitter_is_a_percentage_below_100() {
        assert_eq!(spec("sim:units=1,service=1ms,jitter=25").jitter, Some(0.25));
        for bad in ["0", "100", "-5", "x"] {
            let e = err(&format!("sim:units=1,service=1ms,jitter={bad}"));
            assert!(e.contains("jitter must be a percentage"), "{e}");
        }
    }

    #[test]
    fn jitter_moves_each_window_and_repeats_exactly() {
        let lvl = LevelSpec {
            threads: 1,
            queue_depth: 1,
            pattern: Pattern::RandRead,
            block_size: 4096,
            ramp_ns: 0,
            duration_ns: 800_000_000,
            seed: 7,
        };
        let run = |text: &str| {
            SimEngine::new(spec(text))
                .run_level(&lvl, &LevelCtl::default())
                .unwrap()
        };
        let steady = run("sim:units=1,service=1ms");
        let w = steady.windows.figures(100_000_000, steady.elapsed_ns);
        assert!(w.iter().all(|f| (f.mean_ns - 1e6).abs() < 1.0));
        let a = run("sim:units=1,service=1ms,jitter=50");
        let b = run("sim:units=1,service=1ms,jitter=50");
        let fa = a.windows.figures(100_000_000, a.elapsed_ns);
        assert_eq!(fa, b.windows.figures(100_000_000, b.elapsed_ns));
        let sp = crate::load::windows::spread(&fa).unwrap();
        assert!(sp.mean_ns_cv > 0.1, "{sp:?}");
        // Each window's mean within its factor's range.
        assert!(fa
            .iter()
            .all(|f| f.mean_ns >= 0.5e6 - 1.0 && f.mean_ns <= 1.5e6 + 1.0));
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "sim:units=4,service=8ms",
            "sim:units=32,service=1500us,dist=exp,cap=2000,bw=125",
            "sim:units=1,service=250ns",
            "sim:units=2,service=2s,bw=0.5",
            "sim:units=4,service=1ms,jitter=30",
            "sim:units=32,service=8ms,cap=2000,burst=1500",
        ] {
            let s = spec(text);
            assert_eq!(s.to_string(), text);
            assert_eq!(spec(&s.to_string()), s);
        }
        assert_eq!(
            spec("sim:units=3,service=1.5ms").to_string(),
            "sim:units=3,service=1500us"
        );
    }

    #[test]
    fn splitmix_matches_reference_values() {
        // Reference outputs for seed 0 from the published SplitMix64 (Vigna's splitmix64.c).
        let mut r = SplitMix64(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn percent_draws_hit_the_requested_share() {
        let mut r = SplitMix64(42);
        let n = 100_000;
        let hits = (0..n).filter(|_| r.percent(70)).count();
        assert!((hits as f64 / n as f64 - 0.70).abs() < 0.01, "{hits}");
        assert!((0..1000).all(|_| !r.percent(0)));
        assert!((0..1000).all(|_| r.percent(100)));
    }

    #[test]
    fn plateau_is_the_tightest_limit() {
        assert_eq!(spec("sim:units=4,service=8ms").plateau_iops(4096), 500.0);
        assert_eq!(
            spec("sim:units=32,service=8ms,cap=2000").plateau_iops(4096),
            2000.0
        );
        let bw = spec("sim:units=32,service=8ms,bw=4").plateau_iops(4000);
        assert!((bw - 1000.0).abs() < 1e-9, "{bw}");
    }

    #[test]
    fn pacer_spaces_admissions_exactly() {
        // 3000 IOPS: 333 333.33 ns a token; 3000 admissions must span one second to the ns.
        let s = spec("sim:units=1000,service=1us,cap=3000");
        let level = LevelSpec {
            threads: 1000,
            queue_depth: 1,
            pattern: Pattern::RandRead,
            block_size: 4096,
            ramp_ns: 0,
            duration_ns: 1,
            seed: 1,
        };
        let mut dev = Device::new(&s, &level);
        let first = dev.submit(0, 0).done_ns;
        let mut last = first;
        for c in 1..=3000 {
            last = dev.submit(c, 0).done_ns;
        }
        assert_eq!(last - first, 1_000_000_000);
    }

    #[test]
    fn a_burst_runs_above_the_cap_then_holds_it() {
        // 32 units of 8 ms (4000 IOPS) capped at 2000 with 1000 requests of burst: the bucket
        // drains at 4000 − 2000 = 2000/s, so the first 0.5 s run at the device's 4000 IOPS and
        // the rest at the cap.
        let lvl = LevelSpec {
            threads: 32,
            queue_depth: 1,
            pattern: Pattern::RandRead,
            block_size: 4096,
            ramp_ns: 0,
            duration_ns: 2_000_000_000,
            seed: 3,
        };
        let run = |text: &str| {
            let st = SimEngine::new(spec(text))
                .run_level(&lvl, &LevelCtl::default())
                .unwrap();
            st.windows.figures(250_000_000, st.elapsed_ns)
        };
        let w = run("sim:units=32,service=8ms,cap=2000,burst=1000");
        assert!((w[0].iops / 4000.0 - 1.0).abs() < 0.02, "{w:?}");
        assert!((w[1].iops / 4000.0 - 1.0).abs() < 0.02, "{w:?}");
        for f in &w[3..] {
            assert!((f.iops / 2000.0 - 1.0).abs() < 0.01, "{w:?}");
        }
        // Without the burst the cap holds from the start (one token deep; the first window
        // also holds the first service time, when nothing completes).
        let w = run("sim:units=32,service=8ms,cap=2000");
        assert!(w[0].iops <= 2000.0, "{w:?}");
        assert!(
            w[1..].iter().all(|f| (f.iops / 2000.0 - 1.0).abs() < 0.01),
            "{w:?}"
        );
    }
}
