//! `iosat profile`: orchestration only — list, show, rm and export the profiles of the
//! profile directory (profile.rs), save one from an existing sweep result with the trust
//! checks of `sweep --save-profile` (load/trust.rs), import one made on a twin for a device
//! here. Its few lines of text output are printed here (a list, a profile's numbers).
//! Must not import: cmd/analyze.rs, cmd/compare.rs, cmd/completions.rs, cmd/exporter.rs,
//! cmd/fsync.rs, cmd/info.rs, cmd/report.rs, cmd/stat.rs, cmd/sweep.rs, cmd/top.rs, ui/.

use crate::cli::profile::{IdArgs, ImportArgs, ProfileAction, ProfileCmdArgs, SaveArgs, StoreArgs};
use crate::config::output::print;
use crate::config::profile::{self as config, Access};
use crate::error::{exit, Error, Result};
use crate::load::result::SweepReport;
use crate::profile::{self, Listed};
use std::path::{Path, PathBuf};

pub fn run(args: &ProfileCmdArgs) -> anyhow::Result<i32> {
    match &args.action {
        ProfileAction::List(a) => {
            let dir = dir(&a.profile, Access::Read)?;
            let all = profile::list(&dir)?;
            print(&if a.json {
                json(&all.iter().map(entry).collect::<Vec<_>>())
            } else {
                list_text(&dir, &all)
            })?;
        }
        ProfileAction::Show(a) => {
            let found = find(a)?;
            print(&if a.json {
                json(&found.iter().map(entry).collect::<Vec<_>>())
            } else {
                found.iter().map(show_text).collect::<Vec<_>>().join("\n")
            })?;
        }
        ProfileAction::Rm(a) => {
            let found = find(a)?;
            let mut removed = Vec::new();
            for l in &found {
                std::fs::remove_file(&l.path).map_err(|e| Error::io(&l.path, e))?;
                removed.push(l.path.display().to_string());
            }
            print(&if a.json {
                json(&serde_json::json!({ "id": a.id, "removed": removed }))
            } else {
                removed.iter().map(|p| format!("removed {p}\n")).collect()
            })?;
        }
        ProfileAction::Export(a) => {
            let found = find(&a.id)?;
            let [one] = found.as_slice() else {
                return Err(Error::usage(
                    "ID",
                    &a.id.id,
                    "has a read and a write profile: choose one with --direction read|write",
                )
                .into());
            };
            let text = std::fs::read_to_string(&one.path).map_err(|e| Error::io(&one.path, e))?;
            match &a.output {
                Some(out) => {
                    let force = crate::config::output::force(a.force);
                    crate::sys::fs::check_output("-o", out, force)?;
                    crate::sys::fs::replace_file(out, text.as_bytes())?;
                }
                None => print(&text)?,
            }
        }
        ProfileAction::Save(a) => return Ok(save(a)?),
        ProfileAction::Import(a) => return Ok(import(a)?),
    }
    Ok(exit::OK)
}

/// The profile directory; none nameable is a usage error.
fn dir(a: &crate::cli::ProfileArgs, access: Access) -> Result<PathBuf> {
    config::resolve(a, access)?.ok_or_else(|| {
        Error::usage(
            "--profile-dir",
            "",
            "no profile directory: set --profile-dir, $IOSAT_PROFILE_DIR, $XDG_STATE_HOME or $HOME",
        )
    })
}

/// The profile files of ID (of --direction); none is a usage error naming the id (exit 2).
fn find(a: &IdArgs) -> Result<Vec<Listed>> {
    let only = config::direction(a.direction.as_deref())?;
    let dir = dir(&a.profile, Access::Read)?;
    let found = profile::files_of(&dir, &a.id, only)?;
    if found.is_empty() {
        return Err(Error::usage(
            "ID",
            &a.id,
            format!(
                "is no profile in {} (see `iosat profile list`)",
                dir.display()
            ),
        ));
    }
    Ok(found)
}

fn json<T: serde::Serialize>(v: &T) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("serialises");
    s.push('\n');
    s
}

