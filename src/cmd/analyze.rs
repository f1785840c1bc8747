//! `iosat analyze`: orchestration only — validate, read the files, build the report, write it
//! through the one output sink (config::output) with the renderer `iosat report` uses
//! (report/analyze.rs): stdout, `-o FILE`, and the page to `--html FILE`.
//! Must not import: cmd/compare.rs, cmd/completions.rs, cmd/exporter.rs, cmd/fsync.rs, cmd/info.rs,
//! cmd/report.rs, cmd/stat.rs, cmd/sweep.rs, cmd/top.rs.

use crate::cli::analyze::AnalyzeArgs;
use crate::config::analyze::AnalyzeSpec;
use crate::import::{self, report};

pub fn run(args: &AnalyzeArgs) -> anyhow::Result<i32> {
    let spec = AnalyzeSpec::from_args(args)?;
    let imports = spec
        .files
        .iter()
        .map(|f| import::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let mut rep = report::build(&imports, &spec.devices)?;
    rep.envelope = crate::envelope::Envelope::now("analyze", report::SCHEMA_VERSION);
    spec.output
        .open()?
        .result(&|f| crate::report::analyze::render(&rep, f))?;
    Ok(crate::error::exit::OK)
}
