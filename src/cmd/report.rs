//! `iosat report`: read a saved result (JSON, `stat --json` lines, or a `stat --record` recording),
//! render it, write it (never over a user's file without --force). Orchestration only: the
//! recording goes through monitor::series, the profiles through profile::ProfileCache. It still
//! calls cmd/stat.rs's replay (issue 24 item 4 ends that; then cmd/stat.rs joins the wall).
//! Must not import: cmd/analyze.rs, cmd/compare.rs, cmd/completions.rs, cmd/exporter.rs,
//! cmd/fsync.rs, cmd/info.rs, cmd/sweep.rs, cmd/top.rs.

use crate::cli::report::ReportArgs;
use crate::config::report::ReportSpec;
use crate::error::Error;
use crate::monitor::record::ParseError;
use crate::monitor::series::SeriesStore;
use crate::profile::ProfileCache;
use crate::report::{stat as rstat, Report};
use std::path::Path;

fn parse_error(path: &Path) -> impl Fn(ParseError) -> Error + '_ {
    move |e| Error::Parse {
        path: path.to_path_buf(),
        line: e.line,
        reason: e.reason,
    }
}

pub fn run(args: &ReportArgs) -> anyhow::Result<i32> {
    let spec = ReportSpec::from_args(args)?;
    let (text, bad) = crate::sys::fs::read_text(&spec.input)?;
    crate::sys::fs::bad_line_warnings(&spec.input, &bad)
        .into_iter()
        .for_each(crate::error::warn);
    // The stat kind has one CSV layout, the one `stat --csv` prints: a recording is replayed
    // as `stat --replay FILE --all --csv` would, stat's JSON lines are read column by column.
    if spec.format == crate::report::Format::Csv {
        if rstat::is_recording(&text) {
            let stat = crate::config::stat::StatSpec::replay_of(
                &spec.input,
                spec.format,
                spec.profile_dir.clone(),
            );
            let profiles = ProfileCache::new(spec.profile_dir.clone(), crate::sys::Root::default());
            let mut csv = String::new();
            super::stat::replay(&stat, &spec.input, profiles, &mut |r| {
                csv.push_str(&r(stat.format));
                Ok(())
            })?;
            write_out(&spec, &csv)?;
            return Ok(0);
        }
        if rstat::is_stat_json(&text) {
            write_out(&spec, &crate::report::stat_view::csv_from_json_lines(&text))?;
            return Ok(0);
        }
    }
    let report = if rstat::is_recording(&text) {
        let store = SeriesStore::from_text(&text).map_err(parse_error(&spec.input))?;
        // Profiles are judged against this machine's view of the devices (the real root).
        let mut profiles = ProfileCache::new(spec.profile_dir.clone(), crate::sys::Root::default());
        let (devices, idle) = store.series(&mut profiles);
        Report::Stat { devices, idle }
    } else {
        crate::report::load(&text).map_err(parse_error(&spec.input))?
    };
    write_out(&spec, &crate::report::render(&report, spec.format))?;
    Ok(0)
}

/// To `-o FILE` or standard output, through the one output sink (bytes already rendered).
fn write_out(spec: &ReportSpec, bytes: &str) -> Result<(), Error> {
    spec.output.open()?.result(&|_| bytes.to_string())
}
