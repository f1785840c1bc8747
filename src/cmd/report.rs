//! `iosat report`: read a saved result (JSON, `stat --json` lines, or a `stat --record` recording),
//! render it, write it (never over a user's file without --force). Orchestration only: a
//! recording goes through the one replay (monitor::replay, monitor::series), the profiles through
//! profile::ProfileCache; no other command is called.
//! Must not import: cmd/analyze.rs, cmd/compare.rs, cmd/completions.rs, cmd/exporter.rs,
//! cmd/fsync.rs, cmd/info.rs, cmd/stat.rs, cmd/sweep.rs, cmd/top.rs.

use crate::cli::report::ReportArgs;
use crate::config::report::ReportSpec;
use crate::error::Error;
use crate::monitor::replay::{RecordingText, Replay};
use crate::monitor::select::Selection;
use crate::monitor::series::SeriesStore;
use crate::profile::ProfileCache;
use crate::report::stat as rstat;

pub fn run(args: &ReportArgs) -> anyhow::Result<i32> {
    let spec = ReportSpec::from_args(args)?;
    let read = crate::sys::fs::read_text(&spec.input)?;
    // A recording through the one recording opener (what it skips is said once, here).
    let (text, warnings) = if rstat::is_recording(&read.0) {
        let r = RecordingText::of(&spec.input, read);
        (r.text, r.warnings)
    } else {
        let warnings = crate::sys::fs::bad_line_warnings(&spec.input, &read.1);
        (read.0, warnings)
    };
    warnings.into_iter().for_each(crate::error::warn);
    // The stat kind has one CSV layout, the one `stat --csv` prints: a recording goes through
    // the one replay (monitor::replay) as `stat --replay FILE --all --csv` would, stat's JSON
    // lines through their one typed reader (report::stat).
    if spec.format == crate::report::Format::Csv {
        if rstat::is_recording(&text) {
            write_out(&spec, &recording_csv(&spec, &text)?)?;
            return Ok(0);
        }
        if rstat::is_stat_json(&text) {
            let csv = rstat::csv_from_json(&text).map_err(|e| e.at(&spec.input))?;
            write_out(&spec, &csv)?;
            return Ok(0);
        }
    }
    if rstat::is_recording(&text) {
        let store = SeriesStore::from_text(&text, Some(crate::learn::in_memory()))
            .map_err(|e| e.at(&spec.input))?;
        // Profiles are judged against this machine's view of the devices (the real root).
        let mut profiles = ProfileCache::new(spec.profile_dir.clone(), crate::sys::Root::default());
        let (devices, idle) = store.series(&mut profiles);
        let diagnosis = crate::import::recording_diagnosis(&spec.input, &text);
        // A hindsight dump's triggers are said and marked on every chart.
        let triggers = crate::monitor::hindsight::triggers(&text);
        let page = rstat::render_dump(&devices, &idle, &diagnosis, &triggers, spec.format);
        write_out(&spec, &page)?;
        return Ok(0);
    }
    let report = crate::report::load(&text).map_err(|e| e.at(&spec.input))?;
    write_out(&spec, &crate::report::render(&report, spec.format))?;
    Ok(0)
}

/// A recording replayed into `stat --csv`'s rows: every device, partitions too, each judged
/// against its profile, else by what learning makes of the recording's own intervals (as
/// `stat --replay` and the recording's page judge them); the replay's and the profiles'
/// warnings on stderr.
fn recording_csv(spec: &ReportSpec, text: &str) -> Result<String, Error> {
    let mut profiles = ProfileCache::new(spec.profile_dir.clone(), crate::sys::Root::default());
    let notes = |profiles: &mut ProfileCache, _: &str| {
        profiles
            .take_warnings()
            .into_iter()
            .for_each(crate::error::warn)
    };
    let every = Selection {
        patterns: Vec::new(),
        partitions: true,
        all: true,
    };
    let learning = Some(crate::learn::in_memory());
    let steps = Replay::open(
        text,
        &spec.input,
        every,
        false,
        &mut profiles,
        notes,
        learning,
    )?;
    let path = spec.input.display().to_string();
    crate::report::stat_view::csv_of_replay(steps, &mut |w| {
        crate::error::warn(format_args!("{path}: {w}"))
    })
}

/// To `-o FILE` or standard output, through the one output sink (bytes already rendered).
fn write_out(spec: &ReportSpec, bytes: &str) -> Result<(), Error> {
    spec.output.open()?.result(&|_| bytes.to_string())
}
