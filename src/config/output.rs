//! Where every command's result goes, validated: standard output in the format the flags
//! chose, `-o FILE` (the same result; text plain at 80 columns) and `--html FILE` (the page).
//! Built once here from the flags and checked before any work (sys::fs::check_output, the
//! never-replace rule); cmd/sink.rs opens it and writes. Writes nothing itself.
//! Imports only: error, report/, sys/.

use crate::error::Result;
use crate::report::Format;
use crate::sys::fs::{self, Force};
use std::path::{Path, PathBuf};

/// Where a result goes, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// Standard output's format; None when `-o` takes its place (`iosat report -o FILE`).
    pub stdout: Option<Format>,
    /// `-o FILE` (or report's `--output`).
    pub file: Option<Dest>,
    /// `--html FILE`: the page.
    pub page: Option<Dest>,
}

/// One output file named by a flag.
#[derive(Debug, Clone, PartialEq)]
pub struct Dest {
    pub flag: &'static str,
    pub path: PathBuf,
    pub force: Force,
    pub format: Format,
    /// Written as the run goes (`stat -o`), not replaced whole.
    pub stream: bool,
}

/// `--force` of a flag that offers it: given or not.
pub fn force(given: bool) -> Force {
    if given {
        Force::Given
    } else {
        Force::NotGiven
    }
}

impl Output {
    /// Standard output alone, in `format`.
    pub fn stdout(format: Format) -> Output {
        Output {
            stdout: Some(format),
            file: None,
            page: None,
        }
    }

    /// No standard output: everything goes to the files.
    pub fn files_only() -> Output {
        Output {
            stdout: None,
            file: None,
            page: None,
        }
    }

    /// `flag FILE` when given: the same result as standard output (text never coloured, 80
    /// columns), refused now when [`fs::check_output`] refuses it.
    pub fn file(self, flag: &'static str, path: Option<&Path>, force: Force) -> Result<Output> {
        let format = self.stdout.map_or(Format::TEXT, Format::for_file);
        self.file_as(flag, path, force, format)
    }

    /// [`Output::file`] in a format of its own (`iosat report -o FILE --format markdown`).
    pub fn file_as(
        mut self,
        flag: &'static str,
        path: Option<&Path>,
        force: Force,
        format: Format,
    ) -> Result<Output> {
        self.file = dest(flag, path, force, format)?;
        Ok(self)
    }

    /// `-o FILE` written as the run goes (`stat`).
    pub fn stream_file(self, path: Option<&Path>, force: Force) -> Result<Output> {
        let mut o = self.file("-o", path, force)?;
        if let Some(d) = &mut o.file {
            d.stream = true;
        }
        Ok(o)
    }

    /// `--html FILE` when given: the page.
    pub fn page(mut self, path: Option<&Path>, force: Force) -> Result<Output> {
        self.page = dest("--html", path, force, Format::Html)?;
        Ok(self)
    }
}

fn dest(
    flag: &'static str,
    path: Option<&Path>,
    force: Force,
    format: Format,
) -> Result<Option<Dest>> {
    let Some(path) = path else { return Ok(None) };
    fs::check_output(flag, path, force)?;
    Ok(Some(Dest {
        flag,
        path: path.to_path_buf(),
        force,
        format,
        stream: false,
    }))
}
