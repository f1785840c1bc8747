//! The Prometheus exposition of one scrape, as families fed to a [`Sink`] (the text format 0.0.4
//! here, the protobuf one in proto.rs): a [`Scrape`] (raw diskstats lines
//! with their `*_ms` totals wrap-extended, device identity, in-flight split, profiles,
//! block-latency histograms, collector health) in, bytes out. Pure: no IO, no clock. Also the
//! per-device state that extends the kernel's 32-bit ms fields across scrapes ([`WrapExtender`]),
//! with the proof `monitor::DiskDelta::between` uses.
//! Must not import: cli/, config/, cmd/, ui/, report/, load/, fsync/, import/.

use crate::analysis::state::{Basis, Dir, DirJudgement, Judgement, NoHeadroom, State};
use crate::monitor::DiskDelta;
use crate::profile::DeviceProfile;
use crate::sys::device::DevKind;
use crate::sys::diskstats::DiskStatLine;
use crate::sys::inflight::InFlight;
use crate::units::ns_to_s;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

/// The content type of the classic text format, exactly (Prometheus 3 rejects others).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Sectors in /proc/diskstats are always 512 bytes (Documentation/admin-guide/iostats.rst).
const SECTOR_BYTES: u64 = 512;

/// What identifies a device to a person (the `iosat_disk_info` labels).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Identity {
    /// The name users know it by (dm name, md array name), else the kernel name.
    pub display_name: String,
    pub kind: Option<DevKind>,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub wwid: Option<String>,
    pub rotational: Option<bool>,
    pub scheduler: Option<String>,
    pub write_cache: Option<String>,
    /// The id its profile is (or would be) saved under.
    pub profile_id: Option<String>,
    /// The physical disk(s) its requests end on (sys::topology): itself for a whole disk.
    pub disks: Vec<String>,
}

/// One selected device at scrape time.
#[derive(Debug, Clone)]
pub struct DeviceScrape {
    /// The diskstats line with its `*_ms` fields wrap-extended ([`WrapExtender`]).
    pub line: DiskStatLine,
    pub identity: Identity,
    /// `/sys/block/<dev>/inflight`; None when the file is missing.
    pub in_flight: Option<InFlight>,
    pub profile: Option<Arc<DeviceProfile>>,
    /// The block-layer latency histograms (the BPF source), cumulative, when it is attached
    /// and the device has completed a request since.
    pub latency: Option<crate::sys::bpf::DevHists>,
    /// What production learning (learn/) says of the latest interval it learned from (one a
    /// second, scrape::Scraper::tick): None with `--no-learn`, before the first interval,
    /// or for a device not selected.
    pub learned: Option<Arc<crate::learn::Learned>>,
    /// The device's one judgement of the latest interval learned from (monitor::judge):
    /// the states, ratios and headroom served; None before the first interval and with
    /// `--no-learn` (no interval is computed then).
    pub judgement: Option<crate::analysis::state::Judgement>,
    /// The cap declared for the device (issue 42): the command line's, else its profile's.
    pub cap: Option<crate::analysis::declared::DeclaredCap>,
    /// The latest interval against each figure of it (empty before the first interval).
    pub cap_uses: Vec<crate::analysis::declared::CapUse>,
    /// The device's own AWS statistics (an EBS volume or instance storage; issue 42).
    pub aws: Option<std::sync::Arc<crate::monitor::aws::AwsInterval>>,
    /// The short windows since the last scrape (issue 41; `--burst-window`), when read.
    pub burst: Option<crate::monitor::burst::ScrapeBurst>,
    /// Who loads the device (issue 40; `--cgroups`): its cgroups' sums since the exporter
    /// started and the latest interval's shares and roles (exporter::cgroups).
    pub cgroups: Option<super::cgroups::DevCg>,
}

/// How one collector of the scrape went (node_exporter's `_scrape_collector_*`).
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    pub collector: &'static str,
    pub success: bool,
    pub duration_s: f64,
}

/// Everything one `/metrics` response says.
/// The hindsight ring's self-metrics (issue 41).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HindsightFigures {
    pub dumps: u64,
    pub held_bytes: usize,
    /// Samples held now.
    pub samples: usize,
    /// Samples dropped before their span was over (the byte cap).
    pub dropped: u64,
    /// How long the last dump took to render and write, s.
    pub last_dump_s: Option<f64>,
}

#[derive(Debug, Clone, Default)]
pub struct Scrape {
    pub devices: Vec<DeviceScrape>,
    pub health: Vec<Health>,
    /// Completions the block-latency program dropped for want of a device slot; None when
    /// the source is not attached.
    pub blk_dropped: Option<u64>,
    /// Hindsight (issue 41): the ring's figures; None when it is off.
    pub hindsight: Option<HindsightFigures>,
    /// The `iosat_build_info` labels; None leaves the family out (the server sets it: a
    /// fixture's exposition does not change with each commit).
    pub build: Option<BuildInfo>,
    /// With `--cgroups` (issue 40): the completions charged to no cgroup for want of room in
    /// the kernel's map; None leaves the `iosat_cgroup_disk_*` families out.
    pub cgroup_unattributed: Option<u64>,
    /// With `--cgroups`: each cgroup's `io.pressure` stall time since the exporter started,
    /// seconds (cgroup label, some, full); cgroup v2 only.
    pub cgroup_pressure: Vec<(String, f64, Option<f64>)>,
}

/// What the running binary was built from (crate::build), as `iosat_build_info` labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildInfo {
    pub version: &'static str,
    pub commit: &'static str,
    pub rustc: &'static str,
    pub target: &'static str,
    pub profile: &'static str,
}

impl BuildInfo {
    /// This binary's.
    pub const THIS: BuildInfo = BuildInfo {
        version: crate::build::VERSION,
        commit: crate::build::COMMIT,
        rustc: crate::build::RUSTC,
        target: crate::build::TARGET,
        profile: crate::build::PROFILE,
    };

    /// The label pairs, in exposition order.
    pub fn labels(&self) -> [(&'static str, &'static str); 5] {
        [
            ("version", self.version),
            ("commit", self.commit),
            ("rustc", self.rustc),
            ("target", self.target),
            ("profile", self.profile),
        ]
    }
}

/// `iosat_build_info`'s HELP.
pub const BUILD_INFO_HELP: &str = "The build of iosat serving these metrics, always 1: its \
version, the commit it was built from (unknown outside a git checkout), the compiler, target and \
profile.";

