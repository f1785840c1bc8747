//! `iosat analyze`: orchestration only — validate, read the files, build the report, write it
//! through the one output sink (config::output) with the renderer `iosat report` uses
//! (report/analyze.rs): stdout, `-o FILE`, and the page to `--html FILE`.
//! Must not import: cmd/compare.rs, cmd/completions.rs, cmd/exporter.rs, cmd/fsync.rs, cmd/info.rs,
//! cmd/report.rs, cmd/stat.rs, cmd/sweep.rs, cmd/top.rs.

use crate::cli::analyze::AnalyzeArgs;
use crate::config::analyze::AnalyzeSpec;
use crate::error::Error;
use crate::import::{self, report, FileImport};
use crate::monitor::replay::RecordingText;
use std::path::Path;

/// One input file; a recording through the one recording opener (a cut-off last line or a
/// line that is not UTF-8 skipped with a warning), any other result as import::load reads it.
fn load(path: &Path) -> Result<FileImport, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]);
    if import::diskstats::detect(&head).is_none() {
        return import::parse(path, &String::from_utf8_lossy(&bytes));
    }
    let rec = RecordingText::of(path, crate::sys::fs::text_of(bytes));
    rec.warnings.into_iter().for_each(crate::error::warn);
    import::parse(path, &rec.text)
}

pub fn run(args: &AnalyzeArgs) -> anyhow::Result<i32> {
    let spec = AnalyzeSpec::from_args(args)?;
    let imports = spec
        .files
        .iter()
        .map(|f| load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let mut rep = report::build(&imports, &spec.devices)?;
    rep.envelope = crate::envelope::Envelope::now("analyze", report::SCHEMA_VERSION);
    if let Some(t) = spec.target {
        // An estimate from the closed loop, said as one (analysis::open).
        rep.target_estimate = crate::analysis::open::estimate_from_closed(&rep.points(), t);
        let words = match &rep.target_estimate {
            Some(a) => crate::analysis::open::target_words(a),
            None => "--target-p99: no closed-loop level with a p99 to estimate from".to_string(),
        };
        rep.source.notes.push(words);
    }
    spec.output
        .open()?
        .result(&|f| crate::report::analyze::render(&rep, f))?;
    Ok(crate::error::exit::OK)
}
