//! Who loads a disk (issue 40): the block-latency source's per-cgroup counters (sys::bpf, each
//! request charged to its own cgroup) turned into each device's cgroups per interval — requests,
//! bytes, mean latency and its queue and device parts, the share of the device's time — and the
//! victim/aggressor verdict of analysis::who, with the state it needs across intervals (each
//! cgroup's latency while the device was not saturated, and the recent history the correlation
//! is taken over). A sample is what a recording holds (`#G` lines: cumulative counters, the
//! cgroups' names and the limits they are under), so a replay gives what the live run said.
//! Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

use crate::analysis::state::State;
use crate::analysis::who::{self, Limit, Role, Seen, Verdict};

use crate::sys::bpf::{RawCgroup, CG_SHIFT};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};

/// A cgroup as a person knows it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CgName {
    /// A systemd unit, a pod's container, a docker container, else the path.
    pub name: String,
    /// Relative to its hierarchy's root ("/" for the root).
    pub path: String,
    /// In cgroup v1's blkio hierarchy (else v2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub v1: bool,
}

/// One sample of the per-cgroup counters (a `#G` line).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CgSample {
    /// Cumulative, per cgroup, device and op.
    pub rows: Vec<CgRow>,
    /// The names of the cgroups in `rows` first seen in this run (later samples repeat only
    /// the new ones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<(u64, CgName)>,
    /// The limits the busiest cgroups are under on each device (their own or an ancestor's),
    /// read with this sample.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<(u64, u32, u32, Limit)>,
    /// Completions not attributed for want of room in the kernel's map (cumulative).
    #[serde(default)]
    pub unattributed: u64,
    /// The busiest cgroups' `io.pressure` (cgroup v2 only: v1 has no PSI), read with this
    /// sample: (cgroup, `some` total µs, `full` total µs), cumulative.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pressure: Vec<(u64, u64, Option<u64>)>,
}

/// [`RawCgroup`] as recorded: (cgroup, major, minor, op, ios, bytes, sum_ns, queue_sum_ns,
/// device_sum_ns, split_ios, the non-zero buckets as (index, count)).
pub type CgRow = (
    u64,
    u32,
    u32,
    u8,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    Vec<(u16, u64)>,
);

/// A raw row as recorded.
pub fn row_of(c: &RawCgroup) -> CgRow {
    let buckets = c
        .buckets
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(i, &n)| (i as u16, n))
        .collect();
    (
        c.cgroup,
        c.major,
        c.minor,
        c.op as u8,
        c.ios,
        c.bytes,
        c.sum_ns,
        c.queue_sum_ns,
        c.device_sum_ns,
        c.split_ios,
        buckets,
    )
}

/// One direction of one cgroup on one device over an interval.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct CgDir {
    pub requests: u64,
    pub iops: f64,
    pub bytes_per_s: f64,
    /// Completion − start, the mean over the interval's requests.
    pub mean_ms: Option<f64>,
    /// Its parts, over the requests the kernel stamped at issue.
    pub queue_ms: Option<f64>,
    pub device_ms: Option<f64>,
    /// The upper bound of the bucket that holds the p95 (2 buckets per power of two).
    pub p95_ms_at_most: Option<f64>,
}

/// One cgroup on one device over an interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CgroupIo {
    pub id: u64,
    pub name: String,
    pub path: String,
    pub read: CgDir,
    pub write: CgDir,
    /// Its share of the device's time over the interval: of the time its requests spent in
    /// the device (issued to completed), or of the requests where the kernel does not stamp
    /// the issue (`share_of`).
    pub share: f64,
    pub share_of: ShareOf,
    /// Its mean latency ÷ its own baseline (its latency while the device was not saturated),
    /// or ÷ the device's baseline until it has one (`baseline_of`).
    pub ratio: Option<f64>,
    pub baseline_ms: Option<f64>,
    pub baseline_of: Option<who::BaselineOf>,
    /// The limit it is held at in this interval (its own or an ancestor's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_by: Option<Limit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// Its `io.pressure` over the interval, % of the interval: `some` (at least one of its
    /// tasks stalled on I/O), `full` (all its non-idle tasks did), from the cumulative totals'
    /// change. Per cgroup, not per device. None where the cgroup is not in cgroup v2 (v1 has
    /// no PSI), the kernel has no PSI, or the interval has no earlier reading.
    pub pressure_some_pct: Option<f64>,
    pub pressure_full_pct: Option<f64>,
}

