//! One judgement, four views (issue 36; docs/design.md §2: a device's state, basis, ratio and
//! headroom are judged once per row, monitor/judge.rs, and every view only renders that
//! judgement). The same recorded intervals of one disk that reads and writes, its reads
//! judged by a swept read profile and its writes by the baseline learned from the
//! recording's first minute, go through
//!
//! 1. `iosat stat --replay --json` (the judgement of every interval, per direction),
//! 2. `iosat top --replay` in a real terminal (tmux): the gauge line and the headroom column,
//! 3. the exporter's /metrics, its learner fed the recording's samples in order
//!    (`Scraper::tick_with`) over a sysfs root that identifies the disk as the profile's,
//! 4. the recording's page (`iosat report REC -o page.html`),
//!
//! and per device and direction the state, the basis, the ratio and the headroom must be the
//! same in each, as each prints them. stat's judgements are the reference (the test first
//! checks they are the intended ones, so the comparison is never between empty views); top
//! and the page show the device's judgement (its worst direction, whole) at a recording's
//! last interval, so they see the recording cut after each of the last intervals, whose
//! worst direction is by turns the swept reads and the learned writes. The exporter is also
//! checked with the profile saved as an old, direction-less `<id>.json`, which judges the
//! writes too.
//!
//! What it found (issue 36): top's headroom column (and stat's `headroom` column, CSV and
//! JSON `profile` object) printed a headroom of its own, the read profile's ceiling less
//! reads and writes, beside a judgement of headroom 0; the page's summary counted the time
//! above 3x the swept baseline only; the exporter labelled a legacy profile's writes
//! `source="learned"`.

use crate::top::{top_replay, Tmux};
use crate::util::{iosat, ok_stdout};
use iosat::analysis::state::{Basis, Dir, DirJudgement, Judgement, NoHeadroom, State};
use iosat::analysis::text::fmt_iops;
use iosat::exporter::metrics;
use iosat::exporter::scrape::{Devices, Scraper};
use iosat::monitor::select::Selection;
use iosat::monitor::RawSample;
use std::path::Path;

/// The disk's profile id: its wwid (sysfs `wwid`), the id the recording's `I` line names.
const ID: &str = "naa.5000c50015ea71ac";

/// The swept read profile: 1 ms at one in flight, 5,000 IOPS at the knee of 4.
const READ_PROFILE: &str = r#"{"workload":{"pattern":"randread","block_size":4096},
"verdict":{"baseline_latency_ns":1000000.0,"knee_concurrency":4,"max_useful_iops":5000.0}}"#;

/// One second of the disk: reads/s and their mean latency (ms), writes/s and theirs; all
/// requests 4 KiB, the disk busy the whole second.
#[derive(Clone, Copy)]
struct Second {
    reads: u64,
    read_ms: f64,
    writes: u64,
    write_ms: f64,
    /// The host's CPUs had no idle time in the second (the recording's `C` line, the
    /// exporter's /proc/stat): a direction judged slow or worse is flagged `busy_cpus`.
    cpus_busy: bool,
}

/// The first minute: 1,000 reads and 500 writes a second at 1 ms, one request in flight for
/// the reads and half of one for the writes, what learning takes for each direction's
/// baseline (tests/it/vocab.rs). As many reads as the tail's: the writes' ceiling learned
/// beside fewer reads than the tail's would give the tail no write headroom
/// (analysis::state::ceiling_for_mix), and the views would be compared on none.
const WARM: (Second, usize) = (
    Second {
        reads: 1000,
        read_ms: 1.0,
        writes: 500,
        write_ms: 1.0,
        cpus_busy: false,
    },
    60,
);

