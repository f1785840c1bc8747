//! `iosat profile`: orchestration only — list, show, rm and export the profiles of the
//! profile directories (profile.rs), save one from an existing sweep result with the trust
//! checks of `sweep --save-profile` (load/trust.rs), import one made on a twin for a device
//! here, either as a device's profile or (`--model`) as the model profile of every device
//! like it. Spec (config/profile_cmd.rs) → run → render (report/profile.rs) → the one output
//! sink (cmd/sink.rs).
//! Must not import: cmd/analyze.rs, cmd/compare.rs, cmd/completions.rs, cmd/exporter.rs,
//! cmd/fsync.rs, cmd/info.rs, cmd/report.rs, cmd/stat.rs, cmd/sweep.rs, cmd/top.rs, ui/.

use crate::cmd::sink::Sink;
use crate::config::profile::{self as config};
use crate::config::profile_cmd::{no_dir, Action, ProfileCmdSpec, Store, Wanted};
use crate::error::{exit, Error, Result};
use crate::load::result::SweepReport;
use crate::profile::{self, DeviceProfile, Extras, Listed, ModelKey};
use crate::report::profile as view;
use std::path::Path;

pub fn run(args: &crate::cli::profile::ProfileCmdArgs) -> anyhow::Result<i32> {
    let spec = ProfileCmdSpec::from_args(args)?;
    let mut out = spec.output.open()?;
    // Text or JSON as the flags chose (export: the stored file as it is).
    let fmt = out.stdout_format().unwrap_or(crate::report::Format::Json);
    let answer = match spec.action {
        Action::List { dirs } => {
            let mut all = Vec::new();
            for (d, _) in &dirs.dirs {
                all.extend(profile::list(d)?);
            }
            view::list(&dirs.describe(), &all, fmt)
        }
        Action::Show(w) => view::show(&find(&w)?, fmt),
        Action::Rm(w) => {
            let found = find(&w)?;
            let mut removed = Vec::new();
            for l in &found {
                std::fs::remove_file(&l.path).map_err(|e| Error::io(&l.path, e))?;
                removed.push(l.path.display().to_string());
            }
            view::removed(&w.id, &removed, fmt)
        }
        Action::Export(w) => {
            let found = find(&w)?;
            let [one] = found.as_slice() else {
                return Err(Error::usage(
                    "ID",
                    &w.id,
                    "has a read and a write profile: choose one with --direction read|write",
                )
                .into());
            };
            std::fs::read_to_string(&one.path).map_err(|e| Error::io(&one.path, e))?
        }
        Action::Save(s) => return Ok(save(s, &mut out)?),
        Action::Import(s) => return Ok(import(s, &mut out)?),
    };
    out.result(&|_| answer.clone())?;
    Ok(exit::OK)
}

/// The profile files of ID (of --direction) in the first directory of the search that has
/// any; none is a usage error naming the id (exit 2).
fn find(w: &Wanted) -> Result<Vec<Listed>> {
    for (d, _) in &w.dirs.dirs {
        let found = profile::files_of(d, &w.id, w.only)?;
        if !found.is_empty() {
            return Ok(found);
        }
    }
    Err(Error::usage(
        "ID",
        &w.id,
        format!(
            "is no profile in {} (see `iosat profile list`)",
            w.dirs.describe()
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
    a: Store,
    out: &mut Sink,
    target: Target,
    report: &SweepReport,
    state: profile::DeviceState,
    mut extras: Extras,
) -> Result<i32> {
    let (id, device, model) = match target {
        Target::Device(dev) => {
            let id = profile::device_id(&a.root, &dev).ok_or_else(|| {
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
    let dir = a.save_dir?.ok_or_else(no_dir)?;
    // A cap declared now is stored with the report, over the sweep's own, figure by figure.
    let mut report = report.clone();
    if let Some(c) = a.declared_cap {
        report.declared_cap = Some(report.declared_cap.map_or(c, |r| c.or(r)));
    }
    let path = profile::save(&dir, &id, &profile::profile_json(&report, &state, &extras))?;
    let fmt = out.stdout_format().unwrap_or(crate::report::Format::TEXT);
    let said = view::saved(&id, device.as_deref(), model.as_deref(), &path, fmt);
    out.result(&|_| said.clone())?;
    Ok(exit::OK)
}

/// The device or model a profile is saved for: `--model` makes it the model of `dev`.
fn target(a: &Store, dev: crate::sys::device::BlockDev) -> Target {
    if a.model {
        Target::Model(ModelKey::read(&a.root, &dev))
    } else {
        Target::Device(dev)
    }
}

/// `iosat profile save RESULT.json [--for DEVICE] [--model]`.
fn save(a: Store, out: &mut Sink) -> Result<i32> {
    let root = a.root.clone();
    let (report, _) = read_result(&a.file)?;
    check_trust("profile save", &report, a.force)?;
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
                        a.file.display()
                    ),
                ));
            }
            config::device(&root, "--for", d)?
        }
        (None, None) => {
            return Err(Error::usage(
                "--for",
                a.file.display(),
                "is needed: the result does not say which device it measured",
            ))
        }
    };
    let state = profile::DeviceState::read(&root, &dev);
    let target = target(&a, dev);
    store(a, out, target, &report, state, Extras::default())
}

/// `iosat profile import FILE --for DEVICE [--model]`: a profile or a sweep result from a
/// twin, kept with the state of the device it was measured on (so `stat` says how this one
/// differs) and marked as imported. A model profile (exported) imports as one without --for.
fn import(a: Store, out: &mut Sink) -> Result<i32> {
    let root = a.root.clone();
    let (report, p) = read_result(&a.file)?;
    check_trust("profile import", &report, a.force)?;
    let (target, for_device) = match (&a.for_device, p.model_profile) {
        (Some(d), _) => {
            let dev = config::device(&root, "--for", d)?;
            let name = dev.name.clone();
            (target(&a, dev), name)
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
    store(a, out, target, &report, then, extras)
}
