//! The stat engine: a stream of samples (live or replayed) in, one report per interval out, with
//! device selection, devices appearing/disappearing, and "no value" when a counter went backwards.
//! Pure: the same input gives the same reports, which is what makes a replay byte-identical to the
//! live run.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

use super::select::{DeviceMeta, Selection};
use super::{DiskDelta, DiskRates, DiskSample};
use crate::analysis::declared::{CapUse, DeclaredCap};
use crate::profile::DeviceProfile;
use crate::sys::diskstats::DiskStatLine;
use crate::sys::sched::{AvgCpu, CpuTimes};
use std::collections::HashMap;
use std::sync::Arc;

/// Why a selected device has no values in an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoValue {
    /// First seen in this sample: nothing to subtract from.
    NewDevice,
    /// A counter went backwards (device reset or re-created, a wrap that can't be proven).
    CounterWentBackwards,
    /// The interval has no length (a since-boot report taken at boot time zero).
    ZeroInterval,
    /// A sum of counter deltas does not fit in 64 bits (counters near 2^64).
    Overflow,
}

impl NoValue {
    pub fn as_str(self) -> &'static str {
        match self {
            NoValue::NewDevice => "new_device",
            NoValue::CounterWentBackwards => "counter_went_backwards",
            NoValue::ZeroInterval => "zero_interval",
            NoValue::Overflow => "counter_overflow",
        }
    }
}

/// One device in one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceRow {
    pub major: u32,
    pub minor: u32,
    pub kernel_name: String,
    pub meta: DeviceMeta,
    /// Err when there is no value for this interval.
    pub rates: Result<DiskRates, NoValue>,
    /// ms fields recognised as 32-bit wraps in this interval.
    pub wrapped_ms_fields: u32,
    /// The device's saved profile (`iosat sweep --save-profile`), when there is one.
    pub profile: Option<Arc<DeviceProfile>>,
    /// Block-layer latency percentiles (monitor::blklat), when that source is attached.
    pub latency: Option<super::blklat::DevLatency>,
    /// What production learning (learn/) says of the device in this interval; None when
    /// learning is off.
    pub learned: Option<std::sync::Arc<crate::analysis::learned::Learned>>,
    /// The disk whose judgement `learned` is, with the disk's rates of the interval, when the
    /// row is a partition judged by its disk (learn::Learner: a partition shares its disk's
    /// queue); every judgement of the row is made from those rates ([`DeviceRow::judged_rates`]).
    /// None when the judgement is the row's own.
    pub judged_as: Option<Box<JudgedAs>>,
    /// The request-size notes the device's previous interval showed: held while the size
    /// stays near the limit, so they do not flap (monitor::saturation).
    pub size_notes_held: super::saturation::SizeNotes,
    /// The cap the user declares the device was provisioned with (issue 42): the command
    /// line's figures, else its profile's.
    pub cap: Option<DeclaredCap>,
    /// The device's own AWS statistics over the latest interval of their reader (issue 42:
    /// an EBS volume or instance storage, live only; monitor::aws).
    pub aws: Option<std::sync::Arc<super::aws::AwsInterval>>,
    /// The interval's short windows (issue 41: monitor::burst), when they were sampled.
    pub burst: Option<super::burst::Burst>,
    /// The cgroups that did I/O on the device and who loads it (issue 40: monitor::cgroups),
    /// when the block-latency source counts per cgroup.
    pub cgroups: Option<std::sync::Arc<super::cgroups::DevCgroups>>,
    /// The host's CPUs had next to no idle time in the interval (sys::sched::AvgCpu::busy):
    /// a judgement of saturated or worse says so, whatever judged it (monitor::judge); None
    /// when the interval's CPU times are not known.
    pub cpus_busy: Option<bool>,
}

/// A partition judged by its disk: what a judgement reads of the disk's rates over the
/// interval (None: no value for the disk in this interval), boxed: a row of every device
/// would otherwise grow for the partitions' sake, and `--no-learn` with it. The disk is the
/// one the partition's name gives ([`DeviceRow::judged_as_disk`]), the only one learning
/// looks for.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgedAs {
    pub rates: Option<JudgedRates>,
}

