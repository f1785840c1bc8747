//! Learning end to end on synthetic interval reports: live learning and a replay of the same
//! intervals agree, the state survives a restart and an interrupted write, stays small after
//! a day of 1 s intervals, and starts again when the device changes.

use super::estimate::tests::{device_point, wandering};
use super::model::{DeviceModel, Dir, Point, SizeClass};
use super::store::{self, Fingerprint};
use super::*;

/// A test's state directory, removed when the guard drops: on a failed assertion too (a
/// directory removed at the test's end was left behind by a test that failed before it).
fn tmpdir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("iosat-learn-{tag}-"))
        .tempdir()
        .unwrap()
}

/// A day of 1 s intervals on both directions and all size classes, the load wandering over
/// every in-flight bucket, with percentiles on half of them: the worst case for the size.
fn busy_day(n: u64) -> DeviceModel {
    let mut m = DeviceModel::default();
    for (i, c) in wandering(0.25, 300.0, n) {
        let mut pts: Vec<Point> = Vec::new();
        for (k, dir) in [Dir::Read, Dir::Write].into_iter().enumerate() {
            let mut p = device_point(dir, 8.0, 0.5 + k as f64, c, i);
            let kib = [4.0, 32.0, 512.0][(i % 3) as usize];
            p.bytes = p.requests * kib * 1024.0;
            if i % 2 == 0 {
                let m = p.mean_latency_ns();
                let spread = 1.0 + (i % 17) as f64 / 4.0;
                p.pcts_ns = Some([m * 0.8, m * 2.0 * spread, m * 4.0 * spread]);
            }
            pts.push(p);
        }
        m.add_interval(i as i64 * 1_000_000_000, 1.0, &pts);
    }
    m
}

#[test]
fn a_day_of_one_second_intervals_stays_under_64_kib() {
    let m = busy_day(86_400);
    assert_eq!(m.series.len(), 6);
    let text = store::render("dev", Some(&Fingerprint::default()), &m);
    assert!(text.len() < 64 * 1024, "{} bytes", text.len());
    // And what was stored still estimates as the model did (rounding to 4 digits).
    let back: serde_json::Value = serde_json::from_str(&text).unwrap();
    let m2: DeviceModel = serde_json::from_value(back["model"].clone()).unwrap();
    let a = estimate::estimate(m.series(Dir::Read, SizeClass::Small).unwrap(), None);
    let b = estimate::estimate(m2.series(Dir::Read, SizeClass::Small).unwrap(), None);
    let (x, y) = (a.baseline.unwrap(), b.baseline.unwrap());
    assert!((x.latency_ns / y.latency_ns - 1.0).abs() < 1e-3);
}

