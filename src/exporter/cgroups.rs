//! Who loads a disk, exported (issue 40; `--cgroups`): the block-latency source's per-cgroup
//! rows (monitor::cgsource, read at the learner's cadence) kept as the exporter's own
//! cumulative sums per device, cgroup and op — each tick's change added, so a counter never
//! goes back when the kernel's entry is removed and taken again — with a cardinality cap: the
//! busiest cgroups of each device (by requests since the exporter started) have series of
//! their own, the others' changes are added under `cgroup="other"`, and how many were cut is
//! a gauge. The latest interval's share of device time and the verdict's roles
//! (monitor::cgroups) are gauges beside them. Pure but for the state it keeps.
//! Imports only: exporter/, monitor/, analysis/, sys/.

use super::metrics::{Scrape, Sink};
use crate::analysis::who::Role;
use crate::monitor::cgroups::{CgName, CgRow, CgSample, DevCgroups};
use std::collections::{HashMap, HashSet};

/// `--cgroup-limit`'s default: cgroups with series of their own per device.
pub const DEFAULT_LIMIT: usize = 50;
/// The label of the cgroups beyond the cap, summed.
pub const OTHER: &str = "other";

pub const REQUESTS: &str = "iosat_cgroup_disk_requests_total";
pub const BYTES: &str = "iosat_cgroup_disk_bytes_total";
pub const LATENCY: &str = "iosat_cgroup_disk_latency_seconds_total";
pub const QUEUE: &str = "iosat_cgroup_disk_queue_seconds_total";
pub const DEVICE: &str = "iosat_cgroup_disk_device_seconds_total";
pub const SPLIT: &str = "iosat_cgroup_disk_split_requests_total";
pub const SHARE: &str = "iosat_cgroup_disk_device_time_share";
pub const ROLE: &str = "iosat_cgroup_disk_role";
pub const CUT: &str = "iosat_cgroup_disk_cut_cgroups";
pub const UNATTRIBUTED: &str = "iosat_cgroup_disk_unattributed_completions_total";
pub const PRESSURE: &str = "iosat_cgroup_io_pressure_seconds_total";

/// Sums of one op of one cgroup (or of `other`) on one device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sums {
    pub requests: u64,
    pub bytes: u64,
    /// Completion − start, summed over `requests`.
    pub latency_ns: u64,
    /// Issue − start and completion − issue, summed over `split` (the requests the kernel
    /// stamped at issue).
    pub queue_ns: u64,
    pub device_ns: u64,
    pub split: u64,
}

impl Sums {
    fn of(r: &CgRow) -> Sums {
        Sums {
            requests: r.4,
            bytes: r.5,
            latency_ns: r.6,
            queue_ns: r.7,
            device_ns: r.8,
            split: r.9,
        }
    }

    /// `b` − `a`; `b` itself when any field went back (the entry was removed and taken
    /// again: it counts from zero).
    fn since(a: &Sums, b: &Sums) -> Sums {
        let d = || {
            Some(Sums {
                requests: b.requests.checked_sub(a.requests)?,
                bytes: b.bytes.checked_sub(a.bytes)?,
                latency_ns: b.latency_ns.checked_sub(a.latency_ns)?,
                queue_ns: b.queue_ns.checked_sub(a.queue_ns)?,
                device_ns: b.device_ns.checked_sub(a.device_ns)?,
                split: b.split.checked_sub(a.split)?,
            })
        };
        d().unwrap_or(*b)
    }

    fn add(&mut self, d: &Sums) {
        self.requests = self.requests.saturating_add(d.requests);
        self.bytes = self.bytes.saturating_add(d.bytes);
        self.latency_ns = self.latency_ns.saturating_add(d.latency_ns);
        self.queue_ns = self.queue_ns.saturating_add(d.queue_ns);
        self.device_ns = self.device_ns.saturating_add(d.device_ns);
        self.split = self.split.saturating_add(d.split);
    }
}

/// (major, minor, cgroup id, op: 0 read, 1 write).
type Key = (u32, u32, u64, u8);