/// The `op` label of a profile: the direction it was measured in (a mixed sweep's profile is
/// saved and served as the read one, as profile/ files it).
pub fn profile_op(p: &DeviceProfile) -> &'static str {
    match p.direction {
        crate::profile::Direction::Write => "write",
        crate::profile::Direction::Read | crate::profile::Direction::Mixed => "read",
    }
}

/// Extends the kernel's 32-bit `*_ms` fields into 64-bit totals across scrapes, per device
/// (major:minor and name, so a re-created device starts afresh). Between two scrapes the
/// advance is `DiskDelta::between`'s, which counts a backwards ms field as a wrap only when it
/// can prove it (every count advanced, the wrapped advance fits the interval); anything else
/// is a reset, and the totals restart from the raw values (Prometheus sees a reset, as it
/// should).
#[derive(Debug, Default)]
pub struct WrapExtender {
    devs: HashMap<(u32, u32, String), Prev>,
}

#[derive(Debug)]
struct Prev {
    raw: DiskStatLine,
    extended: DiskStatLine,
    mono_ns: u64,
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(a? + b?)
}

impl WrapExtender {
    /// The line with its ms fields extended, given the monotonic time of its read.
    pub fn extend(&mut self, cur: &DiskStatLine, mono_ns: u64) -> DiskStatLine {
        let key = (cur.major, cur.minor, cur.name.clone());
        let delta = self.devs.get(&key).and_then(|p| {
            let dt = mono_ns.checked_sub(p.mono_ns)?;
            Some((p, DiskDelta::between(&p.raw, cur, dt)?))
        });
        let extended = match delta {
            Some((p, d)) => {
                let e = &p.extended;
                DiskStatLine {
                    read_ms: e.read_ms + d.read_ms,
                    write_ms: e.write_ms + d.write_ms,
                    io_ms: e.io_ms + d.io_ms,
                    weighted_ms: e.weighted_ms + d.weighted_ms,
                    discard_ms: add(e.discard_ms, d.discard_ms),
                    flush_ms: add(e.flush_ms, d.flush_ms),
                    ..cur.clone()
                }
            }
            None => cur.clone(),
        };
        self.devs.insert(
            key,
            Prev {
                raw: cur.clone(),
                extended: extended.clone(),
                mono_ns,
            },
        );
        extended
    }

    /// Forget devices not in `present` (removed devices keep no state).
    pub fn retain(&mut self, present: &std::collections::HashSet<(u32, u32, String)>) {
        self.devs.retain(|k, _| present.contains(k));
    }
}

/// `v` as a label value of the text format, written onto `out`: backslash, double quote and
/// newline escaped. Nothing allocated, and a value with nothing to escape (nearly every one)
/// copied after one scan: three `str::replace` per label value (three allocations and
/// scans, then a `write!`) were most of a scrape's CPU (callgrind of 20 scrapes of 1,000
/// devices: `Text::labelled` 63 % of the exporter's instructions, the replaces' searches 14 %).
fn push_escaped(out: &mut String, v: &str) {
    if !v.bytes().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
        out.push_str(v);
        return;
    }
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// " `value`\n" as `{value}` writes it (Rust's shortest decimal, never an exponent), whole
/// numbers by integer formatting: most samples are counts, 0s and 1s, and the float path
/// was a tenth of a scrape's instructions. -0 keeps its sign ("-0"), as `{value}` writes it.
fn push_value(out: &mut String, value: f64) {
    out.push(' ');
    if value.fract() == 0.0 && value.abs() < 1e15 && !(value == 0.0 && value.is_sign_negative()) {
        out.push_str(itoa::Buffer::new().format(value as i64));
    } else {
        let _ = write!(out, "{value}");
    }
    out.push('\n');
}

/// Where a scrape's families go: the text format here ([`Text`]), the protobuf one in
/// exporter::proto. Families are opened in order; each sample belongs to the last one opened.
pub trait Sink {
    fn family(&mut self, name: &str, kind: &str, help: &str);
    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64);
    /// One histogram of the block-latency source (cumulative, as read).
    fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &crate::sys::bpf::RawHist);
}

/// The text format (0.0.4).
pub struct Text(pub String);

impl Text {
    fn labelled(&mut self, name: &str, labels: &[(&str, &str)], extra: Option<(&str, &str)>) {
        self.0.push_str(name);
        if !labels.is_empty() || extra.is_some() {
            self.0.push('{');
            for (i, (k, v)) in labels.iter().chain(extra.as_ref()).enumerate() {
                if i > 0 {
                    self.0.push(',');
                }
                self.0.push_str(k);
                self.0.push_str("=\"");
                push_escaped(&mut self.0, v);
                self.0.push('"');
            }
            self.0.push('}');
        }
    }
}

impl Sink for Text {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.labelled(name, labels, None);
        push_value(&mut self.0, value);
    }

    fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &crate::sys::bpf::RawHist) {
        let bucket = format!("{name}_bucket");
        for (le, n) in crate::monitor::blklat::power_of_two_buckets(h) {
            self.labelled(&bucket, labels, Some(("le", &le.to_string())));
            let _ = writeln!(self.0, " {n}");
        }
        let count: u64 = h.buckets.iter().sum();
        self.labelled(&bucket, labels, Some(("le", "+Inf")));
        let _ = writeln!(self.0, " {count}");
        self.sample(&format!("{name}_sum"), labels, h.sum_ns as f64 / 1e9);
        self.sample(&format!("{name}_count"), labels, count as f64);
    }
}

/// A per-op counter of the diskstats line (None: the kernel has no such field).
type OpGet = fn(&DiskStatLine) -> Option<f64>;
/// A metric family: name, HELP text, and how to get its value(s).
type Family<G> = (&'static str, &'static str, G);
type LineGet = fn(&DiskStatLine) -> f64;
type ProfileGet = fn(&DeviceProfile) -> Option<f64>;