#[test]
fn state_survives_a_restart_an_interrupted_write_and_resets_on_change() {
    let guard = tmpdir("store");
    let dir = guard.path().to_path_buf();
    let fp = Fingerprint {
        device: crate::profile::DeviceState {
            size_bytes: Some(1 << 30),
            scheduler: Some("none".into()),
            model: None,
        },
        ..Fingerprint::default()
    };
    let m = busy_day(2000);
    store::save(&dir, "wwn-1", Some(&fp), &m).unwrap();
    // A restart: the same model back (as stored).
    let (back, note) = store::load(&dir, "wwn-1", Some(&fp)).unwrap();
    assert_eq!(note, None);
    assert_eq!(back.unwrap(), m.compacted());
    // An interrupted write leaves a temporary file, never a torn state file: the old state
    // is still read, and the leftover is not mistaken for a device.
    let path = store::path_of(&dir, "wwn-1");
    let torn = path.with_file_name(".wwn-1.json.tmp.1.2");
    std::fs::write(&torn, &store::render("wwn-1", Some(&fp), &m)[..100]).unwrap();
    assert!(store::load(&dir, "wwn-1", Some(&fp)).unwrap().0.is_some());
    // A device change: started again, said why.
    let mut other = fp.clone();
    other.device.scheduler = Some("mq-deadline".into());
    let (none, note) = store::load(&dir, "wwn-1", Some(&other)).unwrap();
    assert!(none.is_none());
    assert!(note.unwrap().contains("scheduler"), "changed");
    // Another schema version: started again.
    std::fs::write(&path, r#"{"schema_version":99,"id":"x","model":{}}"#).unwrap();
    let (none, note) = store::load(&dir, "wwn-1", Some(&fp)).unwrap();
    assert!(none.is_none() && note.unwrap().contains("99"));
    // Forgetting removes the device files (not the leftover temporary one, nor the file of
    // another schema version, which was set aside).
    store::save(&dir, "wwn-2", None, &m).unwrap();
    let removed = store::forget(&dir, None).unwrap();
    assert_eq!(removed.len(), 1);
    assert!(store::load(&dir, "wwn-2", None).unwrap().0.is_none());
}

#[test]
fn state_dir_follows_root_xdg_home() {
    use std::path::Path;
    assert_eq!(
        store::state_dir(Some(Path::new("/x")), true, None, None).unwrap(),
        Path::new("/x")
    );
    assert_eq!(
        store::state_dir(None, true, Some("/s"), None).unwrap(),
        Path::new("/var/lib/iosat")
    );
    assert_eq!(
        store::state_dir(None, false, Some("/s"), Some("/h")).unwrap(),
        Path::new("/s/iosat")
    );
    assert_eq!(
        store::state_dir(None, false, None, Some("/h")).unwrap(),
        Path::new("/h/.local/state/iosat")
    );
}

#[test]
fn a_swept_and_a_learned_baseline_disagree_only_beyond_their_uncertainty() {
    let mut m = DeviceModel::default();
    for (i, c) in wandering(0.5, 1.0, 200) {
        let p = device_point(Dir::Read, 4.0, 2.0, c, i);
        m.add_interval(p.wall_ns, 1.0, &[p]);
    }
    let mut d = Device {
        model: m,
        ..Device::default()
    };
    d.estimate(None);
    let l = d.judge(&[], &[]);
    let base = l.baseline_latency_ns.unwrap();
    assert!((base / 2e6 - 1.0).abs() < 0.05, "{base}");
    // A sweep within its 10 % of the learned baseline: no note.
    assert_eq!(disagreement(&l, 2.1e6), None);
    // 0.9 ms swept against 2 ms learned: said, with both figures.
    let n = disagreement(&l, 0.9e6).unwrap();
    assert!(n.starts_with("learned baseline 2."), "{n}");
    assert!(n.contains("swept 0.900 ms"), "{n}");
}

#[test]
fn a_ratio_is_judged_and_given_to_the_millionth() {
    // A steady device at its baseline: the division's noise is not a figure.
    assert_eq!(super::ratio_figure(0.999_999_999_999_999_9), 1.0);
    assert_eq!(super::ratio_figure(1.234_567_89).to_string(), "1.234568");
    assert_eq!(super::ratio_figure(1.499_999_9), 1.5);
    assert_eq!(super::ratio_figure(0.0), 0.0);
}

#[test]
fn the_basis_in_words() {
    let mut d = Device::default();
    d.model.intervals_seen = 4812;
    d.model.seconds_seen = 3.0 * 3600.0 + 12.0 * 60.0 + 5.0;
    let l = d.judge(&[], &[]);
    assert_eq!(
        basis_words(&l),
        "learned from 3 h 12 m of traffic, 4,812 intervals"
    );
    d.model.intervals_seen = 42;
    d.model.seconds_seen = 42.4;
    assert_eq!(
        basis_words(&d.judge(&[], &[])),
        "learned from 42 s of traffic, 42 intervals"
    );
    // One interval is one.
    d.model.intervals_seen = 1;
    d.model.seconds_seen = 1.0;
    assert_eq!(
        basis_words(&d.judge(&[], &[])),
        "learned from 1 s of traffic, 1 interval"
    );
}

#[test]
fn each_direction_is_judged_by_its_own_curve() {
    // Reads at 2 ms a request, writes at 0.5 ms: two curves, two baselines.
    let mut m = DeviceModel::default();
    for (i, c) in wandering(0.5, 1.0, 200) {
        let r = device_point(Dir::Read, 4.0, 2.0, c, i);
        let w = device_point(Dir::Write, 4.0, 0.5, c, i);
        m.add_interval(r.wall_ns, 1.0, &[r, w]);
    }
    let mut d = Device {
        model: m,
        ..Device::default()
    };
    d.estimate(None);
    // An interval of reads only: reads judged, writes idle with their own baseline.
    let reads = device_point(Dir::Read, 4.0, 2.0, 1.0, 300);
    let l = d.judge(&[reads], &[]);
    assert_eq!(l.directions.len(), 2, "{l:?}");
    let [r, w] = [&l.directions[0], &l.directions[1]];
    assert_eq!(r.direction, Some(Dir::Read));
    assert_eq!(w.direction, Some(Dir::Write));
    assert_eq!(w.state, State::Idle);
    assert_eq!(r.state, l.state);
    assert!(r.directions.is_empty() && w.directions.is_empty());
    let (rb, wb) = (
        r.baseline_latency_ns.unwrap(),
        w.baseline_latency_ns.unwrap(),
    );
    assert!((rb / 2e6 - 1.0).abs() < 0.05, "{rb}");
    assert!((wb / 0.5e6 - 1.0).abs() < 0.05, "{wb}");
    // The device's own judgement is the busier direction's: the reads'.
    assert_eq!(l.baseline_latency_ns, Some(rb));
}

#[test]
fn a_judgement_has_a_reference_exactly_when_a_direction_has_a_baseline() {
    use crate::monitor::judge::{learned_has_reference, learned_references};
    let refs = |l: &Learned| learned_references(Some(l)).refs.iter().any(Option::is_some);
    // Thin: a few intervals, no baseline yet, in neither direction.
    let mut m = DeviceModel::default();
    for (i, c) in wandering(0.5, 1.0, 5) {
        let r = device_point(Dir::Read, 4.0, 2.0, c, i);
        m.add_interval(r.wall_ns, 1.0, &[r]);
    }
    let mut d = Device {
        model: m,
        ..Device::default()
    };
    d.estimate(None);
    let p = device_point(Dir::Read, 4.0, 2.0, 1.0, 6);
    let thin = d.judge(&[p], &[]);
    assert!(!learned_has_reference(&thin) && !refs(&thin), "{thin:?}");
    // Learned: reads have a baseline, writes none; the device has a reference.
    for (i, c) in wandering(0.5, 1.0, 200) {
        let r = device_point(Dir::Read, 4.0, 2.0, c, i + 10);
        d.model.add_interval(r.wall_ns, 1.0, &[r]);
    }
    d.estimate(None);
    let p = device_point(Dir::Read, 4.0, 2.0, 1.0, 300);
    let learned = d.judge(&[p], &[]);
    assert!(
        learned_has_reference(&learned) && refs(&learned),
        "{learned:?}"
    );
    // A judgement without directions (a recording's) by its own figures.
    let mut flat = learned.clone();
    flat.directions.clear();
    assert_eq!(learned_has_reference(&flat), refs(&flat));
    flat.baseline_latency_ns = None;
    assert!(!learned_has_reference(&flat) && !refs(&flat));
}

#[test]
fn the_devices_judgement_is_its_binding_directions_whole() {
    // The device's judgement is one of its directions' judgements, whole (not a third one,
    // nor a state from one direction beside the figures of the other): the direction every
    // view's judgement takes (analysis::state::Judgement::of's rule), with the worst state.
    // For intervals of every mix of directions, size classes and loads.
    let mut d = Device {
        model: busy_day(4000),
        ..Device::default()
    };
    d.estimate(None);
    let (mut seen_states, mut not_most_requests) = (std::collections::BTreeSet::new(), 0);
    for (i, c) in wandering(0.25, 64.0, 600) {
        let mut pts: Vec<Point> = Vec::new();
        for (k, dir) in [Dir::Read, Dir::Write].into_iter().enumerate() {
            if (i + k as u64) % 5 == 0 {
                continue; // now and then one direction is idle
            }
            let load = if k == 0 { c } else { 65.0 - c };
            let mut p = device_point(dir, 8.0, 0.5 + k as f64, load, i);
            p.bytes = p.requests * [4.0, 32.0, 512.0][(i % 3) as usize] * 1024.0;
            pts.push(p);
        }
        let mixed: &[Dir] = if i % 7 == 0 { &[Dir::Write] } else { &[] };
        let got = d.judge(&pts, mixed);
        let mut got_flat = got.clone();
        got_flat.directions.clear();
        let k = binding(&got.directions).expect("a direction with I/O");
        let mut want = got.directions[k].clone();
        want.directions.clear();
        assert_eq!(got_flat, want, "interval {i}: {pts:?}");
        assert_eq!(
            got.state,
            State::worst(got.directions.iter().map(|d| d.state)),
            "interval {i}"
        );
        // The view's rule, asked of the view's own weighing of each direction.
        if let [r, w] = &got.directions[..] {
            let view = r.weighed(Dir::Read).below(w.weighed(Dir::Write));
            assert_eq!(
                got.direction,
                Some(if view { Dir::Write } else { Dir::Read })
            );
        }
        let most = pts
            .iter()
            .max_by(|a, b| a.requests.total_cmp(&b.requests))
            .map(|p| p.dir);
        not_most_requests += usize::from(got.direction.is_some() && got.direction != most);
        seen_states.insert(got.state.as_str());
    }
    // The check covered more than one kind of judgement, and devices whose binding
    // direction is not the one of most requests.
    assert!(seen_states.len() >= 2, "{seen_states:?}");
    assert!(not_most_requests > 0);
}

/// Interval reports of a StatEngine fed diskstats texts one second apart.
fn reports(texts: &[String]) -> Vec<IntervalReport> {
    reports_of(crate::monitor::select::Selection::default(), texts)
}

/// [`reports`] of the devices `sel` selects.
fn reports_of(sel: crate::monitor::select::Selection, texts: &[String]) -> Vec<IntervalReport> {
    use crate::monitor::interval::StatEngine;
    let mut e = StatEngine::new(sel, false);
    texts
        .iter()
        .enumerate()
        .filter_map(|(k, t)| {
            let mono_ns = (k as u64 + 1) * 1_000_000_000;
            e.push(crate::monitor::DiskSample {
                mono_ns,
                wall_ns: 1_763_783_400_000_000_000 + mono_ns as i64,
                lines: crate::sys::diskstats::parse(t).lines,
            })
        })
        .collect()
}

/// A diskstats line of `name` (8:`minor`) after `ios` reads of 1 ms each, one at a time.
fn line(minor: u32, name: &str, ios: u64) -> String {
    format!(
        "8 {minor} {name} {ios} 0 {} {ios} 0 0 0 0 0 {ios} {ios} 0 0 0 0 0 0\n",
        ios * 8
    )
}

#[test]
fn a_device_is_locked_when_it_first_has_traffic_never_while_idle() {
    let guard = tmpdir("lazylock");
    let dir = guard.path().to_path_buf();
    let mut learner = Learner::new(LearnSpec {
        state_dir: Some(dir.clone()),
        target_p95_ns: None,
    });
    let lock = |name: &str| store::learned_dir(&dir).join(format!(".{name}.lock"));
    // sda busy from the start, sdb idle for three intervals, then busy.
    let texts: Vec<String> = (0..6u64)
        .map(|k| line(0, "sda", 100 * k) + &line(16, "sdb", 100 * k.saturating_sub(3)))
        .collect();
    let key = |r: &crate::monitor::interval::DeviceRow| r.kernel_name.clone();
    for (k, mut r) in reports(&texts).into_iter().enumerate() {
        learner.observe(&mut r, &key);
        assert!(lock("sda").exists(), "interval {k}");
        // sdb's first interval with reads is the fourth report (k = 3).
        assert_eq!(lock("sdb").exists(), k >= 3, "interval {k}");
        let l = r.devices[1].learned.as_deref().unwrap();
        if k < 3 {
            assert_eq!(l.state, State::Idle, "interval {k}");
        }
    }
    assert!(learner.take_warnings().is_empty());
}

#[test]
fn a_row_finds_its_device_by_position_only_while_number_and_name_match() {
    let mut learner = Learner::new(LearnSpec::default());
    let key = |r: &crate::monitor::interval::DeviceRow| r.kernel_name.clone();
    // Two devices, then 8:0 re-created as sdc (same number, same position).
    let texts: Vec<String> = (0..4u64)
        .map(|k| line(0, "sda", 100 * k) + &line(16, "sdb", 50 * k))
        .chain((4..8u64).map(|k| line(0, "sdc", 10 * k) + &line(16, "sdb", 50 * k)))
        .collect();
    for mut r in reports(&texts) {
        learner.observe(&mut r, &key);
    }
    let keys: Vec<&str> = learner.devices.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["sda", "sdb", "sdc"]);
    // sda learned only its own intervals (3, its first report has no earlier sample), sdc
    // only its own (from its second), sdb all of them.
    let seen = |k: &str| learner.devices[learner.by_key[k]].1.model.intervals_seen;
    assert_eq!(seen("sda"), 3);
    assert_eq!(seen("sdb"), 7);
    assert!(seen("sdc") <= 3 && seen("sdc") >= 2, "{}", seen("sdc"));
}

#[test]
fn devices_that_learned_nothing_share_one_idle_judgement() {
    let mut learner = Learner::new(LearnSpec::default());
    let key = |r: &crate::monitor::interval::DeviceRow| r.kernel_name.clone();
    let texts: Vec<String> = (0..3u64)
        .map(|k| line(0, "sda", 0) + &line(16, "sdb", 0) + &line(32, "sdc", 100 * k))
        .collect();
    let mut last = None;
    for mut r in reports(&texts) {
        learner.observe(&mut r, &key);
        last = Some(r);
    }
    let r = last.unwrap();
    let l = |i: usize| r.devices[i].learned.clone().unwrap();
    assert!(Arc::ptr_eq(&l(0), &l(1)));
    assert_eq!(l(0).state, State::Idle);
    assert_eq!(*l(0), Device::default().judge(&[], &[]));
    // A device with traffic has its own.
    assert!(!Arc::ptr_eq(&l(0), &l(2)));
    assert_ne!(l(2).state, State::Idle);
}

