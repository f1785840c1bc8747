//! Verdicts against the truth (issue 25): known devices (tests/it/support/knowndev.rs) whose knee,
//! baseline, plateau, cap and flush time are set by the test, swept by the iosat binary, and
//! every verdict checked against what the device really is.

use crate::knowndev::{self, Cap, KnownDev, Service, Spec};
use crate::util::*;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The service time of most devices here: long enough that the path's own cost per request
/// (0.2–1 ms on a busy 2-core machine, most of it the loop device's kernel worker waiting for
/// a CPU) stays within the 10 % the verdicts are judged by.
const S_MS: u64 = 8;

/// (IOPS, mean latency in ms) that fio measures at `iodepth` on `dev`: 4 KiB random direct
/// reads through libaio, a peer's view of the same device.
fn fio_point(dev: &str, iodepth: u32) -> (f64, f64) {
    // At real-time priority, as iosat_rt runs iosat.
    let out = Command::new("chrt")
        .args([
            "-f",
            "1",
            "fio",
            "--name=known",
            &format!("--filename={dev}"),
            "--rw=randread",
            "--bs=4k",
            "--direct=1",
            "--ioengine=libaio",
            &format!("--iodepth={iodepth}"),
            "--ramp_time=0.2",
            "--runtime=1",
            "--time_based",
            "--output-format=json",
        ])
        .output()
        .expect("run fio");
    let j: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("fio JSON: {e}: {}", stderr(&out)));
    let r = &j["jobs"][0]["read"];
    (
        r["iops"].as_f64().unwrap(),
        r["lat_ns"]["mean"].as_f64().unwrap() / 1e6,
    )
}

/// The device itself, judged by fio rather than by iosat: IOPS min(c, U)/S within 10 %, latency
/// flat (S plus a small per-request overhead) up to U, then c·S/U.
#[test]
fn fio_sees_the_device_the_spec_describes() {
    if !have("fio", "--version") {
        crate::util::skip("fio is not installed");
        return;
    }
    if !knowndev::available() {
        return;
    }
    let o = path_cost(ms(S_MS)).mean_ms;
    let dev = KnownDev::start(Spec::new(4, ms(S_MS))).unwrap();
    // Three tries: fio's own requests meet a busy machine's moments too (seen at a load of 8:
    // iodepth 2 at 10.1 ms once, 8.6 the try after).
    let mut failures = Vec::new();
    for _ in 0..3 {
        let pass = std::panic::AssertUnwindSafe(|| fio_agrees_with_the_spec(&dev, o));
        match std::panic::catch_unwind(pass) {
            Ok(()) => return,
            Err(e) => failures.push(
                e.downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_else(|| "?".into()),
            ),
        }
    }
    panic!(
        "fio disagreed with the spec three times:\n{}",
        failures.join("\n---\n")
    );
}

/// One pass of fio over depths 1-16 of `dev` (4 units of S_MS), each point against the truth.
fn fio_agrees_with_the_spec(dev: &KnownDev, o: f64) {
    let mut figures = Vec::new();
    let mut base_ms = 0.0;
    for c in [1u32, 2, 4, 8, 16] {
        let (iops, lat_ms) = fio_point(&dev.path, c);
        figures.push(format!("iodepth {c}: {iops:.0} IOPS at {lat_ms:.2} ms"));
        let line = figures.join("\n");
        if c == 1 {
            // Between S and S plus the path's own cost per request (FUSE, loop, the unit's
            // wake-up), which a busy machine moves from one moment to the next: the larger of
            // two measurements (truth tests run alone, so not while this one runs).
            base_ms = lat_ms;
            let s = S_MS as f64;
            assert!(
                (s * 0.98..=(s + o) * 1.10).contains(&lat_ms),
                "one request takes {lat_ms:.2} ms on a {S_MS} ms device, overhead {o:.2} ms\n{line}"
            );
        }
        // Up to U requests each take the baseline; past U the units, busy back to back, set
        // the pace: U/S, at c·S/U.
        let (want, want_ms) = if c <= 4 {
            (c as f64 / base_ms * 1e3, base_ms)
        } else {
            (dev.spec.true_iops(c, 4096), c as f64 * S_MS as f64 / 4.0)
        };
        assert!(
            (iops - want).abs() <= want * 0.10,
            "iodepth {c}: {iops:.0} IOPS, the device gives {want:.0}\n{line}"
        );
        assert!(
            (lat_ms - want_ms).abs() <= want_ms * 0.10,
            "iodepth {c}: {lat_ms:.2} ms, the device takes {want_ms:.2}\n{line}"
        );
    }
    eprintln!("{}", figures.join("\n"));
}

/// iosat at real-time priority 1, as the device's own threads run: the truth is about the
/// device, and on a busy 2-core machine a sweep's threads otherwise wait for a CPU between a
/// completion and the next request (iosat itself then reports "waiting for a CPU").
fn iosat_rt(args: &[&str]) -> Value {
    let out = Command::new("chrt")
        .args(["-f", "1", env!("CARGO_BIN_EXE_iosat")])
        .args(args)
        .output()
        .expect("run chrt iosat");
    ok_json(&out)
}

/// `iosat sweep --json` of `dev` at `levels`, `secs` seconds a level, no re-measures.
fn sweep(dev: &KnownDev, levels: &str, secs: &str) -> Value {
    iosat_rt(&[
        "sweep",
        "--json",
        "--no-progress",
        "--levels",
        levels,
        "--duration",
        secs,
        "--ramp",
        "0.2s",
        "--budget",
        "0",
        &dev.path,
    ])
}