/// Then the intervals the views are compared on, with the state each direction must be in
/// (reads by the sweep's 1 ms, writes by the learned 1 ms) and the direction the device is
/// judged by (its worst). The latencies stay within what the requests in flight explain, so
/// none is "slow but not loaded".
const TAIL: [(Second, State, State, Dir); 4] = [
    // Reads 4x the swept baseline, writes as learned: overloaded by the reads.
    (
        Second {
            reads: 1000,
            read_ms: 4.0,
            writes: 300,
            write_ms: 1.1,
            cpus_busy: true,
        },
        State::Overloaded,
        State::Ok,
        Dir::Read,
    ),
    // Reads as swept, writes 3.5x the learned baseline: overloaded by the writes.
    (
        Second {
            reads: 1000,
            read_ms: 1.0,
            writes: 300,
            write_ms: 3.5,
            cpus_busy: true,
        },
        State::Ok,
        State::Overloaded,
        Dir::Write,
    ),
    // Writes 2x: saturated by the writes, the reads with headroom left.
    (
        Second {
            reads: 1000,
            read_ms: 1.2,
            writes: 300,
            write_ms: 2.0,
            cpus_busy: false,
        },
        State::Ok,
        State::Saturated,
        Dir::Write,
    ),
    // Both ok: the device is its higher ratio, the reads', with their headroom.
    (
        Second {
            reads: 1000,
            read_ms: 1.1,
            writes: 300,
            write_ms: 1.0,
            cpus_busy: false,
        },
        State::Ok,
        State::Ok,
        Dir::Read,
    ),
];

/// One sample: monotonic and wall clock (ns), its /proc/diskstats text and the `cpu` line of
/// its /proc/stat (two CPUs, 100 ticks a second each).
struct Sample {
    mono_ns: u64,
    wall_ns: i64,
    diskstats: String,
    cpu: iosat::sys::sched::CpuTimes,
}

/// The samples of the recording, one a second: the first at zero, then one after each
/// second of [`WARM`] and [`TAIL`].
fn samples() -> Vec<Sample> {
    samples_of(
        std::iter::repeat(WARM.0)
            .take(WARM.1)
            .chain(TAIL.iter().map(|t| t.0)),
    )
}

/// The samples of a recording of `seconds`, one a second: the first at zero, then one after
/// each second.
fn samples_of(seconds: impl Iterator<Item = Second>) -> Vec<Sample> {
    let (mut reads, mut read_ms, mut writes, mut write_ms, mut busy, mut weighted) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let (mut mono, mut wall) = (1_000_000_000_000u64, 1_795_333_857_000_000_000i64);
    let mut cpu = iosat::sys::sched::CpuTimes::default();
    let mut out = Vec::new();
    let push = |out: &mut Vec<Sample>, c: [u64; 6], mono: u64, wall: i64, cpu| {
        let [r, rms, w, wms, io, wt] = c;
        out.push(Sample {
            mono_ns: mono,
            wall_ns: wall,
            diskstats: format!(
                "   8       0 sdx {r} 0 {} {rms} {w} 0 {} {wms} 0 {io} {wt} 0 0 0 0 0 0\n",
                r * 8,
                w * 8
            ),
            cpu,
        });
    };
    push(&mut out, [0; 6], mono, wall, cpu);
    for s in seconds {
        // Busy: no idle tick on either CPU; else a tenth of them used.
        let user = if s.cpus_busy { 200 } else { 20 };
        cpu.user += user;
        cpu.idle += 200 - user;
        let (rms, wms) = (
            (s.reads as f64 * s.read_ms) as u64,
            (s.writes as f64 * s.write_ms) as u64,
        );
        reads += s.reads;
        read_ms += rms;
        writes += s.writes;
        write_ms += wms;
        busy += 1000;
        weighted += rms + wms;
        mono += 1_000_000_000;
        wall += 1_000_000_000;
        push(
            &mut out,
            [reads, read_ms, writes, write_ms, busy, weighted],
            mono,
            wall,
            cpu,
        );
    }
    out
}

/// A recording of `samples` (`stat --record`'s format), the disk identified as [`ID`].
fn recording(samples: &[Sample]) -> String {
    let mut s = format!(
        "#iosat-record 1\nR {} 1000000000\nD 8:0 sdx disk sdx\nI 8:0 sdx {ID}\n",
        samples[0].wall_ns
    );
    for x in samples {
        s.push_str(&iosat::monitor::record::format_cpu(&x.cpu));
        s.push_str(&format!("T {} {}\n{}", x.mono_ns, x.wall_ns, x.diskstats));
    }
    s
}