#[test]
fn an_idle_row_is_judged_as_its_device_would_be_and_asked_again_when_that_can_change() {
    let mut learner = Learner::new(LearnSpec::default());
    let key = |r: &crate::monitor::interval::DeviceRow| r.kernel_name.clone();
    // sda: reads for 4 intervals, idle for 3, one interval whose counters went backwards
    // (unusable), idle again, reads, idle.
    let ios = [
        0u64, 100, 200, 300, 400, 400, 400, 400, 50, 50, 50, 150, 250, 250,
    ];
    let texts: Vec<String> = ios.iter().map(|&n| line(0, "sda", n)).collect();
    let mut got = Vec::new();
    for mut r in reports(&texts) {
        learner.observe(&mut r, &key);
        let l = r.devices[0].learned.clone().unwrap();
        let d = &learner.devices[learner.by_key["sda"]].1;
        if r.devices[0].rates.is_ok() && !r.devices[0].has_traffic() {
            // The row's judgement is the one the device gives while idle, asked of it now.
            assert_eq!(*l, d.judge(&[], &[]));
        }
        got.push((l.state, d.model.intervals_seen));
        // Kept for the next interval only after an idle one with usable counters.
        let kept = learner.order[0].idle.as_ref();
        assert_eq!(kept.is_some(), l.state == State::Idle, "{got:?}");
        assert!(kept.is_none_or(|k| Arc::ptr_eq(k, &l)));
    }
    // One report fewer than texts (the first sample has no interval before it).
    let states: Vec<State> = got.iter().map(|g| g.0).collect();
    assert_eq!(states[4..7], [State::Idle; 3], "{got:?}");
    assert_eq!(states[7], State::Unknown, "{got:?}");
    assert_eq!(states[8..10], [State::Idle; 2], "{got:?}");
    assert_ne!(states[10], State::Idle, "{got:?}");
    let seen: Vec<u64> = got.iter().map(|g| g.1).collect();
    assert_eq!(seen, [1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 5, 6, 6], "{got:?}");
    // A fingerprint set (the device seen anew) asks every row's device again.
    learner.set_fingerprint("sda", store::Fingerprint::default());
    assert!(learner.order.iter().all(|o| o.idle.is_none()));
}

/// Every interval's judgement written over the last one in place (the same curve's figures
/// kept, only the interval's own reset) equals the judgement made afresh, through reads,
/// writes, both, idle intervals, new estimates, a baseline, and a slowdown that becomes a
/// change with its own words. The change is told once while it stays the same (its summary
/// and value shared from one interval to the next, the changed direction's too), and those
/// words are what a device that told nothing yet would make.
#[test]
fn a_judgement_written_in_place_equals_one_made_afresh() {
    use crate::monitor::DiskRates;
    let mut d = Device::default();
    let mut fresh_kinds = std::collections::BTreeSet::new();
    let mut told_before: Option<(change::Change, Arc<Learned>)> = None;
    let mut shared = 0;
    for i in 0..400u32 {
        // Service 2 ms, 8 ms from interval 300 on; the level wanders 1..6 in flight.
        let svc_ms = if i < 300 { 2.0 } else { 8.0 };
        let level = [1.0, 1.0, 1.0, 2.0, 4.0, 6.0, 1.0][(i % 7) as usize];
        let iops = level / svc_ms * 1e3;
        let (reads, writes) = match i % 11 {
            3 => (false, false),
            5 | 6 => (false, true),
            9 => (true, true),
            _ => (true, false),
        };
        let rates = DiskRates {
            interval_s: 1.0,
            r_s: if reads { iops } else { 0.0 },
            rkb_s: if reads { iops * 4.0 } else { 0.0 },
            read_concurrency: if reads { level } else { 0.0 },
            w_s: if writes { iops / 2.0 } else { 0.0 },
            wkb_s: if writes { iops / 2.0 * 64.0 } else { 0.0 },
            write_concurrency: if writes { level / 2.0 } else { 0.0 },
            util_pct: if reads || writes { 100.0 } else { 0.0 },
            ..DiskRates::default()
        };
        let wall = i64::from(i) * 1_000_000_000;
        let l = learn_second(&mut d, i, &rates);
        let all = points_of(wall, &rates, None, None, None);
        let mixed: Vec<Dir> = all.mixed_dirs().collect();
        // Afresh: nothing told before either.
        let mut bare = d.clone();
        (bare.told, bare.told_profile) = (None, None);
        let fresh = bare.judge(all.as_slice(), &mixed);
        assert_eq!(*l, fresh, "interval {i}");
        if let Some(c) = d.watch.change() {
            let changed = l
                .directions
                .iter()
                .filter_map(|x| x.flags.change.as_ref())
                .collect::<Vec<_>>();
            assert_eq!(changed.len(), 1, "interval {i}: {l:?}");
            assert!(Shared::ptr_eq(changed[0], l.flags.change.as_ref().unwrap()));
            if let Some((was, before)) = told_before.as_ref().filter(|(was, _)| was == c) {
                assert!(
                    Shared::ptr_eq(
                        l.flags.change.as_ref().unwrap(),
                        before.flags.change.as_ref().unwrap()
                    ),
                    "interval {i}: {was:?} told again"
                );
                // The same words too, before the same curve's (no estimate while held).
                if l.direction == before.direction {
                    assert!(
                        l.summary
                            .as_ref()
                            .unwrap()
                            .same(before.summary.as_ref().unwrap()),
                        "interval {i}: {was:?} written again"
                    );
                    shared += 1;
                }
            }
            told_before = Some((c.clone(), Arc::clone(&l)));
        }
        fresh_kinds.insert((
            l.baseline_latency_ns.is_some(),
            l.flags.change.is_some(),
            l.state,
        ));
    }
    // The run went through a baseline, and a change with its own words.
    assert!(fresh_kinds.iter().any(|k| k.0), "{fresh_kinds:?}");
    assert!(fresh_kinds.iter().any(|k| k.1), "{fresh_kinds:?}");
    assert!(shared >= 10, "{shared} intervals told the change kept");
}

/// Learning's own object takes the judgements' one headroom rule: none while saturated or
/// overloaded (issue 37: a device slowed from 2 to 8 ms read "overloaded" beside 2,875 IOPS of
/// headroom, the old ceiling less its IOPS), the ceiling less the IOPS while ok, and none from
/// a lower-bound ceiling the interval reached.
#[test]
fn no_learned_headroom_while_saturated_or_overloaded() {
    use crate::monitor::DiskRates;
    let mut d = Device::default();
    let (mut ok, mut over, mut reached) = (0, 0, 0);
    for i in 0..400u32 {
        // Service 2 ms, 8 ms from interval 300 on; the level wanders 1..6 in flight.
        let svc_ms = if i < 300 { 2.0 } else { 8.0 };
        let level = [1.0, 1.0, 1.0, 2.0, 4.0, 6.0, 1.0][(i % 7) as usize];
        let iops = level / svc_ms * 1e3;
        let rates = DiskRates {
            interval_s: 1.0,
            r_s: iops,
            rkb_s: iops * 4.0,
            read_concurrency: level,
            util_pct: 100.0,
            ..DiskRates::default()
        };
        let l = learn_second(&mut d, i, &rates);
        match l.state {
            State::Saturated | State::Overloaded => {
                assert_eq!(l.headroom_iops, Some(0.0), "interval {i}: {l:?}");
                over += 1;
            }
            State::Ok => {
                // A lower-bound ceiling the interval reached gives no figure (not "at least 0").
                let want = match l.max_iops {
                    Some(m) if l.flags.ceiling_at_least && iops >= m => {
                        reached += 1;
                        None
                    }
                    m => m.map(|m| (m - iops).max(0.0)),
                };
                assert_eq!(l.headroom_iops, want, "interval {i}");
                ok += 1;
            }
            _ => {}
        }
    }
    assert!(
        ok > 100 && over > 50 && reached > 0,
        "ok {ok}, saturated or overloaded {over}, a lower-bound ceiling reached {reached}"
    );
}