fn ms_s(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

fn bytes(sectors: u64) -> f64 {
    (sectors * SECTOR_BYTES) as f64
}

/// The per-op counter families: name, HELP, and the value per op.
const OP_COUNTERS: &[Family<&[(&str, OpGet)]>] = &[
    (
        "iosat_disk_requests_completed_total",
        "Requests completed, by operation (diskstats fields 1, 5, 12, 15).",
        &[
            ("read", |l| Some(l.reads as f64)),
            ("write", |l| Some(l.writes as f64)),
            ("discard", |l| l.discards.map(|v| v as f64)),
            ("flush", |l| l.flushes.map(|v| v as f64)),
        ],
    ),
    (
        "iosat_disk_requests_merged_total",
        "Adjacent requests merged into one before issue, by operation (diskstats fields 2, 6, 13).",
        &[
            ("read", |l| Some(l.reads_merged as f64)),
            ("write", |l| Some(l.writes_merged as f64)),
            ("discard", |l| l.discards_merged.map(|v| v as f64)),
        ],
    ),
    (
        "iosat_disk_bytes_total",
        "Bytes transferred (discards: bytes discarded), by operation; diskstats sectors x 512.",
        &[
            ("read", |l| Some(bytes(l.read_sectors))),
            ("write", |l| Some(bytes(l.write_sectors))),
            ("discard", |l| l.discard_sectors.map(bytes)),
        ],
    ),
    (
        "iosat_disk_request_time_seconds_total",
        "Sum of the time each completed request of this operation spent from issue to \
completion (diskstats fields 4, 8, 14, 17, extended past the kernel's 32-bit wrap). Its rate is \
the mean number of such requests in flight (Little's law); divided by the rate of completed \
requests, their mean latency.",
        &[
            ("read", |l| Some(ms_s(l.read_ms))),
            ("write", |l| Some(ms_s(l.write_ms))),
            ("discard", |l| l.discard_ms.map(ms_s)),
            ("flush", |l| l.flush_ms.map(ms_s)),
        ],
    ),
];

fn kind_str(k: Option<DevKind>) -> &'static str {
    k.map_or("unknown", DevKind::as_str)
}

/// The text exposition of one scrape.
pub fn render(s: &Scrape) -> String {
    let mut o = Text(String::with_capacity(1024 + s.devices.len() * 3000));
    render_into(&mut o, s);
    o.0
}

/// Every family of one scrape into `o`, in exposition order.
pub fn render_into(o: &mut dyn Sink, s: &Scrape) {
    o.family(
        "iosat_disk_info",
        "gauge",
        "Device identity, always 1: kernel name, the name users know it by, kind, model, \
serial, wwid, rotational, I/O scheduler, write cache mode and the id its profile is saved under.",
    );
    for d in &s.devices {
        let i = &d.identity;
        let opt = |v: &Option<String>| v.clone().unwrap_or_default();
        let dev_t = format!("{}:{}", d.line.major, d.line.minor);
        let rot = match i.rotational {
            Some(true) => "1",
            Some(false) => "0",
            None => "",
        };
        o.sample(
            "iosat_disk_info",
            &[
                ("device", &d.line.name),
                ("name", &i.display_name),
                ("kind", kind_str(i.kind)),
                ("dev", &dev_t),
                ("model", &opt(&i.model)),
                ("serial", &opt(&i.serial)),
                ("wwid", &opt(&i.wwid)),
                ("rotational", rot),
                ("scheduler", &opt(&i.scheduler)),
                ("write_cache", &opt(&i.write_cache)),
                ("profile_id", &opt(&i.profile_id)),
            ],
            1.0,
        );
    }
    render_physical(o, s);
    for (name, help, ops) in OP_COUNTERS {
        o.family(name, "counter", help);
        for d in &s.devices {
            for (op, get) in *ops {
                if let Some(v) = get(&d.line) {
                    o.sample(name, &[("device", &d.line.name), ("op", op)], v);
                }
            }
        }
    }
    let per_device: [Family<LineGet>; 2] = [
        (
            "iosat_disk_busy_time_seconds_total",
            "Time with at least one request in flight (io_ticks, diskstats field 10, extended \
past the 32-bit wrap): the basis of %util. Not a capacity measure on devices that serve \
requests in parallel (NVMe, SSD, RAID, cloud volumes): one request at a time all the time is \
100 %, and so are 64.",
            |l| ms_s(l.io_ms),
        ),
        (
            "iosat_disk_weighted_time_seconds_total",
            "Request time summed over all requests in flight (diskstats field 11, extended past \
the 32-bit wrap): its rate is aqu-sz, the mean queue length of all operations together.",
            |l| ms_s(l.weighted_ms),
        ),
    ];
    for (name, help, get) in per_device {
        o.family(name, "counter", help);
        for d in &s.devices {
            o.sample(name, &[("device", &d.line.name)], get(&d.line));
        }
    }
    o.family(
        "iosat_disk_in_flight_requests",
        "gauge",
        "Requests in flight now, by direction (/sys/block/<dev>/inflight; discards count as \
writes, flushes are not counted).",
    );
    for d in &s.devices {
        if let Some(f) = d.in_flight {
            let dev = &d.line.name;
            o.sample(
                "iosat_disk_in_flight_requests",
                &[("device", dev), ("op", "read")],
                f.reads as f64,
            );
            o.sample(
                "iosat_disk_in_flight_requests",
                &[("device", dev), ("op", "write")],
                f.writes as f64,
            );
        }
    }
    render_profiles(o, s);
    render_judgement(o, s);
    super::caps::render(o, s);
    render_changes(o, s);
    render_latency(o, s);
    super::split::render(o, s);
    super::burst::render(o, s);
    super::cgroups::render(o, s);
    if let Some(n) = s.blk_dropped {
        let name = "iosat_block_latency_dropped_completions_total";
        o.family(
            name,
            "counter",
            "Completions the block-latency program counted in no histogram because every device \
slot was taken (slots of devices gone from diskstats are freed).",
        );
        o.sample(name, &[], n as f64);
    }
    render_hindsight(o, s);
    if let Some(b) = &s.build {
        o.family("iosat_build_info", "gauge", BUILD_INFO_HELP);
        o.sample("iosat_build_info", &b.labels(), 1.0);
    }
    render_health(o, s);
}

/// The hindsight ring (issue 41): its dumps, what it holds and what it dropped.
fn render_hindsight(o: &mut dyn Sink, s: &Scrape) {
    let Some(h) = s.hindsight else {
        return;
    };
    let name = "iosat_hindsight_dumps_total";
    o.family(
        name,
        "counter",
        "Hindsight dumps written since the exporter started (a device turned overloaded, \
SIGUSR1 or POST /hindsight); each is named on stderr.",
    );
    o.sample(name, &[], h.dumps as f64);
    let name = "iosat_hindsight_held_bytes";
    o.family(
        name,
        "gauge",
        "Bytes of samples the hindsight ring holds (at most --hindsight-max-mb).",
    );
    o.sample(name, &[], h.held_bytes as f64);
    let name = "iosat_hindsight_held_samples";
    o.family(
        name,
        "gauge",
        "Samples the hindsight ring holds (one per --hindsight-interval over the \
--hindsight span, fewer while it fills or when the byte cap holds).",
    );
    o.sample(name, &[], h.samples as f64);
    let name = "iosat_hindsight_dropped_samples_total";
    o.family(
        name,
        "counter",
        "Samples the hindsight ring dropped before their span was over, to stay within \
--hindsight-max-mb.",
    );
    o.sample(name, &[], h.dropped as f64);
    if let Some(secs) = h.last_dump_s {
        let name = "iosat_hindsight_last_dump_duration_seconds";
        o.family(
            name,
            "gauge",
            "How long the last hindsight dump took to render, write and sync.",
        );
        o.sample(name, &[], secs);
    }
}

