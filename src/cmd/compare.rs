//! `iosat compare`: orchestration only — validate, read and load each result
//! (report::load, schema versions checked), refuse mixed kinds, print the comparison
//! (report/compare.rs) and write its page with --html, through the one output sink.
//! Must not import: cmd/analyze.rs, cmd/completions.rs, cmd/exporter.rs, cmd/fsync.rs, cmd/info.rs,
//! cmd/report.rs, cmd/stat.rs, cmd/sweep.rs, cmd/top.rs.

use crate::cli::compare::CompareArgs;
use crate::config::compare::CompareSpec;
use crate::error::Error;
use crate::report::compare::{self, Run};
use crate::report::Report;
use std::path::Path;

/// One file as a typed result; its errors name the file (and the line). A recording (a
/// hindsight dump among them) is compared as `iosat analyze` reads it.
fn load(path: &Path) -> Result<Report, Error> {
    let (text, _) = crate::sys::fs::read_text(path)?;
    if crate::report::stat::is_recording(&text) {
        let (import, _) = crate::import::load(path)?;
        let r = crate::import::report::build(&[import], &[])?;
        return Ok(Report::Analyze(Box::new(r)));
    }
    let report = crate::report::load(&text).map_err(|e| e.at(path))?;
    if let Report::Stat { .. } = report {
        return Err(Error::usage(
            "FILE",
            path.display(),
            "is stat --json output; compare reads sweep, fsync and analyze results and \
             recordings",
        ));
    }
    Ok(report)
}

pub fn run(args: &CompareArgs) -> anyhow::Result<i32> {
    let spec = CompareSpec::from_args(args)?;
    let runs = spec
        .files
        .iter()
        .map(|f| {
            Ok(Run {
                label: f
                    .file_name()
                    .map_or_else(|| f.display().to_string(), |n| n.to_string_lossy().into()),
                report: load(f)?,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    if let Some(i) = compare::mixed(&runs) {
        return Err(Error::usage(
            "FILE",
            spec.files[i].display(),
            format!(
                "is {} result while {} is {} result; compare results of one kind",
                compare::a_kind(&runs[i].report),
                spec.files[0].display(),
                compare::a_kind(&runs[0].report)
            ),
        )
        .into());
    }
    spec.output.open()?.result(&|f| compare::render(&runs, f))?;
    Ok(crate::error::exit::OK)
}