/// One profile as `list --json` and `show --json` give it.
fn entry(l: &Listed) -> serde_json::Value {
    serde_json::json!({
        "id": l.id,
        "device": device_of(l),
        "direction": l.profile.direction,
        "pattern": l.profile.pattern,
        "block_size": l.profile.block_size,
        "measured_unix_s": l.profile.measured_unix_s,
        "source": "swept",
        "path": l.path,
        "profile": l.profile,
    })
}

/// The device a profile is of (profile.rs: saved or imported for, else the swept disk).
fn device_of(l: &Listed) -> Option<String> {
    l.profile.device.clone()
}

fn when(unix_s: Option<u64>) -> String {
    unix_s.map_or("-".into(), |s| {
        let iso = crate::units::iso_utc(s as i64 * 1_000_000_000);
        iso.get(..16).unwrap_or(&iso).replace('T', " ")
    })
}

fn direction_word(d: profile::Direction) -> &'static str {
    match d {
        profile::Direction::Read => "read",
        profile::Direction::Write => "write",
        profile::Direction::Mixed => "mixed",
    }
}

fn list_text(dir: &Path, all: &[Listed]) -> String {
    if all.is_empty() {
        return format!(
            "no profiles in {} (save one: `iosat sweep DEVICE --save-profile`, read-only by default)\n",
            dir.display()
        );
    }
    let rows: Vec<[String; 7]> = all
        .iter()
        .map(|l| {
            [
                l.id.clone(),
                device_of(l).unwrap_or_else(|| "-".into()),
                direction_word(l.profile.direction).into(),
                l.profile.pattern.clone(),
                crate::units::block_size(l.profile.block_size),
                when(l.profile.measured_unix_s),
                "swept".into(),
            ]
        })
        .collect();
    let head = [
        "ID",
        "DEVICE",
        "DIR",
        "PATTERN",
        "BS",
        "WHEN (UTC)",
        "SOURCE",
    ];
    let mut width = head.map(str::len);
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = cells
            .iter()
            .zip(width)
            .map(|(c, w)| crate::units::pad(c, w, false))
            .collect::<Vec<_>>()
            .join("  ");
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut out = line(head.to_vec());
    for r in &rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

fn show_text(l: &Listed) -> String {
    let p = &l.profile;
    let mut out = format!("profile {} ({})\n", l.id, l.path.display());
    let mut kv = |k: &str, v: String| out.push_str(&format!("  {k:<22} {v}\n"));
    kv("device", device_of(l).unwrap_or_else(|| "-".into()));
    kv("direction", direction_word(p.direction).into());
    kv(
        "workload",
        format!("{} {}", p.pattern, crate::units::block_size(p.block_size)),
    );
    kv("measured (UTC)", when(p.measured_unix_s));
    kv(
        "baseline latency",
        format!("{:.1} µs", p.baseline_latency_ns / 1e3),
    );
    if let Some(p95) = p.baseline_p95_ns {
        kv("baseline p95", format!("{:.1} µs", p95 / 1e3));
    }
    kv("knee concurrency", p.knee_concurrency.to_string());
    kv("max useful IOPS", format!("{:.0}", p.max_useful_iops));
    if let Some(o) = p.overload_concurrency {
        kv("overloaded from", o.to_string());
    }
    if let Some(i) = &p.imported {
        kv(
            "imported",
            format!(
                "for {} from host {} at {}",
                i.for_device,
                i.from_host.as_deref().unwrap_or("?"),
                when(Some(i.unix_s))
            ),
        );
    }
    kv("source", "swept".into());
    out
}

/// A sweep result or profile file: its JSON (to store whole) and its typed report (to check).
fn read_result(path: &Path) -> Result<(serde_json::Value, SweepReport)> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let parse = |reason: String| Error::Parse {
        path: path.to_path_buf(),
        line: 1,
        reason,
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| parse(format!("not JSON ({e})")))?;
    let report: SweepReport = serde_json::from_value(value.clone()).map_err(|e| {
        parse(format!(
            "not an iosat sweep result (`iosat sweep --json -o FILE`): {e}"
        ))
    })?;
    if report.envelope.kind != "sweep" {
        return Err(parse(format!(
            "is a '{}' result, not a sweep result",
            report.envelope.kind
        )));
    }
    // The numbers a profile needs must be there (a verdict with a positive baseline, ...).
    profile::parse_profile("check", &text).map_err(parse)?;
    Ok((value, report))
}

