//! The one judgement of a device row (analysis/state.rs), computed here once, below every view:
//! per direction the swept profile's baseline (it takes precedence) over the curve learned from
//! the device's traffic, the interval's IOPS, mean latency and block-layer p95, and the
//! requests in flight while busy (for "slow but not loaded"). `stat`, `top`, the recording
//! page, `analyze` and the exporter only render what this returns. Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

use super::interval::DeviceRow;
use super::DiskRates;
use crate::analysis::declared::{CapUse, DeclaredCap};
use crate::analysis::state::{
    Against, Basis, Change, Dir, DirJudgement, Flags, Judgement, NoHeadroom, Observed, Reference,
    State, Weighed,
};
use crate::profile::DeviceProfile;

/// The swept profile's baseline for `dir` (reads by the read profile, writes by the write
/// one: never a write judged by a read baseline, except a legacy file's).
pub fn swept_reference(p: &DeviceProfile, dir: Dir) -> Option<Reference> {
    let p = match dir {
        Dir::Read => p.for_reads(),
        Dir::Write => p.for_writes(),
    }?;
    let at_least = p.knee_at_least.is_some();
    let (max_iops, ceiling_other_iops) = swept_ceiling(p, dir);
    Some(Reference {
        basis: Basis::Swept,
        baseline_latency_ns: p.baseline_latency_ns,
        baseline_p95_ns: p.baseline_p95_ns,
        baseline_device_ns: p.baseline_device_ns,
        max_iops,
        ratio: None,
        ceiling_other_iops,
        flags: Flags {
            ceiling_at_least: at_least,
            ..Flags::default()
        },
    })
}

/// The ceiling of `dir` in the swept profile `p` that judges it, and the other direction's
/// IOPS beside which it was measured (analysis::state::ceiling_for_mix, the rule learning's
/// ceilings follow): a read or a write sweep's max useful IOPS are its direction's alone,
/// beside none of the other, so a read sweep's ceiling gives reads no headroom beside more
/// writes than a tenth of it; a mixed sweep's are reads and writes together in its share
/// (`read_pct`), so a direction's ceiling is its share of them, beside the other's share,
/// never the mix's total (which would count the writes' part of the device as room for
/// more reads). A mixed sweep whose share is not known, or none of whose requests went
/// this way, gives no ceiling (the headroom not known); a legacy read profile judging
/// writes, its ceiling as it is.
fn swept_ceiling(p: &DeviceProfile, dir: Dir) -> (Option<f64>, Option<f64>) {
    use crate::profile::Direction;
    let max = p.max_useful_iops;
    match (p.direction, dir) {
        (Direction::Read, Dir::Read) | (Direction::Write, Dir::Write) => (Some(max), Some(0.0)),
        (Direction::Mixed, _) => {
            let Some(pct) = p.read_pct else {
                return (None, None);
            };
            let reads = f64::from(pct) / 100.0;
            let share = match dir {
                Dir::Read => reads,
                Dir::Write => 1.0 - reads,
            };
            if share <= 0.0 {
                return (None, None);
            }
            (Some(max * share), Some(max * (1.0 - share)))
        }
        _ => (Some(max), None),
    }
}

/// What learning says of `dir`, as a baseline to judge against: the learned baseline, else
/// its estimate (`Basis::LearnedEstimate`, flagged: Learned::judged_by); None until it has
/// either.
pub fn learned_reference(l: &crate::analysis::learned::Learned, dir: Dir) -> Option<Reference> {
    reference_of(l.direction(dir)?)
}

/// [`learned_reference`] of learning's judgement of one direction, `d`.
fn reference_of(d: &crate::analysis::learned::Learned) -> Option<Reference> {
    let (latency_ns, basis) = d.judged_by()?;
    Some(Reference {
        basis,
        baseline_latency_ns: latency_ns,
        baseline_p95_ns: d.baseline_p95_ns,
        baseline_device_ns: d.baseline_device_ns,
        max_iops: d.max_iops,
        ratio: d.ratio,
        ceiling_other_iops: d.ceiling_other_iops,
        flags: d.flags.clone(),
    })
}

/// The interval's figures of `dir`.
pub fn observed(r: &DiskRates, dir: Dir, p95_ms: Option<f64>) -> Observed {
    let (iops, mean_ms, other_iops) = match dir {
        Dir::Read => (r.r_s, r.r_await, r.w_s),
        Dir::Write => (r.w_s, r.w_await, r.r_s),
    };
    Observed {
        iops,
        mean_ms,
        p95_ms,
        other_iops,
    }
}

/// Requests in flight while the device was busy (weighted time ÷ busy time, as the shipped
/// rules' `device:iosat_disk_concurrency_busy:ratio1m`); aqu-sz when no busy time was
/// counted.
pub fn in_flight_busy(r: &DiskRates) -> f64 {
    crate::analysis::state::in_flight_while_busy(r.aqu_sz, r.util_pct)
}

/// What learning says of each direction (reads, writes): the learned baselines to judge
/// against, and where a swept profile disagrees with the traffic at its own level (learn's
/// `profile_change`), that change, which the judgement by the sweep carries.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LearnedRefs {
    pub refs: [Option<Reference>; 2],
    pub profile_change: [Option<crate::analysis::shared::Shared<Change>>; 2],
    /// What learning flagged of a direction it left unjudged ([`learned_unjudged`]).
    pub unjudged: [Option<Flags>; 2],
}

/// What learning says of `dir` where it has no reference to judge it by but knows why: a mix
/// of request sizes (learn/points.rs: two classes each with a real share) whose mean's class
/// has no curve, or a change of the device confirmed and learned again from scratch (no
/// curve yet). Its judgement is learning's, unknown, with these flags (mixed, changed), as
/// where a curve exists ([`judge`]): never "learning" as if nothing were known of it.
pub fn learned_unjudged(l: &crate::analysis::learned::Learned, dir: Dir) -> Option<Flags> {
    unjudged_of(l.direction(dir)?)
}

/// [`learned_unjudged`] of learning's judgement of one direction, `d`.
fn unjudged_of(d: &crate::analysis::learned::Learned) -> Option<Flags> {
    let flagged = d.flags.mixed || d.flags.change.is_some();
    (flagged && d.judged_by().is_none()).then(|| Flags {
        mixed: d.flags.mixed,
        change: d.flags.change.clone(),
        ..Flags::default()
    })
}