/// What a judgement reads of an interval's rates (monitor::judge: each direction's IOPS and
/// mean latency, and the requests in flight while busy), of a partition's disk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JudgedRates {
    pub interval_s: f64,
    pub r_s: f64,
    pub w_s: f64,
    pub r_await: Option<f64>,
    pub w_await: Option<f64>,
    pub aqu_sz: f64,
    pub util_pct: f64,
}

impl JudgedRates {
    pub fn of(r: &DiskRates) -> JudgedRates {
        JudgedRates {
            interval_s: r.interval_s,
            r_s: r.r_s,
            w_s: r.w_s,
            r_await: r.r_await,
            w_await: r.w_await,
            aqu_sz: r.aqu_sz,
            util_pct: r.util_pct,
        }
    }

    /// As rates, the figures a judgement does not read left at zero.
    pub fn rates(&self) -> DiskRates {
        DiskRates {
            interval_s: self.interval_s,
            r_s: self.r_s,
            w_s: self.w_s,
            r_await: self.r_await,
            w_await: self.w_await,
            aqu_sz: self.aqu_sz,
            util_pct: self.util_pct,
            ..DiskRates::default()
        }
    }
}

/// The cap declared for the device `name` (kernel name) known as `display`: the command
/// line's figures (`caps`, by either name, a `/dev/` or `/dev/mapper/` prefix ignored), each
/// over its profile's. Pure: the exporter asks it too.
pub fn cap_for(
    caps: &[(String, DeclaredCap)],
    name: &str,
    display: &str,
    p: Option<&DeviceProfile>,
) -> Option<DeclaredCap> {
    let given = caps.iter().find_map(|(dev, c)| {
        let dev = dev.strip_prefix("/dev/").unwrap_or(dev);
        let dev = dev.strip_prefix("mapper/").unwrap_or(dev);
        (dev == name || dev == display).then_some(*c)
    });
    let saved = p.and_then(|p| p.declared_cap);
    match (given, saved) {
        (Some(g), Some(s)) => Some(g.or(s)),
        (g, s) => g.or(s),
    }
}

/// One interval: the measured time span and the selected devices in kernel order.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalReport {
    pub start_mono_ns: u64,
    pub end_mono_ns: u64,
    pub start_wall_ns: i64,
    pub end_wall_ns: i64,
    /// True for the since-boot report (interval = time since boot).
    pub since_boot: bool,
    pub devices: Vec<DeviceRow>,
    /// iostat's avg-cpu over the same interval, when both ends have CPU times (`C` lines).
    pub cpu: Option<AvgCpu>,
}

impl DeviceRow {
    /// Whether the row has a baseline to be judged against (monitor::judge::has_reference):
    /// without one, [`Self::judgement`] is unknown or idle, unqualified.
    pub fn has_reference(&self) -> bool {
        super::judge::has_reference(self)
    }

    /// The device completed requests in the interval (what learning learns from; an idle
    /// row's judgement is shared, its state not worth asking the caches for ahead).
    pub fn has_traffic(&self) -> bool {
        self.rates
            .as_ref()
            .is_ok_and(|r| r.r_s > 0.0 || r.w_s > 0.0)
    }

    /// The device's one judgement in the interval (monitor::judge): what every view renders.
    pub fn judgement(&self) -> crate::analysis::state::Judgement {
        super::judge::judge(self)
    }

    /// The disk whose judgement the row carries, when it is a partition judged by its disk.
    pub fn judged_as_disk(&self) -> Option<&str> {
        self.judged_as.as_ref()?;
        super::select::disk_of_partition(&self.kernel_name)
    }

