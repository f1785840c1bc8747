//! `iosat compare` arguments → [`CompareSpec`]: at least two files, each a file and given
//! once; the format from `--json`/`--csv`/`--markdown`; the `--html` page's path.
//! Must not import: cmd/, ui/.

use crate::cli::compare::CompareArgs;
use crate::error::{Error, Result};
use crate::report::Format;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq)]
pub struct CompareSpec {
    pub files: Vec<PathBuf>,
    pub format: Format,
    pub html: Option<PathBuf>,
    pub force: bool,
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
            format: super::output_format(&a.format),
            html: a.html.clone(),
            force: a.force,
        })
    }
}