/// Each collector's part of the scrape: whether it succeeded, and how long it took.
fn render_health(o: &mut dyn Sink, s: &Scrape) {
    o.family(
        "iosat_scrape_collector_success",
        "gauge",
        "1 when this collector's part of the scrape succeeded, 0 when it failed or missed its deadline.",
    );
    for h in &s.health {
        o.sample(
            "iosat_scrape_collector_success",
            &[("collector", h.collector)],
            if h.success { 1.0 } else { 0.0 },
        );
    }
    o.family(
        "iosat_scrape_collector_duration_seconds",
        "gauge",
        "How long this collector's part of the scrape took.",
    );
    for h in &s.health {
        o.sample(
            "iosat_scrape_collector_duration_seconds",
            &[("collector", h.collector)],
            h.duration_s,
        );
    }
}

/// Each device's physical disk(s), so that rules alert once per physical disk (the stacked
/// devices on a judged disk left out): one series per device and disk.
fn render_physical(o: &mut dyn Sink, s: &Scrape) {
    const NAME: &str = "iosat_disk_physical_info";
    o.family(
        NAME,
        "gauge",
        "The physical disk a device's requests end on, always 1: the device itself for a whole \
disk (stacked=\"false\"); for a partition its disk, for dm and md the disks beneath their \
members (/sys/block/*/slaves followed down), one series per disk (stacked=\"true\").",
    );
    for d in &s.devices {
        for disk in &d.identity.disks {
            let stacked = if *disk == d.line.name {
                "false"
            } else {
                "true"
            };
            o.sample(
                NAME,
                &[
                    ("device", &d.line.name),
                    ("disk", disk),
                    ("stacked", stacked),
                ],
                1.0,
            );
        }
    }
}

/// The block layer's per-request latency (the BPF source) as a Prometheus histogram per
/// device and op; absent (no HELP either) when the source is not attached.
fn render_latency(o: &mut dyn Sink, s: &Scrape) {
    const NAME: &str = "iosat_disk_request_duration_seconds";
    if s.devices.iter().all(|d| d.latency.is_none()) {
        return;
    }
    o.family(
        NAME,
        "histogram",
        "Block-layer time of each completed request, from its start (the start diskstats' \
*_ms fields count from) to its completion, per device and op (read, write, discard, flush); \
buckets at powers of two from 1.024 us, counted by iosat's BPF program.",
    );
    let ops = ["read", "write", "discard", "flush"];
    for d in &s.devices {
        let Some(l) = &d.latency else { continue };
        let dev = &d.line.name;
        for (op, h) in ops.iter().zip(&l.ops) {
            o.histogram(NAME, &[("device", dev), ("op", op)], h);
        }
    }
}

/// The profile gauges, per device and the direction the profile was measured in.
fn render_profiles(o: &mut dyn Sink, s: &Scrape) {
    // Each direction's profile: the read (or only) one and the write one saved beside it.
    let with: Vec<(&DeviceScrape, &DeviceProfile)> = s
        .devices
        .iter()
        .filter_map(|d| d.profile.as_deref().map(|p| (d, p)))
        .flat_map(|(d, p)| std::iter::once((d, p)).chain(p.write.as_deref().map(|w| (d, w))))
        .collect();
    o.family(
        "iosat_profile_info",
        "gauge",
        "The device profile (iosat sweep --save-profile) the gauges below come from, always 1: \
its id, the swept pattern and the direction it was measured in.",
    );
    for (d, p) in &with {
        o.sample(
            "iosat_profile_info",
            &[
                ("device", &d.line.name),
                ("op", profile_op(p)),
                ("profile_id", &p.id),
                ("pattern", &p.pattern),
            ],
            1.0,
        );
    }
    let gauges: [Family<ProfileGet>; 7] = [
        (
            "iosat_profile_baseline_latency_seconds",
            "Mean latency with one request in flight (the sweep's concurrency-1 level): the \
device's own baseline that saturation is measured against.",
            |p| Some(ns_to_s(p.baseline_latency_ns)),
        ),
        (
            "iosat_profile_baseline_p95_latency_seconds",
            "p95 latency with one request in flight: the reference of the 3x-p95 overload rule.",
            |p| p.baseline_p95_ns.map(ns_to_s),
        ),
        (
            "iosat_profile_knee_concurrency",
            "Requests in flight at the knee: the optimal concurrency, past which latency grows \
faster than throughput.",
            // None when the sweep did not reach the knee (only a lower bound).
            |p| {
                p.knee_at_least
                    .is_none()
                    .then(|| f64::from(p.knee_concurrency))
            },
        ),
        (
            "iosat_profile_overload_concurrency",
            "The first level of the sweep whose p95 passed 3x the baseline p95 (absent when no \
level was overloaded).",
            |p| p.overload_concurrency.map(f64::from),
        ),
        (
            "iosat_profile_max_useful_iops",
            "Requests per second measured at the knee: the most the device gives before \
queueing dominates.",
            |p| Some(p.max_useful_iops),
        ),
        (
            "iosat_profile_block_size_bytes",
            "The request size the profile was swept with: its baseline holds for this size.",
            |p| Some(p.block_size as f64),
        ),
        (
            "iosat_profile_measured_timestamp_seconds",
            "When the profile's sweep started (Unix time): a profile older than the device's \
last change no longer describes it.",
            |p| p.measured_unix_s.map(|t| t as f64),
        ),
    ];
    for (name, help, get) in gauges {
        o.family(name, "gauge", help);
        for (d, p) in &with {
            if let Some(v) = get(p) {
                o.sample(name, &[("device", &d.line.name), ("op", profile_op(p))], v);
            }
        }
    }
}

/// One device and direction's baseline and curve, whichever source gives it: a swept profile
/// (`source="sweep"`, taking precedence) else production learning (`source="learned"`).
struct Judged<'a> {
    device: &'a str,
    op: &'static str,
    source: &'static str,
    baseline_s: Option<f64>,
    baseline_p95_s: Option<f64>,
    /// The baseline's own device time (issue 40), seconds, when measured.
    baseline_device_s: Option<f64>,
    /// 95 % interval of the learned baseline (low, high), seconds.
    bounds_s: Option<[f64; 2]>,
    knee: Option<f64>,
    knee_at_least: Option<f64>,
    /// The levels the knee may be at (low, high), where learning gives a range.
    knee_range: Option<[f64; 2]>,
    max_iops: Option<f64>,
    headroom_iops: Option<f64>,
    /// How well the learned curve's fit (USL) explains its points: the curve's confidence.
    fit_r_squared: Option<f64>,
}