    /// The rates the row is judged by: its disk's for a partition judged by its disk
    /// ([`DeviceRow::judged_as`]: what a judgement reads of them), else its own (None: no
    /// value).
    pub fn judged_rates(&self) -> Option<std::borrow::Cow<'_, DiskRates>> {
        use std::borrow::Cow;
        match &self.judged_as {
            Some(j) => j.rates.as_ref().map(|r| Cow::Owned(r.rates())),
            None => self.rates.as_ref().ok().map(Cow::Borrowed),
        }
    }

    /// The interval's rates against the declared cap, on the figure they come nearest to
    /// (None without a declaration or without rates).
    pub fn cap_use(&self) -> Option<CapUse> {
        super::judge::cap_use(self.cap.as_ref()?, self.rates.as_ref().ok()?)
    }

    /// The device's interval judged against its profile, when it has one. Its headroom is
    /// the judgement's ([`Self::judgement`]: the worst direction's, by the swept or the
    /// learned baseline), never one of its own: the `headroom` column of `stat --wide`, its
    /// CSV and JSON `profile` object and `top` print the headroom the state line, the
    /// exporter and the page print (tests/it/one_judgement.rs).
    pub fn saturation(&self) -> Option<super::saturation::Saturation> {
        self.profile.as_deref().map(|p| {
            let mut s = super::saturation::Saturation::compute_held(
                p,
                self.rates.as_ref().ok(),
                self.size_notes_held,
            );
            let d = self.judgement().device;
            s.headroom_at_least = d.headroom_iops.is_some() && d.flags.ceiling_at_least;
            s.headroom_iops = d.headroom_iops;
            s
        })
    }
}

impl IntervalReport {
    pub fn interval_s(&self) -> f64 {
        (self.end_mono_ns - self.start_mono_ns) as f64 / 1e9
    }

    /// What `stat` shows of the interval: the avg-cpu line only when `cpu`, idle devices
    /// left out when `omit_idle` (iostat -d, -z).
    pub fn shown(mut self, cpu: bool, omit_idle: bool) -> IntervalReport {
        if !cpu {
            self.cpu = None;
        }
        if omit_idle {
            self = self.without_idle();
        }
        self
    }

    /// iostat -z: without the devices that did no I/O (nothing completed, nothing in flight).
    /// Devices without a value stay: their line says why.
    pub fn without_idle(mut self) -> IntervalReport {
        self.devices.retain(|d| match &d.rates {
            Ok(r) => {
                let busy = |v: Option<f64>| v.is_some_and(|v| v > 0.0);
                r.r_s > 0.0
                    || r.w_s > 0.0
                    || busy(r.d_s)
                    || busy(r.f_s)
                    || r.in_flight > 0
                    || r.util_pct > 0.0
            }
            Err(_) => true,
        });
        self
    }
}

/// Turns successive samples into interval reports.
#[derive(Debug, Clone)]
pub struct StatEngine {
    sel: Selection,
    since_boot: bool,
    /// The time since boot at the next sample (`<proc>/uptime`), for the since-boot report.
    uptime_ns: Option<u64>,
    prev: Option<DiskSample>,
    /// CPU times read with the next sample (`C` line) and with `prev`.
    next_cpu: Option<CpuTimes>,
    prev_cpu: Option<CpuTimes>,
    metas: HashMap<(u32, u32), (String, DeviceMeta)>,
    profiles: HashMap<(u32, u32), (String, Arc<DeviceProfile>)>,
    /// The request-size notes each device's last interval showed (hysteresis).
    size_notes: HashMap<(u32, u32), super::saturation::SizeNotes>,
    /// Caps declared on the command line, by device name (`--cap DEV:…`).
    caps: Vec<(String, DeclaredCap)>,
    /// Caps the recording's run declared (`K` lines): under this command line's, over a
    /// profile's; forgotten at the next run.
    recorded_caps: Vec<(String, DeclaredCap)>,
    /// The rows of the last interval: the next one's are allocated at once (grown from empty,
    /// a thousand rows were moved nine times per interval).
    last_rows: usize,
}

/// The counters as they were at boot: zeros, with the optional groups the line has.
fn zero_like(l: &DiskStatLine) -> DiskStatLine {
    let z = |o: Option<u64>| o.map(|_| 0);
    DiskStatLine {
        major: l.major,
        minor: l.minor,
        name: l.name.clone(),
        discards: z(l.discards),
        discards_merged: z(l.discards_merged),
        discard_sectors: z(l.discard_sectors),
        discard_ms: z(l.discard_ms),
        flushes: z(l.flushes),
        flush_ms: z(l.flush_ms),
        ..DiskStatLine::default()
    }
}

