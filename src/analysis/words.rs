//! The verdict in plain words: the summary's sentences, written from the numbers of a
//! [`Judgement`] (judge.rs) in a fixed order (the run's trust when it is shaken, the baseline
//! and how it was chosen, the knee,
//! max useful IOPS, the overload point, queueing, the plateau and what limits it, the USL fit,
//! the %util lesson, unstable and disturbed levels, Little's law's complaints), and the one
//! line per direction of a mixed sweep. Computes no finding of its own.
//!
//! Pure.
//! Imports only: analysis/.

use super::judge::{ratio, Judgement, KneeNote, Shape};
use super::text::{self, fmt_iops, fmt_latency_ns, fmt_ratio};
use super::{
    analyze, cap, confidence, declared, throttle, Context, LevelFinding, LevelPoint, LittleCheck,
    OVERLOAD_P95_FACTOR, POWER_TIE, USL_MAX_EXTRAPOLATION, USL_MIN_LEVELS, USL_MIN_R2,
    UTIL_BUSY_PCT, UTIL_FLAT_MIN_GROWTH, UTIL_FLAT_MIN_PCT, UTIL_LESSON_MIN_GROWTH, UTIL_SAME_PTS,
};

/// The summary of a judgement, in the order the verdict prints it.
pub fn summary(j: &Judgement, ctx: &Context) -> Vec<String> {
    let (disturbance, _) = confidence::disturbance_lines(&j.all);
    let (Some(first), Some(base)) = (j.first.as_ref(), j.base.as_ref()) else {
        let mut out = vec!["No levels to analyse.".to_string()];
        out.extend(disturbance);
        return out;
    };
    let mut out = Vec::new();
    // The run's trust first: what follows is read in its light.
    out.extend(trust_line(j));
    if first.concurrency != 1 {
        out.push(format!(
            "No concurrency-1 level: the baseline is the lowest level measured (concurrency {}), \
             so every ratio is relative to it and understates saturation.",
            first.concurrency
        ));
    }
    if let Some(d) = &j.baseline_drift {
        out.push(confidence::drift_line(d));
    }
    if let Some(slowed) = &j.rebased_from {
        out.push(confidence::rebase_line(base, slowed));
    }
    let Some(shape) = j.shape.as_ref() else {
        out.push(format!(
            "Only one level measured (concurrency {}): a verdict needs at least two levels, so \
             nothing is judged (no knee, no overload point, no fit).",
            base.concurrency
        ));
        out.push(baseline_line(base));
        out.extend(disturbance);
        return out;
    };
    out.push(baseline_line(base));
    out.extend(knee_lines(j, shape, ctx));
    out.push(overload_line(j, base, shape));
    out.push(linear_line(&j.levels, shape));
    out.extend(limit_lines(&j.levels, shape, ctx));
    out.extend(usl_line(&j.levels, shape));
    out.extend(util_lesson(&j.levels));
    out.extend(unstable_line(&shape.unstable_levels));
    out.extend(stall_line(j));
    out.extend(disturbance);
    out.extend(littles_lines(&j.levels, &j.findings));
    out
}