/// Where a swept profile disagrees with the traffic of `dir` at its own level (learn's
/// `profile_change`): the change the judgement by the sweep carries.
fn profile_change_of(
    l: &crate::analysis::learned::Learned,
    dir: Dir,
) -> Option<crate::analysis::shared::Shared<Change>> {
    l.direction(dir)?.profile_change.clone()
}

/// What learning says of each direction (reads, writes).
pub fn learned_references(l: Option<&crate::analysis::learned::Learned>) -> LearnedRefs {
    LearnedRefs {
        refs: Dir::ALL.map(|dir| l.and_then(|l| learned_reference(l, dir))),
        profile_change: Dir::ALL.map(|dir| l.and_then(|l| profile_change_of(l, dir))),
        unjudged: Dir::ALL.map(|dir| l.and_then(|l| learned_unjudged(l, dir))),
    }
}

/// Judge a device's interval from its parts (a recording point's): the swept profile's
/// baseline per direction, else the learned one.
pub fn judge_parts(
    profile: Option<&DeviceProfile>,
    learned: &LearnedRefs,
    rates: Option<&DiskRates>,
    p95_ms: [Option<f64>; 2],
) -> Judgement {
    judge_with(
        profile,
        rates,
        p95_ms,
        (None, None),
        |dir| dir as usize,
        |&i, j| learned.refs[i].clone().map(|r| j.take_reference(r)),
        |&i| learned.profile_change[i].clone(),
        |&i| learned.unjudged[i].clone(),
    )
}

/// The one way a device's interval is judged ([`judge`] for a row, [`judge_parts`] for a
/// recording point): per direction, the swept profile's baseline (with learning's
/// `profile_change` of that direction, where the traffic disagrees with the sweep) else
/// learning's, written into the direction's judgement by `learned` (its basis, baseline
/// figures and flags; the figures to judge against returned), then judged by
/// `DirJudgement::judge_against`. `of` finds what learning says of a direction once (a
/// row's: its learned direction), for the three to read. `(cap, cpus_busy)`: the declared
/// cap's use and whether the CPUs were busy ([`say_busy_cpus`]), said on the judgement as it
/// is made (a row's; a recording point's says them after): the judgement, a few hundred
/// bytes, is built once where it is returned, not copied again to say them (issue 37's
/// cost).
#[allow(clippy::too_many_arguments)]
fn judge_with<D>(
    profile: Option<&DeviceProfile>,
    rates: Option<&DiskRates>,
    p95_ms: [Option<f64>; 2],
    (cap, cpus_busy): (Option<CapUse>, Option<bool>),
    of: impl Fn(Dir) -> D,
    learned: impl Fn(&D, &mut DirJudgement) -> Option<Against>,
    profile_change: impl Fn(&D) -> Option<crate::analysis::shared::Shared<Change>>,
    learned_unjudged: impl Fn(&D) -> Option<Flags>,
) -> Judgement {
    let busy = rates.map(in_flight_busy);
    let judge = |dir: Dir| {
        let said = of(dir);
        let mut j = DirJudgement::unknown(dir, None);
        let against = match profile.and_then(|p| swept_reference(p, dir)) {
            Some(mut r) => {
                // A sweep the traffic disagrees with says so, as a change would.
                r.flags.change = profile_change(&said);
                Some(j.take_reference(r))
            }
            None => learned(&said, &mut j),
        };
        let obs = rates.map(|r| observed(r, dir, p95_ms[dir as usize]));
        match (obs, against) {
            (Some(obs), Some(a)) => j.judge_against(obs, a, busy),
            // No value: unknown, with what it would have been judged against.
            (None, Some(_)) => {}
            // No I/O this way: idle, nothing to judge by.
            (Some(obs), None) if obs.iops <= 0.0 => j.state = State::Idle,
            (_, None) => {
                if let Some(f) = learned_unjudged(&said) {
                    // Learning's judgement where no curve judges: unknown, and says why.
                    j.basis = crate::analysis::state::Basis::Learned;
                    j.flags = f;
                }
            }
        }
        // Said of each direction before the device's is taken from one of them: the same as
        // say_busy_cpus over all three after.
        say_busy_cpus_dir(&mut j, cpus_busy);
        j
    };
    Judgement::of_with_cap(judge(Dir::Read), judge(Dir::Write), cap)
}

/// Whether a row has any baseline to be judged against (a swept profile's for a direction,
/// or a learned one), or a direction learning left unjudged ([`learned_unjudged`]): without
/// either its judgement is unknown (or idle) in both directions, with basis none, no flags
/// and no words ([`judge_with`] without a reference), so a view that only looks for judged
/// rows or their words may skip computing it. Cheap: no clone, no judgement.
pub fn has_reference(row: &DeviceRow) -> bool {
    let swept = row
        .profile
        .as_deref()
        .is_some_and(|p| p.for_reads().is_some() || p.for_writes().is_some());
    swept || row.learned.as_deref().is_some_and(learned_has_reference)
}

/// Whether [`learned_reference`] gives a baseline for either direction (or
/// [`learned_unjudged`] a reason for one), without building one.
pub fn learned_has_reference(l: &crate::analysis::learned::Learned) -> bool {
    // A direction learning left unjudged, flagged, is judged too (learned_unjudged).
    let has = |d: &crate::analysis::learned::Learned| {
        d.direction.is_some()
            && (d.judged_by().is_some() || d.flags.mixed || d.flags.change.is_some())
    };
    if l.directions.is_empty() {
        has(l)
    } else {
        l.directions.iter().any(has)
    }
}

/// An interval's rates against a declared cap, on the figure they come nearest to (kB/s as
/// iostat's: KiB).
pub fn cap_use(cap: &DeclaredCap, r: &DiskRates) -> Option<CapUse> {
    cap.nearest(r.r_s, r.w_s, r.rkb_s * 1024.0, r.wkb_s * 1024.0)
}

/// An interval's rates against every figure of a declared cap (the exporter's ratio gauge).
pub fn cap_uses(cap: &DeclaredCap, r: &DiskRates) -> Vec<CapUse> {
    cap.uses(r.r_s, r.w_s, r.rkb_s * 1024.0, r.wkb_s * 1024.0)
}