#[test]
fn learned_headroom_is_counted_from_the_whole_intervals_rate() {
    use crate::monitor::DiskRates;
    // One request of 1 ms at a time, busy 70 % of each second: 700 served, 1,000 per second
    // while busy (the curve's rate). The device can take 300 more per second, not none.
    let mut d = Device::default();
    let mut last = None;
    for i in 0..200u32 {
        let rates = DiskRates {
            interval_s: 1.0,
            r_s: 700.0,
            rkb_s: 700.0 * 4.0,
            read_concurrency: 0.7,
            aqu_sz: 0.7,
            util_pct: 70.0,
            ..DiskRates::default()
        };
        last = Some((learn_second(&mut d, i, &rates), rates));
    }
    let (l, rates) = last.unwrap();
    assert_eq!(l.state, State::Ok, "{l:?}");
    let max = l.max_iops.expect("a ceiling, at least");
    assert!((max - 1000.0).abs() < 1.0, "the rate while busy: {max}");
    let room = l.headroom_iops.expect("headroom");
    assert!((room - 300.0).abs() < 1.0, "{room}");
    // The judgement every view renders says the same.
    let j = crate::monitor::judge::judge_parts(
        None,
        &crate::monitor::judge::learned_references(Some(&l)),
        Some(&rates),
        [None, None],
    );
    let jr = j.read.headroom_iops.expect("judged headroom");
    assert!((jr - room).abs() < 1e-6, "judgement {jr}, learned {room}");
}

/// CPU noise at an estimate's level (issue 37, point 7): a device that never comes down to
/// one in flight is judged by an estimate from 2 in flight; intervals there 1.6x slower (below
/// the 2x of a change) while the host's CPUs have no idle time are marked and kept out of the
/// estimate, as at a baseline's level. Without the mark they are learned, and the estimate
/// moves with the CPU's wait (the same intervals on an idle host).
#[test]
fn cpu_noise_at_an_estimates_level_is_marked_and_not_learned() {
    use crate::sys::sched::AvgCpu;
    let at = |lat_ms: f64| reads_at(2.0, lat_ms);
    let busy = cpus(97.0, 3.0, 0.0);
    let run = |cpu: Option<&AvgCpu>| {
        let mut d = Device::default();
        for i in 0..120u32 {
            learn_second(&mut d, i, &at(4.0));
        }
        let before = d.curves[0]
            .estimate
            .clone()
            .expect("an estimate from 2 in flight");
        let mut marked = 0;
        for i in 120..240u32 {
            let l = learn_second_with(&mut d, i, &at(6.4), None, cpu);
            marked += usize::from(l.cpu_busy);
            assert!(l.flags.change.is_none(), "1.6x is no change: {l:?}");
            // On busy CPUs: saturated by the estimate held as it was, and said to be on busy
            // CPUs in every view (on idle ones the estimate learns the slower intervals).
            if cpu.is_some() {
                assert_eq!(l.state, State::Saturated, "{l:?}");
            }
            assert_eq!(l.flags.busy_cpus, cpu.is_some(), "{l:?}");
            let j = crate::monitor::judge::judge_parts(
                None,
                &crate::monitor::judge::learned_references(Some(&l)),
                Some(&at(6.4)),
                [None, None],
            );
            assert_eq!(j.read.flags.busy_cpus, cpu.is_some(), "{j:?}");
            assert_eq!(
                j.words().contains("busy CPUs"),
                cpu.is_some(),
                "{}",
                j.words()
            );
        }
        d.estimate(None);
        let after = d.curves[0].estimate.clone().expect("an estimate still");
        (before, after, marked)
    };
    let (before, after, marked) = run(Some(&busy));
    assert_eq!(before.from_in_flight, 2.0, "{before:?}");
    assert_eq!(marked, 120, "every slow interval on the busy host marked");
    assert_eq!(
        after.interval_ns, before.interval_ns,
        "{before:?} -> {after:?}"
    );
    assert_eq!(
        after.latency_ns, before.latency_ns,
        "{before:?} -> {after:?}"
    );
    // On an idle host the same intervals are the device's: learned.
    let (before, after, marked) = run(None);
    assert_eq!(marked, 0);
    assert!(
        after.interval_ns[1] > before.interval_ns[1] * 1.1,
        "{before:?} -> {after:?}"
    );
}

/// A verdict says what may have disturbed it at any level (issue 37, point 7): a device with
/// a baseline at one in flight, driven at 8 in flight on busy CPUs, is overloaded (the
/// queueing, learned as ever: not at the baseline's level) and flagged `busy_cpus`; ok
/// intervals on busy CPUs and the same overload on idle CPUs are not.
#[test]
fn a_verdict_on_busy_cpus_says_so_at_any_level() {
    use crate::monitor::DiskRates;
    use crate::sys::sched::AvgCpu;
    let at = reads_at;
    // No idle time, and a tenth stolen.
    let busy = cpus(60.0, 30.0, 10.5);
    let mut d = Device::default();
    let second = |d: &mut Device, i: u32, r: &DiskRates, cpu: Option<&AvgCpu>| {
        learn_second_with(d, i, r, None, cpu)
    };
    for i in 0..120u32 {
        second(&mut d, i, &at(1.0, 1.0), None);
    }
    let ok = second(&mut d, 120, &at(1.0, 1.0), Some(&busy));
    assert_eq!(ok.state, State::Ok, "{ok:?}");
    assert!(!ok.flags.busy_cpus && !ok.cpu_busy, "{ok:?}");
    let over = second(&mut d, 121, &at(8.0, 8.0), Some(&busy));
    assert_eq!(over.state, State::Overloaded, "{over:?}");
    assert!(over.flags.busy_cpus, "{over:?}");
    assert!(
        over.directions.iter().all(|x| x.flags.busy_cpus),
        "{over:?}"
    );
    assert!(!over.cpu_busy, "learned: not at the baseline's level");
    let idle = second(&mut d, 122, &at(8.0, 8.0), None);
    assert_eq!(idle.state, State::Overloaded, "{idle:?}");
    assert!(!idle.flags.busy_cpus, "{idle:?}");
}

/// One second of reads of 4 KiB, `in_flight` of them at a time, each `lat_ms` long, the
/// device busy throughout.
fn reads_at(in_flight: f64, lat_ms: f64) -> DiskRates {
    let iops = in_flight / lat_ms * 1e3;
    DiskRates {
        interval_s: 1.0,
        r_s: iops,
        rkb_s: iops * 4.0,
        read_concurrency: in_flight,
        aqu_sz: in_flight,
        util_pct: 100.0,
        ..DiskRates::default()
    }
}

/// CPUs with no idle time: these shares of user, system and steal.
fn cpus(user: f64, system: f64, steal: f64) -> crate::sys::sched::AvgCpu {
    crate::sys::sched::AvgCpu {
        user,
        nice: 0.0,
        system,
        iowait: 0.0,
        steal,
        idle: 0.0,
    }
}

/// Learn the `i`th 1 s interval of `d` from its rates alone (no latency source, CPU, windows,
/// target or profile).
fn learn_second(d: &mut Device, i: u32, rates: &DiskRates) -> std::sync::Arc<Learned> {
    learn_second_with(d, i, rates, None, None)
}

/// [`learn_second`] with the block-latency source's figures `lat` and the interval's CPU
/// times `cpu`.
fn learn_second_with(
    d: &mut Device,
    i: u32,
    rates: &DiskRates,
    lat: Option<&crate::monitor::blklat::Measured>,
    cpu: Option<&crate::sys::sched::AvgCpu>,
) -> std::sync::Arc<Learned> {
    let wall = i64::from(i) * 1_000_000_000;
    d.learn(
        &mut Points::default(),
        wall,
        rates,
        lat,
        cpu,
        None,
        None,
        None,
    )
}

/// A swept profile's disagreement is worded anew in every interval that adds evidence: its
/// figures by change.rs's push_ms and `fixed`, byte for byte what `format!` wrote (whole
/// figures, ties, and the fractions a device gives).
#[test]
fn a_swept_profiles_disagreement_reads_as_format_wrote_it() {
    for (from_ns, to_ns, seconds) in [
        (2_000_000.0, 8_000_000.0, 5.0),
        (2_005_000.0, 7_995_000.0, 5.5),
        (1_234_567.891, 987_654.321, 12.499_999),
        (125_000.0, 10_000.0, 0.5),
    ] {
        let c = super::change::Change {
            dir: Dir::Read,
            since_wall_ns: 0,
            from_ns,
            to_ns,
            intervals: 7,
            seconds,
            confirmed: false,
            confirmed_wall_ns: None,
            in_flight: None,
        };
        let want = format!(
            "swept profile's baseline {:.2} ms, the traffic's {:.2} ms at one in flight (7 \
             intervals, {:.0} s): the device changed since the sweep, or production's requests \
             differ from the sweep's (judged by the sweep)",
            from_ns / 1e6,
            to_ns / 1e6,
            seconds
        );
        assert_eq!(super::Device::profile_change(&c).evidence, want);
    }
}