impl StatEngine {
    pub fn new(sel: Selection, since_boot: bool) -> StatEngine {
        StatEngine {
            sel,
            since_boot,
            uptime_ns: None,
            prev: None,
            next_cpu: None,
            prev_cpu: None,
            metas: HashMap::new(),
            profiles: HashMap::new(),
            size_notes: HashMap::new(),
            caps: Vec::new(),
            recorded_caps: Vec::new(),
            last_rows: 0,
        }
    }

    /// The caps declared on the command line, each for a device by its kernel name or its
    /// display name (a `/dev/` prefix ignored): they take precedence over a profile's.
    pub fn set_caps(&mut self, caps: Vec<(String, DeclaredCap)>) {
        self.caps = caps;
    }

    /// A cap the recorded run declared on its command line (a `K` line), until the next run.
    /// The devices this engine shows.
    pub fn selection(&self) -> &Selection {
        &self.sel
    }

    pub fn record_cap(&mut self, dev: String, cap: DeclaredCap) {
        self.recorded_caps.push((dev, cap));
    }

    /// The cap declared for a device, figure by figure: this command line's, else the
    /// recorded run's, else its profile's.
    fn cap_of(
        &self,
        l: &DiskStatLine,
        meta: &DeviceMeta,
        p: Option<&DeviceProfile>,
    ) -> Option<DeclaredCap> {
        let given = cap_for(&self.caps, &l.name, &meta.display_name, None);
        let recorded = cap_for(&self.recorded_caps, &l.name, &meta.display_name, p);
        match (given, recorded) {
            (Some(g), Some(r)) => Some(g.or(r)),
            (g, r) => g.or(r),
        }
    }

    /// Record what sysfs says about a device (live: looked up; replay: from `D` lines).
    pub fn set_meta(&mut self, major: u32, minor: u32, name: &str, meta: DeviceMeta) {
        self.metas.insert((major, minor), (name.to_string(), meta));
    }

    /// Attach (Some) or forget (None) the profile of a device under this kernel name.
    pub fn set_profile(
        &mut self,
        major: u32,
        minor: u32,
        name: &str,
        profile: Option<Arc<DeviceProfile>>,
    ) {
        match profile {
            Some(p) => {
                self.profiles.insert((major, minor), (name.to_string(), p));
            }
            None => {
                self.profiles.remove(&(major, minor));
            }
        }
    }

    /// Which profile each selected device with one is judged against, one line each
    /// ("sda: judged against the model profile of '…', swept on host-a 2026-11-20"), by name.
    pub fn judged(&self) -> Vec<String> {
        let mut out: Vec<(String, String)> = self
            .profiles
            .iter()
            .filter_map(|(&(major, minor), (name, p))| {
                let meta = match self.metas.get(&(major, minor)) {
                    Some((n, m)) if n == name => m.clone(),
                    _ => DeviceMeta {
                        kind: None,
                        display_name: name.clone(),
                    },
                };
                self.sel.selects(major, name, &meta).then(|| {
                    (
                        meta.display_name.clone(),
                        format!(
                            "{}: judged against {}",
                            meta.display_name,
                            p.judged_against()
                        ),
                    )
                })
            })
            .collect();
        out.sort();
        out.into_iter().map(|(_, l)| l).collect()
    }

    /// Does any selected device have a profile? (The text legend then explains sat/load.)
    pub fn has_profiles(&self) -> bool {
        self.profiles.iter().any(|(&(major, minor), (name, _))| {
            let meta = match self.metas.get(&(major, minor)) {
                Some((n, m)) if n == name => m.clone(),
                _ => DeviceMeta {
                    kind: None,
                    display_name: name.clone(),
                },
            };
            self.sel.selects(major, name, &meta)
        })
    }

    /// Is there metadata for this device under this kernel name?
    pub fn has_meta(&self, major: u32, minor: u32, name: &str) -> bool {
        self.metas
            .get(&(major, minor))
            .is_some_and(|(n, _)| n == name)
    }

    /// The metadata of a device, or what can be said without sysfs.
    pub fn meta(&self, l: &DiskStatLine) -> DeviceMeta {
        match self.metas.get(&(l.major, l.minor)) {
            Some((n, m)) if *n == l.name => m.clone(),
            _ => DeviceMeta {
                kind: None,
                display_name: l.name.clone(),
            },
        }
    }