/// View 1: the judgement `iosat stat --replay --json` prints for sdx, one per interval
/// (learning in memory: nothing of an earlier run).
fn stat_judgements(rec: &Path, profiles: &Path) -> Vec<Judgement> {
    let o = iosat()
        .env("IOSAT_STATE_DIR", "")
        .args(["stat", "--json", "--replay"])
        .arg(rec)
        .arg("--profile-dir")
        .arg(profiles)
        .arg("sdx")
        .output()
        .unwrap();
    ok_stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| {
            let d = v["devices"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["disk_device"] == "sdx")
                .unwrap_or_else(|| panic!("no sdx in {v}"))
                .clone();
            serde_json::from_value(d["judgement"].clone())
                .unwrap_or_else(|e| panic!("{e}: {}", d["judgement"]))
        })
        .collect()
}

/// The lines `iosat stat --json --replay REC ARGS` prints (learning in memory: nothing of
/// an earlier run), parsed.
fn stat_json_lines(rec: &Path, args: &[&std::ffi::OsStr]) -> Vec<serde_json::Value> {
    let o = iosat()
        .env("IOSAT_STATE_DIR", "")
        .args(["stat", "--json", "--replay"])
        .arg(rec)
        .args(args)
        .output()
        .unwrap();
    ok_stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What a view printed of one direction: state, basis, ratio and headroom.
#[derive(Debug, Clone, PartialEq)]
struct Shown {
    state: String,
    basis: String,
    ratio: Option<f64>,
    headroom: Option<f64>,
    /// Why the headroom is held at 0 (the JSON's `no_headroom`, the exporter's `reason`).
    no_headroom: Option<String>,
    /// The flags set (the JSON's keys, the exporter's `flag`).
    flags: Vec<String>,
}

/// How the exporter names a basis (its `source` label).
fn source_label(b: Basis) -> &'static str {
    match b {
        Basis::Swept => "sweep",
        Basis::Learned | Basis::LearnedEstimate => "learned",
        Basis::None => "none",
    }
}

/// A sample's value in an exposition: the line that starts with `series` (name and labels,
/// exactly as rendered).
fn sample_value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.trim().parse().unwrap())
}

/// What /metrics says of sdx's direction `op`.
fn exported(text: &str, op: &str) -> Shown {
    let state = State::ALL
        .iter()
        .filter(|st| {
            sample_value(
                text,
                &format!(
                    "iosat_disk_op_state{{device=\"sdx\",op=\"{op}\",state=\"{}\"}}",
                    st.as_str()
                ),
            ) == Some(1.0)
        })
        .map(|st| st.as_str().to_string())
        .collect::<Vec<_>>();
    assert_eq!(state.len(), 1, "one state of {op}:\n{text}");
    // The source of the baseline the direction is judged against (one, never both).
    let sources: Vec<&str> = ["sweep", "learned"]
        .into_iter()
        .filter(|s| {
            sample_value(
                text,
                &format!(
                    "iosat_disk_baseline_latency_seconds{{device=\"sdx\",op=\"{op}\",source=\"{s}\"}}"
                ),
            )
            .is_some()
        })
        .collect();
    assert_eq!(
        sources.len(),
        1,
        "one baseline of {op}: {sources:?}\n{text}"
    );
    let source = sources[0];
    Shown {
        state: state[0].clone(),
        basis: source.to_string(),
        ratio: sample_value(
            text,
            &format!("iosat_disk_op_latency_ratio{{device=\"sdx\",op=\"{op}\"}}"),
        ),
        headroom: sample_value(
            text,
            &format!("iosat_disk_headroom_iops{{device=\"sdx\",op=\"{op}\",source=\"{source}\"}}"),
        ),
        no_headroom: NoHeadroom::ALL
            .into_iter()
            .find(|why| {
                sample_value(
                    text,
                    &format!(
                        "iosat_disk_op_no_headroom{{device=\"sdx\",op=\"{op}\",reason=\"{}\"}}",
                        why.as_str()
                    ),
                ) == Some(1.0)
            })
            .map(|why| why.as_str().to_string()),
        // Every flag the judgement has, by its key (analysis::state::Flags::each).
        flags: iosat::analysis::state::Flags::default()
            .each()
            .into_iter()
            .map(|(f, _)| f)
            .filter(|f| {
                let series =
                    format!("iosat_disk_op_flag{{device=\"sdx\",op=\"{op}\",flag=\"{f}\"}}");
                let v = sample_value(text, &series);
                assert!(v.is_some(), "{series} missing:\n{text}");
                v == Some(1.0)
            })
            .map(str::to_string)
            .collect(),
    }
}