/// A level is a point of the curve in the interval it has enough data, not at the next
/// estimate due by the count (up to a minute later at 1 s intervals): a device with a
/// baseline at one in flight, then bursts at 24 in flight (4 units of 2 ms: 12 ms each), says
/// the level of 24 and its latency in the interval its bucket reaches its tenth interval.
#[test]
fn a_level_is_on_the_curve_once_it_has_enough_data() {
    let mut d = Device::default();
    let mut i = 0;
    for _ in 0..67 {
        learn_second(&mut d, i, &reads_at(1.0, 2.0));
        i += 1;
    }
    let bucket = model::bucket_of(24.0);
    let levels = |d: &Device| d.curves.iter().map(|c| c.levels.len()).max().unwrap_or(0);
    assert_eq!(levels(&d), 1, "the baseline's level alone: {:?}", d.curves);
    let mut seen = None;
    for k in 0..20 {
        let l = learn_second(&mut d, i, &reads_at(24.0, 12.0));
        i += 1;
        let s = d.model.series(Dir::Read, SizeClass::Small).unwrap();
        let (standing, _) = estimate::standing(&s.buckets[bucket], bucket);
        if standing == 0 {
            assert_eq!(levels(&d), 1, "burst interval {k}: not a level yet");
            continue;
        }
        // The interval that made it a level: on the curve, and said.
        assert_eq!(levels(&d), 2, "burst interval {k}: {:?}", d.curves);
        let c = &d.curves[0];
        assert_eq!(c.overload_concurrency, Some(24), "{c:?}");
        let words = l
            .summary
            .as_ref()
            .map(|s| s.as_str().to_string())
            .unwrap_or_default();
        assert!(words.contains("24"), "burst interval {k}: {words}");
        seen = Some(k);
        break;
    }
    // Its tenth interval (the requests are plenty: 2,000 a second).
    assert_eq!(seen, Some(9));
}

/// One second of a device of 4 units of 2 ms shared by reads and writes, `in_flight` of them
/// at a time, `reads` the reads' share, the device busy throughout.
fn mixed_at(in_flight: f64, reads: f64) -> DiskRates {
    let lat_ms = 2.0 * (in_flight / 4.0).max(1.0);
    let iops = in_flight / lat_ms * 1e3;
    DiskRates {
        interval_s: 1.0,
        r_s: iops * reads,
        w_s: iops * (1.0 - reads),
        rkb_s: iops * reads * 4.0,
        wkb_s: iops * (1.0 - reads) * 4.0,
        r_await: Some(lat_ms),
        w_await: Some(lat_ms),
        read_concurrency: in_flight * reads,
        write_concurrency: in_flight * (1.0 - reads),
        aqu_sz: in_flight,
        util_pct: 100.0,
        ..DiskRates::default()
    }
}

/// 300 seconds of `d`, the device's in-flight count wandering over 1 to 16 (three seconds of
/// seven at 1), each second's rates `at(in_flight)`: the index of the next second.
fn learn_wandering(d: &mut Device, at: impl Fn(f64) -> DiskRates) -> u32 {
    for k in 0..300u32 {
        let c = [1.0, 1.0, 1.0, 2.0, 4.0, 8.0, 16.0][(k % 7) as usize];
        learn_second(d, k, &at(c));
    }
    300
}

/// A ceiling is measured beside the other direction's traffic of its time (stop 82's
/// known-device run, 70/30 reads and writes): the reads' ceiling learned beside ~10 % writes
/// gives no headroom beside five times as many writes (the device's units serve both: what
/// the reads can still take is not known), in learning's figures and in the judgement every
/// view renders; beside as many writes as then, it does. The writes' ceiling, learned beside
/// many reads, keeps its headroom beside fewer.
#[test]
fn a_ceiling_gives_no_headroom_beside_more_of_the_other_direction_than_it_was_measured_with() {
    let mut d = Device::default();
    // 90 % reads, the device's in-flight count wandering over 1 to 16.
    let mut i = learn_wandering(&mut d, |c| mixed_at(c, 0.9));
    let judged = |l: &Learned, r: &DiskRates| {
        crate::monitor::judge::judge_parts(
            None,
            &crate::monitor::judge::learned_references(Some(l)),
            Some(r),
            [None, None],
        )
    };
    // As the ceiling was learned: 90 % reads at 2 in flight (900 reads, 100 writes).
    let same = mixed_at(2.0, 0.9);
    let l = learn_second(&mut d, i, &same);
    i += 1;
    let reads = l.direction(Dir::Read).expect("reads judged");
    let max = reads.max_iops.expect("a reads' ceiling");
    let other = reads.ceiling_other_iops.expect("the writes beside it");
    assert!(other < 0.2 * max, "writes {other} beside {max} reads");
    assert_eq!(reads.state, State::Ok, "{reads:?}");
    let room = reads.headroom_iops.expect("headroom beside as many writes");
    // Writes beyond the ceiling's own are counted against it (within the tie).
    let excess = (same.w_s - other).max(0.0);
    assert!(excess < 0.1 * max, "{excess}");
    assert!((room - (max - excess - same.r_s)).abs() < 1e-6, "{room}");
    assert_eq!(judged(&l, &same).read.headroom_iops, Some(room));
    // Half and half at 2 in flight (500 reads, 500 writes): latency at the baseline, but the
    // writes take five times their share of the units then.
    let half = mixed_at(2.0, 0.5);
    let l = learn_second(&mut d, i, &half);
    let reads = l.direction(Dir::Read).expect("reads judged");
    assert_eq!(reads.state, State::Ok, "{reads:?}");
    assert_eq!(reads.headroom_iops, None, "{reads:?}");
    let j = judged(&l, &half);
    assert_eq!(j.read.state, State::Ok);
    assert_eq!(j.read.headroom_iops, None, "{:?}", j.read);
    assert_eq!(j.read.no_headroom, None);
    // The writes' ceiling was learned beside 9x their reads: beside fewer reads (950 at 2 in
    // flight, 50 writes), its headroom stands.
    i += 1;
    let fewer = mixed_at(2.0, 0.95);
    let l = learn_second(&mut d, i, &fewer);
    let writes = l.direction(Dir::Write).expect("writes judged");
    let w_other = writes.ceiling_other_iops.expect("the reads beside it");
    assert!(
        w_other > fewer.r_s,
        "reads {w_other} beside the writes' ceiling"
    );
    let h = writes.headroom_iops.unwrap_or_else(|| panic!("{writes:?}"));
    assert_eq!(h, (writes.max_iops.unwrap() - fewer.w_s).floor(), "{h}");
    assert_eq!(judged(&l, &fewer).write.headroom_iops, Some(h));
}

/// Issue 37: one size class's ceiling is no headroom of requests that span classes. A device
/// of 4 units whose service grows with size (4 KiB 2 ms, 64 KiB 4 ms) learns its 4 KiB reads
/// at 1 to 16 in flight: a ceiling of the small class. Then reads half 4 KiB, half 64 KiB at
/// one in flight, sized per class by the kernel (the block-latency source): each class is
/// judged by its own curve (the 4 KiB class at its baseline: ok), but the 4 KiB ceiling less
/// all reads would claim room the mix does not have (each 64 KiB read costs two 4 KiB ones):
/// no headroom, in learning's figures and in the judgement every view renders, flagged and
/// said; 4 KiB reads alone again: the ceiling's headroom back.
#[test]
fn requests_that_span_size_classes_get_no_headroom_from_the_small_classs_ceiling() {
    let mut d = Device::default();
    let mut i = learn_wandering(&mut d, |c| {
        let mut r = reads_at(c, 2.0 * (c / 4.0_f64).max(1.0));
        r.r_await = Some(2.0 * (c / 4.0_f64).max(1.0));
        r
    });
    // One second at one in flight of `small` 4 KiB reads of 2 ms and `medium` 64 KiB reads
    // of 4 ms, sized by the kernel: learned, and judged as every view judges it.
    let second = |d: &mut Device, i: u32, small: u64, medium: u64| {
        span_second(d, i, (small, 2.0), (medium, 4.0))
    };
    // Half of the requests 64 KiB: 333 reads a second (a 3 ms mean).
    let (l, j) = second(&mut d, i, 167, 166);
    i += 1;
    let reads = l.direction(Dir::Read).expect("reads judged");
    assert_eq!(reads.size_class, Some(SizeClass::Small), "{reads:?}");
    let max = reads.max_iops.expect("the 4 KiB class's ceiling");
    assert!(max > 1000.0, "{max}");
    assert_eq!(reads.state, State::Ok, "{reads:?}");
    assert!(reads.flags.spans_classes, "{reads:?}");
    assert_eq!(reads.headroom_iops, None, "{reads:?}");
    assert!(l.flags.spans_classes && l.headroom_iops.is_none(), "{l:?}");
    assert_eq!(j.read.state, State::Ok, "{:?}", j.read);
    assert_eq!((j.read.headroom_iops, j.read.no_headroom), (None, None));
    assert!(j.read.flags.spans_classes);
    assert!(j.words().contains("size classes"), "{}", j.words());
    // More of the 64 KiB reads, whose class has no baseline yet: still the 4 KiB class's
    // figures (its baseline, ok), not an ok with no baseline that every view reads unknown.
    let (l, j) = second(&mut d, i, 150, 160);
    i += 1;
    let reads = l.direction(Dir::Read).expect("reads judged");
    assert_eq!(reads.size_class, Some(SizeClass::Small), "{reads:?}");
    assert_eq!(reads.baseline_latency_ns, Some(2e6), "{reads:?}");
    assert_eq!((reads.state, reads.headroom_iops), (State::Ok, None));
    assert!(reads.flags.spans_classes);
    assert_eq!(
        (j.read.state, j.read.basis),
        (State::Ok, crate::analysis::state::Basis::Learned)
    );
    assert_eq!(j.read.headroom_iops, None);
    // 4 KiB reads alone at one in flight: the small class's ceiling is the headroom again.
    let mut alone = reads_at(1.0, 2.0);
    alone.r_await = Some(2.0);
    let l = learn_second(&mut d, i, &alone);
    let reads = l.direction(Dir::Read).expect("reads judged");
    assert!(!reads.flags.spans_classes, "{reads:?}");
    let h = reads
        .headroom_iops
        .expect("headroom from the class's own ceiling");
    assert!(
        (h - (reads.max_iops.unwrap() - alone.r_s)).abs() < 1e-6,
        "{h}"
    );
}

