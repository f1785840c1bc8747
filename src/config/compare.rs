//! `iosat compare` arguments → [`CompareSpec`]: at least two files, each a file and given
//! once; the format from `--json`/`--csv`/`--markdown`; the `--html` page's path.
//! Must not import: cmd/, ui/.

use crate::cli::compare::CompareArgs;
use crate::error::{Error, Result};
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq)]
pub struct CompareSpec {
    pub files: Vec<PathBuf>,
    /// Standard output and the `--html FILE` page (replaced with --force).
    pub output: super::output::Output,
}

impl CompareSpec {
    pub fn from_args(a: &CompareArgs) -> Result<Self> {
        let files = super::result_files(&a.files)?;
        if files.len() < 2 {
            let got = files.first().map(|f| f.display().to_string());
            return Err(Error::usage(
                "FILE",
                got.unwrap_or_default(),
                "needs a second result to compare with",
            ));
        }
        Ok(CompareSpec {
            files,
            output: super::output::Output::stdout(super::output_format(&a.format))
                .page(a.html.as_deref(), super::output::force(a.force))?,
        })
    }
}