/// The run's trust in one line, when it is shaken: what disturbed it (levels that shared the
/// machine or the disk, or stalled; a baseline that drifted, scattered or stalled), and that the
/// knee, max useful IOPS and the overload point are therefore ranges. None for a quiet run.
pub fn trust_line(j: &Judgement) -> Option<String> {
    let mut why = Vec::new();
    if let Some(d) = j.baseline_drift.as_ref().filter(|d| d.shaken()) {
        let pct = d.change_rel() * 100.0;
        why.push(if d.first_stalled {
            format!("the first baseline stalled ({pct:+.0} % against its re-measure)")
        } else if d.drifted {
            format!("the baseline drifted {pct:+.0} % during the sweep")
        } else {
            format!(
                "the baseline's two measurements differ {pct:+.0} % and scatter too much to tell"
            )
        });
    }
    let stalled: Vec<u32> = j
        .stalled_levels
        .iter()
        .copied()
        .filter(|&c| {
            !j.baseline_drift
                .as_ref()
                .is_some_and(|d| d.first_stalled && d.concurrency == c)
        })
        .collect();
    if !stalled.is_empty() {
        why.push(format!(
            "concurrency {} stalled",
            confidence::list(&stalled)
        ));
    }
    let machine = |l: &&LevelPoint| confidence::machine_share(l) > 0.0;
    let cpu: Vec<u32> = j
        .levels
        .iter()
        .filter(machine)
        .map(|l| l.concurrency)
        .collect();
    let waited: Vec<u32> = j
        .levels
        .iter()
        .filter(|l| machine(l) && !confidence::only_busy_cpus(l))
        .map(|l| l.concurrency)
        .collect();
    if !waited.is_empty() {
        why.push(format!(
            "concurrency {} waited for a CPU",
            confidence::list(&waited)
        ));
    }
    // Said as measured: the CPUs' load, not a wait iosat could not see.
    let loaded: Vec<&LevelPoint> = j
        .levels
        .iter()
        .filter(|l| machine(l) && confidence::only_busy_cpus(l))
        .collect();
    if !loaded.is_empty() {
        let most = loaded
            .iter()
            .filter_map(|l| confidence::busy_cpus(l))
            .fold(0.0, f64::max);
        let c: Vec<u32> = loaded.iter().map(|l| l.concurrency).collect();
        why.push(format!(
            "concurrency {} ran while other processes kept the CPUs up to {most:.0} % busy",
            confidence::list(&c)
        ));
    }
    let other: Vec<u32> = j
        .disturbed_levels
        .iter()
        .copied()
        .filter(|c| !cpu.contains(c) && !j.stalled_levels.contains(c))
        .collect();
    if !other.is_empty() {
        why.push(format!(
            "concurrency {} shared the disk with another workload",
            confidence::list(&other)
        ));
    }
    if why.is_empty() {
        return None;
    }
    // Ranges when the widened levels overlap; a knee that stands out beyond the widening
    // stays a point, and the sentence must not promise a range the knee line won't give.
    let answers = match &j.shape {
        Some(s) if s.knee_range.is_some() => {
            " The knee, max useful IOPS and the overload point below are ranges that allow for \
             it (or undecided), not points; measure again on a quiet machine to narrow them."
        }
        Some(_) => {
            " The answers below allow for it: the knee stands out beyond it, the other figures \
             are ranges where it could move them; measure again on a quiet machine to confirm."
        }
        None => "",
    };
    Some(format!("Disturbed run: {}.{answers}", why.join("; ")))
}

/// A stalled level in one sentence each.
fn stall_line(j: &Judgement) -> Vec<String> {
    j.levels
        .iter()
        .filter(|l| j.stalled_levels.contains(&l.concurrency))
        .map(|l| {
            let w = confidence::stall_words(l);
            format!(
                "C{}: the load generator or the device stopped for part of it, so its figures \
                 hold the stall; it is marked disturbed.",
                &w[1..]
            )
        })
        .collect()
}

/// "Baseline (concurrency 1): 0.140 ms average latency, 0.170 ms p95, 7113 IOPS."
fn baseline_line(base: &LevelPoint) -> String {
    format!(
        "Baseline (concurrency {}): {} average latency{}, {} IOPS.",
        base.concurrency,
        fmt_latency_ns(base.latency_ns.mean),
        base.latency_ns
            .p95
            .map(|p| format!(", {} p95", fmt_latency_ns(p)))
            .unwrap_or_default(),
        fmt_iops(base.iops)
    )
}

