//! What an open-loop level measured (OpenStats, merged over the pool's threads) → the level
//! in the sweep JSON ([`OpenLevelResult`]): offered and achieved rate, latency from the
//! intended start and from submission, and how far behind its schedule the generator fell
//! ([`Behind`]), with the rule that says whether the rate was really offered, and the 95 %
//! intervals of the latency figures (ci.rs). Every open-loop engine records a counted
//! request with [`OpenStats::record`]. Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/, sys/.

use super::spec::OpenSpec;
use crate::latency::{LatencySummary, Recorder};
use crate::load::result::KernelView;
use crate::load::schedule::Arrivals;
use crate::load::windows::SubWindows;
use crate::load::{LevelSpec, LevelStats};
use serde::{Deserialize, Serialize};

/// The open loop's own figures of one thread or a whole level (merged with `+=` after join).
#[derive(Debug, Clone)]
pub struct OpenStats {
    /// Completion minus intended start, per counted request.
    pub intended: Recorder,
    /// The same, per sub-window of the level (by completion time): for the batch intervals
    /// of ci.rs.
    pub intended_windows: SubWindows,
    /// Submission minus intended start (how late), per counted request.
    pub late: Recorder,
    /// Intended starts inside the measured window (set by the engine after join).
    pub scheduled: u64,
    /// Intended starts inside the measured window never submitted (every thread busy until
    /// the level ended).
    pub unsent: u64,
    /// Counted requests whose intended start came while every thread of the pool was busy.
    pub pool_waits: u64,
    /// The generator threads' own wait for a CPU over the level ([`GenWait`]).
    pub gen_wait: GenWait,
}

/// The generator threads' wait for a CPU, summed over the threads that issue the requests
/// (each pool thread, or the one io_uring thread): their scheduler run delay and the time
/// they ran the level, each read by the thread itself at its start and its end
/// ([`GenWait::start`]). Starvation measured where it happens: a CPU quota throttling iosat's
/// cgroup, a CPU hog on its cores, a busy host all show here, while threads blocked in the
/// device's I/O (not runnable) add nothing. Zero span: not measured (the sim, no schedstats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GenWait {
    pub run_delay_ns: u64,
    pub span_ns: u64,
}

/// A generator thread's marks at its start ([`GenWait::start`]), closed by [`ThreadMark::end`].
pub struct ThreadMark {
    delay_ns: Option<u64>,
    at_ns: u64,
}

impl GenWait {
    /// Mark the calling thread's start, given its run delay so far (sys::sched
    /// `read_own_thread_delay`, read by the generator before the level's loop).
    pub fn start(delay_ns: Option<u64>) -> ThreadMark {
        ThreadMark {
            delay_ns,
            at_ns: crate::load::workload::now_ns(),
        }
    }

    /// The share of the generator threads' time spent runnable and not running, 0..=1; None
    /// when not measured.
    pub fn share(&self) -> Option<f64> {
        (self.span_ns > 0).then(|| (self.run_delay_ns as f64 / self.span_ns as f64).min(1.0))
    }
}

impl ThreadMark {
    /// The calling thread's wait since its mark, given its run delay now, added to
    /// `open.gen_wait` (nothing when its schedstat could not be read at either end).
    pub fn end(self, after: Option<u64>, open: &mut OpenStats) {
        let now = crate::load::workload::now_ns();
        if let (Some(a), Some(b)) = (self.delay_ns, after) {
            open.gen_wait.run_delay_ns += b.saturating_sub(a);
            open.gen_wait.span_ns += now.saturating_sub(self.at_ns);
        }
    }
}

impl OpenStats {
    pub fn new() -> OpenStats {
        OpenStats {
            intended: Recorder::new(),
            intended_windows: SubWindows::default(),
            late: Recorder::new(),
            scheduled: 0,
            unsent: 0,
            pool_waits: 0,
            gen_wait: GenWait::default(),
        }
    }

    /// Record one counted request (completed inside the measured window): its sub-window
    /// (`windows::WindowClock::index` of its completion), its latency from the intended start
    /// (completion − intended start), how late it was submitted (submission − intended
    /// start), and whether its intended start found every in-flight slot busy. Every
    /// open-loop engine calls this, and only this, per counted request. No allocation.
    #[inline]
    pub fn record(&mut self, window: usize, intended_ns: u64, late_ns: u64, waited: bool) {
        let intended_ns = intended_ns.max(1);
        self.intended.record(intended_ns);
        self.intended_windows.record(window, intended_ns);
        self.late.record(late_ns);
        self.pool_waits += u64::from(waited);
    }
}

impl Default for OpenStats {
    fn default() -> Self {
        Self::new()
    }
}