/// What stat's judgement of one direction says, in the exporter's terms.
fn shown(d: &DirJudgement) -> Shown {
    Shown {
        state: d.state.as_str().to_string(),
        basis: source_label(d.basis).to_string(),
        ratio: d.ratio,
        headroom: d.headroom_iops,
        no_headroom: d.no_headroom.map(|why| why.as_str().to_string()),
        flags: d
            .flags
            .each()
            .into_iter()
            .filter(|&(_, on)| on)
            .map(|(f, _)| f.to_string())
            .collect(),
    }
}

/// A sysfs and proc root holding sdx (8:0) as a disk whose wwid is [`ID`]: the exporter
/// identifies devices from sysfs, as the live collector that made the recording did.
fn exporter_root(dir: &Path) -> iosat::sys::Root {
    let dev = dir.join("sys/dev/block/8:0");
    std::fs::create_dir_all(&dev).unwrap();
    std::fs::create_dir_all(dir.join("proc")).unwrap();
    for (f, v) in [("dev", "8:0"), ("wwid", ID), ("size", "2097152")] {
        std::fs::write(dev.join(f), format!("{v}\n")).unwrap();
    }
    iosat::sys::Root {
        proc: dir.join("proc"),
        sys: dir.join("sys"),
    }
}

/// View 3: /metrics after each sample of the recording is fed to the exporter's learner, in
/// order, with its clocks (one exposition per interval, the first sample opens none).
fn exporter_texts(samples: &[Sample], profiles: &Path) -> Vec<String> {
    let dir = crate::util::tempdir().unwrap();
    let root = exporter_root(dir.path());
    let devices = Devices {
        selection: Selection {
            all: true,
            ..Selection::default()
        },
        exclude: vec![],
    };
    // In memory: nothing learned is read or written.
    let mut s = Scraper::new(root.clone(), devices, Some(profiles.to_path_buf()))
        .learn_with(Some(iosat::learn::LearnSpec::default()));
    let mut out = Vec::new();
    for (i, x) in samples.iter().enumerate() {
        // What a scrape reads at that moment (the counters it serves beside the judgement).
        std::fs::write(root.proc.join("diskstats"), &x.diskstats).unwrap();
        let c = &x.cpu;
        std::fs::write(
            root.proc.join("stat"),
            format!(
                "cpu  {} {} {} {} {} {} {} {} 0 0\n",
                c.user, c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal
            ),
        )
        .unwrap();
        s.tick_with(RawSample {
            mono_ns: x.mono_ns,
            wall_ns: x.wall_ns,
            text: x.diskstats.clone(),
        });
        if i > 0 {
            out.push(metrics::render(&s.scrape()));
        }
    }
    out
}

