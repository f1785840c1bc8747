//! `iosat fsync`: orchestration only: spec (config/) → run (fsync/) → print through the one
//! output sink (cmd/sink.rs) with the one fsync renderer (report/fsync.rs, the same bytes
//! `iosat report` prints) → exit code.
//! Must not import: cmd/analyze.rs, cmd/compare.rs, cmd/completions.rs, cmd/exporter.rs,
//! cmd/info.rs, cmd/report.rs, cmd/stat.rs, cmd/sweep.rs, cmd/top.rs.

use crate::cli::fsync::FsyncArgs;
use crate::error::{exit, Error};
use crate::fsync::report::FsyncReport;
use crate::report::fsync::render;
use std::io::IsTerminal;

pub fn run(args: &FsyncArgs) -> anyhow::Result<i32> {
    let run = crate::config::fsync::build(args)?;
    crate::fsync::io::install_sigint_handler();
    // Said before the run, on stderr (the report on stdout repeats it).
    if let Some(w) = crate::fsync::io::memory_fs_warning(&run.spec.dir) {
        crate::error::warn(w);
    }
    let tty = std::io::stderr().is_terminal();
    let mut progress = |line: &str| {
        if tty {
            crate::error::say(format_args!("iosat fsync: {line}"));
        }
    };
    let report =
        crate::fsync::run(&run.spec, &mut progress).map_err(|e| cannot_create(e, &run.spec.dir))?;
    run.output.open()?.result(&|f| render(&report, f))?;
    if report.interrupted {
        crate::error::say("iosat: interrupted: results so far printed, test files removed");
        return Ok(exit::INTERRUPTED);
    }
    if report.verification_failed() {
        return Err(Error::Verify(first_verify_error(&report)).into());
    }
    Ok(exit::OK)
}

/// A test file that could not be created in `dir` (a filesystem that holds no regular files,
/// such as /proc or /sys, or one the user may not write) is said as what it is, naming the
/// directory, not as the raw error on a generated file name.
fn cannot_create(e: Error, dir: &std::path::Path) -> Error {
    match e {
        // Only what creating the file meets (no such file on proc, EACCES on sysfs, a
        // read-only filesystem): a write that fails later (ENOSPC) keeps naming its file.
        Error::Io { path, source }
            if (source.kind() == std::io::ErrorKind::NotFound
                || source.raw_os_error() == Some(libc::EROFS)
                || crate::sys::fs::pseudo_fs_at(dir))
                && path.parent() == Some(dir)
                && path.file_name().is_some_and(|n| {
                    n.to_string_lossy()
                        .starts_with(crate::fsync::file::LEFTOVER_PREFIX)
                }) =>
        {
            let fs = crate::sys::fs::fs_type_name_at(dir);
            Error::Io {
                path: dir.to_path_buf(),
                source: std::io::Error::new(
                    source.kind(),
                    format!(
                        "cannot create a test file here{} ({source}): give a directory on the \
                         filesystem to measure",
                        fs.map_or(String::new(), |f| format!(" on {f}"))
                    ),
                ),
            }
        }
        e => e,
    }
}

/// The first failed read-back, named by its case or group-commit level.
fn first_verify_error(report: &FsyncReport) -> String {
    let cases = report.cases.iter().filter_map(|c| {
        let e = c.verification.verify_error.as_ref()?;
        Some(format!(
            "{} {} {} B: {e}",
            c.method.name(),
            c.mode.name(),
            c.size
        ))
    });
    let levels = report.group_commit.iter().flat_map(|g| {
        g.levels.iter().filter_map(|l| {
            let e = l.verification.verify_error.as_ref()?;
            Some(format!(
                "group commit {} x{}: {e}",
                l.layout.name(),
                l.committers
            ))
        })
    });
    let like = report.like.iter().flat_map(|l| {
        l.entries.iter().filter_map(|e| {
            let err = e.verification.verify_error.as_ref()?;
            Some(format!(
                "{} {} x{}: {err}",
                e.method,
                e.pattern.name(),
                e.writes_per_commit
            ))
        })
    });
    cases.chain(like).chain(levels).next().unwrap_or_default()
}
