//! Saturation of a device against its own profiles (the results of `iosat sweep --save-profile`):
//! reads' await ÷ the read profile's concurrency-1 baseline, writes' ÷ the write profile's (a
//! direction without one is not judged, and said so), queue ÷ the knee, IOPS left below the max
//! useful IOPS, and notes when the profile measured other request sizes or predates a change of the
//! device. Pure (profiles, their loader and lookups are src/profile/'s).
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

use super::DiskRates;
use crate::profile::{DeviceProfile, Direction};

/// A device's interval judged against its profile; the JSON `profile` object of `iosat stat`.
/// Reads are judged against the read profile and writes against the write profile; a
/// direction without one is not judged (never w_await ÷ a read baseline).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Saturation {
    pub id: String,
    /// Which profile judged the interval: the device's own or a model profile, and whose
    /// sweep ("the model profile of 'Amazon Elastic Block Store 100 GiB', swept on host-a
    /// 2026-11-20").
    pub judged_against: String,
    /// The read profile's figures (the write profile's when only that is saved). A sweep that
    /// did not reach the knee (gentle, or stopped below it) gives no knee and no max useful
    /// IOPS, only their lower bounds (`knee_at_least`: the knee is above it;
    /// `max_useful_iops_at_least`), and its headroom is a lower bound (`headroom_at_least`).
    pub baseline_latency_ns: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub knee_concurrency: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub knee_at_least: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_useful_iops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_useful_iops_at_least: Option<f64>,
    /// The write profile's baseline, when it is another profile than the read one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_baseline_latency_ns: Option<f64>,
    /// r_await ÷ the read baseline (None without reads in the interval, rates, or a read
    /// profile).
    pub saturation_r: Option<f64>,
    /// w_await ÷ the write baseline (None without writes, rates, or a write profile).
    pub saturation_w: Option<f64>,
    /// The request-weighted mean of the judged directions' ratios: the text `sat` column.
    pub saturation: Option<f64>,
    /// aqu-sz ÷ knee concurrency: 1 means as many requests in flight as the knee (None when
    /// the profile has only a lower bound of the knee).
    pub load_vs_knee: Option<f64>,
    /// The one headroom (analysis::state::headroom_iops): a device row's is its judgement's
    /// (monitor::judge, the worst direction's: its ceiling less its IOPS, 0 while saturated,
    /// overloaded or slow; DeviceRow::saturation). Computed here alone, from the profile
    /// only: max useful IOPS − (r/s + w/s), never below 0, and 0 while saturated or
    /// overloaded (1.5x the baseline and more); None where the max is a lower bound the IOPS
    /// reached (analysis::state::headroom_in).
    pub headroom_iops: Option<f64>,
    /// `headroom_iops` is a lower bound: the profile's sweep did not reach the knee (a row's:
    /// its judgement's ceiling is a lower bound).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub headroom_at_least: bool,
    /// The pattern and request size the baseline was measured with.
    pub baseline_pattern: String,
    pub baseline_block_size: u64,
    /// Why part of the interval is not judged, or is judged against unlike requests or an
    /// outdated profile ("no write profile: writes are not judged", "read profile measured at
    /// 4 KiB, requests here 64 KiB"); the text view prints them under the table.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Which request-size notes are among `notes` (the next interval holds them).
    #[serde(skip)]
    pub size_notes: SizeNotes,
}

/// Which directions' request-size notes ("read profile measured at 4 KiB, requests here
/// 16 KiB") an interval showed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SizeNotes {
    pub read: bool,
    pub write: bool,
}

/// A request size this many times larger or smaller than the profile's makes the ratio
/// compare unlike requests (a 64 KiB read takes longer than a 4 KiB one on any device). One
/// doubling is tolerated; the limit sits halfway (in log2) between one doubling and two, at
/// 2^1.5 ≈ 2.83, not at 2 itself: request sizes cluster at powers of two, so a limit of
/// exactly 2 put 8 KiB requests against a 4 KiB profile on the boundary, and the note came
/// and went between intervals as rareq-sz read 7.99 then 8.06 (issue 27).
const BLOCK_SIZE_FACTOR: f64 = 2.0 * std::f64::consts::SQRT_2;

