//! `iosat info`: orchestration only. Devices come from /proc/diskstats (keyed by major:minor,
//! the same list `iosat stat` sees), facts from sysfs, notes from what is known about the
//! kernel's accounting (DESIGN.md §4).

use crate::cli::info::InfoArgs;
use crate::config::info::InfoSpec;
use crate::error::Error;
use crate::monitor::saturation::DeviceProfile;
use crate::monitor::select::{DeviceMeta, Selection};
use crate::report::table::Table;
use crate::sys::device::{self, BlockDev, DevKind, DeviceExtra, QueueInfo};
use crate::sys::{diskstats, kernel_release, kernel_version, Root};
use std::io::Write;

/// Everything `iosat info` says about one device.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceInfo {
    pub name: String,
    pub display_name: String,
    pub major: u32,
    pub minor: u32,
    pub kind: Option<DevKind>,
    #[serde(flatten)]
    pub queue: QueueInfo,
    #[serde(flatten)]
    pub extra: DeviceExtra,
    pub holders: Vec<String>,
    pub mountpoints: Vec<String>,
    pub partitions: Vec<String>,
    pub members: Vec<String>,
    /// The id a profile of this device is saved under (`iosat sweep --save-profile`).
    pub profile_id: Option<String>,
    /// The saved profile, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<DeviceProfile>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
struct InfoReport {
    schema: &'static str,
    schema_version: u32,
    kernel: Option<String>,
    devices: Vec<DeviceInfo>,
}

/// Notes on where this device's numbers mislead, given the kernel version.
fn notes(d: &DeviceInfo, kernel: Option<(u32, u32)>) -> Vec<String> {
    let mut n = Vec::new();
    if let Some(v) = kernel {
        if ((5, 0)..(6, 10)).contains(&v) {
            n.push("%util comes from io_ticks, which kernels 5.0-6.9 sample per jiffy: it can over- or under-count".into());
        }
        if v < (5, 7) {
            n.push("kernel < 5.7: weighted time is not the sum of per-direction times, so r_conc + w_conc may differ from aqu-sz".into());
        }
        if v < (4, 18) {
            n.push("kernel < 4.18: no discard counters (d/s, dkB/s, d_await are undefined)".into());
        } else if v < (5, 5) {
            n.push("kernel < 5.5: no flush counters (f/s, f_await are undefined)".into());
        }
    }
    match d.kind {
        Some(DevKind::Dm) | Some(DevKind::Md) => n.push(
            "stacked device: its requests are split and queued on the members below; %util and aqu-sz here say nothing about the members' capacity".into(),
        ),
        Some(DevKind::Loop) => n.push(
            "loop device: I/O goes to a backing file, so the numbers describe that file's filesystem and page cache, not a disk".into(),
        ),
        Some(DevKind::Zram) | Some(DevKind::Ram) => {
            n.push("RAM-backed: latency is CPU and memory time, not a disk's".into())
        }
        _ => {}
    }
    match d.queue.rotational {
        Some(false) if !matches!(d.kind, Some(DevKind::Loop | DevKind::Zram | DevKind::Ram)) => n.push(
            "non-rotational: serves many requests at once, so %util near 100 does not mean saturated; compare latency against the concurrency-1 baseline (iosat sweep)".into(),
        ),
        Some(true) if d.kind == Some(DevKind::Disk) => n.push(
            "reports itself rotational: if it is one spinning disk, %util near 100 is close to saturation; virtual disks (virtio, cloud volumes) often report rotational whatever is behind them".into(),
        ),
        _ => {}
    }
    if d.queue.write_cache.as_deref() == Some("write back") {
        if d.queue.fua == Some(false) {
            n.push("volatile write cache without FUA: durable writes cost a full cache flush (see iosat fsync)".into());
        } else {
            n.push(
                "volatile write cache: only fsync/flush makes writes durable (see iosat fsync)"
                    .into(),
            );
        }
    }
    n
}

