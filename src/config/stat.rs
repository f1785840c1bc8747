//! `iosat stat` arguments → StatSpec. Each bad value is one Usage error naming the flag.

use crate::cli::stat::StatArgs;
use crate::error::{Error, Result};
use crate::monitor::select::Selection;
use crate::report::Format;
use crate::sys::Root;
use std::path::{Path, PathBuf};

/// A validated `iosat stat` request.
#[derive(Debug, Clone, PartialEq)]
pub struct StatSpec {
    pub interval_ns: u64,
    pub count: Option<u64>,
    pub since_boot: bool,
    pub selection: Selection,
    pub format: Format,
    pub record: Option<PathBuf>,
    pub replay: Option<PathBuf>,
    /// `--html FILE`: a page drawn from the recording (needs --record or --replay).
    pub html: Option<PathBuf>,
    pub root: Root,
    /// Where device profiles are looked up; None with --no-profile or when no directory can
    /// be named (no --profile-dir, $IOSAT_PROFILE_DIR, $XDG_STATE_HOME or $HOME).
    pub profile_dir: Option<PathBuf>,
    /// `--no-bpf`: no block-latency source (live percentiles).
    pub no_bpf: bool,
}

/// Shortest interval accepted: below 10 ms the kernel's ms counters make every rate noise.
pub const MIN_INTERVAL_NS: u64 = 10_000_000;
/// Longest interval accepted (one day).
pub const MAX_INTERVAL_NS: u64 = 86_400 * 1_000_000_000;

/// "-i" value: seconds (fractions allowed) or a duration with a unit (units.rs) → ns.
pub fn parse_interval(s: &str) -> Result<u64> {
    let bad = |reason: &str| Error::usage("-i", s, reason);
    let ns = crate::units::parse_duration_ns(s)
        .map_err(|_| bad("must be a number of seconds or a duration, e.g. 1, 0.5, 1s or 500ms"))?;
    if ns == 0 {
        return Err(bad("must be a number of seconds greater than 0"));
    }
    if ns < MIN_INTERVAL_NS {
        return Err(bad("must be at least 0.01 seconds"));
    }
    if ns > MAX_INTERVAL_NS {
        return Err(bad("must be at most 86400 seconds"));
    }
    Ok(ns)
}

pub fn parse_count(s: &str) -> Result<u64> {
    match s.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Error::usage(
            "-c",
            s,
            "must be a whole number of reports >= 1",
        )),
    }
}

/// A DEVICE argument as a name to match: /dev/mapper/NAME → NAME, /dev/... symlinks resolved
/// (/dev/disk/by-id/... → sda), /dev/NAME → NAME; globs and plain names unchanged.
pub fn device_pattern(arg: &str) -> Result<String> {
    if arg.is_empty() {
        return Err(Error::usage("DEVICE", arg, "must not be empty"));
    }
    if let Some(name) = arg.strip_prefix("/dev/mapper/") {
        return Ok(name.to_string());
    }
    if arg.starts_with('/') {
        let p = Path::new(arg);
        let resolved = if crate::monitor::select::is_glob(arg) {
            p.to_path_buf()
        } else {
            std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
        };
        let s = resolved.to_string_lossy();
        return match s.strip_prefix("/dev/") {
            Some(name) if !name.contains('/') => Ok(name.to_string()),
            _ => Err(Error::usage(
                "DEVICE",
                arg,
                "is not a device name or a /dev path of a block device",
            )),
        };
    }
    Ok(arg.to_string())
}

/// The DEVICE arguments and --partitions/--all as a device selection (stat and top).
pub fn selection(devices: &[String], partitions: bool, all: bool) -> Result<Selection> {
    let patterns = devices
        .iter()
        .map(|d| device_pattern(d))
        .collect::<Result<Vec<_>>>()?;
    Ok(Selection {
        patterns,
        partitions,
        all,
    })
}

impl StatSpec {
    pub fn from_args(a: &StatArgs) -> Result<StatSpec> {
        let interval_ns = match &a.interval {
            Some(s) => parse_interval(s)?,
            None => 1_000_000_000,
        };
        let count = a.count.as_deref().map(parse_count).transpose()?;
        let format = super::output_format(&a.format, a.wide);
        if let Some(r) = &a.record {
            crate::monitor::collect::check_record_target(r)?;
        }
        if let Some(p) = &a.html {
            if a.record.is_none() && a.replay.is_none() {
                return Err(Error::usage(
                    "--html",
                    p.display(),
                    "needs --record FILE (or --replay FILE): the page is drawn from a recording",
                ));
            }
            crate::sys::fs::check_new_page(p)?;
        }
        Ok(StatSpec {
            interval_ns,
            count,
            since_boot: a.since_boot,
            no_bpf: a.no_bpf,
            selection: selection(&a.devices, a.partitions, a.all)?,
            format,
            record: a.record.clone(),
            replay: a.replay.clone(),
            html: a.html.clone(),
            root: super::root(&a.root),
            profile_dir: if a.no_profile {
                None
            } else {
                super::profile::resolve(&a.profile, super::profile::Access::Read)?
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("0.5").unwrap(), 500_000_000);
        assert_eq!(parse_interval("2").unwrap(), 2_000_000_000);
        for bad in ["0", "-1", "abc", "", "nan", "inf", "0.001", "1e9"] {
            let e = parse_interval(bad).unwrap_err().to_string();
            assert!(e.starts_with("'-i' "), "{e}");
            assert!(e.contains(&format!("(got '{bad}')")), "{e}");
        }
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("3").unwrap(), 3);
        assert!(parse_count("0").is_err());
        assert!(parse_count("x").is_err());
    }

    #[test]
    fn device_patterns() {
        assert_eq!(device_pattern("sda").unwrap(), "sda");
        assert_eq!(device_pattern("nvme*").unwrap(), "nvme*");
        assert_eq!(device_pattern("/dev/mapper/vg0-root").unwrap(), "vg0-root");
        assert_eq!(device_pattern("/dev/nonexistent9").unwrap(), "nonexistent9");
        assert!(device_pattern("/tmp/x/y").is_err());
        assert!(device_pattern("").is_err());
    }
}
