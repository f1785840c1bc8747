//! `iosat analyze`: orchestration only — validate, read the files, build the report, print it
//! with the renderer `iosat report` uses (report/analyze.rs).

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
    // No --html for analyze: text goes to a terminal (`iosat report` draws the page).
    let format = match spec.format {
        Format::Html => Format::TEXT,
        f => f,
    };
    super::print(&crate::report::analyze::render(&rep, format))?;
    Ok(crate::error::exit::OK)
}
