//! `iosat report`: read a saved result (JSON, or a `stat --record` recording), render it, write
//! it (never over a user's file without --force). Also renders recordings for `stat --html`,
//! with the device profiles read from files.

use crate::cli::report::ReportArgs;
use crate::config::report::ReportSpec;
use crate::error::Error;
use crate::profile;
use crate::report::stat::{self as rstat, Found, Profiles};
use crate::report::Format;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub fn run(args: &ReportArgs) -> anyhow::Result<i32> {
    let spec = ReportSpec::from_args(args)?;
    let args = &spec;
    let text = std::fs::read_to_string(&args.input).map_err(|e| Error::io(&args.input, e))?;
    let format = spec.format;
    let bytes = if rstat::is_stat_json(&text) {
        let (devs, idle) = rstat::series_from_json(&text).map_err(|e| Error::Parse {
            path: args.input.clone(),
            line: e.line,
            reason: e.reason,
        })?;
        match format {
            Format::Html => rstat::page_html(&devs, &idle),
            Format::Markdown => rstat::markdown(&devs, &idle),
            _ => rstat::csv(&devs),
        }
    } else if rstat::is_recording(&text) {
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
        // Its errors already name the file (Error::Io) or the flag and value (Error::Usage).
        Some(path) => crate::report::write_new_file(path, bytes.as_bytes(), args.force)?,
        None => std::io::stdout()
            .lock()
            .write_all(bytes.as_bytes())
            .map_err(|e| Error::io("<stdout>", e))?,
    }
    Ok(0)
}

/// A recording rendered in `format`, saturation against the device profiles in
/// `profile_dir` (None: no profiles).
pub fn render_recording(
    path: &Path,
    text: &str,
    format: Format,
    profile_dir: Option<&Path>,
) -> Result<String, Error> {
    let mut profiles = FileProfiles {
        dir: profile_dir.map(Path::to_path_buf),
        root: crate::sys::Root::default(),
    };
    let (devs, idle) = rstat::series(text, &mut profiles).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        line: e.line,
        reason: e.reason,
    })?;
    Ok(match format {
        Format::Html => rstat::page_html(&devs, &idle),
        Format::Markdown => rstat::markdown(&devs, &idle),
        _ => rstat::csv(&devs),
    })
}

/// Profiles as `sweep --save-profile` saves them: `<dir>/<id>.json`, read with the loader
/// `iosat stat` uses.
struct FileProfiles {
    dir: Option<PathBuf>,
    root: crate::sys::Root,
}

impl Profiles for FileProfiles {
    fn by_id(&mut self, id: &str) -> Result<Found, String> {
        let Some(dir) = &self.dir else {
            return Err("no profile directory (--profile-dir, $IOSAT_PROFILE_DIR, \
$XDG_STATE_HOME or $HOME)."
                .into());
        };
        match profile::load(dir, id) {
            Ok(Some(p)) => Ok(Found {
                profile: Arc::new(p),
                path: dir.join(format!("{id}.json")).display().to_string(),
            }),
            Ok(None) => Err(format!("no profile {id}.json in {}.", dir.display())),
            Err(e) => Err(format!("{e}.")),
        }
    }

    fn live_id(&mut self, major: u32, minor: u32, name: &str) -> Option<String> {
        let dev = crate::sys::device::BlockDev {
            major,
            minor,
            name: name.to_string(),
        };
        profile::device_id(&self.root, &dev)
    }
}
