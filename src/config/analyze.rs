//! `iosat analyze` arguments → [`AnalyzeSpec`]. Checks what can be checked before reading:
//! each FILE names a file, not a directory, and is given once.
//! Must not import: cmd/, ui/.

use crate::cli::analyze::AnalyzeArgs;
use crate::error::{Error, Result};
use std::path::PathBuf;

/// How the result is printed.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyzeSpec {
    pub files: Vec<PathBuf>,
    /// iostat devices to keep; empty keeps all.
    pub devices: Vec<String>,
    pub format: crate::report::Format,
    /// `-o FILE`: the result is written there too.
    pub output: Option<super::OutputFile>,
    /// `--html FILE`: the page `iosat report` draws, checked not to exist.
    pub html: Option<PathBuf>,
}

impl AnalyzeSpec {
    pub fn from_args(a: &AnalyzeArgs) -> Result<Self> {
        let files = super::result_files(&a.files)?;
        if let Some(d) = a.devices.iter().find(|d| d.is_empty() || d.contains('/')) {
            return Err(Error::usage(
                "--device",
                d,
                "must be a device name as iostat prints it (sda, nvme0n1, dm-0)",
            ));
        }
        let format = super::output_format(&a.format);
        if let Some(p) = &a.html {
            crate::sys::fs::check_new_page(p)?;
        }
        Ok(AnalyzeSpec {
            files,
            devices: a.devices.clone(),
            format,
            output: super::output_file(&a.output)?,
            html: a.html.clone(),
        })
    }
}