/// An idle second after reads whose requests spanned two size classes: the device's
/// judgement and its reads' direction take the same class's curve, so `learned` and the
/// judgement every view renders give the same headroom. The reads' direction took the class
/// of most intervals (the last of equals), the device the class of most requests: on the known device (1 unit,
/// 2.2 ms + 30 µs/KiB, an even 4 + 20 KiB mix) `learned` said 392.5 (the 4 KiB class's
/// ceiling) and every view 328.5 (the 20 KiB class's, which holds more of the time).
#[test]
fn an_idle_second_after_a_mix_of_classes_is_one_class_in_learning_and_in_the_views() {
    let mut d = Device::default();
    for i in 0..60u32 {
        // One in flight, 167 reads of 4 KiB at 2 ms and 166 of 64 KiB at 4 ms: the 64 KiB
        // class holds two thirds of the time (its intervals), the 4 KiB class one more request.
        span_second(&mut d, i, (167, 2.0), (166, 4.0));
    }
    let small = d.curve(Dir::Read, SizeClass::Small).expect("a 4 KiB curve");
    let medium = d
        .curve(Dir::Read, SizeClass::Medium)
        .expect("a 64 KiB curve");
    // As many intervals each (the 64 KiB class learned last wins a tie of them), more
    // requests of 4 KiB.
    assert!(
        small.requests > medium.requests && small.intervals <= medium.intervals,
        "{} / {} requests, {} / {} intervals",
        small.requests,
        medium.requests,
        small.intervals,
        medium.intervals
    );
    let idle = DiskRates {
        interval_s: 1.0,
        ..DiskRates::default()
    };
    let l = learn_second(&mut d, 60, &idle);
    let reads = l.direction(Dir::Read).expect("the reads' idle judgement");
    assert_eq!(reads.size_class, Some(SizeClass::Small), "{reads:?}");
    assert_eq!(l.size_class, Some(SizeClass::Small), "{l:?}");
    assert!(l.headroom_iops.is_some());
    assert_eq!(reads.headroom_iops, l.headroom_iops);
    let j = crate::monitor::judge::judge_parts(
        None,
        &crate::monitor::judge::learned_references(Some(&l)),
        Some(&idle),
        [None, None],
    );
    assert_eq!(
        (j.read.state, j.read.headroom_iops),
        (State::Idle, l.headroom_iops)
    );
}

/// A second of reads whose requests span two size classes, sized by the kernel (`small` 4 KiB
/// reads of `small_ms` each, `medium` 64 KiB reads of `medium_ms`, one after the other),
/// learned and judged as every view judges it.
fn span_second(
    d: &mut Device,
    i: u32,
    (small, small_ms): (u64, f64),
    (medium, medium_ms): (u64, f64),
) -> (std::sync::Arc<Learned>, crate::analysis::state::Judgement) {
    use crate::monitor::blklat::Measured;
    let class = super::points::tests::class_latency;
    let m = Measured {
        read_classes: Some(Box::new([
            class(0, small, 4096.0, small_ms),
            class(1, medium, 65536.0, medium_ms),
            Default::default(),
        ])),
        ..Measured::default()
    };
    let n = (small + medium) as f64;
    let mean = (small as f64 * small_ms + medium as f64 * medium_ms) / n;
    // One request at a time: in flight for the sum of the requests' times.
    let mut r = reads_at(n * mean / 1000.0, mean);
    r.rkb_s = small as f64 * 4.0 + medium as f64 * 64.0;
    let l = learn_second_with(d, i, &r, Some(&m), None);
    let refs = crate::monitor::judge::learned_references(Some(&l));
    let j = crate::monitor::judge::judge_parts(None, &refs, Some(&r), [None, None]);
    (l, j)
}

/// Reads whose requests span two size classes, each judged by its own class's curve: the
/// direction (and every view, which judges it by the ratio learning gives) takes the worst
/// class's figures. 64 KiB reads at 4x their baseline beside as many 4 KiB reads at theirs
/// read "overloaded (read 3.8x ...)" in learning and in the judgement; before, learning said
/// overloaded (its state the worst class's) while every view said "ok (read 1.0x learned
/// baseline)", the 4 KiB class's ratio: half the reads overloaded and no output said so.
#[test]
fn a_direction_spanning_size_classes_is_judged_by_its_worst_class_in_every_view() {
    let mut d = Device::default();
    for i in 0..60u32 {
        span_second(&mut d, i, (167, 2.0), (166, 4.0));
    }
    let medium = d
        .curve(Dir::Read, SizeClass::Medium)
        .expect("a 64 KiB curve");
    let medium_ns = medium
        .baseline
        .as_ref()
        .expect("a 64 KiB baseline")
        .latency_ns;
    // The 64 KiB reads take 16 ms (4x their 4 ms baseline), the 4 KiB ones 2 ms as learned.
    let (l, j) = span_second(&mut d, 60, (167, 2.0), (166, 16.0));
    let reads = l.direction(Dir::Read).expect("reads judged");
    assert_eq!(reads.size_class, Some(SizeClass::Medium), "{reads:?}");
    assert_eq!(reads.baseline_latency_ns, Some(medium_ns));
    assert_eq!(reads.state, State::Overloaded, "{reads:?}");
    let ratio = reads.ratio.expect("a ratio");
    assert!((3.5..4.5).contains(&ratio), "{ratio}");
    assert_eq!((l.state, l.ratio), (State::Overloaded, Some(ratio)));
    assert_eq!(l.headroom_iops, Some(0.0));
    assert_eq!(j.read.state, State::Overloaded, "{:?}", j.read);
    assert_eq!(j.read.ratio, Some(ratio));
    assert_eq!(j.read.baseline_latency_ns, Some(medium_ns));
    assert_eq!(j.device.headroom_iops, Some(0.0));
    assert!(
        j.words().starts_with("overloaded (read 3."),
        "{}",
        j.words()
    );
    // Each class's own judgement beside them: the 4 KiB class ok at its own baseline.
    let small = d.curve(Dir::Read, SizeClass::Small).expect("a 4 KiB curve");
    let small_ns = small
        .baseline
        .as_ref()
        .expect("a 4 KiB baseline")
        .latency_ns;
    let classes = l.classes.as_deref().expect("each class's judgement");
    let got: Vec<_> = classes
        .iter()
        .map(|c| (c.size_class, c.state, c.baseline_latency_ns, c.share))
        .collect();
    assert_eq!(
        got,
        [
            (SizeClass::Small, State::Ok, Some(small_ns), 0.502),
            (SizeClass::Medium, State::Overloaded, Some(medium_ns), 0.498)
        ]
    );
    assert_eq!(classes[1].ratio, Some(ratio));
    assert_eq!(reads.classes, l.classes);
    // The 4 KiB reads slow instead: that class's figures.
    let (l, j) = span_second(&mut d, 61, (167, 8.0), (166, 4.0));
    let reads = l.direction(Dir::Read).expect("reads judged");
    assert_eq!(reads.size_class, Some(SizeClass::Small), "{reads:?}");
    assert_eq!(
        (reads.state, j.read.state),
        (State::Overloaded, State::Overloaded)
    );
    // 4 KiB reads alone: no classes told (none held over from the seconds before).
    let mut alone = reads_at(1.0, 2.0);
    alone.r_await = Some(2.0);
    for i in 62..65 {
        let l = learn_second(&mut d, i, &alone);
        assert!(l.classes.is_none() && !l.flags.spans_classes, "{l:?}");
        let reads = l.direction(Dir::Read).expect("reads judged");
        assert!(reads.classes.is_none(), "{reads:?}");
    }
}

