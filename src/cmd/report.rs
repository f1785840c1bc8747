//! `iosat report`: read a saved result (JSON, or a `stat --record` recording), render it, write
//! it (never over a user's file without --force). Also the device-profile lookup that gives a
//! recording's saturation chart its baseline (shared with `stat --html`).

use crate::bench::profile;
use crate::cli::report::{ReportArgs, ReportFormat};
use crate::error::Error;
use crate::report::stat::{self as rstat, Baseline, Baselines, DeviceSeries};
use anyhow::Context;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};

pub fn run(args: &ReportArgs) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(&args.input).map_err(|e| Error::io(&args.input, e))?;
    let format = args.format.unwrap_or_else(|| {
        match args
            .output
            .as_ref()
            .and_then(|p| p.extension())
            .and_then(|e| e.to_str())
        {
            Some("md") | Some("markdown") => ReportFormat::Markdown,
            Some("csv") => ReportFormat::Csv,
            _ => ReportFormat::Html,
        }
    });
    let bytes = if rstat::is_recording(&text) {
        render_recording(&args.input, &text, format, args.profile_dir.as_deref())?
    } else {
        let doc: Value = serde_json::from_str(&text).map_err(|e| Error::Parse {
            path: args.input.clone(),
            line: e.line(),
            reason: format!("not JSON nor an iosat recording: {e}"),
        })?;
        crate::report::render(&doc, format).map_err(|reason| Error::Parse {
            path: args.input.clone(),
            line: 1,
            reason,
        })?
    };
    match &args.output {
        Some(path) => crate::report::write_new_file(path, bytes.as_bytes(), args.force)
            .with_context(|| format!("writing the report to {}", path.display()))?,
        None => std::io::stdout()
            .lock()
            .write_all(bytes.as_bytes())
            .map_err(|e| Error::io("<stdout>", e))?,
    }
    Ok(0)
}

/// A recording rendered in `format`, with the baselines of the device profiles found.
pub fn render_recording(
    path: &Path,
    text: &str,
    format: ReportFormat,
    profile_dir: Option<&Path>,
) -> Result<String, Error> {
    let (devs, idle) = rstat::series(text).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        line: e.line,
        reason: e.reason,
    })?;
    let b = baselines(&devs, profile_dir);
    Ok(match format {
        ReportFormat::Html => rstat::page_html(&devs, &idle, &b),
        ReportFormat::Markdown => rstat::markdown(&devs, &idle, &b),
        ReportFormat::Csv => rstat::csv(&devs, &b),
    })
}

/// The profile directory as `sweep --save-profile` chooses it.
fn profile_dir(explicit: Option<&Path>) -> Option<PathBuf> {
    let env_dir = std::env::var_os("IOSAT_PROFILE_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    profile::profile_dir(
        explicit.or(env_dir.as_deref()),
        std::env::var("XDG_STATE_HOME").ok().as_deref(),
        std::env::var("HOME").ok().as_deref(),
    )
}

/// The baseline of one profile file, or why it has none.
fn read_baseline(path: &Path) -> Result<Baseline, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    let base = doc
        .pointer("/verdict/baseline_latency_ns")
        .and_then(Value::as_f64)
        .filter(|b| *b > 0.0)
        .ok_or_else(|| format!("{} has no verdict.baseline_latency_ns", path.display()))?;
    let w = |k: &str| doc.pointer(&format!("/workload/{k}")).cloned();
    let s = |v: Option<Value>| match v {
        Some(Value::String(s)) => s,
        Some(Value::Null) | None => "?".into(),
        Some(v) => v.to_string(),
    };
    Ok(Baseline {
        path: path.display().to_string(),
        baseline_ns: base,
        workload: format!(
            "{} {} B, {} engine",
            s(w("pattern")),
            s(w("block_size")),
            s(w("engine"))
        ),
    })
}

/// For each device of a recording, its profile: first under the id `sweep --save-profile`
/// gives the device when it is present on this machine (wwid, serial, model + size), else a
/// profile whose sweep ran on a device of that kernel name (`target.disk_device`).
pub fn baselines(devs: &[DeviceSeries], explicit_dir: Option<&Path>) -> Baselines {
    let mut out = Baselines::new();
    let Some(dir) = profile_dir(explicit_dir) else {
        for d in devs {
            out.insert(
                d.name.clone(),
                Err("no profile directory (set --profile-dir, $XDG_STATE_HOME or $HOME).".into()),
            );
        }
        return out;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let root = crate::sys::Root::default();
    for d in devs {
        let dev = crate::sys::device::BlockDev {
            major: d.major,
            minor: d.minor,
            name: d.name.clone(),
        };
        let by_id = crate::sys::device::sysfs_dir(&root, &dev).map(|sys| {
            let q = crate::sys::device::queue_info(&root, &dev);
            let id = profile::read_identity(&sys, &d.name, q.model, q.size_bytes);
            dir.join(format!("{}.json", profile::profile_id(&id)))
        });
        let found = by_id.filter(|p| p.is_file()).or_else(|| {
            files
                .iter()
                .find(|p| {
                    std::fs::read_to_string(p)
                        .ok()
                        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                        .and_then(|v| {
                            v.pointer("/target/disk_device")
                                .and_then(Value::as_str)
                                .map(|n| n == d.name)
                        })
                        .unwrap_or(false)
                })
                .cloned()
        });
        let b = match found {
            Some(p) => read_baseline(&p),
            None => Err(format!("no profile for this device in {}.", dir.display())),
        };
        out.insert(d.name.clone(), b);
    }
    out
}
