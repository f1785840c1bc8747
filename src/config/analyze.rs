//! `iosat analyze` arguments → [`AnalyzeSpec`]. Checks what can be checked before reading:
//! each FILE names a file, not a directory, and is given once.
//! Must not import: cmd/, ui/.

use super::output::force;
use crate::cli::analyze::AnalyzeArgs;
use crate::error::{Error, Result};
use crate::sys::fs::Force;
use std::path::PathBuf;

/// How the result is printed.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyzeSpec {
    pub files: Vec<PathBuf>,
    /// iostat devices to keep; empty keeps all.
    pub devices: Vec<String>,
    /// Standard output, `-o FILE` (the result there too) and `--html FILE` (the page
    /// `iosat report` draws).
    pub output: super::output::Output,
    /// `--target-p99`: the target to estimate the rate for.
    pub target: Option<crate::analysis::open::Target>,
    /// `--cap-iops`, `--cap-mbps`: what the device was provisioned with (issue 42).
    pub declared_cap: Option<crate::analysis::declared::DeclaredCap>,
    /// `--aws-stats DEV=FILE`: an AWS volume's own counters beside a recording (issue 42).
    pub aws_stats: Vec<(String, PathBuf)>,
}

/// `--aws-stats DEV=FILE`: the device as the recording names it and a readable file.
fn aws_stats(args: &[String]) -> Result<Vec<(String, PathBuf)>> {
    args.iter()
        .map(|a| {
            let (dev, file) = a
                .split_once('=')
                .filter(|(d, f)| !d.is_empty() && !f.is_empty())
                .ok_or_else(|| {
                    Error::usage(
                        "--aws-stats",
                        a,
                        "expected DEV=FILE, e.g. nvme1n1=stats.json",
                    )
                })?;
            if !std::path::Path::new(file).is_file() {
                return Err(Error::usage(
                    "--aws-stats",
                    a,
                    "FILE is not a readable file",
                ));
            }
            Ok((dev.to_string(), PathBuf::from(file)))
        })
        .collect()
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
        let output = super::output::Output::stdout(super::output_format(&a.format))
            .page(a.html.as_deref(), Force::NotOffered)?
            .file("-o", a.output.output.as_deref(), force(a.output.force))?;
        let target = a
            .target_p99
            .as_deref()
            .map(|t| -> Result<_> {
                let ns = super::duration_arg("--target-p99", t)?;
                if ns == 0 {
                    return Err(Error::usage("--target-p99", t, "must be a positive time"));
                }
                Ok(crate::analysis::open::Target {
                    percentile: crate::analysis::open::Percentile::P99,
                    limit_ns: ns as f64,
                })
            })
            .transpose()?;
        Ok(AnalyzeSpec {
            declared_cap: super::caps::one(&a.cap)?,
            aws_stats: aws_stats(&a.aws_stats)?,
            target,
            files,
            devices: a.devices.clone(),
            output,
        })
    }
}