fn gather(root: &Root, spec: &InfoSpec) -> Result<Vec<DeviceInfo>, Error> {
    let text = diskstats::read_text(root)?;
    let parsed = diskstats::parse(&text);
    for w in &parsed.warnings {
        eprintln!("iosat: warning: {w}");
    }
    let kernel = kernel_release(root).as_deref().and_then(kernel_version);
    let sel = Selection {
        patterns: spec.patterns.clone(),
        partitions: spec.all,
        all: spec.all,
    };
    let mut metas = Vec::new();
    for l in &parsed.lines {
        let dev = BlockDev {
            major: l.major,
            minor: l.minor,
            name: l.name.clone(),
        };
        let meta = DeviceMeta {
            kind: device::kind(root, &dev),
            display_name: device::friendly_name(root, &dev),
        };
        metas.push((dev, meta));
    }
    let all: Vec<(u32, &str, &DeviceMeta)> = metas
        .iter()
        .map(|(d, m)| (d.major, d.name.as_str(), m))
        .collect();
    if let Some(p) = sel.unmatched(&all) {
        return Err(Error::usage(
            "DEVICE",
            p,
            "matches no device in /proc/diskstats (see `iosat info --all`)",
        ));
    }
    let mut out = Vec::new();
    for (dev, meta) in metas {
        if !sel.selects(dev.major, &dev.name, &meta) {
            continue;
        }
        let mut d = DeviceInfo {
            name: dev.name.clone(),
            display_name: meta.display_name.clone(),
            major: dev.major,
            minor: dev.minor,
            kind: meta.kind,
            queue: device::queue_info(root, &dev),
            extra: device::extra(root, &dev),
            holders: device::holders(root, &dev),
            mountpoints: device::mountpoints(root, &dev),
            partitions: device::partitions(root, &dev)
                .into_iter()
                .map(|p| p.name)
                .collect(),
            members: device::slaves(root, &dev),
            profile_id: crate::profile::device_id(root, &dev),
            profile: None,
            notes: Vec::new(),
        };
        if let (Some(dir), Some(id)) = (&spec.profile_dir, &d.profile_id) {
            match crate::profile::load(dir, id) {
                Ok(p) => d.profile = p,
                Err(e) => eprintln!("iosat: warning: profile ignored: {e}"),
            }
        }
        d.notes = notes(&d, kernel);
        out.push(d);
    }
    Ok(out)
}

fn size_text(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format!("{} ({bytes} bytes)", crate::units::human_bytes(bytes))
    }
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn yes_no(v: Option<bool>) -> String {
    v.map_or("-", |b| if b { "yes" } else { "no" }).to_string()
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        v.join(", ")
    }
}

fn text(kernel: &Option<String>, devs: &[DeviceInfo]) -> String {
    let mut s = format!("kernel {}\n", kernel.as_deref().unwrap_or("unknown"));
    for d in devs {
        let q = &d.queue;
        let x = &d.extra;
        s.push('\n');
        let name = if d.display_name != d.name {
            format!("{} ({})", d.display_name, d.name)
        } else {
            d.name.clone()
        };
        s.push_str(&format!(
            "{name}  {}:{}  {}\n",
            d.major,
            d.minor,
            d.kind.map_or("unknown", DevKind::as_str)
        ));
        let mut kv = |k: &str, v: String| s.push_str(&format!("  {k:<13} {v}\n"));
        kv("model", opt(&q.model));
        kv("size", q.size_bytes.map_or("-".into(), size_text));
        kv("rotational", yes_no(q.rotational));
        kv(
            "block size",
            format!(
                "logical {}, physical {}",
                opt(&q.logical_block_size),
                opt(&q.physical_block_size)
            ),
        );
        kv(
            "scheduler",
            format!("{}, nr_requests {}", opt(&q.scheduler), opt(&q.nr_requests)),
        );
        let mut depth = Vec::new();
        if let Some(qd) = x.queue_depth {
            depth.push(format!("device queue_depth {qd}"));
        }
        if let Some(h) = x.hw_queues {
            depth.push(format!("{h} hw queue(s) x {} tags", opt(&x.hw_queue_tags)));
        }
        kv(
            "queue depth",
            if depth.is_empty() {
                "-".into()
            } else {
                depth.join(", ")
            },
        );
        kv(
            "write cache",
            format!("{}, FUA {}", opt(&q.write_cache), yes_no(q.fua)),
        );
        kv(
            "discard",
            match q.discard_max_bytes {
                Some(0) => "no".into(),
                Some(b) => format!("yes (max {b} bytes per request)"),
                None => "-".into(),
            },
        );
        if let Some(l) = &x.md_level {
            kv("md level", l.clone());
        }
        if let Some(t) = &x.dm_target {
            kv("dm target", t.clone());
        }
        if let Some(f) = &x.loop_backing_file {
            kv("backing file", f.clone());
        }
        kv("members", list(&d.members));
        kv("partitions", list(&d.partitions));
        kv("holders", list(&d.holders));
        kv("mounted on", list(&d.mountpoints));
        if let Some(p) = &d.profile {
            kv(
                "profile",
                format!(
                    "{} (baseline {:.1} µs, knee {}, max useful {:.0} IOPS; {} {} B)",
                    p.id,
                    p.baseline_latency_ns / 1e3,
                    p.knee_concurrency,
                    p.max_useful_iops,
                    p.pattern,
                    p.block_size
                ),
            );
        }
        for n in &d.notes {
            s.push_str(&wrap(n, "  note: ", "        ", 80));
        }
    }
    s
}