/// The knee, why it is not the power peak, whether it lies beyond, and max useful IOPS.
fn knee_lines(j: &Judgement, shape: &Shape, ctx: &Context) -> Vec<String> {
    let lv = &j.levels;
    let knee = &lv[shape.knee];
    let shaken = trust_line(j).is_some();
    let knee_words = match shape.knee_range {
        Some((a, b)) if shape.knee_undecided => format!(
            "undecided — the run's disturbance leaves every level from {a} to {b} open ({} \
             measured best)",
            knee.concurrency
        ),
        Some((a, b)) if shaken => format!(
            "{a}–{b} (the run's disturbance and the levels' spread can't separate them; {} \
             measured best)",
            knee.concurrency
        ),
        Some((a, b)) => format!(
            "{a}–{b} (the levels' own spread can't separate them; {} measured best)",
            knee.concurrency
        ),
        None => knee.concurrency.to_string(),
    };
    let mut out = vec![format!(
        "Knee (optimal concurrency): {knee_words} — {} IOPS at {} average latency ({} the \
         baseline).",
        fmt_iops(knee.iops),
        fmt_latency_ns(knee.latency_ns.mean),
        // Never below the baseline: a clearly faster level became the baseline, so what is
        // left is within the noise.
        fmt_ratio(j.findings[shape.knee].saturation_avg.max(1.0))
    )];
    match shape.knee_note {
        Some(KneeNote::UslTie {
            peak,
            pick,
            optimum,
        }) => out.push(format!(
            "Power at concurrency {peak} and {pick} is within {:.0} % of each other; the USL fit \
             (optimum near {optimum:.0}) picks {pick}.",
            POWER_TIE * 100.0,
        )),
        Some(KneeNote::PastOverload { peak }) => out.push(format!(
            "Power peaks at concurrency {peak}, but p95 is already above {OVERLOAD_P95_FACTOR}x \
             the baseline there; the knee is the last level before overload."
        )),
        None => {}
    }
    let gentle = ctx.sweep_limits.filter(|g| !g.is_none());
    if let (Some(g), Some(above)) = (gentle, shape.knee_above) {
        out.push(gentle_line(&g, above, knee.iops));
    } else if shape.knee == lv.len() - 1 {
        out.push(
            "The knee is the highest level measured: IOPS per unit of latency was still \
             rising, so the real knee lies beyond; measure at higher concurrency."
                .to_string(),
        );
    }
    let peak = &lv[shape.peak];
    let at = match (shaken, shape.max_useful_range, shape.knee_range) {
        (true, Some((x_lo, x_hi)), Some((a, b))) => format!(
            "between {} and {} (over the knee's range {a}–{b}; {} measured at concurrency {})",
            fmt_iops(x_lo),
            fmt_iops(x_hi),
            fmt_iops(knee.iops),
            knee.concurrency
        ),
        _ => format!(
            "{} at concurrency {}",
            fmt_iops(knee.iops),
            knee.concurrency
        ),
    };
    out.push(format!(
        "Max useful IOPS: {at}{}.",
        if peak.concurrency != knee.concurrency {
            format!(
                " (the most measured: {} at concurrency {}, for {} the baseline latency)",
                fmt_iops(peak.iops),
                peak.concurrency,
                fmt_ratio(j.findings[shape.peak].saturation_avg)
            )
        } else {
            String::new()
        }
    ));
    out
}

/// A gentle sweep that stopped below the knee: the knee and the ceiling as lower bounds.
fn gentle_line(g: &super::evidence::SweepLimits, above: u32, iops: f64) -> String {
    let mut how = Vec::new();
    if let Some(n) = g.max_concurrency {
        how.push(format!("--max-concurrency {n}"));
    }
    if let Some(r) = g.rate_limit_iops {
        how.push(format!("--rate-limit {} IOPS", fmt_iops(r)));
    }
    format!(
        "Gentle sweep ({}): the knee was not reached, so the knee is above {above} in flight and \
         the ceiling above {} IOPS; both are lower bounds, never more (IOPS per unit of latency \
         still rose where the sweep stopped on purpose).",
        how.join(", "),
        fmt_iops(iops)
    )
}

/// The 3x-p95 rule's answer, with its uncertainty.
fn overload_line(j: &Judgement, base: &LevelPoint, shape: &Shape) -> String {
    let lv = &j.levels;
    match (shape.overload, base.latency_ns.p95) {
        (Some(o), Some(bp)) => {
            let f = j
                .findings
                .iter()
                .find(|f| f.concurrency == o)
                .expect("found");
            let p95 = lv
                .iter()
                .find(|l| l.concurrency == o)
                .and_then(|l| l.latency_ns.p95)
                .unwrap_or(0.0);
            let mut h = Vec::new();
            if let Some((lo, hi)) = shape.overload_by_spread {
                if lo < o {
                    h.push(format!("perhaps from {lo}"));
                }
                if hi > o {
                    h.push(format!("surely from {hi}"));
                }
            }
            if let Some(a) = shape.overload_alt.filter(|&a| a != o) {
                h.push(format!("from {a} against the re-measured baseline"));
            }
            let hedge = if h.is_empty() {
                String::new()
            } else {
                format!(", {}", h.join(", "))
            };
            if shape.shaken && shape.overload_surely.is_none() {
                return format!(
                    "Perhaps overloaded from concurrency {o}: p95 {} is {} the baseline p95 {}, \
                     but with the run's disturbance no level is surely above \
                     {OVERLOAD_P95_FACTOR}x (the tails hold the disturbance).",
                    fmt_latency_ns(p95),
                    fmt_ratio(f.saturation_p95.unwrap_or(0.0)),
                    fmt_latency_ns(bp)
                );
            }
            format!(
                "Overloaded from concurrency {o}{hedge}: p95 {} is {} the baseline p95 {} (more \
                 than {OVERLOAD_P95_FACTOR}x).",
                fmt_latency_ns(p95),
                fmt_ratio(f.saturation_p95.unwrap_or(0.0)),
                fmt_latency_ns(bp)
            )
        }
        (None, Some(_)) if shape.overload_perhaps.is_some() => {
            let last = lv.last().expect("non-empty").concurrency;
            format!(
                "Not surely overloaded up to concurrency {last}, but with the run's disturbance \
                 perhaps from {}: its p95 may be above {OVERLOAD_P95_FACTOR}x the baseline's.",
                shape.overload_perhaps.unwrap_or(last)
            )
        }
        (None, Some(_)) => {
            let last = lv.last().expect("non-empty").concurrency;
            format!(
                "Not overloaded: p95 stays within {OVERLOAD_P95_FACTOR}x the baseline up to \
                 concurrency {last}."
            )
        }
        _ => "No p95 at the baseline: the 3x-p95 overload rule can't be applied.".to_string(),
    }
}