impl std::ops::AddAssign<&OpenStats> for OpenStats {
    fn add_assign(&mut self, o: &OpenStats) {
        self.intended += &o.intended;
        self.intended_windows += &o.intended_windows;
        self.late += &o.late;
        self.scheduled += o.scheduled;
        self.unsent += o.unsent;
        self.pool_waits += o.pool_waits;
        self.gen_wait.run_delay_ns += o.gen_wait.run_delay_ns;
        self.gen_wait.span_ns += o.gen_wait.span_ns;
    }
}

/// The share of requests that may find every thread of the pool busy before a level counts
/// as not kept: beyond it the pool, not the schedule, set the pace (a closed loop in part).
pub const KEPT_POOL_WAIT_SHARE: f64 = 0.01;

/// The share of the offered rate a level must achieve to count as kept. Completions are
/// counted inside the window, so the requests in flight at its two edges move the achieved
/// rate by (in flight)/(rate × duration): a few percent at most for a schedule that is kept.
pub const KEPT_ACHIEVED_SHARE: f64 = 0.97;

/// p99 lateness above this, in a level that was kept, is the machine's: its timer wake-ups
/// were slow (a busy CPU), not the device; the report says so (analysis::open).
pub const SLOW_WAKEUP_P99_NS: u64 = crate::analysis::open::SLOW_WAKEUP_P99_NS as u64;

/// How far behind its schedule the generator fell in one level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Behind {
    /// Median lateness of submissions (submission minus intended start).
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    /// Intended starts in the window never submitted.
    pub unsent: u64,
    /// Requests whose intended start found every thread of the pool busy.
    pub pool_waits: u64,
    /// The rate was offered: nothing unsent, the achieved rate within
    /// [`KEPT_ACHIEVED_SHARE`] of the offered one, at most [`KEPT_POOL_WAIT_SHARE`] of the
    /// requests waiting for a free thread. (Lateness from slow timer wake-ups alone does not
    /// undo it: those requests still arrived at the rate, and their lateness is in their
    /// latency from the intended start.)
    pub kept: bool,
    /// Whose lateness it was (analysis::open::lag_cause): "device" (it held the pool full),
    /// "machine" (the generator waited for a CPU or went out late while the pool had room);
    /// absent when the level was on time, and in files written before it was recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lag: Option<crate::analysis::open::Lag>,
    /// The share of the generator threads' time they waited for a CPU ([`GenWait::share`]:
    /// each thread's scheduler run delay over the level, summed, over the time they ran it,
    /// at most 1); absent when not measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_wait_share: Option<f64>,
    /// Requests the device held on average (achieved rate × mean latency from submission,
    /// Little's law), beside the pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_in_flight: Option<f64>,
}

/// One open-loop level, as `sweep --json` writes it under `open_levels`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OpenLevelResult {
    /// The rate asked for (`--rate`), requests per second.
    pub rate_iops: f64,
    /// What the schedule offered inside the measured window (Poisson arrivals vary around the
    /// rate asked): intended starts ÷ measured time.
    pub offered_iops: f64,
    /// Completions per second inside the window.
    pub iops: f64,
    pub ios: u64,
    pub elapsed_ns: u64,
    pub bytes_per_s: f64,
    pub arrivals: Arrivals,
    /// The pool: the most requests in flight.
    pub max_inflight: u32,
    /// From the intended start to completion: what a user arriving on schedule waits.
    pub latency_ns: LatencySummary,
    /// 95 % confidence intervals of `latency_ns`'s mean and percentiles, `[low, high]` ns
    /// (ci.rs: the wider of order statistics and batches over the sub-windows); null in
    /// files written before they were recorded.
    pub latency_ns_ci95: Option<crate::analysis::open::LatencyCi>,
    /// From submission to completion: what the device (and the path to it) took.
    pub service_latency_ns: LatencySummary,
    pub behind: Behind,
    /// With a latency target (`--target-p99`): whether this level met it at 95 % confidence
    /// (`met`, `missed`, `undecided`: analysis::open::decide); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_decision: Option<crate::analysis::open::Decision>,
    /// The kernel's view of the device over the same interval (null when unknown).
    pub kernel: Option<KernelView>,
    pub interrupted: bool,
}