impl CgroupIo {
    /// Its `io.pressure` in words ("io.pressure some 12 % full 3 %"), where cgroup v2 gives
    /// one: what `stat --cgroups` and top's cgroups pane say of it.
    pub fn pressure_words(&self) -> Option<String> {
        match (self.pressure_some_pct, self.pressure_full_pct) {
            (Some(s), Some(f)) => Some(format!("io.pressure some {s:.0} % full {f:.0} %")),
            (Some(s), None) => Some(format!("io.pressure some {s:.0} %")),
            _ => None,
        }
    }
}

/// What a cgroup's share is a share of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShareOf {
    DeviceTime,
    Requests,
}

/// A device's cgroups over an interval: the busiest first, and the verdict while the device is
/// saturated or overloaded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DevCgroups {
    pub cgroups: Vec<CgroupIo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

/// Cgroups listed per device and interval (the busiest; the rest are counted in the exporter's
/// families only up to its own cap).
pub const SHOWN: usize = 8;

type Key = (u64, u32, u32, u8);
/// A row of [`CgTracker::close`] with the device time and stamping its share comes from.
type WithSums = (CgroupIo, f64, bool);

/// The per-cgroup state across intervals: names, the previous sample, each cgroup's latency
/// while its device was not saturated, and each device's recent history.
#[derive(Debug, Default)]
pub struct CgTracker {
    names: HashMap<u64, CgName>,
    prev: Option<HashMap<Key, CgRow>>,
    next: Option<CgSample>,
    /// (device, cgroup) → its baseline mean latency in ns and the intervals it came from.
    baselines: HashMap<(u32, u32, u64), (f64, u32)>,
    /// (device, cgroup) → its usual share while the device was not saturated.
    usual_share: HashMap<(u32, u32, u64), f64>,
    /// Per device: the last [`who::HISTORY`] intervals (share and ratio per cgroup).
    history: HashMap<(u32, u32), VecDeque<Vec<Seen>>>,
    /// Each cgroup's `io.pressure` totals (some, full µs) at the previous sample.
    prev_pressure: HashMap<u64, (u64, Option<u64>)>,
    /// (device, cgroup) → its usual `full` pressure (% of an interval) while the device was
    /// calm, and the intervals it came from.
    usual_pressure: HashMap<(u32, u32, u64), (f64, u32)>,
}

impl CgTracker {
    /// The sample read with the next diskstats sample.
    pub fn set_next(&mut self, s: CgSample) {
        for (id, n) in &s.names {
            self.names.insert(*id, n.clone());
        }
        self.next = Some(s);
    }

    /// A new run (a recording's `R` line, time going back): nothing to subtract from.
    pub fn new_run(&mut self) {
        self.prev = None;
        self.next = None;
        self.prev_pressure.clear();
    }

    /// A sample that closes no interval (the run's first): the base of the next.
    pub fn seat(&mut self) {
        if let Some(cur) = self.next.take() {
            self.prev_pressure = pressure_map(&cur);
            self.prev = Some(
                cur.rows
                    .iter()
                    .map(|r| ((r.0, r.1, r.2, r.3), r.clone()))
                    .collect(),
            );
        }
    }

    /// Is a name known for this cgroup?
    pub fn knows(&self, id: u64) -> bool {
        self.names.contains_key(&id)
    }