/// Where latency turns linear (queueing), or that it never does.
fn linear_line(lv: &[LevelPoint], shape: &Shape) -> String {
    match shape.linear_from {
        Some(n) => {
            let i = lv.iter().position(|l| l.concurrency == n).unwrap_or(0);
            let last = lv.last().expect("non-empty");
            format!(
                "Latency turns linear (queueing) from concurrency {n}: from there to {}, \
                 concurrency grew {:.0}x, latency {:.1}x, IOPS only {:.2}x.",
                last.concurrency,
                f64::from(last.concurrency) / f64::from(n),
                last.latency_ns.mean / lv[i].latency_ns.mean,
                last.iops / lv[i].iops
            )
        }
        None if shape.overload.is_none() => "Latency never turns linear within the measured \
                                             levels: the device may give more at higher \
                                             concurrency."
            .to_string(),
        None => "Latency does not grow in proportion to concurrency between the measured \
                 levels, but the p95 tail already says overload."
            .to_string(),
    }
}

/// A plateau: what limits it and where the requests wait. A throttle above the block layer or
/// a kernel limit is named by the throttle's sentence; otherwise a cap is claimed only on
/// positive evidence, and without it the sentence says that one sweep cannot tell. Then the
/// kernel's limits the run did not reach.
fn limit_lines(lv: &[LevelPoint], shape: &Shape, ctx: &Context) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(t) = shape.limit.as_ref().filter(|_| shape.plateau_in_drift) {
        let declared = ctx
            .declared_cap
            .as_ref()
            .and_then(|d| d.against_total(t.iops, t.bytes_per_s, ctx.read_share.unwrap_or(1.0)));
        out.push(match declared {
            None => format!(
                "Throughput is flat at about {} from concurrency {} while the baseline drifted: \
                 a device that slows during the sweep makes such a plateau as well as a limit \
                 does, so neither a limit nor a cap is named; measure again once the device is \
                 steady.",
                iops_and_mb(t.iops, t.bytes_per_s),
                t.from_concurrency
            ),
            Some(u) => drifted_declared_sentence(t, &u),
        });
    } else if let Some(t) = &shape.limit {
        let declared = ctx
            .declared_cap
            .as_ref()
            .and_then(|d| d.against_total(t.iops, t.bytes_per_s, ctx.read_share.unwrap_or(1.0)));
        out.push(match (&shape.cap, declared) {
            (Some(c), _) if c.on_device() => cap_sentence(c, t),
            (Some(_), _) => throttle::sentence(t, ctx),
            // Held above the block layer with no throttle set: the machine's limit.
            (None, _) if t.place == throttle::LimitPlace::AboveBlockLayer => {
                throttle::sentence(t, ctx)
            }
            // The user's word on the cap decides what one sweep cannot (issue 42), but a
            // plateau the machine held down (its levels' CPU wait or busy CPUs) below the
            // figure says nothing of the device's own limit.
            (None, Some(u)) if u.place() == declared::CapPlace::Below && machine_plateau(lv, t) => {
                disturbed_declared_sentence(t, &u)
            }
            (None, Some(u)) => declared_plateau_sentence(t, &u),
            (None, None) => plateau_sentence(t, ctx),
        });
        // A finding of its own named the limit: the declaration is set beside it.
        if let (Some(u), false) = (declared, out.last().is_some_and(|l| l.contains(DECLARED))) {
            out.push(format!(
                "The plateau is {:.1} % of {}.",
                u.ratio * 100.0,
                u.cap_words()
            ));
        }
    } else if let Some(u) = declared_use_of(shape_peak(shape, lv), ctx) {
        out.push(declared_unreached_sentence(&u, shape));
    }
    if !ctx.limits.is_empty() && shape.limit.as_ref().map_or(true, |t| t.io_limit.is_none()) {
        let words: Vec<String> = ctx
            .limits
            .iter()
            .map(|l| throttle::limit_words(l, ctx.device))
            .collect();
        out.push(format!(
            "The kernel limits this process's I/O ({}); the measured throughput does not sit \
             at that limit.",
            words.join("; ")
        ));
    }
    out
}

