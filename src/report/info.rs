//! `iosat info` rendered: one document (report/doc/: the kernel, then one record per device:
//! its facts, limits and notes) written as text, Markdown or HTML; JSON and CSV (one table row
//! per device) written here. Returns strings, does no IO.
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

use super::doc::{self, Block, Doc, Record};
use super::table::Table;
use super::Format;
use crate::monitor::info::{AwsInfo, DeviceInfo, InfoReport, ProfileLookup};
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
        Format::Markdown | Format::Text { .. } | Format::Html => doc::write(&doc(r), format),
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

/// The document of `iosat info`: the kernel, then one record per device.
pub fn doc(r: &InfoReport) -> Doc {
    let kernel = &r.envelope.kernel;
    let kernel = if kernel.is_empty() { "unknown" } else { kernel };
    let mut blocks = vec![Block::Lead {
        text: format!("kernel {kernel}"),
        hang: 0,
    }];
    blocks.extend(r.devices.iter().map(|d| Block::Record(record(d))));
    Doc {
        title: "iosat info".into(),
        md_title: None,
        md_level: 1,
        blocks,
    }
}

/// One device: its names, numbers and kind, then what sysfs and its profile say, then its
/// limits and notes.
fn record(d: &DeviceInfo) -> Record {
    let q = &d.queue;
    let x = &d.extra;
    let name = if d.display_name != d.name {
        format!("{} ({})", d.display_name, d.name)
    } else {
        d.name.clone()
    };
    let heading = format!(
        "{name}  {}:{}  {}",
        d.major,
        d.minor,
        d.kind.map_or("unknown", DevKind::as_str)
    );
    let mut fields = vec![
        ("model", opt(&q.model)),
        ("size", q.size_bytes.map_or("-".into(), size_text)),
        ("rotational", yes_no(q.rotational)),
        (
            "block size",
            format!(
                "logical {}, physical {}",
                opt(&q.logical_block_size),
                opt(&q.physical_block_size)
            ),
        ),
        (
            "scheduler",
            format!("{}, nr_requests {}", opt(&q.scheduler), opt(&q.nr_requests)),
        ),
    ];
    let mut depth = Vec::new();
    if let Some(qd) = x.queue_depth {
        depth.push(format!("device queue_depth {qd}"));
    }
    if let Some(h) = x.hw_queues {
        depth.push(format!("{h} hw queue(s) x {} tags", opt(&x.hw_queue_tags)));
    }
    fields.push((
        "queue depth",
        if depth.is_empty() {
            "-".into()
        } else {
            depth.join(", ")
        },
    ));
    fields.push((
        "read-ahead",
        q.read_ahead_kb.map_or("-".into(), |k| format!("{k} KiB")),
    ));
    fields.push((
        "max request",
        match (q.max_sectors_kb, q.max_hw_sectors_kb) {
            // Virtual disks without a limit of their own report i32::MAX.
            (Some(k), Some(hw)) if hw >= i32::MAX as u32 => format!("{k} KiB (hardware: no limit)"),
            (Some(k), Some(hw)) => format!("{k} KiB (hardware {hw} KiB)"),
            (Some(k), None) => format!("{k} KiB"),
            _ => "-".into(),
        },
    ));
    fields.push((
        "write cache",
        format!("{}, FUA {}", opt(&q.write_cache), yes_no(q.fua)),
    ));
    fields.push((
        "discard",
        match q.discard_max_bytes {
            Some(0) => "no".into(),
            Some(b) => format!("yes (max {b} bytes per request)"),
            None => "-".into(),
        },
    ));
    let stack = [
        ("md level", &x.md_level),
        ("dm target", &x.dm_target),
        ("backing file", &x.loop_backing_file),
    ];
    fields.extend(stack.into_iter().filter_map(|(k, v)| Some((k, v.clone()?))));
    fields.push(("members", list(&d.members)));
    fields.push(("partitions", list(&d.partitions)));
    fields.push(("holders", list(&d.holders)));
    let mounted: Vec<String> = d
        .mounts
        .iter()
        .map(|m| format!("{} ({})", m.point, m.fstype))
        .collect();
    fields.push((
        "mounted on",
        if mounted.is_empty() {
            list(&d.mountpoints)
        } else {
            mounted.join("; ")
        },
    ));
    if let Some(p) = &d.profile {
        fields.push((
            "profile",
            format!(
                "{} (baseline {:.1} µs, knee {}, max useful {}{:.0} IOPS; {} {} B)",
                p.id,
                p.baseline_latency_ns / 1e3,
                p.knee_text(),
                if p.knee_at_least.is_some() {
                    "≥ "
                } else {
                    ""
                },
                p.max_useful_iops,
                p.pattern,
                p.block_size
            ),
        ));
    }
    // Options run long (ext4's resuid=..., a network filesystem's addr=...): wrapped.
    let options: Vec<String> = d
        .mounts
        .iter()
        .map(|m| format!("{}: {}", m.point, m.options))
        .collect();
    let long_fields = (!options.is_empty())
        .then(|| ("mount options", options.join("; ")))
        .into_iter()
        .chain(
            d.profile_lookup
                .iter()
                .map(|l| ("profile ids", lookup_text(l))),
        )
        .chain(d.aws.iter().flat_map(aws_fields))
        .collect();
    let limits = d.limits.iter().map(|l| ("limit", l.sentence(&d.name)));
    let notes = d.notes.iter().map(|n| ("note", n.clone()));
    Record {
        heading,
        fields,
        long_fields,
        notes: limits.chain(notes).collect(),
    }
}