/// Word-wrap `text` to `width` columns, the first line after `first`, the others after `rest`.
fn wrap(text: &str, first: &str, rest: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for w in text.split(' ') {
        if !empty && line.chars().count() + 1 + w.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(w);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

fn table(devs: &[DeviceInfo]) -> Table {
    let mut t = Table::new([
        "device",
        "kernel_name",
        "major:minor",
        "kind",
        "model",
        "size_bytes",
        "rotational",
        "logical_block_size",
        "physical_block_size",
        "scheduler",
        "nr_requests",
        "queue_depth",
        "write_cache",
        "fua",
        "discard_max_bytes",
        "members",
        "partitions",
        "holders",
        "mountpoints",
    ]);
    for d in devs {
        let q = &d.queue;
        t.push([
            d.display_name.clone(),
            d.name.clone(),
            format!("{}:{}", d.major, d.minor),
            d.kind.map_or("", DevKind::as_str).to_string(),
            q.model.clone().unwrap_or_default(),
            q.size_bytes.map_or(String::new(), |v| v.to_string()),
            q.rotational.map_or(String::new(), |v| v.to_string()),
            q.logical_block_size
                .map_or(String::new(), |v| v.to_string()),
            q.physical_block_size
                .map_or(String::new(), |v| v.to_string()),
            q.scheduler.clone().unwrap_or_default(),
            q.nr_requests.map_or(String::new(), |v| v.to_string()),
            d.extra.queue_depth.map_or(String::new(), |v| v.to_string()),
            q.write_cache.clone().unwrap_or_default(),
            q.fua.map_or(String::new(), |v| v.to_string()),
            q.discard_max_bytes.map_or(String::new(), |v| v.to_string()),
            d.members.join(" "),
            d.partitions.join(" "),
            d.holders.join(" "),
            d.mountpoints.join(" "),
        ]);
    }
    t
}

pub fn run(args: &InfoArgs) -> anyhow::Result<i32> {
    let spec = InfoSpec::from_args(args)?;
    let devs = gather(&spec.root, &spec)?;
    let kernel = kernel_release(&spec.root);
    let out = if spec.json {
        let r = InfoReport {
            schema: "iosat-info",
            schema_version: 1,
            kernel,
            devices: devs,
        };
        let mut s = serde_json::to_string_pretty(&r)?;
        s.push('\n');
        s
    } else if spec.csv {
        table(&devs).to_csv()
    } else if spec.markdown {
        table(&devs).to_markdown()
    } else {
        text(&kernel, &devs)
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(out.as_bytes())
        .and_then(|_| stdout.flush())
        .map_err(|e| Error::io("<stdout>", e))?;
    Ok(crate::error::exit::OK)
}