/// The USL fit when trusted, or why none is shown.
fn usl_line(lv: &[LevelPoint], shape: &Shape) -> Option<String> {
    let distinct = lv.len();
    match shape.usl.as_ref() {
        Some(u) if u.trusted() => {
            let max_n = f64::from(lv.last().expect("non-empty").concurrency);
            Some(format!(
                "USL fit: λ = {} IOPS, σ = {}, κ = {} (R² {:.3}){}{}.",
                fmt_iops(u.lambda),
                text::fmt_coef(u.sigma),
                text::fmt_coef(u.kappa),
                u.r_squared,
                u.power_peak_concurrency
                    .map(|n| format!("; best IOPS per latency near concurrency {n:.0}"))
                    .unwrap_or_default(),
                match (u.peak_concurrency, u.peak_iops) {
                    (Some(n), Some(x)) if n <= max_n * USL_MAX_EXTRAPOLATION => format!(
                        "; predicted throughput peak {} IOPS at concurrency {n:.0}",
                        fmt_iops(x)
                    ),
                    (Some(n), Some(_)) => format!(
                        "; its throughput peak (near concurrency {n:.0}) lies too far beyond the \
                         levels measured to predict"
                    ),
                    _ => "; no throughput peak predicted (no crosstalk)".to_string(),
                }
            ))
        }
        Some(f) => Some(format!(
            "No USL fit shown: it fits the levels poorly (R² {:.3}, below {USL_MIN_R2}).",
            f.r_squared
        )),
        None if distinct < USL_MIN_LEVELS => Some(format!(
            "No USL fit: {distinct} levels are too few for a curve of three parameters (at least \
             {USL_MIN_LEVELS}; through three points any such curve passes exactly)."
        )),
        None => None,
    }
}

/// The levels whose windows scatter beyond a healthy device's.
fn unstable_line(unstable: &[u32]) -> Option<String> {
    (!unstable.is_empty()).then(|| {
        let one = unstable.len() == 1;
        format!(
            "Unstable: the sub-windows of concurrency {} disagree by more than a healthy \
             device's do (CV above {:.1} %); measure {} longer (--duration, --repeat or \
             --budget) before trusting {}.",
            confidence::list(unstable),
            confidence::UNSTABLE_CV * 100.0,
            if one { "it" } else { "them" },
            if one {
                "its place in the verdict"
            } else {
                "their place in the verdict"
            }
        )
    })
}

/// "3000 IOPS (12.3 MB/s)".
fn iops_and_mb(iops: f64, bytes_per_s: f64) -> String {
    format!("{} IOPS ({:.1} MB/s)", fmt_iops(iops), bytes_per_s / 1e6)
}

/// Where the requests wait for a plateau, in one sentence (empty when unknown).
fn place_words(t: &throttle::ThroughputLimit, whichever: &str) -> String {
    match (t.place, t.kernel_queue_share) {
        (throttle::LimitPlace::DeviceQueue, Some(q)) => format!(
            " The device's own queue holds the waiting requests (aqu-sz {:.0} % of those in \
             flight): {whichever} sits at the device or below it (a cloud volume's cap, a \
             controller), below the block layer, not in this machine's kernel.",
            q * 100.0
        ),
        _ => String::new(),
    }
}

/// A plateau nothing tells from the device's own limit (issue 25): say so, and what would.
fn plateau_sentence(t: &throttle::ThroughputLimit, ctx: &Context) -> String {
    let head = format!(
        "Throughput plateaus at about {} from concurrency {}",
        iops_and_mb(t.iops, t.bytes_per_s),
        t.from_concurrency
    );
    if ctx.simulated {
        return format!("{head}: the simulated device's own limit (it has no cap).");
    }
    format!(
        "{head}: the device's limit, or a cap placed on it — one sweep cannot tell them \
         apart.{}",
        place_words(t, "whichever it is")
    )
}

/// What every sentence about a declared cap contains (so a sentence is not said twice).
const DECLARED: &str = "of the declared";

/// The plateau (else the highest throughput measured) against the declared cap: the figure
/// the verdict carries (`declared_cap`); None without a declaration or a shape.
pub fn declared_use(j: &Judgement, ctx: &Context) -> Option<declared::CapUse> {
    let shape = j.shape.as_ref()?;
    match &shape.limit {
        Some(t) => ctx.declared_cap.as_ref()?.against_total(
            t.iops,
            t.bytes_per_s,
            ctx.read_share.unwrap_or(1.0),
        ),
        None => declared_use_of(shape_peak(shape, &j.levels), ctx),
    }
}