    /// The time since boot when the next sample is read: the since-boot report divides by
    /// it, as iostat divides by /proc/uptime (which counts suspended time; the monotonic
    /// clock does not, and with --proc-root it is another system's clock). Without it, the
    /// sample's monotonic time is taken (recordings made before `U` lines).
    pub fn set_uptime(&mut self, ns: u64) {
        self.uptime_ns = Some(ns);
    }

    /// A new run starts (a recording appended by another invocation): forget the previous
    /// sample so that no interval spans the gap.
    pub fn new_run(&mut self) {
        self.prev = None;
        self.prev_cpu = None;
        self.recorded_caps.clear();
    }

    /// The CPU times read with the next sample (for its interval's avg-cpu).
    pub fn set_cpu(&mut self, c: CpuTimes) {
        self.next_cpu = Some(c);
    }

    fn is_selected(&self, l: &DiskStatLine) -> bool {
        match self.metas.get(&(l.major, l.minor)) {
            Some((n, m)) if *n == l.name => self.sel.selects(l.major, &l.name, m),
            _ => self.sel.selects(
                l.major,
                &l.name,
                &DeviceMeta {
                    kind: None,
                    display_name: l.name.clone(),
                },
            ),
        }
    }

    /// The first pattern that names no device of the sample, if any.
    pub fn unmatched_pattern(&self, s: &DiskSample) -> Option<String> {
        let metas: Vec<DeviceMeta> = s.lines.iter().map(|l| self.meta(l)).collect();
        let devs: Vec<(u32, &str, &DeviceMeta)> = s
            .lines
            .iter()
            .zip(&metas)
            .map(|(l, m)| (l.major, l.name.as_str(), m))
            .collect();
        self.sel.unmatched(&devs).map(str::to_string)
    }

    fn row(
        &self,
        l: &DiskStatLine,
        delta: Result<DiskDelta, NoValue>,
        cpus_busy: Option<bool>,
    ) -> DeviceRow {
        let wrapped = delta.as_ref().map_or(0, |d| d.wrapped_fields);
        let meta = self.meta(l);
        let profile = match self.profiles.get(&(l.major, l.minor)) {
            Some((n, p)) if *n == l.name => Some(Arc::clone(p)),
            _ => None,
        };
        DeviceRow {
            major: l.major,
            minor: l.minor,
            kernel_name: l.name.clone(),
            cap: self.cap_of(l, &meta, profile.as_deref()),
            meta,
            rates: delta.map(|d| DiskRates::from_delta(&d)),
            wrapped_ms_fields: wrapped,
            profile,
            latency: None,
            learned: None,
            judged_as: None,
            aws: None,
            burst: None,
            cgroups: None,
            cpus_busy,
            size_notes_held: self
                .size_notes
                .get(&(l.major, l.minor))
                .copied()
                .unwrap_or_default(),
        }
    }