/// The exporter's cumulative per-cgroup sums, fed one sample per learner tick.
#[derive(Debug)]
pub struct CgCounters {
    limit: usize,
    names: HashMap<u64, CgName>,
    /// The kernel's cumulative row at the last sample.
    last: HashMap<Key, Sums>,
    /// What each cgroup's series says: its changes while it was among its device's busiest.
    /// By device, then (cgroup id, op): a scrape reads one device's without the others'.
    own: HashMap<(u32, u32), HashMap<(u64, u8), Sums>>,
    /// Per device and op: the changes of the cgroups beyond the cap.
    other: HashMap<(u32, u32, u8), Sums>,
    /// Requests since the exporter started per device and cgroup: what "busiest" ranks by.
    busy: HashMap<(u32, u32, u64), u64>,
    /// Per device: the cgroups with series of their own at the last sample, and how many
    /// were summed under `other`.
    kept: HashMap<(u32, u32), HashSet<u64>>,
    cut: HashMap<(u32, u32), usize>,
    unattributed: u64,
    /// `--cgroup-depth`.
    depth: Option<usize>,
    /// Per cgroup: its `io.pressure` totals (some, full µs) at the last sample, and the
    /// stall time summed since the exporter started (some, full µs).
    pressure_last: HashMap<u64, (u64, Option<u64>)>,
    pressure_sums: HashMap<u64, (u64, Option<u64>)>,
}

/// A cgroup's path cut to its first `depth` levels ("/a/b/c", 2 → "/a/b"; "/" stays "/").
fn at_depth(path: &str, depth: usize) -> String {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty())
        .take(depth)
        .collect();
    format!("/{}", parts.join("/"))
}

impl CgCounters {
    /// At most `limit` cgroups per device with series of their own (at least 1).
    pub fn new(limit: usize) -> CgCounters {
        CgCounters {
            limit: limit.max(1),
            names: HashMap::new(),
            last: HashMap::new(),
            own: HashMap::new(),
            other: HashMap::new(),
            busy: HashMap::new(),
            kept: HashMap::new(),
            cut: HashMap::new(),
            unattributed: 0,
            depth: None,
            pressure_last: HashMap::new(),
            pressure_sums: HashMap::new(),
        }
    }

    /// One sample of the kernel's cumulative rows: each row's change since the last one
    /// added to its cgroup's series (or to `other`); cgroups and devices gone from the
    /// kernel's map leave.
    pub fn feed(&mut self, s: &CgSample) {
        for (id, n) in &s.names {
            self.names.insert(*id, n.clone());
        }
        self.unattributed = self.unattributed.max(s.unattributed);
        let mut now: HashMap<Key, Sums> = HashMap::new();
        for r in s.rows.iter().filter(|r| r.3 <= 1) {
            now.insert((r.1, r.2, r.0, r.3), Sums::of(r));
        }
        let mut deltas: Vec<(Key, Sums)> = Vec::with_capacity(now.len());
        for (k, cur) in &now {
            let d = match self.last.get(k) {
                Some(prev) => Sums::since(prev, cur),
                None => *cur,
            };
            *self.busy.entry((k.0, k.1, k.2)).or_default() += d.requests;
            deltas.push((*k, d));
        }
        let present: HashSet<(u32, u32, u64)> = now.keys().map(|k| (k.0, k.1, k.2)).collect();
        let devices: HashSet<(u32, u32)> = present.iter().map(|k| (k.0, k.1)).collect();
        self.busy.retain(|k, _| present.contains(k));
        for (dev, m) in self.own.iter_mut() {
            m.retain(|k, _| present.contains(&(dev.0, dev.1, k.0)));
        }
        self.own.retain(|_, m| !m.is_empty());
        self.other.retain(|k, _| devices.contains(&(k.0, k.1)));
        self.last = now;
        // io.pressure: each reading's change added (the reading itself when the total went
        // back: the cgroup was removed and made again). A cgroup's first reading (or its
        // first since it was last among the busiest read) is its base: its stall time before
        // is not added. Cgroups gone from the kernel's map leave.
        let mut last = HashMap::new();
        for &(id, some, full) in &s.pressure {
            let (ds, df) = match self.pressure_last.get(&id) {
                Some(&(ps, pf)) => (
                    some.checked_sub(ps).unwrap_or(some),
                    full.map(|f| pf.and_then(|p| f.checked_sub(p)).unwrap_or(f)),
                ),
                None => (0, full.map(|_| 0)),
            };
            let e = self.pressure_sums.entry(id).or_insert((0, None));
            e.0 = e.0.saturating_add(ds);
            if let Some(df) = df {
                e.1 = Some(e.1.unwrap_or(0).saturating_add(df));
            }
            last.insert(id, (some, full));
        }
        let ids: HashSet<u64> = present.iter().map(|k| k.2).collect();
        self.pressure_sums.retain(|id, _| ids.contains(id));
        self.pressure_last = last;
        // Each device's busiest cgroups.
        let mut per_dev: HashMap<(u32, u32), Vec<(u64, u64)>> = HashMap::new();
        for (&(ma, mi, id), &n) in &self.busy {
            per_dev.entry((ma, mi)).or_default().push((id, n));
        }
        self.kept.clear();
        self.cut.clear();
        for (dev, mut ids) in per_dev {
            ids.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let cut = ids.len().saturating_sub(self.limit);
            self.kept
                .insert(dev, ids.iter().take(self.limit).map(|x| x.0).collect());
            self.cut.insert(dev, cut);
        }
        for (k, d) in deltas {
            let kept = self.kept.get(&(k.0, k.1)).is_some_and(|s| s.contains(&k.2));
            if kept {
                self.own
                    .entry((k.0, k.1))
                    .or_default()
                    .entry((k.2, k.3))
                    .or_default()
                    .add(&d);
            } else {
                self.other.entry((k.0, k.1, k.3)).or_default().add(&d);
            }
        }
    }