/// /metrics (one exposition per interval) says of every interval from `from` on what stat
/// judged: per direction the state, the basis, the ratio and the headroom; the device's state
/// and ratio.
fn exporter_agrees(stat: &[Judgement], texts: &[String], from: usize) {
    assert_eq!(texts.len(), stat.len());
    let close = |a: Option<f64>, b: Option<f64>, tol: f64| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= tol,
        (a, b) => a.is_none() && b.is_none(),
    };
    for (i, (j, text)) in stat.iter().zip(texts).enumerate().skip(from) {
        for (d, op) in [(&j.read, "read"), (&j.write, "write")] {
            let (want, got) = (shown(d), exported(text, op));
            let what = format!("interval {i}, {op}: stat {want:?}, exporter {got:?}");
            assert_eq!(
                (&got.state, &got.basis),
                (&want.state, &want.basis),
                "{what}"
            );
            assert!(close(got.ratio, want.ratio, 1e-9), "{what}");
            assert!(close(got.headroom, want.headroom, 0.5), "{what}");
            assert_eq!(got.no_headroom, want.no_headroom, "{what}");
            assert_eq!(got.flags, want.flags, "{what}");
        }
        let device = format!(
            "iosat_disk_state{{device=\"sdx\",state=\"{}\"}}",
            j.state().as_str()
        );
        assert_eq!(
            sample_value(text, &device),
            Some(1.0),
            "interval {i}:\n{text}"
        );
        assert_eq!(
            sample_value(text, "iosat_disk_latency_ratio{device=\"sdx\"}"),
            j.device.ratio,
            "interval {i}"
        );
    }
}

/// View 4: the page of `rec` (`iosat report REC -o page.html`), as text.
fn page(rec: &Path, profiles: &Path) -> String {
    let html = rec.with_extension("html");
    let o = iosat()
        .env("IOSAT_STATE_DIR", "")
        .arg("report")
        .arg(rec)
        .arg("--profile-dir")
        .arg(profiles)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    ok_stdout(&o);
    crate::report::page_words(&std::fs::read_to_string(&html).unwrap())
}

