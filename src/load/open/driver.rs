//! The open loop's level driver ([`OpenDriver`], `sweep --rate`), shaped like the closed
//! loop's (load/driver.rs, whose `run_level` measures each level with the same kernel view,
//! scheduler counters and progress): the pool sized (spec.rs), one level per offered rate (a
//! list, `auto` from the closed loop's maximum, or the `--target-p99` search of
//! analysis::open), each level turned into an [`OpenLevelResult`], the verdict refreshed and
//! the report so far handed to a callback after every level. A level cut short by a stop is
//! left out, said so.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/.

use super::generator::{Chosen, OpenLoop};
use super::result::{OpenLevelResult, OpenLoopInfo};
use super::spec::{level_spec, pool_for, pool_words, Expected, OpenPlan, OpenSpec};
use crate::analysis::open::Lag;
use crate::error::Result;
use crate::load::driver::{AfterLevel, LevelProgress, SweepPlan};
use crate::load::result::SweepReport;
use crate::monitor::watch::DeviceWatch;

/// Runs an [`OpenPlan`]'s levels on a generator into a report; made whole by its caller.
pub struct OpenDriver<'a> {
    pub gen: &'a mut Chosen,
    pub open: &'a OpenPlan,
    pub plan: &'a SweepPlan,
    pub watch: Option<&'a DeviceWatch>,
    pub progress: &'a dyn LevelProgress,
    pub after_level: &'a mut AfterLevel<'a>,
}

impl<'a> OpenDriver<'a> {
    /// The open-loop levels, after the closed loop's when it ran: one level per rate, each
    /// with its pool sized (spec.rs `pool_for`), a level that fell behind because of the
    /// machine measured once more, the verdict refreshed and the files rewritten after each.
    /// Notes go to `report.notes` (and `crate::error::note`).
    pub fn run(&mut self, report: &mut SweepReport) -> Result<()> {
        let o = self.open;
        self.start(report);
        let closed_max = report.verdict.as_ref().map(|v| v.peak_iops);
        let rates = o.rates(closed_max);
        let search = o.target.zip(closed_max.filter(|m| *m > 0.0));
        if rates.is_empty() && search.is_none() {
            report.notes.push(
                "the closed loop measured no maximum, so no rate was offered (--rate auto and \
                 --target-p99 start from it)"
                    .into(),
            );
        }
        // --target-p99: the closed loop's estimate brackets the search (analysis::open).
        let estimate = search.and_then(|(t, _)| {
            crate::analysis::open::estimate_from_closed(&report.points(), t).map(|a| a.iops)
        });
        let next_rate = |i: usize, r: &SweepReport| -> Option<f64> {
            match search {
                Some((t, max)) => {
                    let pts: Vec<_> = r.open_levels.iter().map(OpenLevelResult::point).collect();
                    crate::analysis::open::search_next(&pts, t, max, estimate)
                }
                None => rates.get(i).copied(),
            }
        };
        report.complete = false;
        let mut i = 0;
        while let Some(rate) = next_rate(i, report) {
            if crate::sys::signal::stop_requested() {
                report.interrupted = true;
                break;
            }
            let r = self.level(report, rate)?;
            if let Some(r) = r {
                self.progress.open_level_done(&r);
                if let Some(info) = report.open_loop.as_mut() {
                    info.max_inflight = info.max_inflight.max(r.max_inflight);
                }
                report.open_levels.push(r);
            }
            report.refresh_open_verdict();
            (self.after_level)(report)?;
            if report.interrupted {
                break;
            }
            i += 1;
        }
        report.complete = !report.interrupted;
        Ok(())
    }

    /// The open loop's header in the report, and its notes.
    fn start(&mut self, report: &mut SweepReport) {
        let o = self.open;
        if let Some(n) = self.gen.note.take() {
            crate::error::note(&n);
            report.notes.push(n);
        }
        if report.levels.is_empty() {
            // No closed loop ran: the report names the open loop's generator, not the engine
            // that would have run it (the sim stays the sim: its device is what is measured).
            report.workload.engine = match self.gen.name {
                "sim" => "sim".into(),
                name => format!("open ({name})"),
            };
            report.workload.levels = String::new();
        }
        let why = pool_words(o.max_inflight);
        crate::error::note(&why);
        report.open_loop = Some(OpenLoopInfo {
            rates: o.rates_text.clone(),
            arrivals: o.arrivals,
            max_inflight: o.max_inflight.unwrap_or(0),
            max_inflight_why: why,
            generator: self.gen.name.into(),
            target: o.target,
            verdict: None,
        });
    }