    /// Label cgroups by their ancestor at `depth` (`--cgroup-depth`); None: their own path.
    pub fn set_depth(&mut self, depth: Option<usize>) {
        self.depth = depth;
    }

    /// The label of a cgroup: its path (cut to `depth` levels with `--cgroup-depth`), or
    /// `id:<id>` while its name is not known.
    fn label(&self, id: u64) -> String {
        match self.names.get(&id) {
            Some(n) if !n.path.is_empty() => match self.depth {
                Some(d) => at_depth(&n.path, d),
                None => n.path.clone(),
            },
            _ => format!("id:{id}"),
        }
    }

    /// What a scrape serves of one device: its series (cgroups with the same path summed,
    /// `other` last) and the latest interval's shares and roles of the cgroups with series
    /// of their own. None before the device's first row.
    pub fn device(&self, major: u32, minor: u32, interval: Option<&DevCgroups>) -> Option<DevCg> {
        let kept = self.kept.get(&(major, minor))?;
        let mut by_label: HashMap<(String, u8), Sums> = HashMap::new();
        let own = self.own.get(&(major, minor));
        for (k, s) in own
            .into_iter()
            .flatten()
            .filter(|(k, _)| kept.contains(&k.0))
        {
            by_label.entry((self.label(k.0), k.1)).or_default().add(s);
        }
        let mut series: Vec<(String, u8, Sums)> = by_label
            .into_iter()
            .map(|((l, op), s)| (l, op, s))
            .collect();
        series.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        for op in 0..=1u8 {
            if let Some(s) = self.other.get(&(major, minor, op)) {
                series.push((OTHER.to_string(), op, *s));
            }
        }
        let mut share: Vec<(String, f64)> = Vec::new();
        let mut roles = Vec::new();
        if let Some(c) = interval {
            // Summed by label: with --cgroup-depth several cgroups share one.
            for g in c.cgroups.iter().filter(|g| kept.contains(&g.id)) {
                let l = self.label(g.id);
                match share.iter_mut().find(|x| x.0 == l) {
                    Some(x) => x.1 += g.share,
                    None => share.push((l, g.share)),
                }
            }
            // The verdict's (it names cgroups beyond the busiest listed), else the rows' own
            // (a cgroup held by its own limit is throttled whatever the device's state).
            let mut seen = HashSet::new();
            if let Some(v) = &c.verdict {
                let ids = v
                    .victims
                    .iter()
                    .map(|x| x.id)
                    .chain(v.aggressors.iter().map(|x| x.id))
                    .chain(v.throttled.iter().map(|x| x.id));
                for id in ids.filter(|id| kept.contains(id) && seen.insert(*id)) {
                    if let Some(r) = v.role_of(id) {
                        roles.push((self.label(id), r));
                    }
                }
            }
            for g in c.cgroups.iter().filter(|g| kept.contains(&g.id)) {
                if let Some(r) = g.role.filter(|_| seen.insert(g.id)) {
                    roles.push((self.label(g.id), r));
                }
            }
        }
        // One series per label and role.
        let mut once = HashSet::new();
        roles.retain(|(l, r): &(String, Role)| once.insert((l.clone(), *r)));
        Some(DevCg {
            series,
            share,
            roles,
            cut: self.cut.get(&(major, minor)).copied().unwrap_or(0),
        })
    }