/// The trust checks of `sweep --save-profile` (load/trust.rs), and a sweep that did not end.
fn check_trust(what: &str, report: &SweepReport, force: bool) -> Result<()> {
    let mut doubts = crate::load::trust::profile_doubts(report);
    if !report.complete {
        doubts.insert(
            0,
            "the sweep did not finish (interrupted or cut short)".into(),
        );
    }
    if !doubts.is_empty() && !force {
        return Err(Error::Safety(format!(
            "{what}: not storing this profile: {}; --force stores it anyway",
            doubts.join("; ")
        )));
    }
    Ok(())
}

/// Store `value` as the profile of `dev`, with `state` as its device state; say where.
fn store(
    a: &StoreArgs,
    root: &crate::sys::Root,
    dev: &crate::sys::device::BlockDev,
    mut value: serde_json::Value,
    state: profile::DeviceState,
) -> Result<i32> {
    let id = profile::device_id(root, dev).ok_or_else(|| {
        Error::usage(
            "--for",
            &dev.name,
            "is not in sysfs: its profile id is unknown",
        )
    })?;
    let dir = dir(&a.profile, Access::Save)?;
    if let Some(o) = value.as_object_mut() {
        o.remove("device_state");
        o.insert("saved_for".into(), dev.name.clone().into());
    }
    let path = profile::save(&dir, &id, &profile::profile_json(&value, &state))?;
    print(&if a.json {
        json(&serde_json::json!({ "id": id, "device": dev.name, "path": path }))
    } else {
        format!(
            "profile of {} saved as {id} to {}\n",
            dev.name,
            path.display()
        )
    })?;
    Ok(exit::OK)
}

/// `iosat profile save RESULT.json [--for DEVICE]`.
fn save(a: &SaveArgs) -> Result<i32> {
    let root = crate::config::root(&a.store.root);
    let (value, report) = read_result(&a.result)?;
    check_trust("profile save", &report, a.store.force)?;
    let dev = match (&a.for_device, &report.target.disk_device) {
        (Some(d), _) => config::device(&root, "--for", d)?,
        (None, Some(d)) => {
            let here = crate::sys::uname().0;
            let host = &report.envelope.host;
            if !host.is_empty() && !here.is_empty() && *host != here {
                return Err(Error::usage(
                    "--for",
                    "",
                    format!(
                        "{} was measured on host {host}, not here ({here}): name the device \
here with --for DEVICE (or use `iosat profile import`)",
                        a.result.display()
                    ),
                ));
            }
            config::device(&root, "--for", d)?
        }
        (None, None) => {
            return Err(Error::usage(
                "--for",
                a.result.display(),
                "is needed: the result does not say which device it measured",
            ))
        }
    };
    let state = profile::DeviceState::read(&root, &dev);
    store(&a.store, &root, &dev, value, state)
}

/// `iosat profile import FILE --for DEVICE`: a profile or a sweep result from a twin, kept with
/// the state of the device it was measured on (so `stat` says how this one differs) and
/// marked as imported.
fn import(a: &ImportArgs) -> Result<i32> {
    let root = crate::config::root(&a.store.root);
    let (mut value, report) = read_result(&a.file)?;
    check_trust("profile import", &report, a.store.force)?;
    let dev = config::device(&root, "--for", &a.for_device)?;
    let then: profile::DeviceState = value
        .get("device_state")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    let host = report.envelope.host.clone();
    if let Some(o) = value.as_object_mut() {
        let imported = profile::Imported {
            for_device: dev.name.clone(),
            from_host: (!host.is_empty()).then_some(host),
            unix_s: u64::try_from(crate::sys::clock::wall_ns() / 1_000_000_000).unwrap_or(0),
        };
        o.insert(
            "imported".into(),
            serde_json::to_value(imported).expect("serialises"),
        );
    }
    store(&a.store, &root, &dev, value, then)
}