    /// Each device's cgroups over the interval the pending sample closes; `interval_s` its
    /// length, `state` and `baseline_ns` (mean latency at one in flight) each device's
    /// judgement. Empty when there is no pending sample or nothing to subtract from.
    pub fn close(
        &mut self,
        interval_s: f64,
        device: &dyn Fn(u32, u32) -> Option<(State, Option<f64>)>,
    ) -> HashMap<(u32, u32), DevCgroups> {
        let Some(cur) = self.next.take() else {
            return HashMap::new();
        };
        let now: HashMap<Key, CgRow> = cur
            .rows
            .iter()
            .map(|r| ((r.0, r.1, r.2, r.3), r.clone()))
            .collect();
        let pressure_now = pressure_map(&cur);
        let pressure_prev = std::mem::replace(&mut self.prev_pressure, pressure_now.clone());
        let Some(prev) = self.prev.replace(now) else {
            return HashMap::new();
        };
        if interval_s <= 0.0 {
            return HashMap::new();
        }
        // % of the interval from two cumulative µs totals; None when either is missing or it
        // went back.
        let pct = |a: Option<u64>, b: Option<u64>| {
            let d = b?.checked_sub(a?)?;
            Some((d as f64 / (interval_s * 1e6) * 100.0).min(100.0))
        };
        let pressure = |id: u64| -> (Option<f64>, Option<f64>) {
            match (pressure_prev.get(&id), pressure_now.get(&id)) {
                (Some(a), Some(b)) => (pct(Some(a.0), Some(b.0)), pct(a.1, b.1)),
                _ => (None, None),
            }
        };
        // Per device: each row, the time its requests spent in the device, and whether the
        // kernel stamped the issue of (nearly) all of them.
        let mut per_dev: HashMap<(u32, u32), Vec<WithSums>> = HashMap::new();
        let mut acc: HashMap<(u32, u32, u64), [Delta; 2]> = HashMap::new();
        for r in &cur.rows {
            let op = r.3 as usize;
            if op > 1 {
                continue;
            }
            let d = match prev.get(&(r.0, r.1, r.2, r.3)) {
                Some(p) => Delta::between(p, r),
                None => Delta::between(&empty(r), r),
            };
            let Some(d) = d.filter(|d| d.ios > 0) else {
                continue;
            };
            acc.entry((r.1, r.2, r.0)).or_default()[op] = d;
        }
        for ((major, minor, id), [rd, wr]) in acc {
            let n = self.names.get(&id);
            let (pressure_some_pct, pressure_full_pct) = pressure(id);
            let row = CgroupIo {
                id,
                name: n.map_or_else(|| format!("cgroup {id}"), |n| n.name.clone()),
                path: n.map_or_else(String::new, |n| n.path.clone()),
                read: rd.dir(interval_s),
                write: wr.dir(interval_s),
                share: 0.0,
                share_of: ShareOf::DeviceTime,
                ratio: None,
                baseline_ms: None,
                baseline_of: None,
                held_by: None,
                role: None,
                pressure_some_pct,
                pressure_full_pct,
            };
            let device_ns = (rd.device_ns + wr.device_ns) as f64;
            let stamped = (rd.split_ios + wr.split_ios) as f64 >= 0.9 * (rd.ios + wr.ios) as f64;
            per_dev
                .entry((major, minor))
                .or_default()
                .push((row, device_ns, stamped));
        }
        let mut out = HashMap::new();
        for ((major, minor), with_sums) in per_dev {
            let split_all = with_sums.iter().all(|r| r.2);
            let dev_ns: f64 = with_sums.iter().map(|r| r.1).sum();
            let ios: f64 = with_sums
                .iter()
                .map(|r| (r.0.read.requests + r.0.write.requests) as f64)
                .sum();
            let mut rows = Vec::with_capacity(with_sums.len());
            for (mut r, device_ns, _) in with_sums {
                let mine = (r.read.requests + r.write.requests) as f64;
                (r.share, r.share_of) = if split_all && dev_ns > 0.0 {
                    (device_ns / dev_ns, ShareOf::DeviceTime)
                } else {
                    (mine / ios.max(1.0), ShareOf::Requests)
                };
                r.held_by = cur
                    .limits
                    .iter()
                    .filter(|l| (l.0, l.1, l.2) == (r.id, major, minor))
                    .find(|l| {
                        l.3.holds(
                            (r.read.iops, r.read.bytes_per_s),
                            (r.write.iops, r.write.bytes_per_s),
                        )
                    })
                    .map(|l| l.3.clone());
                rows.push(r);
            }
            rows.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.id.cmp(&b.id)));
            let (state, dev_base) = device(major, minor).unwrap_or((State::Unknown, None));
            let verdict = self.judge((major, minor), &mut rows, state, dev_base);
            rows.truncate(SHOWN);
            out.insert(
                (major, minor),
                DevCgroups {
                    cgroups: rows,
                    verdict,
                },
            );
        }
        out
    }

    /// Ratios, roles and the verdict of one device's interval; the baselines and history
    /// updated with it.
    fn judge(
        &mut self,
        dev: (u32, u32),
        rows: &mut [CgroupIo],
        state: State,
        dev_base_ns: Option<f64>,
    ) -> Option<Verdict> {
        let loaded = matches!(state, State::Saturated | State::Overloaded);
        let calm = matches!(state, State::Ok | State::Idle);
        let mut seen = Vec::new();
        for r in rows.iter_mut() {
            let mean_ns = mean_ns(r);
            let key = (dev.0, dev.1, r.id);
            let own = self.baselines.get(&key).copied();
            let (base, of) = match (own, dev_base_ns) {
                (Some((b, n)), _) if n >= who::MIN_BASELINE_INTERVALS => {
                    (Some(b), Some(who::BaselineOf::Own))
                }
                (_, Some(d)) => (Some(d), Some(who::BaselineOf::Device)),
                _ => (None, None),
            };
            r.ratio = mean_ns.zip(base).map(|(m, b)| m / b);
            r.baseline_ms = base.map(|b| b / 1e6);
            r.baseline_of = of;
            let requests = r.read.requests + r.write.requests;
            // Its own latency is learned while the device is calm, or while it is alone on the
            // device (then no one else can have slowed it).
            if (calm || r.share >= who::ALONE_SHARE) && requests >= who::MIN_REQUESTS {
                if let Some(m) = mean_ns {
                    // The lower half of its calm intervals: a mean that only falls with more
                    // evidence, rises slowly (a device's latency drifts, a burst must not).
                    let e = self.baselines.entry(key).or_insert((m, 0));
                    e.0 = if m < e.0 { m } else { e.0 + (m - e.0) * 0.05 };
                    e.1 = e.1.saturating_add(1);
                }
            }
            if calm && requests >= who::MIN_REQUESTS {
                let u = self.usual_share.entry(key).or_insert(r.share);
                *u += (r.share - *u) * 0.1;
                if let Some(f) = r.pressure_full_pct {
                    let u = self.usual_pressure.entry(key).or_insert((f, 0));
                    u.0 += (f - u.0) * 0.1;
                    u.1 = u.1.saturating_add(1);
                }
            }
            seen.push(Seen {
                id: r.id,
                share: r.share,
                ratio: r.ratio,
                requests,
            });
        }
        let hist = self.history.entry(dev).or_default();
        hist.push_back(seen);
        while hist.len() > who::HISTORY {
            hist.pop_front();
        }
        if !loaded {
            // Held by its own limit is said whatever the device's state.
            for r in rows.iter_mut().filter(|r| r.held_by.is_some()) {
                r.role = Some(Role::Throttled);
            }
            return None;
        }
        let usual = |id: u64| self.usual_share.get(&(dev.0, dev.1, id)).copied();
        let usual_pressure = |id: u64| {
            self.usual_pressure
                .get(&(dev.0, dev.1, id))
                .filter(|u| u.1 >= who::MIN_BASELINE_INTERVALS)
                .map(|u| u.0)
        };
        let names = &self.names;
        let cands: Vec<who::Candidate<'_>> = rows
            .iter()
            .map(|r| who::Candidate {
                id: r.id,
                name: &r.name,
                path: &r.path,
                v1: names.get(&r.id).is_some_and(|n| n.v1),
                share: r.share,
                ratio: r.ratio,
                baseline_ms: r.baseline_ms,
                own_baseline: r.baseline_of == Some(who::BaselineOf::Own),
                requests: r.read.requests + r.write.requests,
                held_by: r.held_by.as_ref(),
                iops: (r.read.iops, r.write.iops),
                pressure_full_pct: r.pressure_full_pct,
                usual_pressure_pct: usual_pressure(r.id),
            })
            .collect();
        let v = who::verdict(&cands, hist, &usual);
        for r in rows.iter_mut() {
            r.role = v.role_of(r.id);
        }
        Some(v)
    }
}