/// An even mix of two size classes at their baselines: which class carries a few more
/// requests takes turns from one second to the next, and the figures every output quotes
/// (the direction's class, baseline and ratio) stay one class's, the class learned most,
/// rather than alternating with it (the `learned` object's `size_class` and baseline, and
/// the exporter's baseline gauges, flipped every second on the VM's disk).
#[test]
fn an_even_mix_of_size_classes_is_quoted_by_one_class_from_second_to_second() {
    let mut d = Device::default();
    // The 64 KiB class learned over more requests: 200 of them beside 133 4 KiB ones.
    for i in 0..60u32 {
        span_second(&mut d, i, (133, 2.0), (200, 4.0));
    }
    let mut classes = std::collections::BTreeSet::new();
    for i in 60..80u32 {
        let (small, medium) = if i % 2 == 0 { (170, 163) } else { (163, 170) };
        let (l, j) = span_second(&mut d, i, (small, 2.0), (medium, 4.0));
        let reads = l.direction(Dir::Read).expect("reads judged");
        assert_eq!((reads.state, j.read.state), (State::Ok, State::Ok));
        classes.insert(format!("{:?}", reads.size_class));
        assert_eq!(l.size_class, reads.size_class);
        // Both classes' baselines told in every second, whichever the figures are of.
        let each = l.classes.as_deref().expect("each class's judgement");
        assert_eq!(each.len(), 2);
        assert!(
            each.iter()
                .all(|c| c.state == State::Ok && c.baseline_latency_ns.is_some()),
            "{each:?}"
        );
    }
    assert_eq!(
        classes.into_iter().collect::<Vec<_>>(),
        ["Some(Medium)"],
        "one class quoted"
    );
}

/// At rest (an idle interval, the end of a recording: `analyze`, the page), every size class
/// of the direction a curve judges is told with its own baseline and its share of the
/// requests learned: a recording of 4 KiB and 64 KiB reads that ended on 4 KiB alone, or
/// idle, told the 4 KiB baseline only (`analyze` of the VM's disk, stop 87). The summary of
/// a last interval of one class takes them; one of the other direction does not.
#[test]
fn at_rest_every_size_class_learned_is_told_with_its_own_baseline() {
    let mut d = Device::default();
    for i in 0..60u32 {
        span_second(&mut d, i, (250, 2.0), (83, 4.0));
    }
    let baseline = |class| {
        d.curve(Dir::Read, class)
            .and_then(|c| c.baseline.as_ref())
            .map(|b| b.latency_ns)
            .expect("a baseline per class")
    };
    let (small_ns, medium_ns) = (baseline(SizeClass::Small), baseline(SizeClass::Medium));
    // 4 KiB reads alone, then an idle second.
    let mut alone = reads_at(1.0, 2.0);
    alone.r_await = Some(2.0);
    let last = learn_second(&mut d, 60, &alone);
    assert!(last.classes.is_none(), "{last:?}");
    // A second with no I/O.
    let quiet = DiskRates {
        interval_s: 1.0,
        ..DiskRates::default()
    };
    let idle = learn_second(&mut d, 61, &quiet);
    assert_eq!(idle.state, State::Idle);
    let classes = idle.classes.as_deref().expect("each class at rest");
    let got: Vec<_> = classes
        .iter()
        .map(|c| {
            (
                c.size_class,
                c.state,
                c.ratio,
                c.baseline_latency_ns,
                c.estimate,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (SizeClass::Small, State::Idle, None, Some(small_ns), false),
            (SizeClass::Medium, State::Idle, None, Some(medium_ns), false)
        ]
    );
    // Shares of the requests learned: about 3 to 1, and every class's together.
    let shares: Vec<f64> = classes.iter().map(|c| c.share).collect();
    assert!((0.72..0.78).contains(&shares[0]), "{shares:?}");
    assert!((shares[0] + shares[1] - 1.0).abs() < 0.002, "{shares:?}");
    assert!(!idle.flags.spans_classes);
    // The summary of a last interval of 4 KiB reads alone tells the 64 KiB class too, in
    // words; a last interval of the other direction is not given the reads' classes.
    let summary =
        Learned::for_summary(Some((*last).clone()), || Some((*idle).clone())).expect("a summary");
    assert_eq!(summary.size_class, Some(SizeClass::Small));
    assert_eq!(summary.classes, idle.classes);
    let words = super::other_classes_words(&summary);
    assert_eq!(words.len(), 1, "{words:?}");
    let want = format!(
        " (read, <=64KiB; {} % of the reads learned): baseline {} mean",
        crate::analysis::text::fixed(shares[1] * 100.0, 0),
        crate::analysis::text::fmt_latency_ns(medium_ns)
    );
    assert!(words[0].starts_with(&want), "{words:?} against {want}");
    let mut writes = (*last).clone();
    writes.direction = Some(Dir::Write);
    let summary = Learned::for_summary(Some(writes), || Some((*idle).clone())).expect("a summary");
    assert!(summary.classes.is_none(), "{summary:?}");
    // A device that learned one class has none at rest.
    let mut one = Device::default();
    for i in 0..60u32 {
        learn_second(&mut one, i, &alone);
    }
    let idle = learn_second(&mut one, 60, &quiet);
    assert_eq!(idle.state, State::Idle);
    assert!(idle.classes.is_none(), "{idle:?}");
}

#[test]
fn every_other_report_is_learned_last_row_first_and_judged_the_same() {
    // Three devices with their own traffic (sdc from the fifth sample on), learned together,
    // and each alone: the order the rows are learned in (every other report last to first,
    // so that the devices learned last, still in the caches, come first) changes nothing a
    // row is told.
    let ios = |dev: usize, k: u64| match dev {
        0 => 100 * k,
        1 => 37 * k + k * k,
        _ => 10 * k.saturating_sub(4),
    };
    let names = ["sda", "sdb", "sdc"];
    let text = |k: u64, devs: &[usize]| -> String {
        devs.iter()
            .filter(|&&d| d < 2 || k >= 4)
            .map(|&d| line(16 * d as u32, names[d], ios(d, k)))
            .collect()
    };
    let key = |r: &crate::monitor::interval::DeviceRow| r.kernel_name.clone();
    let together: Vec<String> = (0..40u64).map(|k| text(k, &[0, 1, 2])).collect();
    let mut all = Learner::new(LearnSpec::default());
    let mut got = Vec::new();
    let mut backward = 0;
    for mut r in reports(&together) {
        backward += usize::from(all.backward && all.order.len() >= r.devices.len());
        all.observe(&mut r, &key);
        got.push(r);
    }
    // Most reports after the first alternate; the one where sdc appears goes first to last.
    assert!(backward >= 15, "{backward}");
    for (d, name) in names.iter().enumerate() {
        let alone: Vec<String> = (0..40u64).map(|k| text(k, &[d])).collect();
        let mut one = Learner::new(LearnSpec::default());
        let mut want = Vec::new();
        for mut r in reports(&alone) {
            one.observe(&mut r, &key);
            want.push(r);
        }
        let learned = |r: &IntervalReport| {
            r.devices
                .iter()
                .find(|x| x.kernel_name == *name)
                .and_then(|x| x.learned.as_deref().cloned())
        };
        let (g, w): (Vec<_>, Vec<_>) = (
            got.iter().map(learned).filter(Option::is_some).collect(),
            want.iter().map(learned).filter(Option::is_some).collect(),
        );
        assert_eq!(g.len(), w.len(), "{name}");
        for (k, (g, w)) in g.iter().zip(&w).enumerate() {
            assert_eq!(g, w, "{name}, report {k}");
        }
        assert!(g.iter().flatten().any(|l| l.state != State::Idle), "{name}");
    }
}

#[test]
fn what_a_report_learned_last_row_first_says_comes_in_row_order() {
    let guard = tmpdir("saidorder");
    let dir = guard.path().to_path_buf();
    let spec = || LearnSpec {
        state_dir: Some(dir.clone()),
        target_p95_ns: None,
    };
    let key = |r: &crate::monitor::interval::DeviceRow| r.kernel_name.clone();
    let two = |a: u64, b: u64| line(0, "sda", a) + &line(16, "sdb", b);
    // Another run learns sda and sdb, and holds them.
    let mut other = Learner::new(spec());
    for mut r in reports(&[two(0, 0), two(100, 100)]) {
        other.observe(&mut r, &key);
    }
    // This run: both idle in its first report (first to last), both busy in its second, which
    // is learned last row first: each says another run learns it, sda first.
    let mut this = Learner::new(spec());
    let mut seen = reports(&[two(100, 100), two(100, 100), two(200, 300)]).into_iter();
    this.observe(&mut seen.next().unwrap(), &key);
    assert!(this.take_warnings().is_empty());
    assert!(this.backward && this.order.len() == 2);
    this.observe(&mut seen.next().unwrap(), &key);
    let said = this.take_warnings();
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(said[0].starts_with("sda: another iosat"), "{said:?}");
    assert!(said[1].starts_with("sdb: another iosat"), "{said:?}");
    drop((other, this));
}

#[test]
fn a_save_writes_every_busy_device_and_a_refused_directory_is_said_once() {
    let guard = tmpdir("saving");
    let dir = guard.path().to_path_buf();
    let mut learner = Learner::new(LearnSpec {
        state_dir: Some(dir.clone()),
        target_p95_ns: None,
    });
    let names = ["sda", "sdb", "sdc"];
    let texts: Vec<String> = (0..8u64)
        .map(|k| {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| line(16 * i as u32, n, 100 * k))
                .collect()
        })
        .collect();
    let key = |r: &crate::monitor::interval::DeviceRow| r.kernel_name.clone();
    let mut reports = reports(&texts).into_iter();
    for mut r in reports.by_ref().take(3) {
        learner.observe(&mut r, &key);
    }
    let learned = store::learned_dir(&dir);
    let file = |n: &str| learned.join(format!("{n}.json"));
    learner.save();
    assert!(learner.take_warnings().is_empty());
    for n in names {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file(n)).unwrap()).unwrap();
        assert_eq!(v["id"], n, "{n}");
        assert_eq!(v["model"]["intervals_seen"], 3, "{n}");
        std::fs::remove_file(file(n)).unwrap();
    }
    // More traffic, then learned/ swapped for a symlink (refused): one line for all three
    // devices, not one each, and no new attempt in every interval after it.
    for mut r in reports.by_ref().take(2) {
        learner.observe(&mut r, &key);
    }
    let real = dir.join("learned.real");
    std::fs::rename(&learned, &real).unwrap();
    std::os::unix::fs::symlink(&real, &learned).unwrap();
    learner.save();
    let said = learner.take_warnings();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("learned state of 3 devices (sda, ...) not saved: ")
            && said[0].contains("symlink"),
        "{said:?}"
    );
    for mut r in reports {
        learner.observe(&mut r, &key);
    }
    assert!(learner.take_warnings().is_empty());
    assert!(names
        .iter()
        .all(|n| !real.join(format!("{n}.json")).exists()));
    // The directory back: what was not saved is saved now, all of it.
    std::fs::remove_file(&learned).unwrap();
    std::fs::rename(&real, &learned).unwrap();
    learner.save();
    assert!(learner.take_warnings().is_empty());
    for n in names {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file(n)).unwrap()).unwrap();
        assert_eq!(v["model"]["intervals_seen"], 7, "{n}");
    }
}