fn judged(s: &Scrape) -> Vec<Judged<'_>> {
    let mut out = Vec::new();
    for d in &s.devices {
        let device = d.line.name.as_str();
        // Per direction, the baseline its judgement rests on (monitor::judge: the swept
        // profile's for that direction, else the learned one): never a source chosen here,
        // so a legacy or mixed profile that judges the writes is served as their sweep.
        let basis = |op: Dir| d.judgement.as_ref().map(|j| j.dir(op).basis);
        let headroom = |op: Dir| d.judgement.as_ref()?.dir(op).headroom_iops;
        for op in Dir::ALL {
            let swept = d.profile.as_deref().and_then(|p| match op {
                Dir::Read => p.for_reads(),
                Dir::Write => p.for_writes(),
            });
            let swept = match basis(op) {
                Some(b) => swept.filter(|_| b == Basis::Swept),
                // Not judged (no learning): each profile under its own direction.
                None => d
                    .profile
                    .as_deref()
                    .into_iter()
                    .flat_map(|p| std::iter::once(p).chain(p.write.as_deref()))
                    .find(|p| profile_op(p) == op.as_str()),
            };
            if let Some(p) = swept {
                out.push(Judged {
                    device,
                    op: op.as_str(),
                    source: "sweep",
                    baseline_s: Some(ns_to_s(p.baseline_latency_ns)),
                    baseline_p95_s: p.baseline_p95_ns.map(ns_to_s),
                    baseline_device_s: p.baseline_device_ns.map(ns_to_s),
                    bounds_s: None,
                    knee: p
                        .knee_at_least
                        .is_none()
                        .then(|| f64::from(p.knee_concurrency)),
                    knee_at_least: p.knee_at_least.map(f64::from),
                    knee_range: None,
                    max_iops: Some(p.max_useful_iops),
                    headroom_iops: headroom(op),
                    fit_r_squared: None,
                });
                continue;
            }
            // Judged by learning, or not judged (Basis::None) while learning has only an
            // estimate's bounds, which it judges nothing by below 1.5x their upper end.
            let Some(b) = basis(op).filter(|b| *b != Basis::Swept) else {
                continue;
            };
            let Some(l) = learned_directions(d).into_iter().find(|l| {
                l.direction == Some(op)
                    && match b {
                        Basis::None => l.baseline_estimate.is_some(),
                        _ => l.judged_by().is_some(),
                    }
            }) else {
                continue;
            };
            // One size class's ceiling is no ceiling of requests that span classes (the
            // kernel sized them: learn/points.rs): not served as the device's, as its
            // headroom is not (issue 37).
            let max_iops = l.max_iops.filter(|_| !l.flags.spans_classes);
            // Without a baseline at about one in flight, the estimate (issue 37), under its
            // own source: its point (absent where only bounds are known) and the interval
            // where the single-request latency lies, whether or not it judged the interval.
            if let (None, Some(e)) = (l.baseline_latency_ns, l.baseline_estimate.as_deref()) {
                out.push(Judged {
                    device,
                    op: op.as_str(),
                    source: "learned_estimate",
                    baseline_s: e.latency_ns.map(ns_to_s),
                    baseline_p95_s: None,
                    baseline_device_s: None,
                    bounds_s: Some(e.interval_ns.map(ns_to_s)),
                    knee: None,
                    knee_at_least: l.knee_at_least,
                    knee_range: None,
                    max_iops,
                    headroom_iops: headroom(op),
                    fit_r_squared: None,
                });
                continue;
            }
            out.push(Judged {
                device,
                op: op.as_str(),
                source: "learned",
                baseline_s: l.baseline_latency_ns.map(ns_to_s),
                baseline_p95_s: l.baseline_p95_ns.map(ns_to_s),
                baseline_device_s: l.baseline_device_ns.map(ns_to_s),
                bounds_s: l
                    .baseline_interval_ns
                    .map(|[a, b]| [ns_to_s(a), ns_to_s(b)]),
                // As the knee's words say it (learn/estimate.rs): a knee whose range rises
                // above it ("knee at or above 1 in flight (1–17)": levels above it skipped
                // while the IOPS still grew, or tied with it) is a lower bound, and a gauge of
                // 1 "at the knee" would have the shipped load rule read 17 in flight as 17x
                // past it; one whose range ends at it ("at or below 8 (2–8)") is an upper
                // bound, which would read a load past the true knee as below it: the range
                // alone is served. A knee inside its range ("at 4 (2–8)") is the knee.
                knee: l
                    .knee_concurrency
                    .filter(|_| !rises_above(l) && !ends_at(l))
                    .map(f64::from),
                knee_at_least: l
                    .knee_at_least
                    .or_else(|| l.knee_concurrency.filter(|_| rises_above(l)).map(f64::from)),
                knee_range: l.knee_range.map(|[a, b]| [f64::from(a), f64::from(b)]),
                max_iops,
                headroom_iops: headroom(op),
                fit_r_squared: l.fit_r_squared,
            });
        }
    }
    out
}

/// A gauge family of (low, high) bounds per device, direction and source, `bound="low"` and
/// `bound="high"`, over the judged directions that have them (none: no family).
fn bound_family(
    o: &mut dyn Sink,
    name: &str,
    help: &str,
    j: &[Judged],
    get: fn(&Judged) -> Option<[f64; 2]>,
) {
    let rows: Vec<(&Judged, [f64; 2])> = j.iter().filter_map(|j| Some((j, get(j)?))).collect();
    if rows.is_empty() {
        return;
    }
    o.family(name, "gauge", help);
    for (j, [lo, hi]) in rows {
        for (b, v) in [("low", lo), ("high", hi)] {
            o.sample(
                name,
                &[
                    ("device", j.device),
                    ("op", j.op),
                    ("source", j.source),
                    ("bound", b),
                ],
                v,
            );
        }
    }
}

/// Whether a learned knee's range starts at the knee and rises above it (learn/estimate.rs's
/// "knee at or above k").
fn rises_above(l: &crate::learn::Learned) -> bool {
    matches!((l.knee_concurrency, l.knee_range), (Some(k), Some([a, b])) if a == k && b > k)
}

/// Whether a learned knee's range ends at the knee from below (learn/estimate.rs's "knee at
/// or below k").
fn ends_at(l: &crate::learn::Learned) -> bool {
    matches!((l.knee_concurrency, l.knee_range), (Some(k), Some([a, b])) if b == k && a < k)
}