fn num(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// The path's own cost per request (FUSE, the loop device's kernel worker, the wake-ups of a
/// sleeping unit and of the sweep's thread): a device of mean service S answers one request in
/// S + `mean_ms`, and its slowest draws in theirs + up to `p95_ms`.
#[derive(Clone, Copy, Debug)]
struct PathCost {
    mean_ms: f64,
    p95_ms: f64,
}

/// [`PathCost`] measured just before the device under test, three times, on a one-unit device
/// of the same mean service `s` at concurrency 1, keeping the middle one of each. Not on a 1 ms
/// device for every test: the wake-ups cost more after a longer sleep on this kind of VM
/// (measured one morning, 1 ms: +0.62..0.80 ms; 8 ms: +0.93..1.43 ms, p95 +2.5..3.6 ms), and the
/// cost moves from one second to the next (one measure gave +0.21 ms before a sweep whose c=1
/// paid +1.1: the larger of two was kept then). The larger of two kept a neighbour's moment as
/// well: in the pairs' phase of 2026-12-07 a measure of +2.43 ms before a device whose five
/// sweeps then paid +0.33-0.41 ms made every sweep "disturbed" against S + 2.43 ms, and the test
/// checked only that iosat claimed nothing. The middle of three keeps a cost two measures see.
fn path_cost(s: Duration) -> PathCost {
    let dev = KnownDev::start(Spec::new(1, s)).expect("known devices are available");
    let s_ms = s.as_secs_f64() * 1e3;
    let (mut means, mut p95s) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let l = &sweep(&dev, "1", "0.5s")["levels"][0]["latency_ns"];
        let (mean_ms, p95_ms) = (num(l, "mean") / 1e6, num(l, "p95") / 1e6);
        means.push(mean_ms - s_ms);
        p95s.push(p95_ms - s_ms);
        // Whatever the machine's load, a path slower than half the device under test (S_MS)
        // would leave nothing of the device to judge.
        assert!(
            (0.0..S_MS as f64 / 2.0).contains(&(mean_ms - s_ms)),
            "a {s_ms} ms device answers in {mean_ms:.3} ms"
        );
    }
    means.sort_by(f64::total_cmp);
    p95s.sort_by(f64::total_cmp);
    let cost = PathCost {
        mean_ms: means[1].max(0.0),
        p95_ms: p95s[1].max(0.0),
    };
    eprintln!(
        "per-request cost of the path after {s_ms} ms: mean {:.3} ms, p95 {:.3} ms \
         (the middle of {means:.3?} and {p95s:.3?})",
        cost.mean_ms, cost.p95_ms
    );
    cost
}

/// [`path_cost`] for `spec`'s mean service.
fn path_cost_of(spec: &Spec) -> PathCost {
    path_cost(spec.service.mean())
}

/// One sweep of a known device, judged against its truth.
struct Judged<'a> {
    dev: &'a KnownDev,
    j: Value,
    /// S + o: what one request takes.
    base_ms: f64,
    /// The path's cost measured before the sweep.
    path: PathCost,
    /// Every figure, for the failure messages.
    story: String,
}