impl OpenLevelResult {
    /// None when the level completed no I/O.
    pub fn new(
        spec: &LevelSpec,
        open: &OpenSpec,
        stats: &LevelStats,
        kernel: Option<KernelView>,
        kernel_queue_limit: Option<u32>,
    ) -> Option<OpenLevelResult> {
        let o = stats.open.as_ref()?;
        // An engine records every counted request through OpenStats::record, or (an engine
        // not yet doing so) none in the windows: then the intervals are order statistics only.
        debug_assert!(
            [0, o.intended.count].contains(&o.intended_windows.ios()),
            "open-loop requests recorded outside OpenStats::record"
        );
        let ios = stats.read_ns.len() + stats.write_ns.len();
        if ios == 0 || stats.elapsed_ns == 0 {
            return None;
        }
        // The window's length, not `elapsed_ns`, is what the schedule offered over (they
        // differ only when a stop cut the level).
        let window_s = spec.duration_ns as f64 / 1e9;
        let elapsed_s = stats.elapsed_ns as f64 / 1e9;
        let mut service = stats.read_ns.clone();
        service.add(&stats.write_ns).expect("same bounds");
        let offered_iops = o.scheduled as f64 / window_s;
        let iops = ios as f64 / elapsed_s;
        let late = o.late.summary();
        let cpu_wait_share = o.gen_wait.share();
        let service_summary = LatencySummary::from_hist(&service);
        let kept = kept(o.unsent, iops, offered_iops, o.pool_waits, ios) && !stats.interrupted;
        let evidence = crate::analysis::open::LagEvidence {
            kept,
            late_p99_ns: late.p99 as f64,
            iops,
            service_mean_ns: service_summary.mean as f64,
            pool: open.max_inflight,
            pool_full: o.unsent > 0 || o.pool_waits as f64 > KEPT_POOL_WAIT_SHARE * ios as f64,
            cpu_wait_share,
            kernel_in_flight: kernel.as_ref().and_then(|k| k.aqu_sz),
            kernel_queue_limit,
        };
        let behind = Behind {
            p50_ns: late.p50,
            p99_ns: late.p99,
            max_ns: late.max,
            unsent: o.unsent,
            pool_waits: o.pool_waits,
            kept,
            lag: crate::analysis::open::lag_cause(&evidence),
            cpu_wait_share,
            device_in_flight: Some(iops * service_summary.mean as f64 / 1e9),
        };
        Some(OpenLevelResult {
            rate_iops: open.rate_per_s,
            offered_iops,
            iops,
            ios,
            elapsed_ns: stats.elapsed_ns,
            bytes_per_s: (stats.read_bytes + stats.write_bytes) as f64 / elapsed_s,
            arrivals: open.arrivals,
            max_inflight: open.max_inflight,
            latency_ns: o.intended.summary(),
            latency_ns_ci95: super::ci::latency_ci(&o.intended, &o.intended_windows),
            service_latency_ns: service_summary,
            behind,
            target_decision: None,
            kernel,
            interrupted: stats.interrupted,
        })
    }
}

/// Whether a level offered its rate (see [`Behind::kept`]).
pub fn kept(unsent: u64, iops: f64, offered_iops: f64, pool_waits: u64, ios: u64) -> bool {
    unsent == 0
        && iops >= KEPT_ACHIEVED_SHARE * offered_iops
        && pool_waits as f64 <= KEPT_POOL_WAIT_SHARE * ios as f64
}

/// How the open loop ran, and what it found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OpenLoopInfo {
    /// `--rate` as given ("auto" or the list).
    pub rates: String,
    pub arrivals: Arrivals,
    /// The pool: the most requests in flight, and why that many.
    pub max_inflight: u32,
    pub max_inflight_why: String,
    /// Which generator ran the levels: "io_uring" (one thread on a ring, open/uring.rs),
    /// "threads" (a pool of threads with one pread/pwrite each, threads.rs) or "sim" (the sim
    /// engine's device in simulated time, sim.rs); "" (and absent
    /// from the JSON) in results written before it was recorded.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub generator: String,
    /// The latency target searched for (`--target-p99`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<crate::analysis::open::Target>,
    /// None until a level is measured.
    pub verdict: Option<crate::analysis::open::OpenVerdict>,
}

impl crate::load::result::SweepReport {
    /// The open loop's verdict over its levels so far, beside the closed loop's points.
    pub fn refresh_open_verdict(&mut self) {
        let points: Vec<_> = self
            .open_levels
            .iter()
            .map(OpenLevelResult::point)
            .collect();
        let closed = self.points();
        let target = self.open_loop.as_ref().and_then(|i| i.target);
        for (l, p) in self.open_levels.iter_mut().zip(&points) {
            l.target_decision = target.map(|t| crate::analysis::open::decide(p, t));
        }
        if let Some(info) = self.open_loop.as_mut() {
            info.verdict = (!points.is_empty())
                .then(|| crate::analysis::open::verdict(&points, &closed, info.target));
        }
    }
}