/// Each direction's learned judgement of a device: reads and writes apart (learn's
/// `directions`), else the device's one judgement under its direction.
fn learned_directions(d: &DeviceScrape) -> Vec<&crate::learn::Learned> {
    match d.learned.as_deref() {
        None => vec![],
        Some(l) if l.directions.is_empty() => vec![l],
        Some(l) => l.directions.iter().collect(),
    }
}

type JudgedGet = fn(&Judged) -> Option<f64>;

/// A change of the device, or a swept profile the traffic disagrees with (learn/change.rs:
/// 2x apart at the baseline's level for 5 s), per device and direction while it is reported:
/// the baseline before (`side="from"`) and the traffic's latency at that level now
/// (`side="to"`), and when the evidence began. Absent while nothing changed.
fn render_changes(o: &mut dyn Sink, s: &Scrape) {
    let rows: Vec<(
        &str,
        &'static str,
        &'static str,
        &crate::analysis::state::Change,
    )> = judged_directions(s)
        .filter_map(|(dev, x)| {
            let source = match x.basis {
                crate::analysis::state::Basis::Swept => "sweep",
                _ => "learned",
            };
            Some((dev, x.dir.as_str(), source, x.flags.change.as_deref()?))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let name = "iosat_disk_change_latency_seconds";
    o.family(
        name,
        "gauge",
        "While a change of the device is reported (its latency at a queue of about one 2x away \
from the baseline for 5 s; source=\"sweep\": the swept profile disagrees with the traffic): \
the baseline, side=\"from\", and the traffic's mean latency at that level, side=\"to\".",
    );
    for (dev, op, source, c) in &rows {
        for (side, ns) in [("from", c.from_ns), ("to", c.to_ns)] {
            o.sample(
                name,
                &[
                    ("device", dev),
                    ("op", op),
                    ("source", source),
                    ("side", side),
                ],
                ns_to_s(ns),
            );
        }
    }
    let name = "iosat_disk_change_start_timestamp_seconds";
    o.family(
        name,
        "gauge",
        "When the evidence of the reported change began (Unix time).",
    );
    for (dev, op, source, c) in &rows {
        o.sample(
            name,
            &[("device", dev), ("op", op), ("source", source)],
            c.at_wall_ns as f64 / 1e9,
        );
    }
}

/// Every judged device's two directions with its name: what the per-direction families read.
fn judged_directions(s: &Scrape) -> impl Iterator<Item = (&str, &DirJudgement)> {
    s.devices.iter().flat_map(|d| {
        d.judgement
            .iter()
            .flat_map(|j| [&j.read, &j.write])
            .map(|x| (d.line.name.as_str(), x))
    })
}

/// Each direction's own state and ratio (`iosat_disk_state` is the worst of them), from the
/// device's judgement.
fn render_direction_states(o: &mut dyn Sink, s: &Scrape) {
    let rows: Vec<(&str, &DirJudgement)> = judged_directions(s).collect();
    if rows.is_empty() {
        return;
    }
    let name = "iosat_disk_op_state";
    o.family(
        name,
        "gauge",
        "Each direction's state in the latest second learned from, 1 for the current one \
and 0 for the others (the states of iosat_disk_state, which is the worst of them); a direction \
without I/O is idle.",
    );
    for (dev, x) in &rows {
        for st in State::ALL {
            let v = if x.state == st { 1.0 } else { 0.0 };
            o.sample(
                name,
                &[
                    ("device", dev),
                    ("op", x.dir.as_str()),
                    ("state", st.as_str()),
                ],
                v,
            );
        }
    }
    // Why a direction's headroom is held at 0 (analysis::state::NoHeadroom): the JSON's
    // `no_headroom`, the words' "0 (changed: ...)"; the headroom gauge alone cannot tell an
    // overload from a device judged by its ceiling before a change.
    let name = "iosat_disk_op_no_headroom";
    let held: Vec<&(&str, &DirJudgement)> = rows
        .iter()
        .filter(|(_, x)| x.headroom_iops.is_some())
        .collect();
    if !held.is_empty() {
        o.family(
            name,
            "gauge",
            "Why a direction's iosat_disk_headroom_iops is held at 0 whatever its IOPS, 1 for \
the reason and 0 for the others: saturated (more requests only wait longer), overloaded (past the \
target latency), slow (slower than its baseline without load: what it can take is not known), \
changed (the device changed and is judged by its ceiling before the change); all 0 while the \
headroom is the ceiling less the IOPS (absent without a headroom).",
        );
        for (dev, x) in held {
            for why in NoHeadroom::ALL {
                let v = if x.no_headroom == Some(why) { 1.0 } else { 0.0 };
                o.sample(
                    name,
                    &[
                        ("device", dev),
                        ("op", x.dir.as_str()),
                        ("reason", why.as_str()),
                    ],
                    v,
                );
            }
        }
    }
    // What each judgement cannot claim (analysis::state::Flags: the JSON's flags, the
    // words' "[estimate]", "[busy CPUs]"), served 0 or 1 for every direction judged by a
    // baseline or left unjudged for a reason: an alert on a host whose CPUs had no idle time
    // can say that the machine may own part of the latency (issue 37).
    let flagged: Vec<&(&str, &DirJudgement)> = rows
        .iter()
        .filter(|(_, x)| x.basis != crate::analysis::state::Basis::None || x.flags.any())
        .collect();
    if !flagged.is_empty() {
        let name = "iosat_disk_op_flag";
        o.family(
            name,
            "gauge",
            "What a direction's judgement cannot claim, 1 when set: estimate (its baseline is \
estimated from higher levels, not measured at about one in flight), change (a change of the \
device is reported: its latency at the baseline's level moved 2x), ceiling_at_least (the \
ceiling, so the headroom, is a lower bound), mixed (the interval's request sizes are mixed: not \
judged against one size class's curve), spans_classes (the kernel sized its requests into \
more than one size class: each judged by its own class's curve, no headroom from one class's \
ceiling), busy_cpus (judged slow, saturated or overloaded while \
the host's CPUs had no idle time: a completion waits for a CPU too, so the machine may explain \
part of the latency); absent for a direction with nothing to judge it by.",
        );
        for (dev, x) in flagged {
            for (flag, on) in x.flags.each() {
                o.sample(
                    name,
                    &[("device", dev), ("op", x.dir.as_str()), ("flag", flag)],
                    if on { 1.0 } else { 0.0 },
                );
            }
        }
    }
    let name = "iosat_disk_op_latency_ratio";
    o.family(
        name,
        "gauge",
        "Each direction's p95 latency in the interval (the mean without percentiles) divided by \
its baseline's (swept, else learned): the ratio iosat_disk_op_state is judged on (absent without \
a baseline or without I/O).",
    );
    for (dev, x) in &rows {
        if let Some(r) = x.ratio {
            o.sample(name, &[("device", dev), ("op", x.dir.as_str())], r);
        }
    }
}

/// The judgement every view shares (analysis::state): per device and direction the baseline and
/// curve with their `source`, and per device the state (`iosat_disk_state`), the p95 ratio it
/// is judged on and how much was learned. A family appears only when some device has a value.
/// Each device's one judgement: its state (and each direction's), and the ratio it is judged on.
fn render_states(o: &mut dyn Sink, s: &Scrape) {
    let judged: Vec<(&str, &Judgement)> = s
        .devices
        .iter()
        .filter_map(|d| Some((d.line.name.as_str(), d.judgement.as_ref()?)))
        .collect();
    if judged.is_empty() {
        return;
    }
    o.family(
        "iosat_disk_state",
        "gauge",
        "The device's state in the latest second learned from, 1 for the current one and \
0 for the others: idle (no I/O), unknown (no baseline yet), ok (p95 below 1.5x the baseline p95), \
slow (1.5x and more, but more than the requests in flight explain), saturated (1.5x to 3x), \
overloaded (3x and more) - the one vocabulary of stat, top and the alerts; the worst direction's.",
    );
    for (dev, j) in &judged {
        for st in State::ALL {
            let v = if j.state() == st { 1.0 } else { 0.0 };
            o.sample(
                "iosat_disk_state",
                &[("device", dev), ("state", st.as_str())],
                v,
            );
        }
    }
    render_direction_states(o, s);
    o.family(
        "iosat_disk_latency_ratio",
        "gauge",
        "The worst direction's p95 latency in the interval (the mean without percentiles) \
divided by its baseline's: the ratio iosat_disk_state is judged on (absent without a baseline).",
    );
    for (dev, j) in &judged {
        if let Some(r) = j.device.ratio {
            o.sample("iosat_disk_latency_ratio", &[("device", dev)], r);
        }
    }
}

fn render_judgement(o: &mut dyn Sink, s: &Scrape) {
    let j = judged(s);
    let gauges: [Family<JudgedGet>; 8] = [
        (
            "iosat_disk_baseline_latency_seconds",
            "Mean latency at a queue of about one, the baseline the state is judged against; \
source=\"sweep\" from a saved profile (taking precedence), source=\"learned\" from the device's \
own traffic, source=\"learned_estimate\" estimated from its lowest levels where the traffic never \
came down to about one in flight (absent where only bounds are known); while the direction's \
requests span size classes, the baseline of its worst class (stat --json's learned.classes has \
each class's).",
            |j| j.baseline_s,
        ),
        (
            "iosat_disk_baseline_device_latency_seconds",
            "The baseline's own device time (from the issue to the driver to the completion) at \
a queue of about one, where the sweep or learning had the block layer's split: what the device \
time is judged against (issue 40).",
            |j| j.baseline_device_s,
        ),
        (
            "iosat_disk_baseline_p95_latency_seconds",
            "p95 latency at a queue of about one: the reference of the states (saturated from \
1.5x, overloaded from 3x).",
            |j| j.baseline_p95_s,
        ),
        (
            "iosat_disk_knee_concurrency",
            "Requests in flight at the knee, past which latency grows faster than throughput \
(absent until the traffic went past it, and where learning's knee is a range that starts or \
ends at it: iosat_disk_knee_at_least_concurrency and iosat_disk_knee_range_concurrency then).",
            |j| j.knee,
        ),
        (
            "iosat_disk_knee_at_least_concurrency",
            "Until the learned traffic has gone past the knee: the concurrency it reached \
without one, a lower bound of the knee; or the lowest level of a learned knee's range that rises \
above it (iosat_disk_knee_range_concurrency).",
            |j| j.knee_at_least,
        ),
        (
            "iosat_disk_max_iops",
            "Requests per second the device serves within the target p95 (3x the baseline p95 \
unless --target-p95): at the knee for a sweep, the most seen for learning; absent while the \
direction's requests span size classes (one class's ceiling is not the mix's).",
            |j| j.max_iops,
        ),
        (
            "iosat_disk_headroom_iops",
            "Requests per second that can be added before the p95 reaches the target (the one \
headroom of stat, top and the exporter); never below 0, and 0 while saturated, overloaded or \
slow; absent where not known (no ceiling, a lower-bound ceiling the interval reached, or \
requests that span size classes).",
            |j| j.headroom_iops,
        ),
        (
            "iosat_disk_curve_fit_r_squared",
            "R squared of the learned curve's fit (USL) to its points, 0 to 1: how far its \
knee and capacity can be trusted (absent until there is a curve to fit).",
            |j| j.fit_r_squared,
        ),
    ];
    for (name, help, get) in gauges {
        let rows: Vec<(&Judged, f64)> = j.iter().filter_map(|j| Some((j, get(j)?))).collect();
        if rows.is_empty() {
            continue;
        }
        o.family(name, "gauge", help);
        for (j, v) in rows {
            o.sample(
                name,
                &[("device", j.device), ("op", j.op), ("source", j.source)],
                v,
            );
        }
    }
    bound_family(
        o,
        "iosat_disk_knee_range_concurrency",
        "The levels of requests in flight learning's knee may be at, bound=\"low\" and \
bound=\"high\": levels the traffic skipped, or that served as much. Where the range starts at \
the knee, the knee is a lower bound (iosat_disk_knee_at_least_concurrency), not a knee.",
        &j,
        |j| j.knee_range,
    );
    bound_family(
        o,
        "iosat_disk_baseline_latency_bound_seconds",
        "The 95 % interval of the learned baseline latency, bound=\"low\" and bound=\"high\"; \
with source=\"learned_estimate\", where the estimated single-request latency lies.",
        &j,
        |j| j.bounds_s,
    );
    render_states(o, s);
    let learned: Vec<(&str, &crate::learn::Learned)> = s
        .devices
        .iter()
        .filter_map(|d| Some((d.line.name.as_str(), d.learned.as_deref()?)))
        .collect();
    if learned.is_empty() {
        return;
    }
    o.family(
        "iosat_disk_learned_intervals",
        "gauge",
        "Intervals of traffic the learned baseline and curve rest on (aged: older weeks weigh less).",
    );
    for (dev, l) in &learned {
        o.sample(
            "iosat_disk_learned_intervals",
            &[("device", dev)],
            l.intervals as f64,
        );
    }
    render_classes(o, s);
}

/// While a direction's requests span size classes (the block-latency source sized them: the
/// judgement's `spans_classes`), each class's own figures, labelled by class: its share of
/// the direction's requests, its latency ratio against its own class's baseline and that
/// baseline. The direction's own gauges are its worst class's (learn/); these keep every
/// class's in view. Absent while no direction spans classes.
fn render_classes(o: &mut dyn Sink, s: &Scrape) {
    let rows: Vec<(&str, &str, &crate::analysis::learned::ClassJudgement)> = s
        .devices
        .iter()
        .flat_map(|d| {
            let dev = d.line.name.as_str();
            learned_directions(d).into_iter().flat_map(move |l| {
                let op = l.direction.map(|x| x.as_str());
                l.classes
                    .iter()
                    .flat_map(|c| c.iter())
                    .filter_map(move |c| Some((dev, op?, c)))
            })
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    type Get = fn(&crate::analysis::learned::ClassJudgement) -> Option<f64>;
    let families: [(&str, &str, Get); 3] = [
        (
            "iosat_disk_class_request_share",
            "While the direction's requests span size classes: the class's share of the \
direction's requests in the last interval learned (the block layer's own counts).",
            |c| Some(c.share),
        ),
        (
            "iosat_disk_class_latency_ratio",
            "While the direction's requests span size classes: the class's latency against its \
own class's baseline (p95 where the block layer measured it, else the mean; absent until the \
class has a baseline or an estimate). The direction's iosat_disk_latency_ratio is its worst \
class's.",
            |c| c.ratio,
        ),
        (
            "iosat_disk_class_baseline_latency_seconds",
            "While the direction's requests span size classes: the mean latency at a queue of \
about one learned of the class's own requests (absent until learned).",
            |c| c.baseline_latency_ns.map(ns_to_s),
        ),
    ];
    for (name, help, get) in families {
        if !rows.iter().any(|(_, _, c)| get(c).is_some()) {
            continue;
        }
        o.family(name, "gauge", help);
        for (dev, op, c) in &rows {
            if let Some(v) = get(c) {
                o.sample(
                    name,
                    &[
                        ("device", dev),
                        ("op", op),
                        ("size_class", c.size_class.json_name()),
                    ],
                    v,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::MS_FIELD_WRAP;
    use crate::sys::diskstats::parse_line;

    fn line(read_ms: u64, reads: u64) -> DiskStatLine {
        let mut l = parse_line("8 0 sda 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0").unwrap();
        l.read_ms = read_ms;
        l.reads = reads;
        l
    }

    #[test]
    fn a_provable_wrap_is_extended_and_a_reset_is_not() {
        let mut w = WrapExtender::default();
        let near = MS_FIELD_WRAP - 100;
        assert_eq!(w.extend(&line(near, 10), 0).read_ms, near);
        // 1 s later: 20 reads completed, read_ms wrapped to 400 → advanced 500 ms.
        let e = w.extend(&line(400, 30), 1_000_000_000);
        assert_eq!(e.read_ms, MS_FIELD_WRAP + 400);
        let e = w.extend(&line(900, 40), 2_000_000_000);
        assert_eq!(e.read_ms, MS_FIELD_WRAP + 900);
        // Counts went back: a reset, totals restart from the raw values.
        assert_eq!(w.extend(&line(50, 1), 3_000_000_000).read_ms, 50);
        // ms back without any completion: no proof of a wrap, so a reset.
        let mut w = WrapExtender::default();
        w.extend(&line(near, 10), 0);
        assert_eq!(w.extend(&line(400, 10), 1_000_000_000).read_ms, 400);
    }

    #[test]
    fn values_are_written_as_display_writes_them() {
        for v in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            1e-9,
            1e15,
            999_999_999_999_999.0,
            1e16,
            1e300,
            -3.25,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            4_294_967_296.0,
            0.1 + 0.2,
        ] {
            let mut out = String::new();
            push_value(&mut out, v);
            assert_eq!(out, format!(" {v}\n"), "{v:?}");
        }
    }

    #[test]
    fn labels_are_escaped() {
        let escape = |v: &str| {
            let mut out = String::from("x");
            push_escaped(&mut out, v);
            out
        };
        assert_eq!(escape("a\"b\\c\nd"), "xa\\\"b\\\\c\\nd");
        assert_eq!(escape("nvme0n1"), "xnvme0n1");
        assert_eq!(escape("é\n"), "xé\\n");
    }

    #[test]
    fn missing_fields_give_no_sample() {
        let l = parse_line("8 0 sda 1 2 3 4 5 6 7 8 0 10 11").unwrap();
        let s = Scrape {
            devices: vec![DeviceScrape {
                learned: None,
                judgement: None,
                latency: None,
                line: l,
                identity: Identity::default(),
                in_flight: None,
                profile: None,
                cap: None,
                cap_uses: Vec::new(),
                aws: None,
                burst: None,
                cgroups: None,
            }],
            health: vec![],
            blk_dropped: None,
            hindsight: None,
            build: None,
            cgroup_unattributed: None,
            cgroup_pressure: vec![],
        };
        let text = render(&s);
        assert!(!text.contains("dropped_completions"), "{text}");
        assert!(!text.contains("op=\"discard\""), "{text}");
        assert!(!text.contains("op=\"flush\""), "{text}");
        assert!(text.contains("iosat_disk_bytes_total{device=\"sda\",op=\"read\"} 1536\n"));
        assert!(text.contains(
            "iosat_disk_request_time_seconds_total{device=\"sda\",op=\"write\"} 0.008\n"
        ));
    }

    #[test]
    fn the_dropped_completions_are_a_counter_with_help() {
        let s = Scrape {
            devices: vec![],
            health: vec![],
            blk_dropped: Some(42),
            hindsight: None,
            build: Some(BuildInfo::THIS),
            cgroup_unattributed: None,
            cgroup_pressure: vec![],
        };
        let text = render(&s);
        assert!(text.contains(
            "# HELP iosat_block_latency_dropped_completions_total Completions the block-latency"
        ));
        assert!(text.contains("# TYPE iosat_block_latency_dropped_completions_total counter\n"));
        assert!(
            text.contains("\niosat_block_latency_dropped_completions_total 42\n"),
            "{text}"
        );
        let build = format!(
            "\niosat_build_info{{version=\"{}\",commit=\"{}\",",
            crate::build::VERSION,
            crate::build::COMMIT
        );
        assert!(text.contains(&build), "{text}");
        assert!(text.contains("# HELP iosat_build_info The build"), "{text}");
    }
}
