//! `iosat profile` rendered: `list` (one table row per profile file of every directory
//! searched), `show` (one record per profile file), and what `save`, `import` and `rm` did; as
//! documents (report/doc/) for text, JSON written here. Returns strings, does no IO.
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

use super::doc::{self, Block, Doc, Record};
use super::table::Table;
use super::Format;
use crate::profile::{Direction, Listed};
use crate::units::printable;
use std::path::Path;

fn json<T: serde::Serialize>(v: &T) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("serialises");
    s.push('\n');
    s
}

/// Where a profile's numbers came from: a sweep (here, or on the host it names when
/// imported: see `imported`); profiles learned from production traffic are the learned
/// state's (`--state-dir`), never files here.
fn source(_: &Listed) -> &'static str {
    "swept"
}

/// What a profile judges: a device (its id) or every device of a model.
fn kind(l: &Listed) -> &'static str {
    if l.profile.model_profile.is_some() {
        "model"
    } else {
        "device"
    }
}

/// One profile as `list --json` and `show --json` give it.
fn entry(l: &Listed) -> serde_json::Value {
    serde_json::json!({
        "id": l.id,
        "kind": kind(l),
        "device": l.profile.device,
        "model": l.profile.model_profile.as_ref().map(|k| k.label()),
        "direction": l.profile.direction,
        "pattern": l.profile.pattern,
        "block_size": l.profile.block_size,
        "measured_unix_s": l.profile.measured_unix_s,
        "host": l.profile.host,
        "source": source(l),
        "path": l.path,
        "knee_at_least": l.profile.knee_at_least,
        "bound": l.profile.bound(),
        "profile": l.profile,
    })
}

fn when(unix_s: Option<u64>) -> String {
    unix_s.map_or("-".into(), |s| {
        if s > crate::units::LAST_DATE_UNIX_S {
            return crate::units::utc_of_unix_s(s);
        }
        let iso = crate::units::utc_of_unix_s(s);
        iso.get(..16).unwrap_or(&iso).replace('T', " ")
    })
}

fn direction_word(d: Direction) -> &'static str {
    match d {
        Direction::Read => "read",
        Direction::Write => "write",
        Direction::Mixed => "mixed",
    }
}

/// The device a profile is of, or the model it judges.
fn of(l: &Listed) -> String {
    match (&l.profile.model_profile, &l.profile.device) {
        (Some(k), _) => format!("model '{}'", printable(&k.label())),
        (None, Some(d)) => printable(d).into_owned(),
        (None, None) => "-".into(),
    }
}

/// `iosat profile list`: the profiles of the directories `dirs` (described) in search order.
pub fn list(dirs: &str, all: &[Listed], format: Format) -> String {
    if format == Format::Json {
        return json(&all.iter().map(entry).collect::<Vec<_>>());
    }
    if all.is_empty() {
        return format!(
            "no profiles in {dirs} (save one: `iosat sweep DEVICE --save-profile`, read-only by \
default)\n"
        );
    }
    let mut t = Table::new([
        "ID",
        "DEVICE",
        "DIR",
        "PATTERN",
        "BS",
        "WHEN (UTC)",
        "SOURCE",
    ]);
    // Words, not numbers: every column left-aligned.
    t.right = vec![false; t.headers.len()];
    for l in all {
        t.push([
            l.id.clone(),
            of(l),
            direction_word(l.profile.direction).into(),
            printable(&l.profile.pattern).into_owned(),
            crate::units::block_size(l.profile.block_size),
            when(l.profile.measured_unix_s),
            source(l).into(),
        ]);
    }
    let d = Doc {
        title: "iosat profile list".into(),
        md_level: 1,
        blocks: vec![Block::Table(doc::TableBlock::new(t))],
        ..Doc::default()
    };
    doc::write(&d, format)
}

/// `iosat profile show ID`: each profile file of the id, its numbers.
pub fn show(found: &[Listed], format: Format) -> String {
    if format == Format::Json {
        return json(&found.iter().map(entry).collect::<Vec<_>>());
    }
    let d = Doc {
        title: "iosat profile show".into(),
        md_level: 1,
        blocks: found.iter().map(|l| Block::Record(record(l))).collect(),
        ..Doc::default()
    };
    doc::write(&d, format)
}