    /// Completions the kernel's map had no room for (cumulative).
    pub fn unattributed(&self) -> u64 {
        self.unattributed
    }

    /// Each cgroup's `io.pressure` stall time since the exporter started, seconds: (label,
    /// some, full), by label. Only cgroups with series of their own on some device, and with
    /// `--cgroup-depth` only those at or above that depth (their label is their own path):
    /// stall times do not add up across cgroups (two cgroups stalled at once are not twice
    /// the time), so none is summed into an ancestor's.
    pub fn pressure(&self) -> Vec<(String, f64, Option<f64>)> {
        let kept: HashSet<u64> = self.kept.values().flatten().copied().collect();
        let mut out: Vec<(String, f64, Option<f64>)> = self
            .pressure_sums
            .iter()
            .filter(|(id, _)| kept.contains(id))
            .filter_map(|(id, &(some, full))| {
                let n = self.names.get(id)?;
                let label = self.label(*id);
                (label == n.path).then(|| (label, some as f64 / 1e6, full.map(|f| f as f64 / 1e6)))
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

/// One device's per-cgroup figures in a scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DevCg {
    /// (cgroup label, op: 0 read 1 write, sums since the exporter started).
    pub series: Vec<(String, u8, Sums)>,
    /// The latest interval's share of the device's time, per cgroup label.
    pub share: Vec<(String, f64)>,
    /// The latest interval's verdict: the role of each cgroup it names.
    pub roles: Vec<(String, Role)>,
    /// Cgroups summed under `other`.
    pub cut: usize,
}

fn op_name(op: u8) -> &'static str {
    if op == 0 {
        "read"
    } else {
        "write"
    }
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::Victim => "victim",
        Role::Aggressor => "aggressor",
        Role::Throttled => "throttled",
    }
}

/// The `iosat_cgroup_disk_*` families; absent (no HELP either) without `--cgroups`.
pub fn render(o: &mut dyn Sink, s: &Scrape) {
    let Some(unattributed) = s.cgroup_unattributed else {
        return;
    };
    let with: Vec<(&str, &DevCg)> = s
        .devices
        .iter()
        .filter_map(|d| d.cgroups.as_ref().map(|c| (d.line.name.as_str(), c)))
        .collect();
    type Get = fn(&Sums) -> f64;
    let counters: [(&str, &str, Get); 6] = [
        (
            REQUESTS,
            "Requests completed per device, cgroup and op, each charged to the request's own \
cgroup (the submitter's, or the one that dirtied the pages for writeback), counted by iosat's \
BPF program since the exporter started; cgroup is the cgroup's path, \"other\" the cgroups \
beyond --cgroup-limit summed.",
            |s| s.requests as f64,
        ),
        (
            BYTES,
            "Bytes of the requests in iosat_cgroup_disk_requests_total.",
            |s| s.bytes as f64,
        ),
        (
            LATENCY,
            "Block-layer time of the requests in iosat_cgroup_disk_requests_total, summed: \
completion minus start (its rate over the requests' rate is the mean latency).",
            |s| s.latency_ns as f64 / 1e9,
        ),
        (
            QUEUE,
            "Time the cgroup's requests waited in the kernel's queue (issue minus start), \
summed over the requests the kernel stamped at issue (iosat_cgroup_disk_split_requests_total).",
            |s| s.queue_ns as f64 / 1e9,
        ),
        (
            DEVICE,
            "Time the device held the cgroup's requests (completion minus issue), summed over \
the requests the kernel stamped at issue (iosat_cgroup_disk_split_requests_total).",
            |s| s.device_ns as f64 / 1e9,
        ),
        (
            SPLIT,
            "Requests of iosat_cgroup_disk_requests_total the kernel stamped at issue: those \
the queue and device seconds are summed over.",
            |s| s.split as f64,
        ),
    ];
    for (name, help, get) in counters {
        o.family(name, "counter", help);
        for (dev, c) in &with {
            for (cg, op, sums) in &c.series {
                o.sample(
                    name,
                    &[("device", dev), ("cgroup", cg), ("op", op_name(*op))],
                    get(sums),
                );
            }
        }
    }
    o.family(
        SHARE,
        "gauge",
        "The cgroup's share of the device's time over the latest interval (one a second): of \
the time its requests spent in the device, or of the requests where the kernel does not stamp \
the issue; the device's busiest cgroups only (8, and only those with series of their own).",
    );
    for (dev, c) in &with {
        for (cg, v) in &c.share {
            o.sample(SHARE, &[("device", dev), ("cgroup", cg)], *v);
        }
    }
    o.family(
        ROLE,
        "gauge",
        "1 while the latest interval's verdict on a saturated device names the cgroup: victim \
(its latency, or where that does not say so its io.pressure, rose above its own usual), aggressor (its share of device time rose in the \
same intervals: a correlation, not proof); or throttled, held by its own io.max or blkio \
throttle (said whatever the device's state).",
    );
    for (dev, c) in &with {
        for (cg, r) in &c.roles {
            o.sample(
                ROLE,
                &[("device", dev), ("cgroup", cg), ("role", role_name(*r))],
                1.0,
            );
        }
    }
    o.family(
        CUT,
        "gauge",
        "Cgroups of the device summed under cgroup=\"other\" at the latest sample: those beyond \
--cgroup-limit (the busiest by requests keep series of their own).",
    );
    for (dev, c) in &with {
        o.sample(CUT, &[("device", dev)], c.cut as f64);
    }
    o.family(
        UNATTRIBUTED,
        "counter",
        "Completions the BPF program charged to no cgroup because its per-cgroup map was full.",
    );
    o.sample(UNATTRIBUTED, &[], unattributed as f64);
    o.family(
        PRESSURE,
        "counter",
        "Time the cgroup's tasks stalled on I/O (io.pressure, cgroup v2 only: kind=\"some\" at \
least one of them, kind=\"full\" all its non-idle ones) since the exporter started, seconds; per \
cgroup, not per device: PSI does not say which device. The busiest cgroups with series of \
their own; with --cgroup-depth only those at or above the depth (stall times do not add up).",
    );
    for (cg, some, full) in &s.cgroup_pressure {
        o.sample(PRESSURE, &[("cgroup", cg), ("kind", "some")], *some);
        if let Some(f) = full {
            o.sample(PRESSURE, &[("cgroup", cg), ("kind", "full")], *f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: u64, op: u8, ios: u64) -> CgRow {
        (
            id,
            7,
            1,
            op,
            ios,
            ios * 4096,
            ios * 2_000_000,
            ios * 500_000,
            ios * 1_500_000,
            ios,
            Vec::new(),
        )
    }

    fn name(id: u64, path: &str) -> (u64, CgName) {
        (
            id,
            CgName {
                name: path.into(),
                path: path.into(),
                v1: true,
            },
        )
    }

    fn sample(rows: Vec<CgRow>) -> CgSample {
        CgSample {
            rows,
            names: vec![name(10, "/a"), name(20, "/b"), name(30, "/c")],
            ..Default::default()
        }
    }

    fn get<'a>(d: &'a DevCg, cg: &str, op: u8) -> Option<&'a Sums> {
        d.series
            .iter()
            .find(|s| s.0 == cg && s.1 == op)
            .map(|s| &s.2)
    }

    #[test]
    fn counters_add_each_change_and_never_go_back() {
        let mut c = CgCounters::new(50);
        c.feed(&sample(vec![row(10, 0, 100), row(20, 1, 5)]));
        let d = c.device(7, 1, None).unwrap();
        assert_eq!(get(&d, "/a", 0).unwrap().requests, 100);
        assert_eq!(get(&d, "/b", 1).unwrap().bytes, 5 * 4096);
        assert_eq!(d.cut, 0);
        assert!(get(&d, OTHER, 0).is_none(), "nothing cut, no other");
        // The kernel's entry of /a removed and taken again: 30 new requests, not a reset.
        c.feed(&sample(vec![row(10, 0, 30), row(20, 1, 9)]));
        let d = c.device(7, 1, None).unwrap();
        assert_eq!(get(&d, "/a", 0).unwrap().requests, 130);
        assert_eq!(get(&d, "/a", 0).unwrap().latency_ns, 130 * 2_000_000);
        assert_eq!(get(&d, "/b", 1).unwrap().requests, 9);
        assert!(c.device(8, 0, None).is_none(), "a device without rows");
    }

    #[test]
    fn beyond_the_cap_the_least_busy_are_summed_under_other() {
        let mut c = CgCounters::new(1);
        c.feed(&sample(vec![
            row(10, 0, 100),
            row(20, 0, 10),
            row(30, 0, 5),
        ]));
        let d = c.device(7, 1, None).unwrap();
        assert_eq!(d.cut, 2);
        assert_eq!(get(&d, "/a", 0).unwrap().requests, 100);
        assert_eq!(get(&d, OTHER, 0).unwrap().requests, 15);
        assert!(get(&d, "/b", 0).is_none());
        // /b becomes the busiest: from now on its changes are its own, other keeps what it
        // had and /a's series leaves (its count kept should it come back): each series only
        // grows, and the cap holds.
        c.feed(&sample(vec![
            row(10, 0, 100),
            row(20, 0, 300),
            row(30, 0, 6),
        ]));
        let d = c.device(7, 1, None).unwrap();
        assert_eq!(get(&d, "/b", 0).unwrap().requests, 290);
        assert!(get(&d, "/a", 0).is_none());
        assert_eq!(get(&d, OTHER, 0).unwrap().requests, 16);
        assert_eq!(d.series.len(), 2, "{:?}", d.series);
        c.feed(&sample(vec![
            row(10, 0, 1000),
            row(20, 0, 300),
            row(30, 0, 6),
        ]));
        let d = c.device(7, 1, None).unwrap();
        assert_eq!(
            get(&d, "/a", 0).unwrap().requests,
            1000,
            "back, never lower"
        );
        assert_eq!(get(&d, OTHER, 0).unwrap().requests, 16);
    }

    #[test]
    fn a_depth_sums_the_cgroups_below_each_ancestor_into_its_series() {
        let mut c = CgCounters::new(50);
        c.set_depth(Some(1));
        c.feed(&CgSample {
            rows: vec![row(10, 0, 100), row(20, 0, 10), row(30, 0, 7)],
            names: vec![
                name(10, "/system.slice/db.service"),
                name(20, "/system.slice/batch.service"),
                name(30, "/user.slice"),
            ],
            ..Default::default()
        });
        let d = c.device(7, 1, None).unwrap();
        assert_eq!(get(&d, "/system.slice", 0).unwrap().requests, 110);
        assert_eq!(get(&d, "/user.slice", 0).unwrap().requests, 7);
        assert!(get(&d, "/system.slice/db.service", 0).is_none());
        assert_eq!(at_depth("/", 2), "/");
        assert_eq!(at_depth("/a/b/c", 2), "/a/b");
    }

    #[test]
    fn io_pressure_is_summed_per_cgroup_from_its_first_reading_and_never_goes_back() {
        let mut c = CgCounters::new(50);
        let at = |ios: u64, p: Vec<(u64, u64, Option<u64>)>| {
            let mut s = sample(vec![row(10, 0, ios), row(20, 0, ios)]);
            s.pressure = p;
            s
        };
        // /a (v2) stalled 5 s before the exporter started: its base, not counted. /b has no
        // io.pressure (v1): no series.
        c.feed(&at(10, vec![(10, 9_000_000, Some(5_000_000))]));
        assert_eq!(c.pressure(), vec![("/a".to_string(), 0.0, Some(0.0))]);
        c.feed(&at(20, vec![(10, 9_500_000, Some(5_250_000))]));
        assert_eq!(c.pressure(), vec![("/a".to_string(), 0.5, Some(0.25))]);
        // Removed and made again (the total went back): the new total is added.
        c.feed(&at(30, vec![(10, 100_000, Some(50_000))]));
        assert_eq!(c.pressure(), vec![("/a".to_string(), 0.6, Some(0.3))]);
        // A kernel without `full`: some only.
        c.feed(&at(40, vec![(10, 200_000, None)]));
        assert_eq!(c.pressure()[0].2, Some(0.3));
        // Rendered per cgroup and kind, without a device label.
        let s = Scrape {
            cgroup_unattributed: Some(0),
            cgroup_pressure: c.pressure(),
            ..Default::default()
        };
        let text = crate::exporter::metrics::render(&s);
        assert!(
            text.contains(
                "iosat_cgroup_io_pressure_seconds_total{cgroup=\"/a\",kind=\"some\"} 0.7\n"
            ),
            "{text}"
        );
        assert!(text
            .contains("iosat_cgroup_io_pressure_seconds_total{cgroup=\"/a\",kind=\"full\"} 0.3\n"));
        // With --cgroup-depth 1, /system.slice/x is summed into /system.slice: its pressure
        // is not served (stall times do not add up), a cgroup at the depth keeps its own.
        let mut d = CgCounters::new(50);
        d.set_depth(Some(1));
        let mut s = CgSample {
            rows: vec![row(10, 0, 5), row(30, 0, 5)],
            names: vec![name(10, "/system.slice/x"), name(30, "/user.slice")],
            ..Default::default()
        };
        s.pressure = vec![(10, 0, Some(0)), (30, 0, Some(0))];
        d.feed(&s);
        let got: Vec<String> = d.pressure().into_iter().map(|p| p.0).collect();
        assert_eq!(got, ["/user.slice"]);
    }

    #[test]
    fn the_families_are_rendered_with_device_cgroup_and_op() {
        use crate::exporter::metrics::{render, DeviceScrape, Identity};
        let mut c = CgCounters::new(50);
        c.feed(&sample(vec![row(10, 0, 100)]));
        let line = crate::sys::diskstats::parse_line("7 1 loop1 1 2 3 4 5 6 7 8 0 10 11").unwrap();
        let s = Scrape {
            devices: vec![DeviceScrape {
                line,
                identity: Identity::default(),
                in_flight: None,
                profile: None,
                latency: None,
                learned: None,
                judgement: None,
                cap: None,
                cap_uses: Vec::new(),
                aws: None,
                burst: None,
                cgroups: c.device(7, 1, None),
            }],
            cgroup_unattributed: Some(c.unattributed()),
            ..Default::default()
        };
        let text = render(&s);
        assert!(
            text.contains(
                "iosat_cgroup_disk_requests_total{device=\"loop1\",cgroup=\"/a\",op=\"read\"} 100\n"
            ),
            "{text}"
        );
        assert!(text.contains(
            "iosat_cgroup_disk_latency_seconds_total{device=\"loop1\",cgroup=\"/a\",op=\"read\"} 0.2\n"
        ));
        assert!(text.contains("iosat_cgroup_disk_cut_cgroups{device=\"loop1\"} 0\n"));
        assert!(text.contains("# TYPE iosat_cgroup_io_pressure_seconds_total counter\n"));
        let off = Scrape {
            cgroup_unattributed: None,
            ..s
        };
        assert!(!render(&off).contains("iosat_cgroup_"));
    }
}