impl OpenLevelResult {
    /// The level as the analysis sees it.
    pub fn point(&self) -> crate::analysis::open::OpenPoint {
        crate::analysis::open::OpenPoint {
            offered_iops: self.offered_iops,
            iops: self.iops,
            latency_ns: crate::analysis::LatencyNs::from(&self.latency_ns),
            service_latency_ns: crate::analysis::LatencyNs::from(&self.service_latency_ns),
            kept: self.behind.kept,
            lag: self.behind.lag,
            latency_ci_ns: self.latency_ns_ci95,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_is_kept_only_when_every_request_went_out_on_time() {
        assert!(kept(0, 990.0, 1000.0, 5, 1000));
        assert!(!kept(1, 990.0, 1000.0, 0, 1000), "an unsent request");
        assert!(!kept(0, 900.0, 1000.0, 0, 1000), "achieved 90 %");
        assert!(
            !kept(0, 1000.0, 1000.0, 20, 1000),
            "2 % waited for a thread"
        );
    }

    #[test]
    fn the_generators_cpu_wait_is_a_share_of_its_threads_time() {
        // 64 threads each waiting 0.5 s of their 1 s: half, whatever the count (the share of
        // the summed latency it replaces shrank as requests queued: 0.008 under a quota).
        let mut all = OpenStats::new();
        for _ in 0..64 {
            let mut t = OpenStats::new();
            t.gen_wait = GenWait {
                run_delay_ns: 500_000_000,
                span_ns: 1_000_000_000,
            };
            all += &t;
        }
        assert_eq!(all.gen_wait.share(), Some(0.5));
        assert_eq!(GenWait::default().share(), None, "not measured");
        let over = GenWait {
            run_delay_ns: 3,
            span_ns: 2,
        };
        assert_eq!(over.share(), Some(1.0));
        // A real thread's marks: its span is the time between them.
        let delay = || {
            let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
            text.split_whitespace().nth(1)?.parse::<u64>().ok()
        };
        let mark = GenWait::start(delay());
        std::thread::sleep(std::time::Duration::from_millis(2));
        let mut o = OpenStats::new();
        mark.end(delay(), &mut o);
        if std::path::Path::new("/proc/thread-self/schedstat").exists() {
            assert!(o.gen_wait.span_ns >= 2_000_000, "{:?}", o.gen_wait);
            assert!(o.gen_wait.share().unwrap() < 1.0, "{:?}", o.gen_wait);
        }
    }

    #[test]
    fn a_level_is_built_from_its_stats() {
        let spec = LevelSpec {
            threads: 4,
            queue_depth: 1,
            pattern: crate::load::Pattern::RandRead,
            block_size: 4096,
            ramp_ns: 0,
            duration_ns: 1_000_000_000,
            seed: 1,
        };
        let open = OpenSpec {
            rate_per_s: 100.0,
            arrivals: Arrivals::Poisson,
            max_inflight: 4,
        };
        let mut st = LevelStats::new();
        let mut o = OpenStats::new();
        for i in 0..100u64 {
            st.read_ns.record(1_000_000).unwrap();
            o.record((i % 8) as usize, 1_000_000 + i * 10_000, i * 10_000, false);
        }
        st.read_bytes = 100 * 4096;
        st.elapsed_ns = 1_000_000_000;
        o.scheduled = 101;
        st.open = Some(o);
        let r = OpenLevelResult::new(&spec, &open, &st, None, None).unwrap();
        assert_eq!(r.ios, 100);
        assert!((r.offered_iops - 101.0).abs() < 1e-9);
        assert!((r.iops - 100.0).abs() < 1e-9);
        // HdrHistogram's 3 significant digits: the bucket's highest equivalent value.
        assert!((1_000_000..1_001_000).contains(&r.service_latency_ns.p50));
        assert!(r.latency_ns.mean > r.service_latency_ns.mean);
        assert!(r.behind.kept, "{:?}", r.behind);
        assert!(
            (979_000..=981_000).contains(&r.behind.p99_ns),
            "{:?}",
            r.behind
        );
        // The same level with requests waiting for the pool is not kept.
        let mut st2 = st.clone();
        st2.open.as_mut().unwrap().pool_waits = 2;
        let r2 = OpenLevelResult::new(&spec, &open, &st2, None, None).unwrap();
        assert!(!r2.behind.kept);
        let j = serde_json::to_value(&r).unwrap();
        for k in [
            "offered_iops",
            "iops",
            "latency_ns",
            "service_latency_ns",
            "behind",
        ] {
            assert!(j.get(k).is_some(), "{k} in {j}");
        }
        assert_eq!(j["behind"]["kept"], true);
        // Each figure's interval holds it: 100 values 10 µs apart, so the p50's 95 % interval
        // spans about ±10 ranks.
        let ci = r.latency_ns_ci95.unwrap();
        let (p50, [lo, hi]) = (r.latency_ns.p50, ci.p50);
        assert!(lo < p50 && p50 < hi, "{ci:?}");
        assert!(hi - lo >= 150_000 && hi - lo <= 300_000, "{ci:?}");
        assert_eq!(j["latency_ns_ci95"]["p99"][1], ci.p99[1]);
        assert!(j["behind"]["p99_ns"].is_u64());
    }
}