fn record(l: &Listed) -> Record {
    let p = &l.profile;
    let mut fields = vec![
        ("device", of(l)),
        ("direction", direction_word(p.direction).into()),
        (
            "workload",
            format!(
                "{} {}",
                printable(&p.pattern),
                crate::units::block_size(p.block_size)
            ),
        ),
        ("measured", format!("{} UTC", when(p.measured_unix_s))),
        (
            "baseline",
            format!("{:.1} µs mean", p.baseline_latency_ns / 1e3),
        ),
    ];
    if let Some(p95) = p.baseline_p95_ns {
        fields.push(("baseline p95", format!("{:.1} µs", p95 / 1e3)));
    }
    let mut curve = match p.knee_at_least {
        Some(_) => format!(
            "knee concurrency {} (not reached), max useful at least {:.0} IOPS",
            p.knee_text(),
            p.max_useful_iops
        ),
        None => format!(
            "knee concurrency {}, max useful {:.0} IOPS",
            p.knee_concurrency, p.max_useful_iops
        ),
    };
    if let Some(o) = p.overload_concurrency {
        curve.push_str(&format!(", overloaded from concurrency {o}"));
    }
    fields.push(("curve", curve));
    if let Some(c) = &p.declared_cap {
        fields.push(("declared cap", c.words()));
    }
    fields.push(("source", source(l).into()));
    let mut long_fields = vec![("judges as", printable(&p.judged_against()).into_owned())];
    long_fields.extend(p.bound().map(|b| ("bound", printable(&b).into_owned())));
    if let Some(i) = &p.imported {
        long_fields.push((
            "imported",
            format!(
                "for {} from host {} at {} UTC",
                printable(&i.for_device),
                printable(i.from_host.as_deref().unwrap_or("?")),
                when(Some(i.unix_s))
            ),
        ));
    }
    if let Some(k) = &p.model_profile {
        let opt = |v: &Option<String>| {
            v.as_deref()
                .map_or("-".into(), |v| printable(v).into_owned())
        };
        long_fields.push((
            "matches",
            format!(
                "model {}, firmware {}, {} bytes, logical/physical block {}/{} B, {}, scheduler {}",
                opt(&k.model),
                opt(&k.firmware),
                k.size_bytes.map_or("-".into(), |b| b.to_string()),
                k.logical_block_size.map_or("-".into(), |b| b.to_string()),
                k.physical_block_size.map_or("-".into(), |b| b.to_string()),
                match k.rotational {
                    Some(true) => "rotational",
                    Some(false) => "non-rotational",
                    None => "rotational unknown",
                },
                opt(&k.scheduler)
            ),
        ));
    }
    Record {
        heading: format!(
            "profile {} ({})",
            printable(&l.id),
            printable(&l.path.display().to_string())
        ),
        fields,
        long_fields,
        notes: Vec::new(),
    }
}

/// What `save` and `import` did: the id, the device it is the profile of, or the model (its
/// label) a model profile judges, and the file.
pub fn saved(
    id: &str,
    device: Option<&str>,
    model: Option<&str>,
    path: &Path,
    format: Format,
) -> String {
    if format == Format::Json {
        return json(
            &serde_json::json!({ "id": id, "device": device, "model": model, "path": path }),
        );
    }
    match model {
        Some(m) => format!(
            "model profile of '{}' saved as {} to {}: it judges every device of this model, \
firmware, size, block sizes, rotational flag and scheduler that has no profile of its own\n",
            printable(m),
            printable(id),
            path.display()
        ),
        None => format!(
            "profile of {} saved as {} to {}\n",
            printable(device.unwrap_or("-")),
            printable(id),
            path.display()
        ),
    }
}

/// What `rm` removed.
pub fn removed(id: &str, paths: &[String], format: Format) -> String {
    if format == Format::Json {
        return json(&serde_json::json!({ "id": id, "removed": paths }));
    }
    paths.iter().map(|p| format!("removed {p}\n")).collect()
}