/// Hysteresis on top of that tolerance: a note shown in the previous interval stays until the
/// sizes are within this factor (2.5, between one doubling and [`BLOCK_SIZE_FACTOR`]), so sizes
/// wobbling around 2.83x (11.2 then 11.5 KiB against 4 KiB) do not make it come and go either.
const BLOCK_SIZE_FACTOR_HELD: f64 = 2.5;

impl Saturation {
    /// Judge `rates` (None when the interval has no value) against `p`.
    pub fn compute(p: &DeviceProfile, rates: Option<&DiskRates>) -> Saturation {
        Saturation::compute_held(p, rates, SizeNotes::default())
    }

    /// [`Self::compute`], with the request-size notes the device's previous interval showed
    /// (`held`): each stays until the sizes are within [`BLOCK_SIZE_FACTOR_HELD`].
    pub fn compute_held(
        p: &DeviceProfile,
        rates: Option<&DiskRates>,
        held: SizeNotes,
    ) -> Saturation {
        let (rp, wp) = (p.for_reads(), p.for_writes());
        let vs = |prof: Option<&DeviceProfile>, await_ms: Option<f64>| {
            let base_ms = prof?.baseline_latency_ns / 1e6;
            await_ms.and_then(|a| (base_ms > 0.0).then(|| a / base_ms))
        };
        let saturation_r = vs(rp, rates.and_then(|r| r.r_await));
        let saturation_w = vs(wp, rates.and_then(|r| r.w_await));
        let mixed = rates.and_then(|r| {
            let (nr, nw) = (
                if saturation_r.is_some() { r.r_s } else { 0.0 },
                if saturation_w.is_some() { r.w_s } else { 0.0 },
            );
            (nr + nw > 0.0).then(|| {
                (nr * saturation_r.unwrap_or(0.0) + nw * saturation_w.unwrap_or(0.0)) / (nr + nw)
            })
        });
        let main = rp.or(wp).unwrap_or(p);
        let mut notes = Vec::new();
        let mut size_notes = SizeNotes::default();
        let bound = main.knee_at_least;
        notes.extend(main.bound());
        if !p.changed_since.is_empty() {
            notes.push(format!(
                "profile older than the device's change: {}",
                p.changed_since.join(", ")
            ));
        }
        if let Some(r) = rates {
            if r.w_s > 0.0 && wp.is_some_and(|w| w.legacy && w.direction == Direction::Read) {
                notes.push("writes judged by an old read profile: save a write one".to_string());
            }
            if r.w_s > 0.0 && wp.is_none() {
                notes.push("no write profile: writes are not judged".to_string());
            }
            if r.r_s > 0.0 && rp.is_none() {
                notes.push("no read profile: reads are not judged".to_string());
            }
            for (name, prof, kb, judged, was, shown) in [
                (
                    "read",
                    rp,
                    r.rareq_sz,
                    saturation_r.is_some(),
                    held.read,
                    &mut size_notes.read,
                ),
                (
                    "write",
                    wp,
                    r.wareq_sz,
                    saturation_w.is_some(),
                    held.write,
                    &mut size_notes.write,
                ),
            ] {
                if let (Some(prof), Some(kb), true) = (prof, kb.filter(|k| *k > 0.0), judged) {
                    let bs = prof.block_size as f64 / 1024.0;
                    let limit = if was {
                        BLOCK_SIZE_FACTOR_HELD
                    } else {
                        BLOCK_SIZE_FACTOR
                    };
                    if bs > 0.0 && (kb / bs > limit || bs / kb > limit) {
                        *shown = true;
                        notes.push(format!(
                            "{name} profile measured at {bs:.0} KiB, requests here {kb:.0} KiB"
                        ));
                    }
                }
            }
        }
        // The judgements' one rule (analysis::state::headroom_in): saturated or overloaded
        // there is none to add, whatever the IOPS (latency already grows with load); a lower
        // bound the IOPS reached gives none known. A figure from a bound is marked as one, as
        // a row's is (DeviceRow::saturation).
        let headroom_iops = rates.and_then(|r| {
            use crate::analysis::state::{headroom_in, State};
            headroom_in(
                State::of_ratio(mixed),
                Some(main.max_useful_iops),
                bound.is_some(),
                r.r_s + r.w_s,
            )
        });
        Saturation {
            id: p.id.clone(),
            judged_against: p.judged_against(),
            baseline_latency_ns: main.baseline_latency_ns,
            knee_concurrency: bound.is_none().then_some(main.knee_concurrency),
            knee_at_least: bound,
            max_useful_iops: bound.is_none().then_some(main.max_useful_iops),
            max_useful_iops_at_least: bound.map(|_| main.max_useful_iops),
            write_baseline_latency_ns: wp
                .filter(|w| !std::ptr::eq(*w, main))
                .map(|w| w.baseline_latency_ns),
            saturation_r,
            saturation_w,
            saturation: mixed,
            load_vs_knee: rates.and_then(|r| {
                (bound.is_none() && main.knee_concurrency > 0)
                    .then(|| r.aqu_sz / f64::from(main.knee_concurrency))
            }),
            headroom_iops,
            headroom_at_least: bound.is_some() && headroom_iops.is_some(),
            baseline_pattern: main.pattern.clone(),
            baseline_block_size: main.block_size,
            notes,
            size_notes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::DiskDelta;

    #[test]
    fn ratios_by_hand() {
        // 400 reads of 2 ms, 100 writes of 5 ms, aqu-sz 1.3 (monitor/tests.rs).
        let r = crate::monitor::tests::one_second();
        let p = DeviceProfile {
            id: "x".into(),
            baseline_latency_ns: 250_000.0,
            knee_concurrency: 4,
            max_useful_iops: 2000.0,
            // A mixed sweep's profile judges both directions.
            pattern: "randrw".into(),
            block_size: 4096,
            direction: crate::profile::Direction::Mixed,
            ..Default::default()
        };
        let s = Saturation::compute(&p, Some(&r));
        assert_eq!(s.saturation_r, Some(8.0));
        assert_eq!(s.saturation_w, Some(20.0));
        // (400 × 2 + 100 × 5) / 500 = 2.6 ms → 10.4x
        assert!((s.saturation.unwrap() - 10.4).abs() < 1e-12);
        assert!((s.load_vs_knee.unwrap() - 0.325).abs() < 1e-12);
        // 10.4x is overloaded (analysis::state): no headroom, though 1500 IOPS below the knee's.
        assert_eq!(s.headroom_iops, Some(0.0));

        let idle = Saturation::compute(
            &p,
            Some(&DiskRates::from_delta(&DiskDelta {
                dt_ns: 1_000_000_000,
                ..DiskDelta::default()
            })),
        );
        assert_eq!(idle.saturation_r, None);
        assert_eq!(idle.saturation, None);
        assert_eq!(idle.load_vs_knee, Some(0.0));
        // Not overloaded: all of the max useful IOPS are headroom.
        assert_eq!(idle.headroom_iops, Some(2000.0));
        let none = Saturation::compute(&p, None);
        assert_eq!(none.headroom_iops, None);
        assert_eq!(none.id, "x");
    }

    /// A profile whose sweep did not reach the knee: no knee, no max useful IOPS, no load vs
    /// knee; their lower bounds, the headroom marked as one, and the words; the baseline
    /// ratios as before.
    #[test]
    fn a_knee_not_reached_is_a_bound() {
        let r = mixed_second();
        let plain = prof("randrw", 1_000_000.0, 4096);
        let bounded = DeviceProfile {
            knee_at_least: Some(4),
            gentle: true,
            measured_unix_s: Some(1_795_568_400),
            ..plain.clone()
        };
        let (a, b) = (
            Saturation::compute(&plain, Some(&r)),
            Saturation::compute(&bounded, Some(&r)),
        );
        assert_eq!(a.knee_concurrency, Some(4));
        assert_eq!(a.max_useful_iops, Some(2000.0));
        assert!(a.load_vs_knee.is_some() && !a.headroom_at_least);
        assert_eq!(b.knee_concurrency, None);
        assert_eq!(b.knee_at_least, Some(4));
        assert_eq!(
            (b.max_useful_iops, b.max_useful_iops_at_least),
            (None, Some(2000.0))
        );
        assert_eq!(b.load_vs_knee, None);
        assert_eq!(b.headroom_iops, a.headroom_iops);
        assert!(b.headroom_at_least);
        assert_eq!(b.saturation, a.saturation);
        assert_eq!(
            b.notes[0],
            "swept gently on 2026-11-25: the knee is above 4 in flight, so max useful IOPS (at \
least 2000) and the headroom are lower bounds"
        );
        assert!(!a.notes.iter().any(|n| n.contains("knee")), "{:?}", a.notes);
    }

    /// The headroom's one rule (analysis::state::headroom_in) from a profile alone: a max
    /// useful IOPS that is a lower bound (the sweep did not reach the knee) and that the
    /// interval's IOPS reached gives no headroom known, not 0, and no "at least" mark; a
    /// measured max reached gives 0.
    #[test]
    fn a_lower_bound_the_iops_reached_gives_no_headroom() {
        // 500 IOPS judged ok (reads 0.8x, writes 2.0x of a 2.5 ms baseline: 1.04 weighted).
        let r = mixed_second();
        let measured = DeviceProfile {
            max_useful_iops: 400.0,
            ..prof("randrw", 2_500_000.0, 4096)
        };
        let bounded = DeviceProfile {
            knee_at_least: Some(4),
            ..measured.clone()
        };
        let (a, b) = (
            Saturation::compute(&measured, Some(&r)),
            Saturation::compute(&bounded, Some(&r)),
        );
        assert!(a.saturation.is_some_and(|s| s < 1.5), "{a:?}");
        assert_eq!((a.headroom_iops, a.headroom_at_least), (Some(0.0), false));
        assert_eq!((b.headroom_iops, b.headroom_at_least), (None, false));
        // Below the bound: at least the difference.
        let higher = DeviceProfile {
            max_useful_iops: 900.0,
            ..bounded
        };
        let c = Saturation::compute(&higher, Some(&r));
        assert_eq!((c.headroom_iops, c.headroom_at_least), (Some(400.0), true));
    }

    fn prof(pattern: &str, base_ns: f64, bs: u64) -> DeviceProfile {
        DeviceProfile {
            id: "x".into(),
            baseline_latency_ns: base_ns,
            knee_concurrency: 4,
            max_useful_iops: 2000.0,
            direction: Direction::of_pattern(pattern),
            pattern: pattern.into(),
            block_size: bs,
            ..Default::default()
        }
    }

    /// 400 reads of 2 ms (4 KiB) and 100 writes of 5 ms (64 KiB) over 1 s.
    fn mixed_second() -> DiskRates {
        DiskRates::from_delta(&DiskDelta {
            dt_ns: 1_000_000_000,
            reads: 400,
            read_sectors: 400 * 8,
            read_ms: 800,
            writes: 100,
            write_sectors: 100 * 128,
            write_ms: 500,
            weighted_ms: 1300,
            io_ms: 900,
            ..DiskDelta::default()
        })
    }

    #[test]
    fn each_direction_against_its_own_profile() {
        let r = mixed_second();
        // A read profile alone: reads judged, writes not ("no write profile"), and the
        // sat column is the reads' ratio only.
        let read = prof("randread", 250_000.0, 4096);
        let s = Saturation::compute(&read, Some(&r));
        assert_eq!(s.saturation_r, Some(8.0));
        assert_eq!(s.saturation_w, None);
        assert_eq!(s.saturation, Some(8.0));
        assert_eq!(s.notes, ["no write profile: writes are not judged"]);
        // With a write profile beside it (1 ms writes of 64 KiB): writes judged against it.
        let mut both = read.clone();
        both.write = Some(Box::new(prof("randwrite", 1_000_000.0, 65536)));
        let s = Saturation::compute(&both, Some(&r));
        assert_eq!(s.saturation_w, Some(5.0));
        assert_eq!(s.write_baseline_latency_ns, Some(1_000_000.0));
        // (400 × 8 + 100 × 5) / 500
        assert!((s.saturation.unwrap() - 7.4).abs() < 1e-12);
        assert!(s.notes.is_empty(), "{:?}", s.notes);
        // A write profile alone: reads not judged.
        let s = Saturation::compute(&prof("randwrite", 1_000_000.0, 65536), Some(&r));
        assert_eq!((s.saturation_r, s.saturation_w), (None, Some(5.0)));
        assert_eq!(s.notes, ["no read profile: reads are not judged"]);
        // An old profile file (legacy) still judges writes, and says so.
        let mut old = read.clone();
        old.legacy = true;
        let s = Saturation::compute(&old, Some(&r));
        assert_eq!(s.saturation_w, Some(20.0));
        assert!(s.notes[0].starts_with("writes judged by an old read profile"));
        // A profile older than the device's change: said.
        let mut stale = both.clone();
        stale.changed_since = vec!["scheduler bfq -> none".into()];
        let s = Saturation::compute(&stale, Some(&r));
        assert_eq!(
            s.notes,
            ["profile older than the device's change: scheduler bfq -> none"]
        );
        let s = Saturation::compute(&old, Some(&r));
        // Another block size: said.
        assert!(s
            .notes
            .iter()
            .any(|n| n == "write profile measured at 4 KiB, requests here 64 KiB"));
    }

    /// A sequence of intervals with rareq-sz around both limits, each judged with what the one
    /// before showed (as the stat engine does): the note appears once past 2.83x and stays
    /// until the sizes are back within 2.5x, so it never comes and goes between neighbours.
    #[test]
    fn the_request_size_note_is_held_across_intervals_near_its_limit() {
        let read = prof("randread", 250_000.0, 4096);
        let mut held = SizeNotes::default();
        let mut shown = Vec::new();
        for kb in [
            7.99, 8.06, 7.99, 11.2, 11.5, 11.2, 11.4, 11.1, 10.5, 9.9, 10.1, 11.2, 8.0,
        ] {
            let mut r = mixed_second();
            r.rareq_sz = Some(kb);
            let s = Saturation::compute_held(&read, Some(&r), held);
            let note = s
                .notes
                .iter()
                .any(|n| n.starts_with("read profile measured at"));
            assert_eq!(note, s.size_notes.read, "{kb}");
            held = s.size_notes;
            shown.push(note);
        }
        assert_eq!(
            shown,
            [
                false, false, false, false, true, true, true, true, true, false, false, false,
                false
            ]
        );
        // Without a held note the limit is 2.83x: 11.2 KiB alone is not noted.
        let mut r = mixed_second();
        r.rareq_sz = Some(11.2);
        assert!(!Saturation::compute(&read, Some(&r))
            .notes
            .iter()
            .any(|n| n.starts_with("read profile measured at")));
    }

    /// Reads of a 4 KiB profile at request sizes around 8 KiB (one doubling) never note the
    /// size, so the note does not flap as rareq-sz wobbles around 8; two doublings do, both
    /// ways.
    #[test]
    fn the_request_size_note_does_not_flap_at_one_doubling() {
        let read = prof("randread", 250_000.0, 4096);
        let note = |kb: f64| {
            let mut r = mixed_second();
            r.rareq_sz = Some(kb);
            Saturation::compute(&read, Some(&r))
                .notes
                .into_iter()
                .find(|n| n.starts_with("read profile measured at"))
        };
        for kb in [7.99, 8.0, 8.06, 10.0, 11.0, 4.0, 2.0, 1.5] {
            assert_eq!(note(kb), None, "{kb} KiB");
        }
        assert_eq!(
            note(12.0).as_deref(),
            Some("read profile measured at 4 KiB, requests here 12 KiB")
        );
        assert_eq!(
            note(16.0).as_deref(),
            Some("read profile measured at 4 KiB, requests here 16 KiB")
        );
        assert_eq!(
            note(1.0).as_deref(),
            Some("read profile measured at 4 KiB, requests here 1 KiB")
        );
    }
}