/// A sample's `io.pressure` totals by cgroup.
fn pressure_map(s: &CgSample) -> HashMap<u64, (u64, Option<u64>)> {
    s.pressure.iter().map(|p| (p.0, (p.1, p.2))).collect()
}

/// Mean latency in ns over both directions.
fn mean_ns(r: &CgroupIo) -> Option<f64> {
    let n = (r.read.requests + r.write.requests) as f64;
    let sum = r.read.mean_ms.unwrap_or(0.0) * r.read.requests as f64
        + r.write.mean_ms.unwrap_or(0.0) * r.write.requests as f64;
    (n > 0.0).then(|| sum / n * 1e6)
}

fn empty(r: &CgRow) -> CgRow {
    (r.0, r.1, r.2, r.3, 0, 0, 0, 0, 0, 0, Vec::new())
}

/// One op's change over an interval.
#[derive(Debug, Clone, Default)]
struct Delta {
    ios: u64,
    bytes: u64,
    sum_ns: u64,
    queue_ns: u64,
    device_ns: u64,
    split_ios: u64,
    buckets: Vec<(u16, u64)>,
}

impl Delta {
    /// None when a counter went backwards (the entry was removed and taken again).
    fn between(a: &CgRow, b: &CgRow) -> Option<Delta> {
        let mut buckets = Vec::new();
        for &(i, n) in &b.10 {
            let was = a.10.iter().find(|x| x.0 == i).map_or(0, |x| x.1);
            let d = n.checked_sub(was)?;
            if d > 0 {
                buckets.push((i, d));
            }
        }
        Some(Delta {
            ios: b.4.checked_sub(a.4)?,
            bytes: b.5.checked_sub(a.5)?,
            sum_ns: b.6.checked_sub(a.6)?,
            queue_ns: b.7.checked_sub(a.7)?,
            device_ns: b.8.checked_sub(a.8)?,
            split_ios: b.9.checked_sub(a.9)?,
            buckets,
        })
    }