/// An AWS EBS volume or EC2 instance storage: who it is, then its counters or why they were
/// not read.
fn aws_fields(a: &AwsInfo) -> Vec<(&'static str, String)> {
    let who = match &a.identity {
        Some(i) => match &i.volume_id {
            Some(v) => format!("{} {v}", i.kind.as_str()),
            None => format!("{} (serial {})", i.kind.as_str(), i.serial),
        },
        None => "an Amazon model in sysfs, not confirmed by its controller".to_string(),
    };
    let mut out = vec![("aws", who)];
    if let Some(c) = &a.counters {
        let caps: Vec<String> = c
            .kind
            .caps()
            .iter()
            .map(|&cap| {
                let (who, dim) = cap.labels();
                format!("{who} {dim} {} µs", c.exceeded_us(cap))
            })
            .collect();
        out.push((
            "aws counters",
            format!(
                "read {} ops, {} B, {} µs; write {} ops, {} B, {} µs; cap exceeded: {}; \
                 queue length {}{}",
                c.read_ops,
                c.read_bytes,
                c.read_time_us,
                c.write_ops,
                c.write_bytes,
                c.write_time_us,
                caps.join(", "),
                c.queue_length,
                a.read_us
                    .map_or(String::new(), |us| format!(" (read in {us} µs)"))
            ),
        ));
    }
    if let Some(why) = &a.not_read {
        out.push(("aws counters", format!("not read: {why}")));
    }
    out
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
    let own = l.ids.first().map_or("", String::as_str);
    // The directories searched are the JSON's `dirs` (a match names its file, so its
    // directory): the text stays the same on every machine.
    let mut tried = format!("looked for {own} ({})", files.join(", "));
    if l.ids.len() > 1 {
        let models: Vec<String> = l.ids[1..]
            .iter()
            .map(|id| match l.model_misses.iter().find(|m| m.id == *id) {
                Some(m) => format!("{id} ({})", m.differences.join(", ")),
                None => id.clone(),
            })
            .collect();
        tried.push_str(&format!(", then the model profiles {}", models.join("; ")));
    }
    match (&l.matched_file, &l.dir) {
        (Some(f), _) => match &l.judged_against {
            Some(j) if l.matched_by == Some("model") => format!("{tried}: matched {f}: {j}"),
            _ => format!("{tried}: matched {f}"),
        },
        (None, None) if l.dirs.is_empty() => format!("{tried}: no profile directory"),
        (None, _) => format!("{tried}: none matched"),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_said_in_every_format() {
        let d = Doc {
            title: "iosat info".into(),
            md_level: 1,
            blocks: vec![Block::Record(Record {
                heading: "sda  8:0  disk".into(),
                fields: vec![("model", "X1".into())],
                long_fields: vec![],
                notes: vec![("note", "cache flush".into())],
            })],
            ..Default::default()
        };
        assert_eq!(
            doc::write(&d, Format::TEXT),
            "sda  8:0  disk\n  model         X1\n  note: cache flush\n"
        );
        for f in [Format::Markdown, Format::Html] {
            let s = doc::write(&d, f);
            for part in ["sda  8:0  disk", "model", "X1", "note", "cache flush"] {
                assert!(s.contains(part), "{f:?} lacks {part}: {s}");
            }
        }
    }
}
