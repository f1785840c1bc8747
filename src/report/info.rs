//! `iosat info` rendered: text (one block per device, notes wrapped at 80 columns), JSON, CSV and
//! Markdown (one table). Returns strings, does no IO.
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

use super::table::Table;
use super::text::wrap;
use super::Format;
use crate::monitor::info::{DeviceInfo, InfoReport, ProfileLookup};
use crate::sys::device::DevKind;

/// The bytes `iosat info` prints.
pub fn render(r: &InfoReport, format: Format) -> String {
    match format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(r).expect("info report serialises");
            s.push('\n');
            s
        }
        Format::Csv => table(&r.devices).to_csv(),
        Format::Markdown => table(&r.devices).to_markdown(),
        Format::Text { .. } | Format::Html => text(&r.envelope.kernel, &r.devices),
    }
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

fn text(kernel: &str, devs: &[DeviceInfo]) -> String {
    let kernel = if kernel.is_empty() { "unknown" } else { kernel };
    let mut s = format!("kernel {kernel}\n");
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
        if let Some(l) = &d.profile_lookup {
            let pad = " ".repeat(16);
            s.push_str(&wrap(&lookup_text(l), "  profile ids   ", &pad, 80));
        }
        for l in &d.limits {
            s.push_str(&wrap(&l.sentence(&d.name), "  limit: ", "         ", 80));
        }
        for n in &d.notes {
            s.push_str(&wrap(n, "  note: ", "        ", 80));
        }
    }
    s
}

/// "looked for ID (.read.json, .write.json, .json): matched FILE" or "...: none matched".
fn lookup_text(l: &ProfileLookup) -> String {
    // The file names share the id's stem: say it once.
    let stem = l
        .files
        .last()
        .and_then(|f| f.strip_suffix(".json"))
        .unwrap_or_default();
    let files: Vec<&str> = l
        .files
        .iter()
        .map(|f| f.strip_prefix(stem).unwrap_or(f))
        .collect();
    let tried = format!("looked for {} ({})", l.ids.join(", "), files.join(", "));
    match (&l.matched_file, &l.dir) {
        (Some(f), _) => format!("{tried}: matched {f}"),
        (None, None) => format!("{tried}: no profile directory"),
        (None, Some(_)) => format!("{tried}: none matched"),
    }
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
