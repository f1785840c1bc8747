//! `iosat profile`: orchestration only — list, show, rm and export the profiles of the
//! profile directories (profile.rs), save one from an existing sweep result with the trust
//! checks of `sweep --save-profile` (load/trust.rs), import one made on a twin for a device
//! here, either as a device's profile or (`--model`) as the model profile of every device
//! like it. Rendered by report/profile.rs.
//! Must not import: cmd/analyze.rs, cmd/compare.rs, cmd/completions.rs, cmd/exporter.rs,
//! cmd/fsync.rs, cmd/info.rs, cmd/report.rs, cmd/stat.rs, cmd/sweep.rs, cmd/top.rs, ui/.

use crate::cli::profile::{IdArgs, ImportArgs, ProfileAction, ProfileCmdArgs, SaveArgs, StoreArgs};
use crate::cmd::sink::print;
use crate::config::profile::{self as config, Access};
use crate::error::{exit, Error, Result};
use crate::load::result::SweepReport;
use crate::profile::{self, DeviceProfile, Extras, Listed, ModelKey, ProfileDirs};
use crate::report::profile as view;
use crate::report::Format;
use std::path::Path;

fn format(json: bool) -> Format {
    if json {
        Format::Json
    } else {
        Format::TEXT
    }
}

pub fn run(args: &ProfileCmdArgs) -> anyhow::Result<i32> {
    match &args.action {
        ProfileAction::List(a) => {
            let dirs = dirs(&a.profile)?;
            let mut all = Vec::new();
            for (d, _) in &dirs.dirs {
                all.extend(profile::list(d)?);
            }
            print(&view::list(&dirs.describe(), &all, format(a.json)))?;
        }
        ProfileAction::Show(a) => {
            print(&view::show(&find(a)?, format(a.json)))?;
        }
        ProfileAction::Rm(a) => {
            let found = find(a)?;
            let mut removed = Vec::new();
            for l in &found {
                std::fs::remove_file(&l.path).map_err(|e| Error::io(&l.path, e))?;
                removed.push(l.path.display().to_string());
            }
            print(&view::removed(&a.id, &removed, format(a.json)))?;
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
                // The rule of every output flag (issue 39 case 2): a regular file replaced
                // with --force, a character device or FIFO written into, never replaced;
                // anything else refused without advising --force.
                Some(out) => {
                    let force = crate::config::output::force(a.force);
                    crate::sys::fs::write_output("-o", out, text.as_bytes(), force)?;
                }
                None => print(&text)?,
            }
        }
        ProfileAction::Save(a) => return Ok(save(a)?),
        ProfileAction::Import(a) => return Ok(import(a)?),
    }
    Ok(exit::OK)
}

/// The directories profiles are read from; none nameable is a usage error.
fn dirs(a: &crate::cli::ProfileArgs) -> Result<ProfileDirs> {
    let d = config::resolve_dirs(a, Access::Read)?;
    if d.is_empty() {
        return Err(no_dir());
    }
    Ok(d)
}

fn no_dir() -> Error {
    Error::usage(
        "--profile-dir",
        "",
        "no profile directory: set --profile-dir, $IOSAT_PROFILE_DIR, $XDG_STATE_HOME or $HOME",
    )
}

/// The profile files of ID (of --direction) in the first directory of the search that has
/// any; none is a usage error naming the id (exit 2).
fn find(a: &IdArgs) -> Result<Vec<Listed>> {
    let only = config::direction(a.direction.as_deref())?;
    let dirs = dirs(&a.profile)?;
    for (d, _) in &dirs.dirs {
        let found = profile::files_of(d, &a.id, only)?;
        if !found.is_empty() {
            return Ok(found);
        }
    }
    Err(Error::usage(
        "ID",
        &a.id,
        format!(
            "is no profile in {} (see `iosat profile list`)",
            dirs.describe()
        ),
    ))
}