/// How many rows ahead [`prefetch`] asks for a row's learned judgement.
pub const AHEAD: usize = 8;

/// What [`judge`] (and a view's `learned` object) will read of the rows after row `i`, asked
/// of memory ahead: the learned judgement of row `i` + [`AHEAD`], its directions' of row
/// `i` + AHEAD/2 (their address is in the former, asked for AHEAD/2 rows before), and the
/// estimate each of those judges by, of row `i` + AHEAD/4. Learning writes its judgements in a
/// pass of its own before any view reads them, and a thousand devices' (about ten cache
/// lines each over the heap) do not stay in a core's L2 meanwhile: a view judging its rows in
/// turn waited on each row's (issue 37's cost). A hint: it changes nothing judged.
pub fn prefetch(rows: &[DeviceRow], i: usize) {
    use crate::sys::cache::prefetch as ask;
    let learned = |k: usize| rows.get(i + k).and_then(|d| d.learned.as_deref());
    // The whole of the device's (a view's `learned` object reads it all), the first three
    // lines of each direction's (what a judgement reads: analysis::learned's layout).
    if let Some(l) = learned(AHEAD) {
        ask(l, 5);
    }
    if let Some(l) = learned(AHEAD / 2) {
        for d in &l.directions {
            ask(d, 3);
        }
    }
    if let Some(l) = learned(AHEAD / 4) {
        for e in l
            .directions
            .iter()
            .filter_map(|d| d.baseline_estimate.as_deref())
        {
            ask(e, 1);
        }
    }
}

/// The judgement of a device row ([`judge_with`]): each direction's baseline written into
/// its judgement straight from the row's learned judgement ([`learned_into`]: no
/// [`LearnedRefs`] nor [`Reference`] built, cloned and dropped per row and interval: issue
/// 37's cost).
pub fn judge(row: &DeviceRow) -> Judgement {
    if let Some(j) = plain_judgement(row) {
        #[cfg(debug_assertions)]
        assert_eq!(j, judge_whole(row), "the plain judgement of {row:?}");
        return j;
    }
    judge_whole(row)
}

/// [`judge`] by [`judge_with`], whatever the row.
fn judge_whole(row: &DeviceRow) -> Judgement {
    let m = row.latency.as_ref().and_then(|l| l.measured());
    let learned = row.learned.as_deref();
    let rates = row.judged_rates();
    judge_with(
        row.profile.as_deref(),
        rates.as_deref(),
        [
            m.and_then(|m| m.read.p95_ms),
            m.and_then(|m| m.write.p95_ms),
        ],
        (row.cap_use(), row.cpus_busy),
        |dir| learned.and_then(|l| l.direction(dir)),
        |d, j| d.and_then(|d| learned_into(d, j)),
        |d| d.and_then(|d| d.profile_change.clone()),
        |d| d.and_then(unjudged_of),
    )
}

/// What a table row shows of its device's judgement (the state and headroom cells): the
/// device's direction's state, basis, whether a flag qualifies the state, and its headroom
/// with why there is none and whether its ceiling is a lower bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cells {
    pub state: State,
    pub basis: Basis,
    pub qualified: bool,
    pub headroom_iops: Option<f64>,
    pub no_headroom: Option<NoHeadroom>,
    pub ceiling_at_least: bool,
}

impl Cells {
    pub fn of(d: &DirJudgement) -> Cells {
        Cells {
            state: d.state,
            basis: d.basis,
            qualified: d.flags.qualify_state(),
            headroom_iops: d.headroom_iops,
            no_headroom: d.no_headroom,
            ceiling_at_least: d.flags.ceiling_at_least,
        }
    }
}

/// A row that learning alone judges, as [`plain_cells`] and [`plain_judgement`] read it: no
/// swept profile, declared cap or AWS counters, a value, and learning's judgement of the
/// device ok or better with no flag that qualifies it; its judgement of each direction, as
/// `Learned::direction` finds it (the first of its directions, or the device's own when it
/// judged one direction only).
struct Plain<'a> {
    l: &'a crate::analysis::learned::Learned,
    read: Option<&'a crate::analysis::learned::Learned>,
    write: Option<&'a crate::analysis::learned::Learned>,
    rates: std::borrow::Cow<'a, DiskRates>,
}