/// The highest throughput the sweep measured (IOPS, bytes/s), without a plateau.
fn shape_peak(shape: &Shape, lv: &[LevelPoint]) -> (f64, f64) {
    lv.get(shape.peak)
        .map_or((0.0, 0.0), |l| (l.iops, l.bytes_per_s))
}

fn declared_use_of((iops, bytes): (f64, f64), ctx: &Context) -> Option<declared::CapUse> {
    ctx.declared_cap
        .as_ref()?
        .against_total(iops, bytes, ctx.read_share.unwrap_or(1.0))
}

/// A plateau matched to the declared cap (issue 42): at it, the cap is the limit; well below
/// it, the device's own limit is lower than the cap; above it, the declared cap does not hold
/// it.
fn declared_plateau_sentence(t: &throttle::ThroughputLimit, u: &declared::CapUse) -> String {
    let head = declared_plateau_head(t, u);
    match u.place() {
        declared::CapPlace::At => format!(
            "{head}: the cap, not the device, is the limit.{}",
            place_words(t, "the cap")
        ),
        declared::CapPlace::Below => format!(
            "{head}, so the cap is not what holds it: the device's own limit is lower than the \
             cap.{}",
            place_words(t, "that limit")
        ),
        declared::CapPlace::Above => format!(
            "{head}: above it, so the declared cap is not what holds it (a cap higher than \
             declared, or the device's own limit).{}",
            place_words(t, "whichever it is")
        ),
    }
}

/// Whether a level of the plateau (from its first concurrency on) measured the machine
/// ([`confidence::machine_share`]).
fn machine_plateau(lv: &[LevelPoint], t: &throttle::ThroughputLimit) -> bool {
    lv.iter()
        .filter(|l| l.concurrency >= t.from_concurrency)
        .any(|l| confidence::machine_share(l) > 0.0)
}

/// A plateau below the declared cap in levels the machine disturbed: the machine may have held
/// it down, so neither the cap nor the device's own limit is named (seen: 93.4 % of a declared
/// 1,000 IOPS on a device capped at 1,000, its levels waiting for a CPU).
fn disturbed_declared_sentence(t: &throttle::ThroughputLimit, u: &declared::CapUse) -> String {
    format!(
        "{}, in levels this machine disturbed (see above), which may have held it down: \
         whether the cap or the device's own limit holds it is undecided; measure again on a \
         quiet machine.",
        declared_plateau_head(t, u)
    )
}

/// "Throughput plateaus at about 934 IOPS (3.8 MB/s) from concurrency 2: 93.4 % of the
/// declared 1,000 IOPS cap": the head both plateau sentences beside a declared cap share.
fn declared_plateau_head(t: &throttle::ThroughputLimit, u: &declared::CapUse) -> String {
    format!(
        "Throughput plateaus at about {} from concurrency {}: {:.1} % {DECLARED} {} cap",
        iops_and_mb(t.iops, t.bytes_per_s),
        t.from_concurrency,
        u.ratio * 100.0,
        u.cap.figure(u.declared)
    )
}

/// A plateau in a drifting sweep beside a declared cap: the levels alone name no limit, but a
/// plateau at the declared figure points at the cap, and one well below it was never held by
/// it.
fn drifted_declared_sentence(t: &throttle::ThroughputLimit, u: &declared::CapUse) -> String {
    let head = format!(
        "Throughput is flat at about {} from concurrency {} while the baseline drifted, so the \
         levels alone name no limit (a device that slows makes such a plateau too); it is \
         {:.1} % {DECLARED} {} cap",
        iops_and_mb(t.iops, t.bytes_per_s),
        t.from_concurrency,
        u.ratio * 100.0,
        u.cap.figure(u.declared)
    );
    match u.place() {
        declared::CapPlace::At => format!(
            "{head}, which points at the cap as the limit; measure again once the device is \
             steady to confirm it."
        ),
        declared::CapPlace::Below => format!(
            "{head}, so the cap is not what held it: the device's own limit is lower than the \
             cap (or the device slowed below it)."
        ),
        declared::CapPlace::Above => format!(
            "{head}: above it, so the declared cap is not what holds it (a cap higher than \
             declared, or the device's own limit)."
        ),
    }
}