impl<'a> Judged<'a> {
    fn new(dev: &'a KnownDev, j: Value, path: PathCost) -> Judged<'a> {
        let v = &j["verdict"];
        let mut story = format!("{:?}\n", dev.spec);
        for l in j["levels"].as_array().unwrap() {
            story += &format!(
                "  c={:<3} {:>6.0} IOPS (cv {:.3})  mean {:.2} ms  p95 {:.2} ms  %util {:.0}\n",
                l["concurrency"],
                num(l, "iops"),
                l["spread"]["iops_late_cv"].as_f64().unwrap_or(f64::NAN),
                num(&l["latency_ns"], "mean") / 1e6,
                num(&l["latency_ns"], "p95") / 1e6,
                l["kernel"]["util"].as_f64().unwrap_or(f64::NAN),
            );
        }
        for line in v["summary"].as_array().unwrap() {
            story += &format!("  | {}\n", line.as_str().unwrap());
        }
        let base_ms = dev.spec.service.mean().as_secs_f64() * 1e3 + path.mean_ms;
        Judged {
            dev,
            j,
            base_ms,
            path,
            story,
        }
    }

    fn v(&self) -> &Value {
        &self.j["verdict"]
    }

    /// The true closed-loop IOPS at concurrency `c` of 4 KiB requests: c/(S + o) while units
    /// are free, then the units' U/S or the cap.
    fn true_iops(&self, c: u32) -> f64 {
        (c as f64 / self.base_ms * 1e3).min(self.dev.spec.true_iops(c, 4096))
    }

    /// The true mean latency at `c` over the baseline: 1 until the device is full, then the
    /// closed loop's c / IOPS over S + o.
    fn true_ratio(&self, c: u32) -> f64 {
        (c as f64 / self.true_iops(c) * 1e3 / self.base_ms).max(1.0)
    }

    /// The baseline between the device's own service time and S + o (within 10 %), plus what
    /// this sweep measured its first level waiting for a CPU: o was measured on another device
    /// a moment before, and on a busy machine the path's cost moves from one moment to the
    /// next (1.7 ms before a sweep whose own overhead was 0.5 ms, seen at a load of 21). A
    /// device whose service is drawn at random gets the sampling error of the level's mean too:
    /// three standard errors of its n draws either way (a bimodal 6/14 ms device's first 87
    /// draws, the same every run by its seed, averaged 8.9 ms against its 8).
    fn baseline_is_s_plus_overhead(&self) {
        let v = self.v();
        assert_eq!(v["baseline_concurrency"], 1, "{}", self.story);
        let got = num(v, "baseline_latency_ns") / 1e6;
        let s_ms = self.dev.spec.service.mean().as_secs_f64() * 1e3;
        let l1 = &self.j["levels"][0];
        let cpu_wait_ms = l1["disturbance"]["cpu_wait_ns_per_io"]
            .as_f64()
            .unwrap_or(0.0)
            / 1e6;
        let n = l1["ios"].as_f64().unwrap_or(1.0).max(1.0);
        let sampling_ms = 3.0 * self.dev.spec.service.sd().as_secs_f64() * 1e3 / n.sqrt();
        let (low, high) = (
            s_ms * 0.98 - sampling_ms,
            self.base_ms * 1.10 + cpu_wait_ms + sampling_ms,
        );
        assert!(
            (low..=high).contains(&got),
            "baseline {got:.3} ms, truth between S = {s_ms:.3} and S + o = {:.3} ms \
             (+ {cpu_wait_ms:.3} ms waiting for a CPU, ± {sampling_ms:.3} ms of {n} draws)\n{}",
            self.base_ms,
            self.story
        );
    }

    /// Why this sweep's own measurements say its levels measured the machine rather than the
    /// device, if they do: a level whose requests waited for a CPU 5 % of their latency or
    /// more, or whose settled windows disagree more than a healthy device's (a CV above
    /// 17.5 % in IOPS; or iosat's own "unstable", which reads the mean latency's CV too, on a
    /// device whose service is fixed: a bimodal device's windows may disagree by its own
    /// draws). Such a sweep may rightly decline a figure. (A capped 8 ms device's first level
    /// once read 9.35 ms mean and 8.74 ms p95 against a truth of 8.0-8.4 ms, iosat calling it
    /// unstable, its IOPS CV 0.037: 2026-12-07.) iosat's flag is its verdict's
    /// (`unstable_levels`), not the measured level's; it is read only where no cap binds or
    /// nears binding (the units alone would serve under 90 % of the cap): a burst draining
    /// within a level rightly makes its windows disagree.
    fn machine_disturbed(&self) -> Option<String> {
        let fixed = self.dev.spec.service.sd().is_zero();
        let unstable: Vec<u64> = self.v()["unstable_levels"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        let spec = &self.dev.spec;
        let uncapped = |c: u64| {
            let units_alone =
                (c as f64).min(spec.units as f64) / spec.service_for(4096, false).as_secs_f64();
            spec.cap.is_none() || units_alone < 0.9 * spec.true_iops(u32::MAX, 4096)
        };
        self.j["levels"].as_array().unwrap().iter().find_map(|l| {
            let c = &l["concurrency"];
            let mean = num(&l["latency_ns"], "mean");
            let wait = l["disturbance"]["cpu_wait_ns_per_io"]
                .as_f64()
                .unwrap_or(0.0);
            let cv = l["spread"]["iops_late_cv"].as_f64().unwrap_or(0.0);
            if wait >= 0.05 * mean {
                Some(format!(
                    "c={c} waited {:.0} % for a CPU",
                    wait / mean * 100.0
                ))
            } else if cv > 0.175 {
                Some(format!("c={c} windows CV {cv:.3}"))
            } else {
                let at = c.as_u64().unwrap_or(0);
                (fixed && unstable.contains(&at) && uncapped(at))
                    .then(|| format!("c={c} unstable by iosat's own measure"))
            }
        })
    }

    /// [`Judged::limit_is_named_without_a_claim`], or, on a sweep the machine disturbed by its
    /// own measure, no cap named and any plateau it does name right.
    fn limit_is_named_unless_disturbed(&self, iops: f64) {
        match self.machine_disturbed() {
            None => self.limit_is_named_without_a_claim(iops),
            Some(why) => {
                eprintln!("disturbed ({why}): only no claim checked");
                self.no_cap_is_named();
                if let Some(g) = self.v()["limit"]["iops"].as_f64() {
                    let tol = self.plateau_tolerance();
                    assert!(
                        (g - iops).abs() <= iops * tol,
                        "plateau {g} IOPS, truth {iops}\n{}",
                        self.story
                    );
                }
            }
        }
    }

    /// The verdict opens with the run's disturbance ("Disturbed run: ...").
    fn said_disturbed(&self) -> bool {
        self.v()["summary"][0]
            .as_str()
            .is_some_and(|l| l.starts_with("Disturbed run"))
    }

    /// A sweep whose levels are not the device's (`why`) claims nothing the device does not
    /// have: its knee, or the knee's range, reaches the levels around the true knee; a plateau
    /// it names has the device's figure; no cap on a device without one, and a cap it names on
    /// one with a cap has the cap's figure. (Whether it says it was disturbed is its own
    /// business: a host that steals the device's CPU in 1-3 ms gaps looks, from the sweep,
    /// like a device with a tail.)
    fn honest_when_disturbed(&self, why: &[String]) {
        eprintln!(
            "disturbed ({why:?}; iosat said so: {}): checking that nothing beyond the truth is \
             claimed",
            self.said_disturbed()
        );
        let truth = self.dev.spec.true_knee(4096);
        let (lo, hi) = match self.v()["knee_range"].as_array() {
            Some(r) => (r[0].as_f64().unwrap(), r[1].as_f64().unwrap()),
            None => {
                let k = num(self.v(), "knee_concurrency");
                (k, k)
            }
        };
        assert!(
            self.v()["knee_undecided"] == true || (lo <= truth * 2.0 && hi >= truth / 2.0),
            "knee {lo}-{hi}, truth {truth}\n{}",
            self.story
        );
        let most = self.dev.spec.true_iops(u32::MAX, 4096);
        // A plateau below the device's most is what a slowed path truly gave (the known device
        // runs on the machine's CPUs); one above it is a claim beyond the truth.
        if let Some(g) = self.v()["limit"]["iops"].as_f64() {
            let tol = self.plateau_tolerance();
            assert!(
                g <= most * (1.0 + tol),
                "a plateau of {g} IOPS named, the device's most is {most}\n{}",
                self.story
            );
        }
        match self.dev.spec.cap {
            None => self.no_cap_is_named(),
            Some(_) => {
                let named = self.v()["suspected_cap_iops"]
                    .as_f64()
                    .or(self.v()["suspected_cap_bytes_per_s"]
                        .as_f64()
                        .map(|b| b / 4096.0));
                if let Some(g) = named {
                    let tol = self.plateau_tolerance();
                    assert!(
                        (g - most).abs() <= most * tol,
                        "cap {g} IOPS named, truth {most}\n{}",
                        self.story
                    );
                }
            }
        }
    }

    /// The knee within the levels around the true one (U, or cap × S).
    fn knee_is_near(&self, truth: f64) {
        let knee = num(self.v(), "knee_concurrency");
        assert!(
            knee >= truth / 2.0 && knee <= truth * 2.0,
            "knee {knee}, truth {truth}\n{}",
            self.story
        );
    }

    /// Max useful IOPS within 10 % of what the device gives at the knee iosat chose, and the
    /// most measured within 10 % of the plateau at the highest level. At the knee the truth is
    /// a range: c/(S + o) with the path's cost as measured at one in flight, up to c/S, since
    /// the wake-ups that cost o at one in flight are fewer when every unit is busy (seen in a
    /// full run: 490 IOPS at 4 on 4 units of a mean 8 ms, against 4/(8 + 1.43 ms) = 424).
    fn iops_are_true(&self) {
        let v = self.v();
        let knee = num(v, "knee_concurrency") as u32;
        let got = num(v, "max_useful_iops");
        let (low, high) = (self.true_iops(knee), self.dev.spec.true_iops(knee, 4096));
        assert!(
            got >= low * 0.90 && got <= high.max(low) * 1.10,
            "max useful IOPS {got:.0} at {knee}, truth {low:.0}..{high:.0}\n{}",
            self.story
        );
        let top = self.j["levels"].as_array().unwrap().last().unwrap()["concurrency"]
            .as_u64()
            .unwrap() as u32;
        let (got, want) = (num(v, "peak_iops"), self.true_iops(top));
        assert!(
            (got - want).abs() <= want * 0.10,
            "peak IOPS {got:.0}, truth {want:.0} at {top}\n{}",
            self.story
        );
    }

    /// The 3x-p95 overload point (a fixed service time makes p95 the mean): at the level whose
    /// true mean ratio lies between 2 and 4 (where p95 passes 3x, as the issue puts it), or,
    /// when no level does, at the first one past 3; none when no level passes 3.
    fn overload_is_true(&self) {
        let levels: Vec<u32> = self.j["levels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["concurrency"].as_u64().unwrap() as u32)
            .collect();
        let mut want: Vec<u32> = levels
            .iter()
            .copied()
            .filter(|&c| (2.0..=4.0).contains(&self.true_ratio(c)))
            .collect();
        if want.is_empty() {
            want.extend(levels.iter().copied().find(|&c| self.true_ratio(c) > 3.0));
        }
        let got = self.v()["overload_concurrency"].as_u64().map(|c| c as u32);
        let ok = match got {
            Some(c) => want.contains(&c),
            None => want.is_empty(),
        };
        assert!(
            ok,
            "overload point {got:?}, truth {want:?}; true ratios {:?}\n{}",
            levels
                .iter()
                .map(|&c| (c, (self.true_ratio(c) * 100.0).round() / 100.0))
                .collect::<Vec<_>>(),
            self.story
        );
    }

    /// The articles' lesson: %util near 100 % from one request in flight while IOPS still grew.
    fn util_lesson_is_told(&self) {
        let util1 = self.j["levels"][0]["kernel"]["util"].as_f64().unwrap();
        assert!(util1 >= 90.0, "%util {util1} at 1\n{}", self.story);
        let lesson = self.v()["util_lesson"].as_str();
        assert!(
            lesson.is_some_and(|l| l.contains("%util")),
            "no %util lesson\n{}",
            self.story
        );
    }

    /// How close a plateau's figure must be to the truth: 5 %, or twice the spread this sweep
    /// measured between the settled windows of its highest level (`spread.iops_late_cv`) when
    /// the machine made that wider. The noise is the run's own, not a quiet machine's: on a
    /// busy one the FUSE daemon's and the loop worker's wake-ups move each window's count.
    fn plateau_tolerance(&self) -> f64 {
        let last = self.j["levels"].as_array().unwrap().last().unwrap();
        let cv = last["spread"]["iops_late_cv"].as_f64().unwrap_or(0.0);
        0.05f64.max(2.0 * cv)
    }

    /// No cap claimed: neither figure, no cap finding, and the summary never calls the plateau
    /// a provisioned cap.
    fn no_cap_is_named(&self) {
        let v = self.v();
        assert!(
            v["suspected_cap_iops"].is_null()
                && v["suspected_cap_bytes_per_s"].is_null()
                && v["cap"].is_null(),
            "a cap named on a device without one\n{}",
            self.story
        );
        let summary = v["summary"].to_string();
        assert!(
            !summary.contains("provisioned"),
            "the summary calls the device's own limit a provisioned cap\n{}",
            self.story
        );
    }

    /// A plateau at `iops` named as what one sweep can't tell apart: the device's limit or a
    /// cap placed on it, with its figure within 5 %.
    fn limit_is_named_without_a_claim(&self, iops: f64) {
        self.no_cap_is_named();
        let got = self.v()["limit"]["iops"].as_f64();
        let tol = self.plateau_tolerance();
        assert!(
            got.is_some_and(|g| (g - iops).abs() <= iops * tol),
            "plateau {got:?} IOPS, truth {iops} (within {:.1} %)\n{}",
            tol * 100.0,
            self.story
        );
        assert!(
            self.v()["summary"]
                .to_string()
                .contains("the device's limit, or a cap placed on it"),
            "{}",
            self.story
        );
    }

    /// A cap of `iops` requests a second (`bytes` = iops × 4 KiB for a bandwidth cap: one block
    /// size can't tell the two kinds apart) named within 5 %, on the evidence of its burst, and
    /// placed below the block layer: the device's own queue holds the waiting requests.
    fn cap_is_named(&self, iops: f64) {
        let v = self.v();
        let by_iops = v["suspected_cap_iops"].as_f64();
        let by_bytes = v["suspected_cap_bytes_per_s"].as_f64().map(|b| b / 4096.0);
        let got = by_iops.or(by_bytes);
        let tol = self.plateau_tolerance();
        assert!(
            got.is_some_and(|g| (g - iops).abs() <= iops * tol),
            "cap {got:?} IOPS, truth {iops} (within {:.1} %)\n{}",
            tol * 100.0,
            self.story
        );
        assert_eq!(v["cap"]["evidence"], "burst", "{}", self.story);
        assert_eq!(
            v["limit"]["place"], "device_queue",
            "the cap is below the block layer\n{}",
            self.story
        );
    }

    /// When the block-latency source ran: the block layer's median is nearly all of the
    /// median latency the sweep measured (a loop device over FUSE adds nothing above the request
    /// queue). The median, as iosat's own below_% column: a few requests whose completion waited
    /// for a CPU on a busy machine move a mean (to 0.895 of it at one level here) but not it;
    /// the block layer's median is interpolated in its histogram, whose buckets are an eighth of
    /// an octave wide (12.5 %), hence up to one bucket above: a level whose median falls between
    /// a burst's 8 ms and the cap's 11 ms interpolated to 1.075 of the sweep's own median.
    fn block_layer_holds_the_latency(&self) {
        for l in self.j["levels"].as_array().unwrap() {
            let b = &l["kernel"]["block_latency"];
            let Some(blk_ms) = b["read"]["p50_ms"].as_f64() else {
                eprintln!("block-latency source did not run: share not checked");
                return;
            };
            let share = blk_ms / (num(&l["latency_ns"], "p50") / 1e6);
            assert!(
                (0.9..=1.125).contains(&share),
                "block-layer share {share:.3} at {}\n{}",
                l["concurrency"],
                self.story
            );
            assert!(num(b, "coverage_pct") >= 95.0, "{b}");
        }
    }
}

/// Whether the levels measured are the device's: every level's mean latency within 15 % of the
/// truth, and, for a fixed service time, concurrency 1's p95 within 15 % of its mean (the 3x
/// rule is judged against it), each beyond what the host adds to a sleep of the service
/// ([`host_jitter_ms`], measured before the sweeps). On a busy machine the loop device's kernel worker waits for a
/// CPU now and then; a sweep whose raw levels are not the device tells nothing about the
/// verdict, whatever it says.
fn disturbance(t: &Judged, (jitter_mean, jitter_p95): (f64, f64)) -> Option<String> {
    let levels = t.j["levels"].as_array().unwrap();
    // A burst makes the levels where it drains faster than the sustained truth: judge the
    // first and the last level only.
    let burst = matches!(t.dev.spec.cap, Some(Cap::Iops { burst, .. } | Cap::Bytes { burst, .. }) if burst > 0.0);
    for (i, l) in levels.iter().enumerate() {
        if burst && i != 0 && i != levels.len() - 1 {
            continue;
        }
        let c = l["concurrency"].as_u64().unwrap() as u32;
        let got = num(&l["latency_ns"], "mean") / 1e6;
        let want = t.true_ratio(c) * t.base_ms;
        // Each service waited for meets the host's jitter: ratio × its mean.
        if (got - want).abs() > want * 0.15 + t.true_ratio(c) * jitter_mean {
            return Some(format!(
                "c={c}: mean {got:.2} ms, the device gives {want:.2}"
            ));
        }
    }
    let l1 = &t.j["levels"][0]["latency_ns"];
    let fixed = matches!(t.dev.spec.service, Service::Fixed(_));
    (fixed && num(l1, "p95") > 1.15 * num(l1, "mean") + jitter_p95 * 1e6)
        .then(|| format!("c=1: p95 {:.2} ms", num(l1, "p95") / 1e6))
}

/// What this machine adds to a sleep of `s` at real-time priority, as the device's units
/// sleep: (mean, p95) beyond `s`, in ms, over 150 sleeps. On a virtual machine the host takes
/// the vCPU away now and then (seen here, quiet: 9 gaps a second of 1-3.5 ms, about 1 % of
/// the time stolen), and a sleep that meets a gap ends that much late: 8 ms sleeps had p50
/// 8.11, p95 9.10 and p99 11.18 ms. Part of the device's truth on this machine, not of iosat's.
fn host_jitter_ms(s: Duration) -> (f64, f64) {
    std::thread::spawn(move || {
        knowndev::precise_sleeps();
        let mut over: Vec<f64> = (0..150)
            .map(|_| {
                let t = std::time::Instant::now();
                std::thread::sleep(s);
                (t.elapsed().saturating_sub(s)).as_secs_f64() * 1e3
            })
            .collect();
        over.sort_by(f64::total_cmp);
        let mean = over.iter().sum::<f64>() / over.len() as f64;
        (mean, over[over.len() * 95 / 100])
    })
    .join()
    .unwrap()
}

/// One clean sweep of `dev` (five tries, see [`disturbance`]): Ok with it, or Err with the
/// fifth when the machine disturbed all five (a busy host: the path's cost moves under the
/// sweep), after checking that iosat said so and claimed nothing beyond the truth
/// ([`Judged::honest_when_disturbed`]).
fn clean_sweep<'a>(
    dev: &'a KnownDev,
    levels: &str,
    secs: &str,
    path: PathCost,
) -> Result<Judged<'a>, Judged<'a>> {
    let mut tries = Vec::new();
    let jitter = host_jitter_ms(dev.spec.service.mean());
    eprintln!(
        "the host's jitter on a sleep of the service: mean +{:.3} ms, p95 +{:.3} ms",
        jitter.0, jitter.1
    );
    loop {
        let judged = Judged::new(dev, sweep(dev, levels, secs), path);
        // The test's own measure, or iosat's: a verdict that says its run was disturbed (or
        // whose levels waited for a CPU) rightly gives ranges, which the exact checks can't hold.
        let why = disturbance(&judged, jitter)
            .or_else(|| {
                judged
                    .said_disturbed()
                    .then(|| "iosat said the run was disturbed".to_string())
            })
            .or_else(|| judged.machine_disturbed());
        match why {
            None => return Ok(judged),
            Some(why) if tries.len() < 4 => tries.push(why),
            Some(why) => {
                tries.push(why);
                eprintln!(
                    "five sweeps disturbed by the machine ({tries:?}): the verdict's numbers \
                     can't be held to the device's; checked that it says so and claims \
                     nothing beyond the truth\n{}",
                    judged.story
                );
                judged.honest_when_disturbed(&tries);
                return Err(judged);
            }
        }
    }
}

/// Start `spec`, measure the overhead first (on its own device), sweep until the levels are
/// the device's, judge with `check`; then `again` more sweeps back to back (at `again_levels`
/// of `again_secs`), each judged with `check_again` whatever the machine did to it.
fn judge_again(
    spec: Spec,
    levels: &str,
    check: impl FnOnce(&Judged),
    again: usize,
    (again_levels, again_secs): (&str, &str),
    check_again: impl Fn(&Judged),
) {
    if !knowndev::available() {
        return;
    }
    let path = path_cost_of(&spec);
    let dev = KnownDev::start(spec).unwrap();
    if let Ok(judged) = clean_sweep(&dev, levels, "0.8s", path) {
        eprintln!("{}", judged.story);
        check(&judged);
    }
    // Taken as they come: recognition must not depend on the noise of the moment, unless
    // iosat itself says the run was disturbed; then it must claim nothing beyond the truth.
    // The same three measures as `clean_sweep`'s: the host's jitter on a sleep of the service
    // (CI's machines steal the CPU for milliseconds at a time), iosat's own, the levels' CPU wait.
    let jitter = if again > 0 {
        host_jitter_ms(dev.spec.service.mean())
    } else {
        (0.0, 0.0)
    };
    for _ in 0..again {
        let judged = Judged::new(&dev, sweep(&dev, again_levels, again_secs), path);
        eprintln!("{}", judged.story);
        if let Some(why) = disturbance(&judged, jitter)
            .or_else(|| {
                judged
                    .said_disturbed()
                    .then(|| "iosat said the run was disturbed".to_string())
            })
            .or_else(|| judged.machine_disturbed())
        {
            eprintln!("disturbed ({why}): checked that it claims nothing beyond the truth");
            judged.honest_when_disturbed(&[why]);
        } else {
            check_again(&judged);
        }
    }
}

fn judge(spec: Spec, levels: &str, check: impl FnOnce(&Judged)) {
    judge_again(spec, levels, check, 0, ("", ""), |_| {});
}

/// [`judge`] for a cap with a burst: the burst drains within the first sub-windows of the
/// level that first asks more than the cap, so on a host that takes the vCPU away now and then
/// its evidence is marginal (seen once in a full suite: the level's second half not yet down on
/// the plateau, 416 IOPS with a CV of 0.136). A clean sweep that then names the limit at its
/// figure without claiming a cap has said nothing beyond the truth; one more clean sweep must
/// name the cap, with `check` in full.
fn judge_burst(spec: Spec, levels: &str, cap_iops: f64, check: impl Fn(&Judged)) {
    if !knowndev::available() {
        return;
    }
    let path = path_cost_of(&spec);
    let dev = KnownDev::start(spec).unwrap();
    for attempt in 0..2 {
        let Ok(judged) = clean_sweep(&dev, levels, "0.8s", path) else {
            return;
        };
        eprintln!("{}", judged.story);
        let named = judged.v()["suspected_cap_iops"].is_number()
            || judged.v()["suspected_cap_bytes_per_s"].is_number();
        if named || attempt == 1 {
            check(&judged);
            return;
        }
        eprintln!(
            "no burst evidence in this sweep: checked that it claims nothing beyond the truth"
        );
        judged.limit_is_named_without_a_claim(cap_iops);
    }
}

#[test]
fn one_unit_has_its_knee_at_1() {
    judge(Spec::new(1, ms(S_MS)), "1,2,4,8", |t| {
        t.baseline_is_s_plus_overhead();
        t.no_cap_is_named();
        t.knee_is_near(1.0);
        t.iops_are_true();
        t.overload_is_true();
        t.block_layer_holds_the_latency();
    });
}

/// Issue 25's acceptance: five back-to-back sweeps of a device with no cap name no cap (its
/// own limit, 500 IOPS, is as round a figure as any provisioned one).
#[test]
fn four_units_have_their_knee_at_4_and_no_cap_five_times() {
    judge_again(
        Spec::new(4, ms(S_MS)),
        "1,2,4,8,16,32",
        |t| {
            t.baseline_is_s_plus_overhead();
            t.knee_is_near(4.0);
            t.iops_are_true();
            t.overload_is_true();
            t.util_lesson_is_told();
            t.block_layer_holds_the_latency();
            t.limit_is_named_without_a_claim(500.0);
        },
        4,
        ("1,8,16", "0.5s"),
        |t| t.limit_is_named_unless_disturbed(500.0),
    );
}

#[test]
fn sixteen_units_have_their_knee_at_16() {
    judge(Spec::new(16, ms(S_MS)), "1,4,16,32,64", |t| {
        t.baseline_is_s_plus_overhead();
        t.no_cap_is_named();
        t.knee_is_near(16.0);
        t.iops_are_true();
        t.overload_is_true();
        t.util_lesson_is_told();
        t.block_layer_holds_the_latency();
    });
}

/// 4 units of 8 ms would give 500 IOPS; a cap of 250 holds them from concurrency 2 on.
const IOPS_CAP: f64 = 250.0;

/// A cap without a burst, at one block size, looks exactly like the device's own limit: the
/// verdict gives the plateau's figure and says one sweep can't tell which it is.
#[test]
fn an_iops_cap_without_a_burst_is_a_limit_one_sweep_cannot_place() {
    let cap = Cap::Iops {
        per_s: IOPS_CAP,
        burst: 0.0,
    };
    judge(Spec::new(4, ms(S_MS)).cap(cap), "1,2,4,8,16", |t| {
        t.baseline_is_s_plus_overhead();
        t.knee_is_near(2.0);
        t.iops_are_true();
        t.overload_is_true();
        t.limit_is_named_without_a_claim(IOPS_CAP);
        t.block_layer_holds_the_latency();
    });
}

/// A cap for 8 units of 8 ms (1000 IOPS of their own) that concurrency 2 (240 IOPS) stays
/// clearly below and concurrency 4 (480) clearly above: the plateau begins at 4.
const BURST_CAP: f64 = 350.0;

/// Requests of burst credit: at concurrency 4 (480 IOPS asked of [`BURST_CAP`]) they last
/// 0.3 s, the 0.2 s ramp and the first sub-windows of the level, so its second half settles
/// on the plateau; concurrency 1 and 2, below the cap, fill the bucket again.
const BURST: f64 = 40.0;

/// The burst a token bucket gives before its plateau is the evidence of a cap: 8 units of 8 ms
/// (1000 IOPS) capped at [`BURST_CAP`] with [`BURST`] requests of credit. Issue 25's acceptance: named within 5 % in
/// each of five back-to-back sweeps; on this VM's jitter, at most one of the four after the
/// first may find its burst evidence marginal and name the limit without a claim.
#[test]
fn an_iops_cap_with_a_burst_is_named_with_its_figure_five_times() {
    let cap = Cap::Iops {
        per_s: BURST_CAP,
        burst: BURST,
    };
    // A sweep whose burst evidence was marginal (see [`judge_burst`]) may name the limit
    // without a claim; at most one of the four back-to-back sweeps.
    let unnamed = std::cell::Cell::new(0);
    let named = |t: &Judged| {
        let v = t.v();
        if v["suspected_cap_iops"].is_number() || v["suspected_cap_bytes_per_s"].is_number() {
            t.cap_is_named(BURST_CAP);
        } else {
            t.limit_is_named_without_a_claim(BURST_CAP);
            unnamed.set(unnamed.get() + 1);
        }
    };
    judge_again(
        Spec::new(8, ms(S_MS)).cap(cap),
        "1,2,4,8,16",
        |t| {
            t.baseline_is_s_plus_overhead();
            t.knee_is_near(BURST_CAP * S_MS as f64 / 1e3);
            // The first sweep too: seen once in a full suite, its c=4 burst mostly drained in
            // the ramp (370 IOPS against the cap's 350, windows CV 0.000), so it named the
            // plateau at 352 without a claim.
            named(t);
            t.block_layer_holds_the_latency();
        },
        4,
        // A burst is told from noise by the level's sub-windows (an eighth of it each): at
        // 0.5 s they hold ~20 requests, too few to tell, and iosat rightly claims nothing.
        ("1,2,4,8", "0.8s"),
        named,
    );
    assert!(
        unnamed.get() <= 1,
        "{} of five back-to-back sweeps named no cap",
        unnamed.get()
    );
}

/// A bandwidth cap, 1.4 MB/s ([`BURST_CAP`] requests of 4 KiB a second) with [`BURST`] requests' worth of
/// burst: at one block size it is named like an IOPS cap, with its figure.
#[test]
fn a_bandwidth_cap_with_a_burst_is_named_with_its_figure() {
    let cap = Cap::Bytes {
        per_s: BURST_CAP * 4096.0,
        burst: BURST * 4096.0,
    };
    judge_burst(
        Spec::new(8, ms(S_MS)).cap(cap),
        "1,2,4,8,16",
        BURST_CAP,
        |t| {
            t.baseline_is_s_plus_overhead();
            t.knee_is_near(BURST_CAP * S_MS as f64 / 1e3);
            t.cap_is_named(BURST_CAP);
            t.block_layer_holds_the_latency();
        },
    );
}

const SLOW_MS: u64 = 14;

#[test]
fn a_bimodal_device_is_judged_by_its_mean() {
    // 6 ms three times in four, 14 ms (garbage collection) the fourth: a mean of 8 ms, a p95 of
    // 14 ms at one request in flight. (Rarer, longer stalls would leave the mean of a short
    // level to the luck of a few draws: one in ten of 44 ms moves it by 1 ms in 100 requests.)
    let gc = Service::Bimodal {
        fast: ms(SLOW_MS - 8),
        slow: ms(SLOW_MS),
        slow_per_mille: 250,
    };
    judge(Spec::new(4, ms(S_MS)).service(gc), "1,2,4,8,16,32", |t| {
        t.baseline_is_s_plus_overhead();
        let p95 = num(t.v(), "baseline_p95_ns") / 1e6;
        // The slow draws (a quarter of the requests) plus what the path adds to the slowest
        // fifth of them: more than nothing, at most the path's own p95 after a sleep of S,
        // measured before (within 10 % either way). Never the mean's 8 ms.
        let (low, high) = (
            SLOW_MS as f64 * 0.98,
            (SLOW_MS as f64 + t.path.p95_ms) * 1.10,
        );
        assert!(
            (low..=high).contains(&p95),
            "baseline p95 {p95:.2} ms, truth {low:.2}..{high:.2}\n{}",
            t.story
        );
        t.knee_is_near(4.0);
        t.iops_are_true();
        t.no_cap_is_named();
        // Not overloaded before the mean latency has at least doubled.
        if let Some(c) = t.v()["overload_concurrency"].as_u64() {
            assert!(
                t.true_ratio(c as u32) >= 2.0,
                "overloaded at {c}\n{}",
                t.story
            );
        }
    });
}

/// Writes completed by `name`, from /proc/diskstats.
fn device_writes(name: &str) -> u64 {
    let all = std::fs::read_to_string("/proc/diskstats").unwrap();
    let f: Vec<&str> = all
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.get(2) == Some(&name))
        .unwrap_or_else(|| panic!("{name} in /proc/diskstats"));
    f[7].parse().unwrap()
}

/// fdatasync of a 4 KiB rewrite in place on ext4 over a device whose flush takes F: every
/// commit reaches the device as one flush of F, and the commit takes F plus its writes (the
/// data block, and now and then ext4's metadata: the writes per commit are counted here).
#[test]
fn fdatasync_takes_the_write_and_the_flush_time() {
    const WRITE_MS: f64 = 1.0;
    const FLUSH_MS: f64 = 20.0;
    if !knowndev::available() {
        return;
    }
    // The path's cost after a write's sleep and after a flush's: the longer sleep costs more
    // on this kind of VM (a full run saw 27.3 ms commits against 26.8 allowed with the 1 ms
    // figure, 0.27 ms, for both).
    let o = path_cost(ms(WRITE_MS as u64)).mean_ms;
    let o_flush = path_cost(ms(FLUSH_MS as u64)).mean_ms.max(o);
    // Four units: a flush never waits behind a write for a free one.
    let spec = Spec::new(4, ms(WRITE_MS as u64)).flush(ms(FLUSH_MS as u64));
    let mut dev = KnownDev::start(spec).unwrap();
    let dir = dev.mount_ext4();
    let writes_before = device_writes(dev.name());
    let j = iosat_rt(&[
        "fsync",
        "--json",
        "--methods",
        "fdatasync",
        "--sizes",
        "4096",
        "--mode",
        "overwrite",
        "--committers",
        "none",
        "--duration",
        "1",
        dir.to_str().unwrap(),
    ]);
    let writes = device_writes(dev.name()) - writes_before;
    let case = &j["cases"][0];
    let story = format!(
        "overhead {o:.3} ms after a write, {o_flush:.3} ms after a flush, {writes} writes\n{case}\n{}",
        j["device"]
    );
    assert_eq!(case["method"], "fdatasync", "{story}");
    assert_eq!(case["verify"], "ok", "the blocks read back\n{story}");
    let fl = &case["device_flushes"];
    let (flushes, commits) = (num(fl, "flushes"), num(case, "commits"));
    assert!(
        (flushes - commits).abs() <= commits * 0.05,
        "{flushes} flushes for {commits} commits\n{story}"
    );
    let (f_await, want) = (num(fl, "f_await_ms"), FLUSH_MS + o_flush);
    assert!(
        (f_await - want).abs() <= want * 0.10,
        "a flush took {f_await:.2} ms, truth F + o = {want:.2}\n{story}"
    );
    // The writes per commit: every write of the run (laying out the file and reading it back
    // included) over the commits, an upper bound.
    let per_commit = (writes as f64 / commits).max(1.0);
    let got = num(&case["latency_ns"], "mean") / 1e6;
    let (least, most) = (
        FLUSH_MS + WRITE_MS,
        FLUSH_MS + o_flush + per_commit * (WRITE_MS + o),
    );
    assert!(
        got >= least * 0.95 && got <= most * 1.10,
        "commit latency {got:.2} ms, truth F + the writes = {least:.2}..{most:.2} ms\n{story}"
    );
    assert_eq!(j["device"]["flush_verdict"], "plausible", "{story}");
}

/// The articles' claim, shown on a device whose truth is known (docs/known-devices.md): run
/// `cargo test --test it truth::demo -- --ignored --nocapture` as root. A device of
/// KNOWNDEV_UNITS units (8) of KNOWNDEV_SERVICE_MS (8 ms) each; `iosat sweep` of it is printed.
/// With KNOWNDEV_HOLD_S=N the device stays attached N seconds instead, its path printed, for
/// iostat, fio or iosat by hand.
#[test]
#[ignore]
fn demo() {
    let var = |k: &str, d: u64| std::env::var(k).map_or(d, |v| v.parse().expect(k));
    let (units, service) = (var("KNOWNDEV_UNITS", 8), var("KNOWNDEV_SERVICE_MS", 8));
    let Some(dev) = KnownDev::start(Spec::new(units as usize, ms(service))) else {
        return;
    };
    println!("{}: {units} units of {service} ms each", dev.path);
    if let Ok(secs) = std::env::var("KNOWNDEV_HOLD_S") {
        std::thread::sleep(Duration::from_secs(secs.parse().expect("KNOWNDEV_HOLD_S")));
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_iosat"))
        .args(["sweep", "--no-progress", "--levels", "1,2,4,8,16,32"])
        .args(["--duration", "1s", &dev.path])
        .output()
        .expect("run iosat");
    println!("{}", ok_stdout(&out));
}