impl<'a> Plain<'a> {
    fn of(row: &'a DeviceRow) -> Option<Plain<'a>> {
        if row.profile.is_some() || row.cap.is_some() || row.aws.is_some() {
            return None;
        }
        let l = row.learned.as_deref()?;
        // What learning said of the device already tells most rows that need their
        // judgement (changed, flagged, past ok), before anything is computed for them.
        if l.state > State::Ok || l.flags.qualify_state() || l.flags.spans_classes {
            return None;
        }
        let rates = row.judged_rates()?;
        let (mut read, mut write) = (None, None);
        let said = match l.directions.is_empty() {
            true => std::slice::from_ref(l),
            false => &l.directions[..],
        };
        for d in said {
            match d.direction {
                Some(Dir::Read) if read.is_none() => read = Some(d),
                Some(Dir::Write) if write.is_none() => write = Some(d),
                _ => {}
            }
        }
        Some(Plain {
            l,
            read,
            write,
            rates,
        })
    }
}

/// [`judge`] of a row with I/O that learning alone judges ([`Plain`]) and judged idle,
/// unknown or ok in each direction ([`plain_direction`]): each direction's judgement is
/// learning's (its basis, baseline figures and flags as [`learned_into`] writes them; its
/// state, ratio and headroom, which `DirJudgement::judge_against` would compute again from
/// the same figures by the same rules), the device's by the judgement's rule. None: the row
/// is judged the whole way. A thousand busy devices' JSON judged each direction twice per
/// interval (issue 37's cost); debug builds check every such row against the whole way.
fn plain_judgement(row: &DeviceRow) -> Option<Judgement> {
    // An idle device (most of a host's, each interval) is judged the whole way: asked first.
    if row.learned.as_deref()?.state == State::Idle {
        return None;
    }
    let Plain {
        l: _,
        read,
        write,
        rates: r,
    } = Plain::of(row)?;
    if !plain_direction(read, r.r_s) || !plain_direction(write, r.w_s) {
        return None;
    }
    let of = |dir: Dir, said: Option<&crate::analysis::learned::Learned>, iops: f64| {
        let mut j = DirJudgement::unknown(dir, None);
        match said.filter(|d| d.judged_by().is_some()) {
            Some(d) => {
                learned_into(d, &mut j);
                (j.state, j.ratio, j.headroom_iops) = (d.state, d.ratio, d.headroom_iops);
            }
            None if iops <= 0.0 => j.state = State::Idle,
            None => {}
        }
        j
    };
    Some(Judgement::of_with_cap(
        of(Dir::Read, read, r.r_s),
        of(Dir::Write, write, r.w_s),
        None,
    ))
}

/// [`judge`]'s device cells of a row that learning alone judges and that nothing qualifies,
/// made without building the judgement: no swept profile, declared cap or AWS counters; each
/// direction learned with no estimate, change, mix of sizes, spanning classes or busy CPUs,
/// and judged idle, unknown or ok (the states that carry no words and no flag). None: the row
/// needs its whole judgement. Learning's judgement of the device is its binding direction's
/// by [`judge_with`]'s rule (`Weighed::below`, learn::binding), and a direction's figures are
/// what `DirJudgement::judge_against` gives a learned ratio of ok (no p95 or mean read, no
/// "slow" below saturated, the headroom by the same rule): the cells are read from it. A
/// table of a thousand busy devices judged each second built and dropped a judgement of
/// three directions per row for its two cells, then weighed both directions again (issue
/// 37's cost). Debug builds check every row against [`judge`] (report::stat_view).
pub fn plain_cells(row: &DeviceRow) -> Option<Cells> {
    let Plain {
        l,
        read,
        write,
        rates: r,
    } = Plain::of(row)?;
    if l.state == State::Idle {
        // Learning's idle judgement is the device's at rest (the series it learned most),
        // not the direction the judgement's rule takes between two idle ones: weighed here.
        let (r_dir, at_r) = weigh_plain(Dir::Read, read, r.r_s, r.w_s)?;
        let (w_dir, at_w) = weigh_plain(Dir::Write, write, r.w_s, r.r_s)?;
        let (w, ceiling_at_least) = if r_dir.below(w_dir) {
            (w_dir, at_w)
        } else {
            (r_dir, at_r)
        };
        return Some(Cells {
            state: w.state,
            basis: w.basis,
            qualified: false,
            headroom_iops: w.headroom_iops,
            no_headroom: None,
            ceiling_at_least,
        });
    }
    if !plain_direction(read, r.r_s) || !plain_direction(write, r.w_s) {
        return None;
    }
    let basis = l.judged_by().map_or(Basis::None, |(_, b)| b);
    Some(Cells {
        state: l.state,
        basis,
        qualified: false,
        headroom_iops: l.headroom_iops,
        no_headroom: None,
        ceiling_at_least: basis != Basis::None && l.flags.ceiling_at_least,
    })
}

/// No profile, declared cap, AWS counters or block-layer percentiles: nothing in the row
/// that its judgement reads but its learned judgement and rates. A partition judged by its
/// disk with nothing of its own is judged as its disk: the views copy the disk's cells and
/// JSON (report::stat_view) rather than judge it again.
pub fn nothing_of_its_own_judged(d: &DeviceRow) -> bool {
    d.profile.is_none()
        && d.cap.is_none()
        && d.aws.is_none()
        && d.latency.as_ref().and_then(|l| l.measured()).is_none()
}

/// One direction of [`plain_cells`]: whether learning's judgement of it, `said`, at `iops`
/// this interval, is one the judgement would take as it is, idle or ok: judged with no flag
/// that qualifies it, idle (learning idle too: no ratio) or ok by its ratio; or not judged
/// and without a reason learning gave (which carries words).
#[inline(always)]
fn plain_direction(said: Option<&crate::analysis::learned::Learned>, iops: f64) -> bool {
    match said {
        Some(d) if d.judged_by().is_some() => {
            !(d.flags.qualify_state() || d.flags.spans_classes)
                && match d.ratio {
                    _ if iops <= 0.0 => d.ratio.is_none(),
                    Some(ratio) => State::of_ratio(Some(ratio)) <= State::Ok,
                    None => false,
                }
        }
        Some(d) => unjudged_of(d).is_none(),
        None => true,
    }
}

/// One direction of an idle row's [`plain_cells`]: what its judgement weighs, and whether its ceiling is a
/// lower bound, by `judge_against`'s rules where they can only give idle or ok (a learned
/// ratio of ok, the ratio the judgement takes when learning gives one, so no p95 or mean is
/// read, and no "slow" below saturated; the headroom by the same two rules), from learning's
/// judgement of the direction, `said`, and the interval's IOPS of the direction and of the
/// other one. None: not a plain row.
#[inline(always)]
fn weigh_plain(
    dir: Dir,
    said: Option<&crate::analysis::learned::Learned>,
    iops: f64,
    other_iops: f64,
) -> Option<(Weighed, bool)> {
    let mut w = Weighed {
        dir,
        basis: Basis::None,
        state: State::Unknown,
        ratio: None,
        headroom_iops: None,
    };
    let mut at_least = false;
    match said.and_then(|d| Some((d, d.judged_by()?))) {
        Some((d, (_, basis))) => {
            let f = &d.flags;
            if f.qualify_state() || f.spans_classes {
                return None;
            }
            w.basis = basis;
            at_least = f.ceiling_at_least;
            let ceiling = crate::analysis::state::ceiling_now(
                d.max_iops,
                d.ceiling_other_iops,
                other_iops,
                f,
            );
            if iops <= 0.0 {
                w.state = State::Idle;
                w.headroom_iops = crate::analysis::state::idle_headroom(ceiling);
            } else {
                w.ratio = Some(d.ratio?);
                w.state = State::of_ratio(w.ratio);
                if w.state > State::Ok {
                    return None;
                }
                w.headroom_iops =
                    crate::analysis::state::headroom_in(w.state, ceiling, at_least, iops);
            }
        }
        // No reference: idle, else unknown; learning's unjudged reasons carry words.
        None if said.is_some_and(|d| unjudged_of(d).is_some()) => return None,
        None if iops <= 0.0 => w.state = State::Idle,
        None => {}
    }
    Some((w, at_least))
}

/// What [`reference_of`] gives of learning's judgement of one direction, `d`, written into
/// the direction's judgement `j` in place as [`DirJudgement::take_reference`] writes a
/// reference (its basis, baseline figures and flags), and the figures to judge against.
/// None (nothing written) until learning has a baseline or an estimate to judge by.
fn learned_into(d: &crate::analysis::learned::Learned, j: &mut DirJudgement) -> Option<Against> {
    let (baseline_ns, basis) = d.judged_by()?;
    j.basis = basis;
    j.baseline_latency_ns = Some(baseline_ns);
    j.baseline_p95_ns = d.baseline_p95_ns;
    j.baseline_device_ns = d.baseline_device_ns;
    j.flags = d.flags.clone();
    Some(Against {
        baseline_latency_ns: baseline_ns,
        baseline_p95_ns: d.baseline_p95_ns,
        max_iops: d.max_iops,
        ratio: d.ratio,
        ceiling_other_iops: d.ceiling_other_iops,
    })
}

/// Busy CPUs said with any verdict of saturated or worse in `j`, whatever judged it (a swept
/// profile's too, not only learning's), and with no other: the machine may explain part of
/// the latency judged. `cpus_busy` None (the interval's CPU times not known) leaves what
/// learning said.
pub fn say_busy_cpus(j: &mut Judgement, cpus_busy: Option<bool>) {
    for d in [&mut j.device, &mut j.read, &mut j.write] {
        say_busy_cpus_dir(d, cpus_busy);
    }
}

/// [`say_busy_cpus`] of one direction's judgement.
fn say_busy_cpus_dir(d: &mut DirJudgement, cpus_busy: Option<bool>) {
    if let Some(busy) = cpus_busy {
        d.flags.busy_cpus = busy && d.state >= crate::analysis::state::State::Slow;
    }
}

/// What the split of each direction's latency into queue and device time says (issue 40), in
/// words, against the direction's baseline in `j` (the row's judgement): nothing without the
/// split, with too few requests, or with nothing to explain (analysis::split).
pub fn split_sentences(row: &DeviceRow, j: &Judgement) -> Vec<String> {
    let Some(m) = row.latency.as_ref().and_then(|l| l.measured()) else {
        return Vec::new();
    };
    [(&j.read, m.split(false)), (&j.write, m.split(true))]
        .into_iter()
        .filter_map(|(dj, sp)| crate::analysis::split::sentence(&split_facts(dj, sp?)?))
        .collect()
}

/// One direction's split as the verdict needs it, against that direction's judgement (its
/// state and baseline); None without split requests.
pub fn split_facts(
    dj: &crate::analysis::state::DirJudgement,
    sp: &super::blklat::OpSplit,
) -> Option<crate::analysis::split::SplitFacts> {
    Some(crate::analysis::split::SplitFacts {
        dir: dj.dir.as_str(),
        state: dj.state,
        count: sp.count,
        queue_share_pct: sp.queue_share_pct?,
        device_mean_ns: sp.device_mean_ms? * 1e6,
        baseline_ns: dj.baseline_latency_ns,
        device_baseline_ns: dj.baseline_device_ns,
    })
}

/// A run's split per direction (reads, writes) from its intervals' splits and judgements:
/// what `iosat analyze` of a recording and its page say of it; empty without split requests.
pub fn run_split<'a>(
    intervals: impl IntoIterator<Item = (&'a Judgement, [Option<&'a super::blklat::OpSplit>; 2])>,
) -> Vec<crate::analysis::split::RunSplit> {
    use crate::analysis::split::RunSplitAcc;
    let mut acc = [RunSplitAcc::new("read"), RunSplitAcc::new("write")];
    for (j, splits) in intervals {
        for (i, dj) in [&j.read, &j.write].into_iter().enumerate() {
            let Some(sp) = splits[i] else { continue };
            if let Some(f) = split_facts(dj, sp) {
                acc[i].add(&f, sp.device_p95_ms);
            }
        }
    }
    acc.into_iter().filter_map(RunSplitAcc::finish).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::state::State;

    use crate::monitor::tests::one_second as second;

    fn read_profile() -> DeviceProfile {
        DeviceProfile {
            id: "x".into(),
            baseline_latency_ns: 1_000_000.0,
            knee_concurrency: 4,
            max_useful_iops: 2000.0,
            pattern: "randread".into(),
            block_size: 4096,
            direction: crate::profile::Direction::Read,
            ..Default::default()
        }
    }

    /// A learned judgement of `direction` in the `ok` state with nothing learned: every figure
    /// null, as the JSON's `learned` object reads back.
    fn learned_ok(direction: &str) -> crate::analysis::learned::Learned {
        serde_json::from_value(serde_json::json!({
            "state": "ok", "intervals": 100, "learned_s": 100.0, "direction": direction,
            "size_class": null, "baseline_latency_ns": null, "baseline_p95_ns": null,
            "baseline_interval_ns": null, "knee_concurrency": null, "knee_range": null,
            "knee_at_least": null, "max_iops": null, "max_iops_at_least": null,
            "headroom_iops": null, "ratio": null, "fit_r_squared": null, "summary": null
        }))
        .unwrap()
    }

    fn learned_writes(ratio: f64) -> crate::analysis::learned::Learned {
        let mut w = learned_ok("write");
        w.baseline_latency_ns = Some(1.0e6);
        w.baseline_p95_ns = Some(2.0e6);
        w.max_iops = Some(900.0);
        w.max_iops_at_least = Some(false);
        w.headroom_iops = Some(800.0);
        w.ratio = Some(ratio);
        let mut l = w.clone();
        l.directions = vec![w];
        l
    }

    /// Learned reads with no baseline at about one in flight, only `estimate` (issue 37): with
    /// a point, every view's judgement takes it, labelled (basis learned_estimate, the flag,
    /// "estimated" in the words), never as a learned baseline; with bounds only, a state only
    /// in an interval learning judged 1.5x past their upper end, by that end.
    #[test]
    fn an_estimate_judges_labelled_and_bounds_only_past_their_upper_end() {
        use crate::analysis::learned::{Estimate, EstimateMethod, Learned};
        use crate::analysis::shared::Shared;
        let reads = |latency_ns: Option<f64>, ratio: Option<f64>| {
            let mut l = learned_ok("read");
            l.baseline_estimate = Some(Shared::new(Estimate {
                from_in_flight: 2.0,
                latency_ns,
                interval_ns: [1.0e6, 2.0e6],
                method: match latency_ns {
                    Some(_) => EstimateMethod::Flat,
                    None => EstimateMethod::Bounds,
                },
            }));
            l.flags.estimate = Some(Shared::new(crate::analysis::state::Estimate {
                from_level: 2.0,
                interval_ns: Some([1.0e6, 2.0e6]),
            }));
            l.ratio = ratio;
            l
        };
        let rates = second(); // 400 reads at 2 ms mean, 100 writes at 5 ms
        let judged =
            |l: &Learned| judge_parts(None, &learned_references(Some(l)), Some(&rates), [None; 2]);

        // A point of 1.6 ms: reads at 2 ms are 1.25x it, ok, and labelled.
        let point = reads(Some(1.6e6), Some(1.25));
        assert_eq!(point.judged_by(), Some((1.6e6, Basis::LearnedEstimate)));
        assert!(learned_has_reference(&point));
        let j = judged(&point);
        assert_eq!(
            (j.read.basis, j.read.state, j.read.ratio),
            (Basis::LearnedEstimate, State::Ok, Some(1.25))
        );
        assert_eq!(j.read.baseline_latency_ns, Some(1.6e6));
        assert!(j.read.flags.estimate.is_some(), "{j:?}");
        assert!(j.words().contains("estimated baseline"), "{}", j.words());
        assert!(j.words().contains("[estimate]"), "{}", j.words());
        // No ceiling learned: no headroom claimed, and said so.
        assert_eq!(j.read.headroom_iops, None);
        assert!(j.words().contains("headroom not known"), "{}", j.words());
        // The writes have no curve: not judged.
        assert_eq!(j.write.basis, Basis::None);

        // Bounds only, 1.0 of the upper end: learning claims nothing, nor does any view.
        let bounds = reads(None, None);
        assert_eq!(bounds.judged_by(), None);
        assert!(!learned_has_reference(&bounds));
        assert_eq!(judged(&bounds).read.state, State::Unknown);
        // Bounds only, 1.6x past the upper end (learning's ratio): saturated, by that end.
        let past = reads(None, Some(1.6));
        assert_eq!(past.judged_by(), Some((2.0e6, Basis::LearnedEstimate)));
        let j = judged(&past);
        assert_eq!(
            (j.read.basis, j.read.state, j.read.ratio),
            (Basis::LearnedEstimate, State::Saturated, Some(1.6))
        );
        assert_eq!(j.read.baseline_latency_ns, Some(2.0e6));
    }

    /// A swept ceiling gives headroom only beside the mix it was measured with (issue 37,
    /// analysis::state::ceiling_for_mix): a read sweep's 2,000 IOPS were reads alone, so
    /// beside 100 writes the reads have 1,000 of room (the writes counted against it), and
    /// beside 500 (more than a tenth of it) the reads' room is not known, where 1,100 more
    /// reads were claimed; a 70 % mixed sweep's 2,000 are 1,400 reads beside 600
    /// writes, so reads at 900 beside 500 writes have 500 of room, not the mix's total less
    /// the reads (1,100), and none known beside 900 writes; a mixed sweep whose share is
    /// not known gives none.
    #[test]
    fn a_swept_ceiling_gives_headroom_only_beside_its_own_mix() {
        use crate::profile::Direction;
        // One second at 1.1 ms a request both ways (1.1x the 1 ms baseline: ok).
        let rates = |reads: u64, writes: u64| {
            DiskRates::from_delta(&crate::monitor::DiskDelta {
                dt_ns: 1_000_000_000,
                reads,
                read_ms: reads * 11 / 10,
                writes,
                write_ms: writes * 11 / 10,
                weighted_ms: (reads + writes) * 11 / 10,
                io_ms: 900,
                ..Default::default()
            })
        };
        let judged = |p: &DeviceProfile, reads, writes| {
            judge_parts(
                Some(p),
                &learned_references(None),
                Some(&rates(reads, writes)),
                [None; 2],
            )
        };
        let read_sweep = read_profile();
        // Beside 100 writes (within the tie), the device's room: the writes counted against
        // the reads' ceiling, 2,000 - 100 - 900, not 1,100.
        let j = judged(&read_sweep, 900, 100);
        assert_eq!(j.read.state, State::Ok, "{j:?}");
        assert_eq!(j.read.headroom_iops, Some(1000.0));
        let j = judged(&read_sweep, 900, 0);
        assert_eq!(j.read.headroom_iops, Some(1100.0));
        let j = judged(&read_sweep, 900, 500);
        assert_eq!(j.read.state, State::Ok, "{j:?}");
        assert_eq!(j.read.headroom_iops, None, "{j:?}");
        assert!(j.words().contains("headroom not known"), "{}", j.words());

        let mixed = |read_pct| DeviceProfile {
            pattern: "randrw".into(),
            direction: Direction::Mixed,
            read_pct,
            ..read_profile()
        };
        let j = judged(&mixed(Some(70)), 900, 500);
        assert_eq!((j.read.state, j.write.state), (State::Ok, State::Ok));
        assert_eq!(j.read.headroom_iops, Some(500.0));
        assert!(
            (j.write.headroom_iops.unwrap() - 100.0).abs() < 1e-9,
            "{j:?}"
        );
        let j = judged(&mixed(Some(70)), 900, 900);
        assert_eq!(j.read.headroom_iops, None, "{j:?}");
        let j = judged(&mixed(None), 900, 100);
        assert_eq!((j.read.state, j.read.headroom_iops), (State::Ok, None));
        assert_eq!(j.write.headroom_iops, None);
    }

    /// A read profile and learned writes: reads by the sweep, writes by what was learned;
    /// the device is its worst direction with that direction's figures.
    /// The swept baseline's own device time reaches the split's verdict: a device at 1.2 ms
    /// against a 1 ms baseline (1.2x) whose device time was 0.5 ms is at 2.4x, slow.
    #[test]
    fn the_split_is_judged_by_the_baselines_own_device_time() {
        let prof = DeviceProfile {
            baseline_device_ns: Some(0.5e6),
            ..read_profile()
        };
        let reference = swept_reference(&prof, Dir::Read).unwrap();
        assert_eq!(reference.baseline_device_ns, Some(0.5e6));
        let mut dj = DirJudgement::unknown(Dir::Read, Some(&reference));
        dj.state = State::Ok;
        let sp = crate::monitor::blklat::OpSplit {
            count: 500,
            device_mean_ms: Some(1.2),
            queue_share_pct: Some(5.0),
            ..Default::default()
        };
        let f = split_facts(&dj, &sp).unwrap();
        assert_eq!(f.device_baseline_ns, Some(0.5e6));
        let ratio = crate::analysis::split::device_ratio(&f).unwrap();
        assert!((ratio - 2.4).abs() < 1e-9, "{ratio}");
        let s = crate::analysis::split::sentence(&f).unwrap();
        assert!(s.contains("at 2.4x its baseline with 5 % queueing"), "{s}");
        // Without it, the whole baseline: 1.2x, nothing to say.
        let dj = DirJudgement::unknown(
            Dir::Read,
            swept_reference(&read_profile(), Dir::Read).as_ref(),
        );
        assert_eq!(
            crate::analysis::split::sentence(&split_facts(&dj, &sp).unwrap()),
            None
        );
    }

    /// A row's judgement ([`judge`], its references taken from the row) is
    /// [`judge_parts`]' over [`learned_references`] (the recording page's path): with and
    /// without a profile, a profile the traffic disagrees with, learned writes, an estimate,
    /// nothing learned, and no value.
    /// sda's row in one interval.
    fn row_of(
        profile: Option<std::sync::Arc<DeviceProfile>>,
        rates: Result<DiskRates, crate::monitor::interval::NoValue>,
        learned: Option<crate::analysis::learned::Learned>,
        cpus_busy: Option<bool>,
    ) -> DeviceRow {
        DeviceRow {
            major: 8,
            minor: 0,
            kernel_name: "sda".into(),
            meta: crate::monitor::select::DeviceMeta {
                kind: None,
                display_name: "sda".into(),
            },
            rates,
            wrapped_ms_fields: 0,
            profile,
            latency: None,
            learned: learned.map(std::sync::Arc::new),
            judged_as: None,
            size_notes_held: Default::default(),
            cap: None,
            aws: None,
            burst: None,
            cgroups: None,
            cpus_busy,
        }
    }

    /// A row's plain cells are its judgement's device cells wherever they are given, and rows
    /// whose judgement carries more (a state past ok, a flag, a profile, no learned ratio) get
    /// none: plain_cells is judge_with's rule for the rows it takes, not a second one.
    #[test]
    fn plain_cells_are_the_judgements_and_only_where_it_says_nothing_more() {
        use crate::monitor::{DiskDelta, DiskRates};
        // Reads and writes learned: baselines of 2 and 5 ms, ceilings of 900 reads beside 50
        // writes and 500 writes beside 350 reads, lower bounds or not.
        let dir = |d: &str, ratio: Option<f64>, max: f64, other: f64, at_least: bool| {
            let mut l = learned_ok(d);
            l.baseline_latency_ns = Some(if d == "read" { 2.0e6 } else { 5.0e6 });
            l.baseline_p95_ns = Some(6.0e6);
            l.max_iops = Some(max);
            l.ceiling_other_iops = Some(other);
            l.max_iops_at_least = Some(at_least);
            l.flags.ceiling_at_least = at_least;
            l.ratio = ratio;
            l
        };
        let device = |r: crate::analysis::learned::Learned,
                      w: crate::analysis::learned::Learned| {
            let mut l = r.clone();
            l.directions = vec![r, w];
            l
        };
        let no_writes = DiskRates::from_delta(&DiskDelta {
            dt_ns: 1_000_000_000,
            reads: 400,
            read_ms: 800,
            weighted_ms: 800,
            io_ms: 700,
            ..DiskDelta::default()
        });
        // Each direction judged in the interval of `rates` as learning judges it (its state
        // by its ratio, or idle; its headroom by the one rule), and the device's judgement
        // its binding direction's, whole (learn::binding): what plain_cells reads.
        let as_learning = |mut l: crate::analysis::learned::Learned, rates: &DiskRates| {
            use crate::analysis::state::{ceiling_for_mix, headroom_in, idle_headroom};
            if l.directions.len() != 2 {
                return l;
            }
            let iops = [(rates.r_s, rates.w_s), (rates.w_s, rates.r_s)];
            for (d, (now, other)) in l.directions.iter_mut().zip(iops) {
                let ceiling = ceiling_for_mix(d.max_iops, d.ceiling_other_iops, other);
                if now <= 0.0 {
                    (d.state, d.ratio) = (State::Idle, None);
                    d.headroom_iops = idle_headroom(ceiling);
                } else {
                    d.state = State::of_ratio(d.ratio);
                    d.headroom_iops = headroom_in(d.state, ceiling, d.flags.ceiling_at_least, now);
                }
            }
            let [r, w] = [&l.directions[0], &l.directions[1]];
            let k = usize::from(r.weighed(Dir::Read).below(w.weighed(Dir::Write)));
            let mut device = l.directions[k].clone();
            device.directions = std::mem::take(&mut l.directions);
            device
        };
        // Where plain_cells gives cells, they are judge's; None where it gives none.
        let plain = |l: crate::analysis::learned::Learned, rates: DiskRates, busy: Option<bool>| {
            let l = as_learning(l, &rates);
            let row = row_of(None, Ok(rates), Some(l), busy);
            let c = plain_cells(&row);
            if let Some(c) = &c {
                assert_eq!(
                    format!("{c:?}"),
                    format!("{:?}", Cells::of(&judge(&row).device)),
                    "{row:?}"
                );
            }
            c
        };
        let ok = || {
            device(
                dir("read", Some(1.0), 900.0, 50.0, true),
                dir("write", Some(1.02), 500.0, 350.0, false),
            )
        };
        // Both ok at ratios within the tie: the device's is the direction with less room (the
        // writes: 500 less the 50 reads beyond the 350 it was measured beside, less 100
        // served, 350; the reads 900 - 50 - 400, 450).
        let c = plain(ok(), second(), None).expect("ok both ways is plain");
        assert_eq!((c.state, c.basis), (State::Ok, Basis::Learned));
        assert_eq!(c.headroom_iops, Some(350.0));
        assert!(!c.ceiling_at_least && !c.qualified);
        // Busy CPUs beside an ok: no flag (said only of saturated or worse), still plain.
        assert!(plain(ok(), second(), Some(true)).is_some());
        // No writes this second: the writes idle (their ceiling beside 400 reads, 450, all
        // headroom), the reads ok with 900 - 400: the device's.
        let c = plain(ok(), no_writes, None).expect("idle writes are plain");
        assert_eq!((c.state, c.headroom_iops), (State::Ok, Some(500.0)));
        assert!(c.ceiling_at_least, "the reads' ceiling is a lower bound");
        // Nothing learned yet: the "learning" cell, plain.
        let mut nothing = learned_ok("read");
        nothing.state = State::Unknown;
        let c = plain(nothing, second(), None).expect("nothing learned is plain");
        assert_eq!((c.state, c.basis), (State::Unknown, Basis::None));
        // Saturated writes, a mix of sizes, no ratio learned, a swept profile: the whole
        // judgement.
        let saturated = device(
            dir("read", Some(1.0), 900.0, 50.0, true),
            dir("write", Some(2.0), 500.0, 350.0, false),
        );
        assert!(plain(saturated, second(), None).is_none());
        let mut mixed = ok();
        mixed.directions[0].flags.mixed = true;
        assert!(plain(mixed, second(), None).is_none());
        let no_ratio = device(
            dir("read", None, 900.0, 50.0, true),
            dir("write", Some(1.0), 500.0, 350.0, false),
        );
        assert!(plain(no_ratio, second(), None).is_none());
        let swept = row_of(
            Some(std::sync::Arc::new(read_profile())),
            Ok(second()),
            Some(ok()),
            None,
        );
        assert!(plain_cells(&swept).is_none());
    }

    /// A verdict of saturated or worse on busy CPUs says so whatever judged it: a swept
    /// profile's judgement too (learning flagged only its own), and only such a verdict.
    #[test]
    fn busy_cpus_are_said_with_a_swept_profiles_verdict_too() {
        let judged = |baseline_ms: f64, busy: Option<bool>| {
            let p = DeviceProfile {
                baseline_latency_ns: baseline_ms * 1e6,
                ..read_profile()
            };
            judge(&row_of(
                Some(std::sync::Arc::new(p)),
                Ok(second()),
                None,
                busy,
            ))
        };
        // Reads at 2 ms against the sweep's 1 ms, 1.4 in flight while busy: saturated.
        let j = judged(1.0, Some(true));
        assert_eq!(j.read.basis, Basis::Swept);
        assert_eq!(j.read.state, State::Saturated);
        assert!(j.read.flags.busy_cpus && j.device.flags.busy_cpus);
        assert!(j.device.flags.words().contains(&"busy CPUs"));
        // Idle CPUs, or CPU times not known: nothing said.
        for busy in [Some(false), None] {
            let j = judged(1.0, busy);
            assert_eq!(j.read.state, State::Saturated);
            assert!(
                !j.read.flags.busy_cpus && !j.device.flags.busy_cpus,
                "{busy:?}"
            );
        }
        // An ok verdict on busy CPUs: nothing disturbed it worth saying.
        let j = judged(1.8, Some(true));
        assert_eq!(j.read.state, State::Ok);
        assert!(!j.read.flags.busy_cpus && !j.device.flags.busy_cpus);
    }

    #[test]
    fn a_rows_judgement_is_judge_parts_over_its_references() {
        let change = crate::analysis::shared::Shared::new(Change {
            at_wall_ns: 1,
            from_ns: 1e6,
            to_ns: 3e6,
            evidence: "swept 1 ms, traffic 3 ms".into(),
            confirmed: false,
        });
        let mut disagreeing = learned_writes(1.2);
        disagreeing.directions[0].profile_change = Some(change.clone());
        let mut reads = learned_ok("read");
        reads.profile_change = Some(change);
        reads.baseline_latency_ns = Some(1.5e6);
        reads.ratio = Some(1.1);
        let learned = [
            None,
            Some(learned_ok("read")),
            Some(learned_writes(5.0)),
            Some(learned_writes(0.9)),
            Some(disagreeing),
            Some(reads),
        ];
        for profile in [None, Some(std::sync::Arc::new(read_profile()))] {
            for l in &learned {
                for rates in [
                    Ok(second()),
                    Err(crate::monitor::interval::NoValue::NewDevice),
                ] {
                    let row = row_of(profile.clone(), rates, l.clone(), None);
                    let refs = match row.learned.as_deref() {
                        Some(l) if row.profile.is_some() || learned_has_reference(l) => {
                            learned_references(Some(l))
                        }
                        _ => LearnedRefs::default(),
                    };
                    let want = judge_parts(
                        row.profile.as_deref(),
                        &refs,
                        row.rates.as_ref().ok(),
                        [None; 2],
                    );
                    assert_eq!(judge(&row), want, "{profile:?} {l:?}");
                }
            }
        }
    }

    #[test]
    fn reads_by_the_sweep_writes_by_learning() {
        let r = second();
        let j = judge_parts(
            Some(&read_profile()),
            &learned_references(Some(&learned_writes(5.0))),
            Some(&r),
            [None, None],
        );
        assert_eq!(j.read.basis, Basis::Swept);
        assert_eq!(j.read.ratio, Some(2.0));
        assert_eq!(j.read.state, State::Saturated);
        assert_eq!(j.write.basis, Basis::Learned);
        assert_eq!(j.write.ratio, Some(5.0));
        // 5 ms writes with 1.44 in flight while busy: more than queueing explains.
        assert_eq!(j.write.state, State::Slow);
        assert_eq!(j.device, j.read);
        assert_eq!(j.device.headroom_iops, Some(0.0));
        // Without learning the writes are not judged (no write profile).
        let j = judge_parts(
            Some(&read_profile()),
            &LearnedRefs::default(),
            Some(&r),
            [None, None],
        );
        assert_eq!(
            (j.write.basis, j.write.state),
            (Basis::None, State::Unknown)
        );
        // No value: unknown, with the basis it would have had.
        let j = judge_parts(
            Some(&read_profile()),
            &LearnedRefs::default(),
            None,
            [None, None],
        );
        assert_eq!((j.read.basis, j.read.state), (Basis::Swept, State::Unknown));
    }
}