/// No plateau, a declared cap: how near the sweep came to it.
fn declared_unreached_sentence(u: &declared::CapUse, shape: &Shape) -> String {
    let head = format!(
        "The highest throughput measured is {:.1} % {DECLARED} {} cap",
        u.ratio * 100.0,
        u.cap.figure(u.declared)
    );
    match (u.place(), shape.linear_from) {
        (declared::CapPlace::Below, Some(n)) => format!(
            "{head}, and latency grows in proportion to concurrency from {n} on: the device's \
             own limit is lower than the cap."
        ),
        (declared::CapPlace::Below, None) => format!(
            "{head}: the cap was not reached, and the device may give more at higher \
             concurrency."
        ),
        (declared::CapPlace::At, _) => format!(
            "{head}, without a plateau yet: a sweep to higher concurrency would show whether \
             the cap holds it."
        ),
        (declared::CapPlace::Above, _) => format!(
            "{head}: above it, so the declared cap is not what the device is held to (a cap \
             higher than declared)."
        ),
    }
}

/// A cap the evidence shows: its figure, the evidence, and where the requests wait.
fn cap_sentence(c: &cap::CapFinding, t: &throttle::ThroughputLimit) -> String {
    let figure = match (c.iops, c.bytes_per_s) {
        (_, Some(b)) => format!("{:.1} MB/s", b / 1e6),
        (Some(x), None) => format!("{} IOPS", fmt_iops(x)),
        (None, None) => iops_and_mb(c.plateau_iops, c.plateau_bytes_per_s),
    };
    let why =
        match (&c.burst, c.other_block_size) {
            (Some(b), _) => format!(
            "after a burst: concurrency {}'s first sub-window ran {} IOPS, its second half {}. \
             A device's own limit gives no burst: this is a cap placed on the device (a token \
             bucket with burst credit, like a cloud volume's provisioned IOPS or throughput), \
             at about {figure}.",
            b.concurrency,
            fmt_iops(b.first_iops),
            fmt_iops(b.late_iops)
        ),
            (None, Some((bs, iops))) => format!(
            "and at {:.0} KiB per request the plateau is {} IOPS ({:.1} MB/s): it keeps its {}, \
             where a device's own limit would move with the request size. This is a {} cap \
             placed on the device, at about {figure}.",
            bs / 1024.0,
            fmt_iops(iops),
            iops * bs / 1e6,
            if c.bytes_per_s.is_some() { "bytes/s" } else { "IOPS" },
            if c.bytes_per_s.is_some() { "bandwidth" } else { "IOPS" },
        ),
            (None, None) => String::new(),
        };
    let place = match c.place {
        throttle::LimitPlace::DeviceQueue => place_words(t, "the cap"),
        _ => String::new(),
    };
    format!(
        "Throughput plateaus at about {} from concurrency {} {why}{place}",
        iops_and_mb(c.plateau_iops, c.plateau_bytes_per_s),
        c.from_concurrency
    )
}

/// Little's law's complaints, one line per kind of complaint (not one per level).
fn littles_lines(lv: &[LevelPoint], findings: &[LevelFinding]) -> Vec<String> {
    let mut out = Vec::new();
    for kind in [
        LittleCheck::InFlightOff,
        LittleCheck::KernelQueueHigh,
        LittleCheck::KernelQueueLow,
    ] {
        let hit: Vec<(&LevelPoint, &LevelFinding)> = lv
            .iter()
            .zip(findings)
            .filter(|(_, f)| f.little == kind && f.littles_law_note.is_some())
            .collect();
        match hit.as_slice() {
            [] => {}
            [(l, f)] => out.push(format!(
                "Little's law does not close at concurrency {}: {}; treat this level as suspect.",
                l.concurrency,
                f.littles_law_note.as_deref().unwrap_or_default()
            )),
            many => {
                let levels: Vec<u32> = many.iter().map(|(l, _)| l.concurrency).collect();
                let why = match kind {
                    LittleCheck::InFlightOff => {
                        "IOPS × latency differs from the concurrency offered (a cache answered, \
                         the concurrency was misrecorded, or rates used the wrong interval)"
                    }
                    LittleCheck::KernelQueueHigh => {
                        "the kernel's aqu-sz exceeds IOPS × latency: another workload on the \
                         device?"
                    }
                    _ if many.iter().all(|(_, f)| {
                        f.littles_law_note
                            .as_deref()
                            .is_some_and(|n| n.contains("waiting for a CPU"))
                    }) =>
                    {
                        "the kernel's aqu-sz is under half of IOPS × latency: most of the \
                         latency is spent above the device, waiting for a CPU (the machine was \
                         busy)"
                    }
                    _ => {
                        "the kernel's aqu-sz is under half of IOPS × latency: most of the \
                         latency is spent above the device (cache hits, CPU-bound path)"
                    }
                };
                out.push(format!(
                    "Little's law does not close at concurrency {}: {why}; treat these levels as \
                     suspect (the table's note column has each level's figures).",
                    confidence::list(&levels)
                ));
            }
        }
    }
    out
}