    fn dir(&self, interval_s: f64) -> CgDir {
        if self.ios == 0 {
            return CgDir::default();
        }
        let per = |ns: u64, n: u64| (n > 0).then(|| ns as f64 / n as f64 / 1e6);
        CgDir {
            requests: self.ios,
            iops: self.ios as f64 / interval_s,
            bytes_per_s: self.bytes as f64 / interval_s,
            mean_ms: per(self.sum_ns, self.ios),
            queue_ms: per(self.queue_ns, self.split_ios),
            device_ms: per(self.device_ns, self.split_ios),
            p95_ms_at_most: self.p95_bound_ns().map(|ns| ns / 1e6),
        }
    }

    /// The upper bound of the bucket holding the p95.
    fn p95_bound_ns(&self) -> Option<f64> {
        let n: u64 = self.buckets.iter().map(|b| b.1).sum();
        if n == 0 {
            return None;
        }
        let want = (n as f64 * 0.95).ceil() as u64;
        let mut b = self.buckets.clone();
        b.sort_unstable();
        let mut seen = 0;
        for (i, c) in b {
            seen += c;
            if seen >= want {
                let k = 1usize << CG_SHIFT;
                let hi = super::blklat::bucket_bounds_ns(i as usize * k + k - 1).1;
                return Some(hi as f64);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: u64, op: u8, ios: u64, sum_ms: u64, dev_ms: u64, bucket: u16) -> CgRow {
        (
            id,
            7,
            1,
            op,
            ios,
            ios * 4096,
            sum_ms * 1_000_000,
            (sum_ms - dev_ms) * 1_000_000,
            dev_ms * 1_000_000,
            ios,
            vec![(bucket, ios)],
        )
    }

    fn sample(rows: Vec<CgRow>) -> CgSample {
        CgSample {
            rows,
            names: vec![
                (
                    10,
                    CgName {
                        name: "db.service".into(),
                        path: "/system.slice/db.service".into(),
                        v1: false,
                    },
                ),
                (
                    20,
                    CgName {
                        name: "batch.service".into(),
                        path: "/system.slice/batch.service".into(),
                        v1: false,
                    },
                ),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn an_interval_gives_each_cgroup_its_rates_latency_and_share_of_device_time() {
        let mut t = CgTracker::default();
        t.set_next(sample(vec![row(10, 0, 0, 0, 0, 0), row(20, 0, 0, 0, 0, 0)]));
        assert!(
            t.close(1.0, &|_, _| None).is_empty(),
            "nothing to subtract from"
        );
        // db: 100 reads of 2 ms (all device time); batch: 900 reads of 20 ms, 2 ms each in
        // the device.
        t.set_next(sample(vec![
            row(10, 0, 100, 200, 200, 40),
            row(20, 0, 900, 18_000, 1_800, 60),
        ]));
        let out = t.close(2.0, &|_, _| Some((State::Ok, Some(2e6))));
        let d = &out[&(7, 1)];
        assert_eq!(d.cgroups.len(), 2);
        let (b, db) = (&d.cgroups[0], &d.cgroups[1]);
        assert_eq!(b.name, "batch.service");
        assert_eq!(b.share_of, ShareOf::DeviceTime);
        assert!((b.share - 0.9).abs() < 1e-9, "{}", b.share);
        assert!((db.share - 0.1).abs() < 1e-9);
        assert_eq!(b.read.requests, 900);
        assert!((b.read.iops - 450.0).abs() < 1e-9);
        assert_eq!(b.read.mean_ms, Some(20.0));
        assert_eq!(b.read.device_ms, Some(2.0));
        assert_eq!(b.read.queue_ms, Some(18.0));
        assert!((b.ratio.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(b.baseline_of, Some(who::BaselineOf::Device));
        assert!(d.verdict.is_none(), "no verdict while the device is ok");
        // The p95's bound is the upper edge of the bucket that holds it.
        let k = 1 << CG_SHIFT;
        let hi = crate::monitor::blklat::bucket_bounds_ns(60 * k + k - 1).1 as f64 / 1e6;
        assert_eq!(b.read.p95_ms_at_most, Some(hi));
    }

    #[test]
    fn io_pressure_over_the_interval_and_a_victim_named_by_its_rise() {
        let mut t = CgTracker::default();
        // Cumulative: db's reads (2 ms each, all device time), batch's, and db's io.pressure
        // totals (µs); batch is a v1 cgroup here: no pressure.
        let at = |i: u64, db_full_us: u64, batch_ios: u64| {
            let mut s = sample(vec![
                row(10, 0, 100 * i, 200 * i, 200 * i, 40),
                row(20, 0, batch_ios, 2 * batch_ios, 2 * batch_ios, 40),
            ]);
            s.pressure = vec![(10, 2 * db_full_us, Some(db_full_us))];
            s
        };
        t.set_next(at(0, 0, 0));
        assert!(t.close(1.0, &|_, _| None).is_empty());
        // Four calm seconds: db stalled 2 % of each (full), some twice that.
        let mut full = 0;
        let mut batch = 0;
        for i in 1..=4 {
            full += 20_000;
            batch += 100;
            t.set_next(at(i, full, batch));
            let out = t.close(1.0, &|_, _| Some((State::Ok, Some(2e6))));
            let db = out[&(7, 1)].cgroups.iter().find(|g| g.id == 10).unwrap();
            assert_eq!(db.pressure_full_pct, Some(2.0));
            assert_eq!(db.pressure_some_pct, Some(4.0));
            let b = out[&(7, 1)].cgroups.iter().find(|g| g.id == 20).unwrap();
            assert_eq!((b.pressure_some_pct, b.pressure_full_pct), (None, None));
        }
        // Saturated: batch takes 9 times db's device time; db's latency is as usual (its
        // ratio 1: the latency says nothing), but its tasks all stalled 40 % of the second.
        full += 400_000;
        batch += 900;
        t.set_next(at(5, full, batch));
        let out = t.close(1.0, &|_, _| Some((State::Overloaded, Some(2e6))));
        let d = &out[&(7, 1)];
        let db = d.cgroups.iter().find(|g| g.id == 10).unwrap();
        assert_eq!(db.pressure_full_pct, Some(40.0));
        assert!((db.ratio.unwrap() - 1.0).abs() < 1e-9, "{:?}", db.ratio);
        assert_eq!(db.role, Some(Role::Victim));
        let v = d.verdict.as_ref().unwrap();
        assert_eq!(v.victims[0].pressure_full_pct, Some(40.0));
        assert!(
            v.sentence.starts_with(
                "db.service's tasks all stalled on I/O 40 % of the interval (io.pressure full; \
                 usually 2 %)"
            ),
            "{}",
            v.sentence
        );
        assert_eq!(v.role_of(20), Some(Role::Aggressor));
        // A counter going back (the cgroup removed and made again): no figure, not a negative.
        t.set_next(at(6, 1_000, batch + 10));
        let out = t.close(1.0, &|_, _| Some((State::Ok, Some(2e6))));
        let db = out[&(7, 1)].cgroups.iter().find(|g| g.id == 10).unwrap();
        assert_eq!(db.pressure_full_pct, None);
    }

    #[test]
    fn a_counter_going_back_gives_no_row_for_that_cgroup() {
        let mut t = CgTracker::default();
        t.set_next(sample(vec![row(10, 0, 50, 100, 100, 40)]));
        t.close(1.0, &|_, _| None);
        t.set_next(sample(vec![row(10, 0, 10, 20, 20, 40)]));
        assert!(t.close(1.0, &|_, _| None).is_empty());
    }
}

/// A device's cgroups over a whole recording (`analyze`): each cgroup's time in the device,
/// requests and latency, and what the intervals' verdicts named.
#[derive(Debug, Default)]
pub struct RunCgroups {
    /// id → (name, time its requests spent in the device in ms (their latency where the
    /// kernel does not stamp the issue), requests, latency sum ms×requests).
    cgroups: HashMap<u64, (String, f64, u64, f64)>,
    /// Intervals with cgroups, and those with a verdict.
    intervals: u32,
    judged: u32,
    /// Per (victim, aggressor): intervals, victim ratios, aggressor shares, last correlation
    /// and its strength, last protect sentence.
    pairs: HashMap<(String, String), PairRun>,
    /// Throttled names → (intervals, the limit in words).
    throttled: HashMap<String, (u32, String)>,
}

#[derive(Debug, Default)]
struct PairRun {
    n: u32,
    ratios: Vec<f64>,
    shares: Vec<f64>,
    correlation: Option<(f64, usize, &'static str)>,
    protect: Option<String>,
}

impl RunCgroups {
    pub fn add(&mut self, c: &DevCgroups) {
        self.intervals += 1;
        for g in &c.cgroups {
            let e = self
                .cgroups
                .entry(g.id)
                .or_insert_with(|| (g.name.clone(), 0.0, 0, 0.0));
            for d in [&g.read, &g.write] {
                e.1 += d.device_ms.or(d.mean_ms).unwrap_or(0.0) * d.requests as f64;
                e.2 += d.requests;
                e.3 += d.mean_ms.unwrap_or(0.0) * d.requests as f64;
            }
        }
        let Some(v) = &c.verdict else { return };
        self.judged += 1;
        for t in &v.throttled {
            let e = self
                .throttled
                .entry(t.name.clone())
                .or_insert((0, t.limit.text()));
            e.0 += 1;
        }
        if let (Some(vi), Some(a)) = (v.victims.first(), v.aggressors.first()) {
            let p = self
                .pairs
                .entry((vi.name.clone(), a.name.clone()))
                .or_default();
            p.n += 1;
            if let Some(r) = vi.ratio {
                p.ratios.push(r);
            }
            p.shares.push(a.share);
            if let Some(r) = a.correlation {
                p.correlation = Some((r, a.intervals, a.strength));
            }
            p.protect.clone_from(&v.protect);
        }
    }

    /// The run in words, one line each (empty without cgroups).
    pub fn words(&self, dev: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.intervals == 0 {
            return out;
        }
        let total: f64 = self.cgroups.values().map(|c| c.1).sum();
        let mut by_time: Vec<&(String, f64, u64, f64)> = self.cgroups.values().collect();
        by_time.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let list: Vec<String> = by_time
            .iter()
            .take(3)
            .map(|(name, t, n, lat)| {
                let mean = if *n > 0 { lat / *n as f64 } else { 0.0 };
                format!(
                    "{name} {:.0} % ({n} requests, mean {mean:.2} ms)",
                    if total > 0.0 { t / total * 100.0 } else { 0.0 }
                )
            })
            .collect();
        out.push(format!(
            "{dev}: cgroups: the device's time over {} intervals: {}",
            self.intervals,
            list.join("; ")
        ));
        let mut pairs: Vec<(&(String, String), &PairRun)> = self.pairs.iter().collect();
        pairs.sort_by(|a, b| b.1.n.cmp(&a.1.n).then(a.0.cmp(b.0)));
        for ((victim, aggressor), p) in pairs.into_iter().take(2) {
            let med = |v: &[f64]| {
                let mut v = v.to_vec();
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            let corr = match p.correlation {
                Some((r, n, s)) => {
                    format!("{s} correlation (r = {r:.2} over {n} intervals), not proof")
                }
                None => "correlation not measurable".to_string(),
            };
            let protect = p
                .protect
                .as_ref()
                .map_or(String::new(), |s| format!("; to protect {victim}: {s}"));
            // A victim named by its io.pressure alone has no latency ratio to give.
            let waited = if p.ratios.is_empty() {
                "stalled on I/O above its usual (io.pressure)".to_string()
            } else {
                format!("waited {:.1}x its own baseline (median)", med(&p.ratios))
            };
            out.push(format!(
                "{dev}: who: in {} of {} saturated intervals {victim} {waited} while \
                 {aggressor} took {:.0} % of the device's time; {corr}{protect}",
                p.n,
                self.judged,
                med(&p.shares) * 100.0
            ));
        }
        let mut held: Vec<(&String, &(u32, String))> = self.throttled.iter().collect();
        held.sort();
        for (name, (n, limit)) in held {
            out.push(format!(
                "{dev}: who: {name} was held by its own limit in {n} saturated intervals \
                 (throttled, not a victim of the device): {limit}"
            ));
        }
        out
    }
}