/// The device table's cell of column `header` in sdx's row of a `top` screen (the table's
/// cells are single words, "-" when empty).
fn top_cell(screen: &str, header: &str) -> Option<String> {
    let words = |l: &str| -> Vec<String> {
        l.split(['│', ' '])
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let head = screen
        .lines()
        .map(words)
        .find(|w| w.first().is_some_and(|f| f == "Device"))?;
    let row = screen
        .lines()
        .map(words)
        .find(|w| w.first().is_some_and(|f| f == "sdx"))?;
    let i = head
        .iter()
        .position(|h| h.trim_end_matches(['↓', '↑']) == header)?;
    row.get(i).cloned()
}

/// View 2: `iosat top --replay REC` in a real terminal, wide enough for every column: the
/// screen once the recording has ended (its last interval shown).
fn top_screen(t: &Tmux, rec: &Path, profiles: &Path) -> String {
    let args = format!("-i 0.05 --profile-dir '{}' sdx", profiles.display());
    t.keys(&[&format!("clear; {}", top_replay(rec, &args)), "Enter"]);
    let s = t.wait_for("end of recording");
    t.quit();
    s
}

#[test]
fn stat_top_the_exporter_and_the_page_render_one_judgement() {
    let dir = crate::util::tempdir().unwrap();
    let profiles = dir.path().join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    std::fs::write(profiles.join(format!("{ID}.read.json")), READ_PROFILE).unwrap();
    let samples = samples();
    let rec = dir.path().join("rw.rec");
    std::fs::write(&rec, recording(&samples)).unwrap();
    let n = samples.len() - 1;

    // 1. stat: one judgement per interval, the tail's the intended ones.
    let stat = stat_judgements(&rec, &profiles);
    assert_eq!(stat.len(), n, "one line per interval");
    let tail = &stat[n - TAIL.len()..];
    for (j, (s, read, write, dir)) in tail.iter().zip(&TAIL) {
        let what = format!("reads {} ms, writes {} ms: {j:?}", s.read_ms, s.write_ms);
        assert_eq!(
            (j.read.basis, j.read.state),
            (Basis::Swept, *read),
            "{what}"
        );
        assert_eq!(
            (j.write.basis, j.write.state),
            (Basis::Learned, *write),
            "{what}"
        );
        assert_eq!(j.device.dir, *dir, "{what}");
        // Busy CPUs said with every direction judged slow or worse in a busy second (the
        // rule, monitor::judge::say_busy_cpus), nowhere else: the comparison below is not
        // between empty flags.
        for d in [&j.read, &j.write, &j.device] {
            let want = s.cpus_busy && d.state >= State::Slow;
            assert_eq!(d.flags.busy_cpus, want, "{:?}: {what}", d.dir);
        }
        assert!(
            j.read.headroom_iops.is_some() && j.write.headroom_iops.is_some(),
            "{what}"
        );
    }

    // 3. The exporter, interval by interval: each direction as stat judged it, and the
    // device as its worst direction.
    let texts = exporter_texts(&samples, &profiles);
    exporter_agrees(&stat, &texts, n - TAIL.len());

    // The same with the profile saved before profiles had a direction (`<id>.json`): such a
    // file judges the writes too (profile.rs, `for_writes`), and the exporter must say so.
    let legacy = dir.path().join("legacy");
    std::fs::create_dir(&legacy).unwrap();
    std::fs::write(legacy.join(format!("{ID}.json")), READ_PROFILE).unwrap();
    let by_legacy = stat_judgements(&rec, &legacy);
    assert_eq!(by_legacy.len(), n);
    for j in &by_legacy[n - TAIL.len()..] {
        assert_eq!(
            (j.read.basis, j.write.basis),
            (Basis::Swept, Basis::Swept),
            "{j:?}"
        );
    }
    exporter_agrees(
        &by_legacy,
        &exporter_texts(&samples, &legacy),
        n - TAIL.len(),
    );

    // 2 and 4: top and the page of the recording cut after each interval of the tail.
    let tmux = Tmux::start_sized(200, 40);
    for k in 0..TAIL.len() {
        let upto = n - TAIL.len() + k;
        let j = &stat[upto];
        let cut = dir.path().join(format!("cut{k}.rec"));
        std::fs::write(&cut, recording(&samples[..=upto + 1])).unwrap();

        // The page: the last interval's judgement in words, and how many intervals were in
        // each state, as stat judged them.
        let text = page(&cut, &profiles);
        let last = format!("sdx: {} at the last interval", j.words());
        assert!(
            text.contains(&last),
            "page at interval {upto}: no {last:?} in:\n{text}"
        );
        let counts: Vec<String> = State::ALL
            .iter()
            .rev()
            .filter_map(|st| {
                let c = stat[..=upto].iter().filter(|j| j.state() == *st).count();
                (c > 0).then(|| format!("{} {c}", st.words()))
            })
            .collect();
        let by_state = format!("intervals by state: {}.", counts.join(", "));
        assert!(
            text.contains(&by_state),
            "page at interval {upto}: no {by_state:?} in:\n{text}"
        );
        // Its summary's time overloaded: the intervals stat judged overloaded (1 s each),
        // whichever direction and baseline.
        let over = stat[..=upto]
            .iter()
            .filter(|j| j.state() == State::Overloaded)
            .count();
        let summary = format!("{over}.0 s of {}.0 s", upto + 1);
        assert!(
            text.contains(&summary),
            "page at interval {upto}: no {summary:?} in its summary:\n{text}"
        );

        // top: the gauge line is the judgement in few words; the headroom column is the
        // device's headroom, as the table prints IOPS.
        let Some(t) = &tmux else { continue };
        let screen = top_screen(t, &cut, &profiles);
        let gauge = format!("sdx: {} · ", j.brief());
        assert!(
            screen.contains(&gauge),
            "top at interval {upto}: no {gauge:?} in:\n{screen}"
        );
        let want = j.device.headroom_iops.map_or("-".to_string(), fmt_iops);
        assert_eq!(
            top_cell(&screen, "headroom").as_deref(),
            Some(want.as_str()),
            "top at interval {upto}: the headroom column is not the judgement's \
             ({}):\n{screen}",
            j.brief()
        );
    }
}

/// Issue 37, case 2 in every view: a disk read at one request in flight, 1 ms a request for a
/// minute (its learned baseline), then 4 ms. Learning reports the step as a change of the
/// device after 5 s of evidence, and every view says so: stat's judgement of the reads and of
/// the device carries it (`change`, from 1 ms to 4 ms) beside `learned.change`, the text flags
/// the row and prints the evidence, top's gauge and the page's last interval are flagged
/// "changed" (and top's saturation pane gives the judgement's state), and the exporter serves
/// it on the learned basis. Before the step no view says it. (The learner put the change on the device's judgement only, and every view
/// judges a device by its directions': only `learned.change` in stat's JSON said it.)
#[test]
fn a_learned_change_is_news_in_every_view() {
    use iosat::learn::change::REPORT_AFTER_S;
    let second = |reads: u64, read_ms: f64| Second {
        reads,
        read_ms,
        writes: 0,
        write_ms: 0.0,
        cpus_busy: false,
    };
    const WARM_S: usize = 60;
    const SLOW_S: usize = 12;
    let samples = samples_of(
        std::iter::repeat(second(1000, 1.0))
            .take(WARM_S)
            .chain(std::iter::repeat(second(250, 4.0)).take(SLOW_S)),
    );
    let dir = crate::util::tempdir().unwrap();
    // No profile: the reads are judged by what learning learned.
    let profiles = dir.path().join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    let rec = dir.path().join("step.rec");
    std::fs::write(&rec, recording(&samples)).unwrap();
    let n = samples.len() - 1;

    // 1. stat --json: the learned change, and the judgement of the reads and the device.
    let lines = stat_json_lines(&rec, &[]);
    assert_eq!(lines.len(), n, "one line per interval");
    let device = |i: usize| &lines[i]["devices"][0];
    let num = |v: &serde_json::Value, k: &str| v[k].as_f64();
    // The first interval the change is reported in: within REPORT_AFTER_S (plus one) of the
    // first slow one, WARM_S.
    let reported = (0..n)
        .find(|&i| !device(i)["learned"]["change"].is_null())
        .unwrap_or_else(|| panic!("no change learned: {}", device(n - 1)));
    assert!(
        reported >= WARM_S && reported <= WARM_S + REPORT_AFTER_S as usize + 1,
        "first slow interval {WARM_S}, reported at {reported}"
    );
    for i in 0..n {
        let j = &device(i)["judgement"];
        for x in [j, &j["read"]] {
            if i < reported {
                assert!(x["change"].is_null(), "interval {i}: {j}");
                continue;
            }
            let c = &x["change"];
            assert_eq!(x["basis"], "learned", "interval {i}: {j}");
            assert!(
                (num(c, "from_ns").unwrap() / 1e6 - 1.0).abs() < 0.01
                    && (num(c, "to_ns").unwrap() / 1e6 - 4.0).abs() < 0.01,
                "interval {i}: {c}"
            );
            assert_eq!(c, &device(i)["learned"]["change"], "interval {i}");
            // Judged by the old baseline: 4x it, no headroom.
            assert!((num(x, "ratio").unwrap() - 4.0).abs() < 0.01, "{j}");
            assert_eq!(num(x, "headroom_iops"), Some(0.0), "{j}");
        }
        // Nothing of the kind on the writes, which had none.
        assert!(j["write"]["change"].is_null(), "interval {i}: {j}");
    }

    // The text: the row flagged, the evidence under the table, only once reported.
    let o = iosat()
        .env("IOSAT_STATE_DIR", "")
        .args(["stat", "--replay"])
        .arg(&rec)
        .output()
        .unwrap();
    let text = ok_stdout(&o);
    let intervals: Vec<&str> = text.split("\n\n").filter(|b| b.contains("sdx ")).collect();
    assert_eq!(intervals.len(), n, "{text}");
    let evidence = "# sdx: read device changed: 4.00 ms at one in flight, was 1.00 ms";
    for (i, block) in intervals.iter().enumerate() {
        let flagged = block
            .lines()
            .any(|l| l.starts_with("# sdx: ") && l.contains("changed,"));
        assert_eq!(flagged, i >= reported, "interval {i}:\n{block}");
        assert_eq!(
            block.contains(evidence),
            i >= reported,
            "interval {i}:\n{block}"
        );
    }

    // 3. The exporter, on the learned basis, from the same interval on.
    let texts = exporter_texts(&samples, &profiles);
    assert_eq!(texts.len(), n);
    let series = |side: &str| {
        format!(
            "iosat_disk_change_latency_seconds{{device=\"sdx\",op=\"read\",\
             source=\"learned\",side=\"{side}\"}}"
        )
    };
    for (i, t) in texts.iter().enumerate() {
        if i < reported {
            assert!(!t.contains("iosat_disk_change"), "interval {i}:\n{t}");
            continue;
        }
        let (from, to) = (
            sample_value(t, &series("from")),
            sample_value(t, &series("to")),
        );
        assert!(
            from.is_some_and(|v| (v - 0.001).abs() < 1e-5)
                && to.is_some_and(|v| (v - 0.004).abs() < 1e-5),
            "interval {i}: from {from:?}, to {to:?}:\n{t}"
        );
    }

    // 4 and 2: the page and top at the end, each flagged as stat's judgement is.
    let last: Judgement = serde_json::from_value(device(n - 1)["judgement"].clone()).unwrap();
    assert!(last.words().contains("[changed"), "{}", last.words());
    let words = format!("sdx: {} at the last interval", last.words());
    let page = page(&rec, &profiles);
    assert!(page.contains(&words), "no {words:?} in:\n{page}");
    if let Some(t) = Tmux::start_sized(200, 40) {
        let screen = top_screen(&t, &rec, &profiles);
        // The gauge line (the device's judgement in few words), alone on it here.
        let gauge = format!("sdx: {}", last.brief());
        assert!(gauge.contains("[changed"), "{gauge}");
        assert!(screen.contains(&gauge), "no {gauge:?} in:\n{screen}");
        // The saturation pane says the same state (it said learning's own, "overloaded",
        // beside a gauge line saying "slow but not loaded").
        let pane = format!(
            "sdx: {} at {:.1}x the learned baseline",
            last.device.state.words(),
            last.device.ratio.unwrap()
        );
        assert!(screen.contains(&pane), "no {pane:?} in:\n{screen}");
    }
}

/// Learning's own judgement of the device (`learned` in stat's JSON) is the judgement's, by
/// the judgement's rule: the same direction, state, ratio and headroom in every interval,
/// never the worst state beside the figures of the direction of most requests. The same
/// recording, no profile: both directions learned from the first minute, then the tail,
/// where the writes (300 a second beside 1,000 reads) are twice overloaded or saturated and
/// the device is theirs (issue 37: learning said "overloaded" with the reads' 1.0x, and
/// `learned.direction` "read" beside the judgement's "write").
#[test]
fn learnings_device_judgement_is_the_judgements_direction_whole() {
    let dir = crate::util::tempdir().unwrap();
    let profiles = dir.path().join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    let rec = dir.path().join("rw.rec");
    std::fs::write(&rec, recording(&samples())).unwrap();
    let lines = stat_json_lines(
        &rec,
        &["--profile-dir".as_ref(), profiles.as_ref(), "sdx".as_ref()],
    );
    let (mut compared, mut writes_bind) = (0, 0);
    for (k, v) in lines.iter().enumerate() {
        let d = &v["devices"][0];
        let (j, l) = (&d["judgement"], &d["learned"]);
        if j["basis"] != "learned" {
            continue;
        }
        for key in ["direction", "state", "ratio", "headroom_iops"] {
            assert_eq!(l[key], j[key], "interval {k}, {key}: {d}");
        }
        compared += 1;
        if j["direction"] == "write" && j["state"] != "ok" {
            // The reads carried more requests: the direction of most requests is not it.
            assert!(
                d["r/s"].as_f64().unwrap() > d["w/s"].as_f64().unwrap(),
                "{d}"
            );
            writes_bind += 1;
        }
    }
    // The comparison covered the learned minute and the tail, where the writes bound
    // twice (overloaded, then saturated).
    assert!(compared >= 30, "{compared} intervals judged by learning");
    assert_eq!(writes_bind, 2, "the tail's writes judged the device twice");
}
