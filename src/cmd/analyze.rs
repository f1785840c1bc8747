//! `iosat analyze`: orchestration only — validate, read the files, build the report, print it
//! with the renderer `iosat report` uses (report/analyze.rs), to stdout and `-o FILE`, and the
//! page to `--html FILE`.
//! Must not import: cmd/compare.rs, cmd/completions.rs, cmd/exporter.rs, cmd/fsync.rs, cmd/info.rs,
//! cmd/report.rs, cmd/stat.rs, cmd/sweep.rs, cmd/top.rs.

use crate::cli::analyze::AnalyzeArgs;
use crate::config::analyze::AnalyzeSpec;
use crate::import::{self, report};
use crate::report::Format;

pub fn run(args: &AnalyzeArgs) -> anyhow::Result<i32> {
    let spec = AnalyzeSpec::from_args(args)?;
    let imports = spec
        .files
        .iter()
        .map(|f| import::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let mut rep = report::build(&imports, &spec.devices)?;
    rep.envelope = crate::envelope::Envelope::now("analyze", report::SCHEMA_VERSION);
    // The page goes to --html FILE only; stdout gets text (or the format asked for).
    let format = match spec.format {
        Format::Html => Format::TEXT,
        f => f,
    };
    let out = crate::report::analyze::render(&rep, format);
    super::print(&out)?;
    if let Some(o) = &spec.output {
        // A file gets plain 80-column text, never the terminal's colours.
        let file = crate::report::analyze::render(&rep, format.for_file());
        crate::sys::fs::write_new_file(&o.path, file.as_bytes(), o.force)?;
    }
    if let Some(p) = &spec.html {
        let page = crate::report::analyze::render(&rep, Format::Html);
        crate::sys::fs::PageFile::new(p).write(&page)?;
    }
    Ok(crate::error::exit::OK)
}