    /// One level at `rate`: measured, and measured once more when it fell behind because of
    /// the machine (its lateness was not the device's: a second look may find the host
    /// quieter). None when it completed no I/O or was cut short (said so in the notes).
    fn level(&mut self, report: &mut SweepReport, rate: f64) -> Result<Option<OpenLevelResult>> {
        let mut spec = OpenSpec {
            rate_per_s: rate,
            arrivals: self.open.arrivals,
            max_inflight: pool_for(self.open.max_inflight, rate, expected_latency(report, rate)),
        };
        // The first measurement of a level measured again (it fell behind because of the
        // machine): kept when the second completes nothing.
        let mut first: Option<OpenLevelResult> = None;
        loop {
            let idx = report.levels.len()
                + usize::from(report.baseline_remeasured.is_some())
                + report.open_levels.len();
            let engine = self.gen.engine.as_mut();
            let (r, cut) = measure(engine, self.plan, spec, idx, self.watch, self.progress)?;
            report.interrupted |= cut;
            match r {
                // A level cut short offered its rate for part of its window only: its achieved
                // rate and lateness would read as "not kept" and be judged beyond capacity.
                // Finished levels stay (docs/design.md §3.4); this one is left out, said so.
                _ if cut => {
                    report.notes.push(format!(
                        "the open-loop level at {rate:.0} IOPS offered was interrupted and is left out"
                    ));
                    return Ok(None);
                }
                Some(r)
                    if first.is_none() && !r.behind.kept && r.behind.lag == Some(Lag::Machine) =>
                {
                    let was = spec.max_inflight;
                    spec.max_inflight = regrown_pool(self.open.max_inflight, &spec, &r);
                    let pool = if spec.max_inflight > was {
                        format!(
                            ", with a pool of {} for the stall it met",
                            spec.max_inflight
                        )
                    } else {
                        String::new()
                    };
                    report.notes.push(
                        format!(
                            "the open-loop level at {rate:.0} IOPS offered fell behind because of \
                         this machine (lateness p99 {:.2} ms, the device holding {:.1} of {} \
                         requests{}) and was measured again",
                            r.behind.p99_ns as f64 / 1e6,
                            r.behind.device_in_flight.unwrap_or(0.0),
                            r.max_inflight,
                            r.behind.cpu_wait_share.map_or(String::new(), |w| format!(
                                ", its threads waiting for a CPU {:.0} % of their time",
                                100.0 * w
                            ))
                        ) + &pool,
                    );
                    first = Some(r);
                }
                // A level that completed nothing has no latency to judge. Measured again, its
                // first measurement (behind because of the machine) stands; else it is left
                // out. Either is said, never dropped in silence. (A CPU quota on iosat's
                // cgroup stopped the generator for whole 1-s windows; its threads' wait for a
                // CPU, measured from their first run, then read 0 % as often as 100 %.)
                None => {
                    let (what, kept) = match first.take() {
                        Some(f) => ("the first measurement stands", Some(f)),
                        None => ("it is left out", None),
                    };
                    report.notes.push(format!(
                        "the open-loop level at {rate:.0} IOPS offered completed no I/O in its \
                         window: {what}"
                    ));
                    return Ok(kept);
                }
                r => return Ok(r),
            }
        }
    }
}