    /// Feed the next sample; returns the report for the interval it closes (None for the
    /// first sample unless since-boot was asked, or when time did not advance).
    pub fn push(&mut self, cur: DiskSample) -> Option<IntervalReport> {
        let cur_cpu = self.next_cpu.take();
        let report = match self.prev.take() {
            None if self.since_boot => {
                self.since_boot = false;
                let up_ns = self.uptime_ns.take().unwrap_or(cur.mono_ns);
                let devices = cur
                    .lines
                    .iter()
                    .filter(|l| self.is_selected(l))
                    .map(|l| {
                        let d = DiskDelta::between_why(&zero_like(l), l, up_ns);
                        // Since boot: no interval's CPUs to speak of.
                        self.row(l, d, None)
                    })
                    .collect();
                Some(IntervalReport {
                    // The interval is the time since boot, whatever clock the samples use.
                    start_mono_ns: 0,
                    end_mono_ns: up_ns,
                    start_wall_ns: cur.wall_ns - up_ns as i64,
                    end_wall_ns: cur.wall_ns,
                    since_boot: true,
                    devices,
                    cpu: cur_cpu.and_then(|c| AvgCpu::between(&CpuTimes::default(), &c)),
                })
            }
            None => None,
            Some(prev) if cur.mono_ns <= prev.mono_ns => {
                // Time did not advance (a duplicate sample): keep the older one as the base. A
                // sample older than its base never gets here: the replay (monitor::replay)
                // starts a new run before it, with a warning.
                self.prev = Some(prev);
                return None;
            }
            Some(prev) => {
                let dt = cur.mono_ns - prev.mono_ns;
                let cpu = match (&self.prev_cpu, &cur_cpu) {
                    (Some(a), Some(b)) => AvgCpu::between(a, b),
                    _ => None,
                };
                let busy = cpu.as_ref().map(AvgCpu::busy);
                let mut devices = Vec::with_capacity(self.last_rows);
                for (i, l) in cur.lines.iter().enumerate() {
                    if !self.is_selected(l) {
                        continue;
                    }
                    // The kernel lists devices in a stable order: try the same position first.
                    let p = prev
                        .lines
                        .get(i)
                        .filter(|p| p.major == l.major && p.minor == l.minor)
                        .or_else(|| prev.find(l.major, l.minor));
                    let d = match p {
                        Some(p) if p.name == l.name => DiskDelta::between_why(p, l, dt),
                        _ => Err(NoValue::NewDevice),
                    };
                    devices.push(self.row(l, d, busy));
                }
                self.last_rows = devices.len();
                Some(IntervalReport {
                    start_mono_ns: prev.mono_ns,
                    end_mono_ns: cur.mono_ns,
                    start_wall_ns: prev.wall_ns,
                    end_wall_ns: cur.wall_ns,
                    since_boot: false,
                    devices,
                    cpu,
                })
            }
        };
        self.prev = Some(cur);
        self.prev_cpu = cur_cpu;
        // Remember which size notes each device showed, for the next interval's hysteresis.
        for d in report.iter().flat_map(|r| &r.devices) {
            let shown = d.saturation().map(|s| s.size_notes).unwrap_or_default();
            self.size_notes.insert((d.major, d.minor), shown);
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::device::DevKind;
    use crate::sys::diskstats::parse;

    fn sample(mono_ns: u64, text: &str) -> DiskSample {
        DiskSample {
            mono_ns,
            wall_ns: 1_700_000_000_000_000_000 + mono_ns as i64,
            lines: parse(text).lines,
        }
    }

    fn engine() -> StatEngine {
        let mut e = StatEngine::new(Selection::default(), false);
        let disk = |n: &str| DeviceMeta {
            kind: Some(DevKind::Disk),
            display_name: n.into(),
        };
        e.set_meta(8, 0, "sda", disk("sda"));
        e.set_meta(8, 16, "sdb", disk("sdb"));
        e.set_meta(
            8,
            1,
            "sda1",
            DeviceMeta {
                kind: Some(DevKind::Partition),
                display_name: "sda1".into(),
            },
        );
        e
    }

    #[test]
    fn first_sample_gives_no_report_then_measured_interval() {
        let mut e = engine();
        assert!(e
            .push(sample(
                1_000_000_000,
                "8 0 sda 10 0 80 5 0 0 0 0 0 5 5\n8 1 sda1 10 0 80 5 0 0 0 0 0 5 5\n"
            ))
            .is_none());
        let r = e
            .push(sample(
                1_500_000_000,
                "8 0 sda 60 0 480 30 0 0 0 0 0 30 30\n8 1 sda1 60 0 480 30 0 0 0 0 0 30 30\n",
            ))
            .unwrap();
        assert_eq!(r.interval_s(), 0.5);
        assert_eq!(r.devices.len(), 1, "partition not shown by default");
        let rates = r.devices[0].rates.as_ref().unwrap();
        assert_eq!(rates.r_s, 100.0);
        assert_eq!(rates.r_await, Some(0.5));
    }

    /// Each row of an interval carries whether its CPUs were busy (sys::sched::AvgCpu::busy:
    /// under 5 % idle, or a tenth stolen), for every judgement to say so; nothing when the
    /// interval's CPU times are not known.
    #[test]
    fn rows_carry_whether_the_intervals_cpus_were_busy() {
        let cpu = |user: u64, idle: u64, steal: u64| CpuTimes {
            user,
            idle,
            steal,
            ..CpuTimes::default()
        };
        let rows = |a: Option<CpuTimes>, b: Option<CpuTimes>| {
            let mut e = engine();
            if let Some(c) = a {
                e.set_cpu(c);
            }
            e.push(sample(1_000_000_000, "8 0 sda 10 0 80 5 0 0 0 0 0 5 5\n"));
            if let Some(c) = b {
                e.set_cpu(c);
            }
            let r = e
                .push(sample(
                    2_000_000_000,
                    "8 0 sda 60 0 480 30 0 0 0 0 0 30 30\n",
                ))
                .unwrap();
            r.devices[0].cpus_busy
        };
        let start = cpu(1000, 1000, 0);
        assert_eq!(rows(Some(start), Some(cpu(1197, 1003, 0))), Some(true));
        assert_eq!(rows(Some(start), Some(cpu(1160, 1010, 30))), Some(true));
        assert_eq!(rows(Some(start), Some(cpu(1100, 1100, 0))), Some(false));
        assert_eq!(rows(None, Some(cpu(1197, 1003, 0))), None);
        assert_eq!(rows(None, None), None);
    }

    #[test]
    fn since_boot_report_divides_by_uptime() {
        let mut e = StatEngine::new(Selection::default(), true);
        e.set_meta(
            8,
            0,
            "sda",
            DeviceMeta {
                kind: Some(DevKind::Disk),
                display_name: "sda".into(),
            },
        );
        let r = e
            .push(sample(
                10_000_000_000,
                "8 0 sda 100 0 800 50 0 0 0 0 0 40 50\n",
            ))
            .unwrap();
        assert!(r.since_boot);
        let rates = r.devices[0].rates.as_ref().unwrap();
        assert_eq!(rates.r_s, 10.0);
        assert_eq!(rates.util_pct, 0.4);
        assert!(e
            .push(sample(
                11_000_000_000,
                "8 0 sda 100 0 800 50 0 0 0 0 0 40 50\n"
            ))
            .is_some());
        // With /proc/uptime (20 s: 10 s of it suspended), iostat's divisor, not the clock's.
        let mut e = StatEngine::new(Selection::default(), true);
        e.set_uptime(20_000_000_000);
        let r = e
            .push(sample(
                10_000_000_000,
                "8 0 sda 100 0 800 50 0 0 0 0 0 40 50\n",
            ))
            .unwrap();
        assert_eq!(r.interval_s(), 20.0);
        let rates = r.devices[0].rates.as_ref().unwrap();
        assert_eq!(rates.r_s, 5.0);
        assert_eq!(rates.util_pct, 0.2);
    }

    #[test]
    fn appearing_disappearing_and_backwards() {
        let mut e = engine();
        e.push(sample(1_000_000_000, "8 0 sda 10 0 80 5 0 0 0 0 0 5 5\n"));
        let r = e
            .push(sample(
                2_000_000_000,
                "8 0 sda 5 0 80 5 0 0 0 0 0 5 5\n8 16 sdb 1 0 8 1 0 0 0 0 0 1 1\n",
            ))
            .unwrap();
        assert_eq!(r.devices[0].rates, Err(NoValue::CounterWentBackwards));
        assert_eq!(r.devices[1].rates, Err(NoValue::NewDevice));
        let r = e
            .push(sample(3_000_000_000, "8 16 sdb 3 0 24 2 0 0 0 0 0 2 2\n"))
            .unwrap();
        assert_eq!(r.devices.len(), 1);
        assert_eq!(r.devices[0].rates.as_ref().unwrap().r_s, 2.0);
    }

    #[test]
    fn duplicate_timestamp_is_skipped() {
        let mut e = engine();
        e.push(sample(1_000_000_000, "8 0 sda 10 0 80 5 0 0 0 0 0 5 5\n"));
        assert!(e
            .push(sample(1_000_000_000, "8 0 sda 11 0 80 5 0 0 0 0 0 5 5\n"))
            .is_none());
        let r = e
            .push(sample(2_000_000_000, "8 0 sda 12 0 80 5 0 0 0 0 0 5 5\n"))
            .unwrap();
        assert_eq!(r.devices[0].rates.as_ref().unwrap().r_s, 2.0);
    }
}