/// The %util lesson: the first level whose %util is already "busy" (≥ 90 %), and how much
/// IOPS still grew after it.
pub fn util_lesson(lv: &[LevelPoint]) -> Option<String> {
    let Some((i, util)) = lv.iter().enumerate().find_map(|(i, l)| {
        l.kernel_util_pct
            .filter(|&u| u >= UTIL_BUSY_PCT)
            .map(|u| (i, u))
    }) else {
        return util_flat_lesson(lv);
    };
    let busy = &lv[i];
    let best = lv[i..].iter().max_by(|a, b| a.iops.total_cmp(&b.iops))?;
    let growth = ratio(best.iops, busy.iops);
    (growth >= UTIL_LESSON_MIN_GROWTH)
        .then(|| {
            format!(
                "%util reached {util:.0} % at concurrency {}, yet IOPS still grew {growth:.1}x up \
                 to concurrency {}.",
                busy.concurrency, best.concurrency
            )
        })
        .or_else(|| util_flat_lesson(lv))
}

/// The same trap on kernels or devices where %util never gets near 100: it barely moves
/// while throughput multiplies (kernels since 5.0 sample io_ticks per jiffy, and a device
/// serving requests in parallel is "busy" as soon as one is in flight).
fn util_flat_lesson(lv: &[LevelPoint]) -> Option<String> {
    let first = lv.iter().find(|l| l.kernel_util_pct.is_some())?;
    let best = lv
        .iter()
        .filter(|l| l.kernel_util_pct.is_some())
        .max_by(|a, b| a.iops.total_cmp(&b.iops))?;
    let (u0, u1) = (first.kernel_util_pct?, best.kernel_util_pct?);
    let growth = ratio(best.iops, first.iops);
    let util_growth = ratio(u1, u0);
    (u0 >= UTIL_FLAT_MIN_PCT && growth >= UTIL_FLAT_MIN_GROWTH && util_growth * 2.0 <= growth).then(
        || {
            // "went only from 75 % to 69 %" reads wrong: say it fell, or stayed.
            let moved = if (u1 - u0).abs() < UTIL_SAME_PTS {
                format!("%util stayed at about {u0:.0} % ({u0:.0} % to {u1:.0} %)")
            } else if u1 < u0 {
                format!("%util even fell from {u0:.0} % to {u1:.0} %")
            } else {
                format!("%util went only from {u0:.0} % to {u1:.0} %")
            };
            format!(
                "{moved} between concurrency {} and {}, while IOPS grew {growth:.1}x: %util is \
                 time busy, not capacity.",
                first.concurrency, best.concurrency
            )
        },
    )
}

/// One direction of a mixed workload judged on its own: each level's IOPS and latency of
/// that direction at the offered (total) concurrency, so its baseline, knee and overload
/// point are the direction's. Little's law is not judged per direction (the offered
/// concurrency is shared by both). One sentence, starting with `name` ("Reads").
pub fn direction_line(name: &str, levels: &[LevelPoint]) -> String {
    let v = analyze(levels);
    if v.too_few_levels {
        return format!("{name}: one level only, not judged.");
    }
    let knee = v
        .levels
        .iter()
        .find(|f| f.concurrency == v.knee_concurrency);
    let knee_lat = levels
        .iter()
        .find(|l| l.concurrency == v.knee_concurrency)
        .map_or(0.0, |l| l.latency_ns.mean);
    format!(
        "{name}: baseline {} at concurrency {}; knee {} ({} IOPS at {}, {} the baseline); {}.",
        fmt_latency_ns(v.baseline_latency_ns),
        v.baseline_concurrency,
        v.knee_concurrency,
        fmt_iops(v.max_useful_iops),
        fmt_latency_ns(knee_lat),
        fmt_ratio(knee.map_or(1.0, |f| f.saturation_avg.max(1.0))),
        match v.overload_concurrency {
            Some(o) =>
                format!("overloaded from concurrency {o} (p95 above {OVERLOAD_P95_FACTOR}x)"),
            None if v.baseline_p95_ns.is_some() => "not overloaded".to_string(),
            None => "no p95, no overload rule".to_string(),
        }
    )
}