/// A sweep result or profile file: its typed report (stored, and checked) and the profile
/// it makes (what an exported profile adds: its device state, model key, host).
fn read_result(path: &Path) -> Result<(SweepReport, DeviceProfile)> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let parse = |reason: String| Error::parse(path, 1, reason);
    let report: SweepReport = serde_json::from_str(&text).map_err(|e| {
        parse(if e.is_syntax() || e.is_eof() {
            format!("not JSON ({e})")
        } else {
            format!("not an iosat sweep result (`iosat sweep --json -o FILE`): {e}")
        })
    })?;
    if report.envelope.kind != "sweep" {
        return Err(parse(format!(
            "is a '{}' result, not a sweep result",
            report.envelope.kind
        )));
    }
    // The numbers a profile needs must be there (a verdict with a positive baseline, ...).
    let p = profile::parse_profile("check", &text).map_err(parse)?;
    Ok((report, p))
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

/// Whom a stored profile judges: one device here, or every device of a model.
enum Target {
    Device(crate::sys::device::BlockDev),
    Model(ModelKey),
}

/// Store `report` with `state` and `extras` for `target`; say where.
fn store(
    a: &StoreArgs,
    root: &crate::sys::Root,
    target: Target,
    report: &SweepReport,
    state: profile::DeviceState,
    mut extras: Extras,
) -> Result<i32> {
    let (id, device, model) = match target {
        Target::Device(dev) => {
            let id = profile::device_id(root, &dev).ok_or_else(|| {
                Error::usage(
                    "--for",
                    &dev.name,
                    "is not in sysfs: its profile id is unknown",
                )
            })?;
            extras.saved_for = Some(dev.name.clone());
            (id, Some(dev.name), None)
        }
        Target::Model(key) => {
            let label = key.label();
            let id = key.id();
            extras.model_profile = Some(key);
            (id, None, Some(label))
        }
    };
    let dir = config::resolve(&a.profile, Access::Save)?.ok_or_else(no_dir)?;
    let path = profile::save(&dir, &id, &profile::profile_json(report, &state, &extras))?;
    print(&view::saved(
        &id,
        device.as_deref(),
        model.as_deref(),
        &path,
        format(a.json),
    ))?;
    Ok(exit::OK)
}

/// The device or model a profile is saved for: `--model` makes it the model of `dev`.
fn target(a: &StoreArgs, root: &crate::sys::Root, dev: crate::sys::device::BlockDev) -> Target {
    if a.model {
        Target::Model(ModelKey::read(root, &dev))
    } else {
        Target::Device(dev)
    }
}

/// `iosat profile save RESULT.json [--for DEVICE] [--model]`.
fn save(a: &SaveArgs) -> Result<i32> {
    let root = crate::config::root(&a.store.root);
    let (report, _) = read_result(&a.result)?;
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
    let target = target(&a.store, &root, dev);
    store(&a.store, &root, target, &report, state, Extras::default())
}

/// `iosat profile import FILE --for DEVICE [--model]`: a profile or a sweep result from a
/// twin, kept with the state of the device it was measured on (so `stat` says how this one
/// differs) and marked as imported. A model profile (exported) imports as one without --for.
fn import(a: &ImportArgs) -> Result<i32> {
    let root = crate::config::root(&a.store.root);
    let (report, p) = read_result(&a.file)?;
    check_trust("profile import", &report, a.store.force)?;
    let (target, for_device) = match (&a.for_device, p.model_profile) {
        (Some(d), _) => {
            let dev = config::device(&root, "--for", d)?;
            let name = dev.name.clone();
            (target(&a.store, &root, dev), name)
        }
        (None, Some(key)) => {
            let label = key.label();
            (Target::Model(key), format!("model '{label}'"))
        }
        (None, None) => {
            return Err(Error::usage(
                "--for",
                a.file.display(),
                "is needed: name the device here it is the profile of (with --model, a device \
of the model)",
            ))
        }
    };
    let host = report.envelope.host.clone();
    let extras = Extras {
        imported: Some(profile::Imported {
            for_device,
            from_host: (!host.is_empty()).then_some(host),
            unix_s: u64::try_from(crate::sys::clock::wall_ns() / 1_000_000_000).unwrap_or(0),
        }),
        ..Extras::default()
    };
    let then = p.device_state.unwrap_or_default();
    store(&a.store, &root, target, &report, then, extras)
}
