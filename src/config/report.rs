//! `iosat report` arguments → [`ReportSpec`]: the format from `--format`, else from the
//! extension of `-o` (`.md`, `.csv`, `.txt`, else HTML), else text on a terminal and HTML into
//! a pipe, and the profile directory resolved once.
//! Must not import: cmd/, ui/.

use crate::cli::report::{ReportArgs, ReportFormat};
use crate::error::Result;
use crate::report::Format;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq)]
pub struct ReportSpec {
    pub input: PathBuf,
    /// Standard output, or `-o FILE` instead of it.
    pub output: super::output::Output,
    pub format: Format,
    pub profile_dir: crate::profile::ProfileDirs,
}

impl ReportSpec {
    pub fn from_args(a: &ReportArgs) -> Result<ReportSpec> {
        let format = match a.format {
            Some(ReportFormat::Html) => Format::Html,
            Some(ReportFormat::Markdown) => Format::Markdown,
            Some(ReportFormat::Csv) => Format::Csv,
            Some(ReportFormat::Text) => Format::TEXT,
            // A page poured onto a terminal is unreadable: a terminal gets the text rendering,
            // a pipe or a redirect the page as before.
            None if a.output.is_none() && crate::sys::tty::stdout_is_terminal() => {
                super::output_format(&crate::cli::FormatArgs::default())
            }
            None => match a
                .output
                .as_ref()
                .and_then(|p| p.extension())
                .and_then(|e| e.to_str())
            {
                Some("md") | Some("markdown") => Format::Markdown,
                Some("csv") => Format::Csv,
                Some("txt") => Format::TEXT,
                _ => Format::Html,
            },
        };
        let output = match &a.output {
            None => super::output::Output::stdout(format),
            Some(p) => super::output::Output::files_only().file_as(
                "--output",
                Some(p),
                super::output::force(a.force),
                format,
            )?,
        };
        Ok(ReportSpec {
            input: a.input.clone(),
            output,
            format,
            profile_dir: super::profile::resolve_dirs(&a.profile, super::profile::Access::Read)?,
        })
    }
}