/// The pool for measuring a level again that fell behind because of the machine: when
/// requests waited for a slot (the pool filled in a stall longer than any measured before
/// it), sized on the level's own longest latency from submission; else, or with
/// `--max-inflight`, the same. (`--rate` at 50 % of this machine's disk maximum, pool 305
/// from the level before, met a 32 ms stall: 3,599 requests waited for a slot, twice.)
fn regrown_pool(asked: Option<u32>, spec: &OpenSpec, r: &OpenLevelResult) -> u32 {
    if asked.is_some() || r.behind.pool_waits == 0 && r.behind.unsent == 0 {
        return spec.max_inflight;
    }
    let own = Expected {
        mean_ns: r.service_latency_ns.mean as f64,
        tail_ns: r.service_latency_ns.max as f64,
    };
    pool_for(None, spec.rate_per_s, Some(own)).max(spec.max_inflight)
}

/// The latency a level at `rate` is expected to see, for its pool: the closed loop's mean at
/// that throughput (its slowest level's beyond the closed loop's maximum) and the longest
/// latency of any closed level (a stall of the device comes at any load; sized on the p99.9,
/// a pool at 16,700/s on this machine's disk still filled in its 8 ms stalls), else the longest an open level measured from submission so
/// far; None before either.
fn expected_latency(report: &SweepReport, rate: f64) -> Option<Expected> {
    use crate::analysis::open::{closed_at, Percentile};
    let closed = report.points();
    let longest = |of: fn(&crate::analysis::LatencyNs) -> Option<f64>| {
        closed
            .iter()
            .filter_map(|p| of(&p.latency_ns))
            .max_by(f64::total_cmp)
    };
    let mean = closed_at(&closed, rate, Percentile::Mean).or_else(|| longest(|l| Some(l.mean)));
    if let Some(mean_ns) = mean {
        let tail_ns = longest(|l| l.max).unwrap_or(mean_ns);
        return Some(Expected { mean_ns, tail_ns });
    }
    let open = |f: fn(&OpenLevelResult) -> u64| {
        report
            .open_levels
            .iter()
            .map(|l| f(l) as f64)
            .max_by(f64::total_cmp)
    };
    Some(Expected {
        mean_ns: open(|l| l.service_latency_ns.mean)?,
        tail_ns: open(|l| l.service_latency_ns.max)?,
    })
}

/// Run one open-loop level on `engine`, offered `open`, with the closed loop's kernel view,
/// scheduler counters and progress (load/driver.rs `run_level`); None when it completed no
/// I/O; true when a stop cut it short.
pub fn measure(
    engine: &mut dyn OpenLoop,
    plan: &SweepPlan,
    open: OpenSpec,
    idx: usize,
    watch: Option<&DeviceWatch>,
    progress: &dyn LevelProgress,
) -> Result<(Option<OpenLevelResult>, bool)> {
    engine.offer(open);
    let ls = level_spec(plan, &open, idx);
    // The generator's wait for a CPU is its threads' own (result.rs GenWait), not the
    // process's run delay the closed loop reads.
    let (stats, kernel, _sched) =
        crate::load::driver::run_level(engine, &ls, watch, &plan.root, progress, idx)?;
    let cut = stats.interrupted || crate::sys::signal::stop_requested();
    let limit = watch.and_then(|w| crate::sys::device::queue_info(&w.root, &w.dev).nr_requests);
    Ok((OpenLevelResult::new(&ls, &open, &stats, kernel, limit), cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The issue-38 run's level: 23,904/s, pool 305, a 32 ms stall, 3,599 slot waits.
    fn stalled(waits: u64) -> OpenLevelResult {
        let mut r = OpenLevelResult::default();
        r.service_latency_ns.mean = 1_500_000;
        r.service_latency_ns.max = 32_358_399;
        r.behind.pool_waits = waits;
        r
    }

    #[test]
    fn a_level_that_filled_its_pool_is_measured_again_with_one_for_its_stall() {
        let spec = OpenSpec {
            rate_per_s: 23_904.0,
            arrivals: crate::load::schedule::Arrivals::Poisson,
            max_inflight: 305,
        };
        // 23,904/s × 32 ms = 774 arrivals in the stall: the most the pool may be.
        assert_eq!(regrown_pool(None, &spec, &stalled(3_599)), 512);
        // No request waited for a slot: the pool was not what held it.
        assert_eq!(regrown_pool(None, &spec, &stalled(0)), 305);
        // --max-inflight is the user's.
        assert_eq!(regrown_pool(Some(305), &spec, &stalled(3_599)), 305);
    }
}