#[test]
fn a_partitions_disk_is_found_by_the_kernels_naming_rule() {
    for (part, disk) in [
        ("sda1", Some("sda")),
        ("sdp12", Some("sdp")),
        ("nvme0n1p2", Some("nvme0n1")),
        ("mmcblk0p1", Some("mmcblk0")),
        ("loop0p3", Some("loop0")),
        ("md127p1", Some("md127")),
        ("sda", None),
        ("nvme0n1", Some("nvme0n")),
        ("7", None),
    ] {
        assert_eq!(
            crate::monitor::select::disk_of_partition(part),
            disk,
            "{part}"
        );
    }
}

/// A partition shares its disk's queue: with its disk in the report it is judged by the
/// disk (the same judgement, said to be the disk's), learns nothing of its own and is the
/// disk at rest; without its disk it learns on its own.
#[test]
fn a_partition_is_judged_by_its_disk_when_its_disk_is_shown() {
    use crate::sys::device::DevKind;
    let mut learner = Learner::new(LearnSpec::default());
    let key = |r: &crate::monitor::interval::DeviceRow| r.kernel_name.clone();
    // sda with two busy partitions, sdb a disk, sdc1 a partition whose disk is not shown;
    // after 39 intervals (a baseline and a ceiling learned) sda is gone.
    let texts: Vec<String> = (0..44u64)
        .map(|k| {
            let disk = if k < 40 {
                line(0, "sda", 300 * k)
            } else {
                String::new()
            };
            disk + &line(1, "sda1", 100 * k)
                + &line(2, "sda2", 200 * k)
                + &line(16, "sdb", 50 * k)
                + &line(33, "sdc1", 70 * k)
        })
        .collect();
    let partitions = ["sda1", "sda2", "sdc1"];
    let all = crate::monitor::select::Selection {
        all: true,
        ..Default::default()
    };
    // Intervals whose disk row had words under the table (judged by an estimate: the
    // partitions' words are taken from it).
    let mut worded = 0;
    for (k, mut r) in reports_of(all, &texts).into_iter().enumerate() {
        for d in &mut r.devices {
            if partitions.contains(&d.kernel_name.as_str()) {
                d.meta.kind = Some(DevKind::Partition);
            }
        }
        learner.observe(&mut r, &key);
        worded += usize::from(views_copy_a_partitions_judgement_only_where_it_is_its_disks(&r, k));
        let row = |name: &str| r.devices.iter().find(|d| d.kernel_name == name);
        let learned = |name: &str| row(name).unwrap().learned.clone().unwrap();
        match row("sda") {
            // Passes first to last and last to first alike.
            Some(_) => {
                for p in ["sda1", "sda2"] {
                    assert!(
                        Arc::ptr_eq(&learned(p), &learned("sda")),
                        "{p}, interval {k}"
                    );
                    assert_eq!(row(p).unwrap().judged_as_disk(), Some("sda"));
                    // Every view's judgement of it is its disk's, made from the disk's rates
                    // (its own would give it the disk's ceiling less its own IOPS alone).
                    assert_eq!(row(p).unwrap().judgement(), row("sda").unwrap().judgement());
                }
                assert_ne!(learned("sda").state, State::Idle);
                if k == 38 {
                    // The judgements compared above have a baseline and a headroom by now.
                    let j = row("sda").unwrap().judgement();
                    assert!(j.device.headroom_iops.is_some(), "{j:?}");
                    assert!(learned("sda").baseline_latency_ns.is_some());
                }
            }
            None => {
                // Its disk gone: each learns on its own again.
                assert!(!Arc::ptr_eq(&learned("sda1"), &learned("sda2")), "{k}");
                assert!(row("sda1").unwrap().judged_as.is_none());
            }
        }
        assert!(row("sdb").unwrap().judged_as.is_none());
        assert!(row("sdc1").unwrap().judged_as.is_none(), "interval {k}");
    }
    assert!(worded > 0, "no interval had words under its disk");
    let mut keys: Vec<&str> = learner.devices.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    // sdc1 learned on its own from the start, sda1 and sda2 only once sda was gone.
    assert_eq!(keys, ["sda", "sda1", "sda2", "sdb", "sdc1"]);
    let seen = |k: &str| learner.devices[learner.by_key[k]].1.model.intervals_seen;
    assert_eq!(seen("sda"), 39);
    assert_eq!(seen("sda1"), 4);
    assert_eq!(seen("sdc1"), 43);
    // At rest a partition is its disk.
    assert_eq!(learner.at_rest("sda1"), learner.at_rest("sda"));
    assert!(learner.at_rest("sda").is_some());
}

/// The table's cells and the JSON of a partition judged by its disk are its disk's, which
/// the views copy from the disk's row (report::stat_view: DiskText, DiskJson); a
/// partition with something of its own that a judgement reads (here, from interval 20, a
/// declared cap) is judged again, its own way. Debug builds check each copied row against
/// the row written the whole way.
fn views_copy_a_partitions_judgement_only_where_it_is_its_disks(
    r: &crate::monitor::interval::IntervalReport,
    k: usize,
) -> bool {
    use crate::report::{stat_view, Format};
    let r = &mut r.clone();
    let capped = k >= 20;
    if capped {
        for d in r.devices.iter_mut().filter(|d| d.kernel_name == "sda2") {
            d.cap = Some(crate::analysis::declared::DeclaredCap {
                iops: Some(5000.0),
                ..Default::default()
            });
        }
    }
    let env = crate::envelope::Envelope::at("stat", 1, 0);
    let json: serde_json::Value =
        serde_json::from_str(&stat_view::render(r, Format::Json, &env, true)).unwrap();
    let text = stat_view::render(
        r,
        Format::Text {
            wide: false,
            width: 80,
            color: false,
        },
        &env,
        true,
    );
    let dev = |name: &str| {
        json["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["kernel_name"] == name)
            .cloned()
    };
    let cells = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split_whitespace().skip(7).collect::<Vec<_>>())
    };
    let (Some(disk), Some(p1)) = (dev("sda"), dev("sda1")) else {
        return false;
    };
    assert_eq!(p1["learned_of"], "sda", "interval {k}");
    for key in ["judgement", "learned"] {
        assert_eq!(p1[key], disk[key], "sda1's {key}, interval {k}");
    }
    assert_eq!(cells("sda1"), cells("sda"), "interval {k}: {text}");
    // The disk's words under the table (an estimate, a change: a judgement the table
    // qualifies) are the partition's too, under its own name (report::stat_view::DiskText).
    let words = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("# {name}: ")))
            .map(str::to_owned)
    };
    assert_eq!(words("sda1"), words("sda"), "interval {k}: {text}");
    let own = r.devices.iter().find(|d| d.kernel_name == "sda2").unwrap();
    assert_eq!(
        dev("sda2").unwrap()["judgement"],
        serde_json::from_str::<serde_json::Value>(&{
            let mut w = Vec::new();
            own.judgement().write_json_with(&mut w, None);
            String::from_utf8(w).unwrap()
        })
        .unwrap(),
        "sda2's own judgement, interval {k}"
    );
    if capped {
        assert_ne!(dev("sda2").unwrap()["judgement"], disk["judgement"], "{k}");
    }
    words("sda").is_some()
}
