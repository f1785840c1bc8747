//! `iosat stat` arguments → StatSpec. Each bad value is one Usage error naming the flag.
//! Must not import: cmd/, ui/.

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
    pub root: Root,
    /// `-z`: leave out devices that did no I/O in the interval.
    pub omit_idle: bool,
    /// The avg-cpu line (object, columns) of each interval; off with --no-cpu or -d.
    pub cpu: bool,
    /// Standard output; `-o FILE`: the reports written there too as they come (`--force`
    /// replaces an existing FILE); `--html FILE`: a page drawn from the recording (needs
    /// --record or --replay).
    pub output: super::output::Output,
    /// Where device profiles are looked up; None with --no-profile or when no directory can
    /// be named (no --profile-dir, $IOSAT_PROFILE_DIR, $XDG_STATE_HOME or $HOME).
    pub profile_dir: crate::profile::ProfileDirs,
    /// `--no-bpf`: no block-latency source (live percentiles).
    pub no_bpf: bool,
    /// Production learning (config::learn); None with --no-learn. A replay learns in memory.
    pub learn: Option<crate::learn::LearnSpec>,
    /// `--forget`: the state directory whose learned state is removed (then exit).
    pub forget: Option<PathBuf>,
    /// `--cap DEV:…`, `--cap-iops/--cap-mbps` for the one device named (issue 42).
    pub caps: super::caps::DeviceCaps,
    /// Hindsight (monitor::hindsight): None when off, on a replay, or with nowhere to write.
    pub hindsight: Option<crate::monitor::hindsight::Settings>,
    /// The bursts' short window (`--burst-window`), ns; None when off, on a replay, or when
    /// not shorter than the interval (no window to read between samples).
    pub burst_ns: Option<u64>,
    /// `--cgroups`: who loads each device (monitor::cgroups).
    pub cgroups: bool,
}

impl StatSpec {
    /// What `iosat report FILE --csv` replays a recording with: every device (partitions and
    /// idle ones too), the CPU columns, no count, as `iosat stat --replay FILE --all --csv`.
    pub fn replay_of(
        path: &Path,
        format: Format,
        profile_dir: impl Into<crate::profile::ProfileDirs>,
    ) -> StatSpec {
        StatSpec {
            interval_ns: MIN_INTERVAL_NS,
            count: None,
            since_boot: false,
            no_bpf: true,
            learn: None,
            forget: None,
            selection: Selection {
                patterns: Vec::new(),
                partitions: true,
                all: true,
            },
            format,
            record: None,
            replay: Some(path.to_path_buf()),
            root: Root::default(),
            omit_idle: false,
            cpu: true,
            output: super::output::Output::stdout(format),
            profile_dir: profile_dir.into(),
            caps: Vec::new(),
            hindsight: None,
            burst_ns: None,
            cgroups: false,
        }
    }
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

/// iostat's positional `[interval [count]]` after the devices: one or two trailing arguments
/// that start with a digit (no kernel device name does). Returns the devices and the
/// interval and count given that way.
pub fn split_interval_count(args: &[String]) -> (&[String], Option<&str>, Option<&str>) {
    let numeric = |s: &String| s.starts_with(|c: char| c.is_ascii_digit());
    let n = args.iter().rev().take(2).take_while(|s| numeric(s)).count();
    let (devices, tail) = args.split_at(args.len() - n);
    match tail {
        [i] => (devices, Some(i.as_str()), None),
        [i, c] => (devices, Some(i.as_str()), Some(c.as_str())),
        _ => (devices, None, None),
    }
}

/// `-o FILE` of stat: iostat's `-o JSON` is the JSON format, anything else a file.
fn output_file(a: &StatArgs) -> Result<(Option<PathBuf>, bool)> {
    match &a.output {
        Some(p) if p.as_os_str() == "JSON" => {
            if a.format.csv || a.format.markdown || a.format.wide {
                return Err(Error::usage(
                    "-o",
                    "JSON",
                    "is iostat's --json and cannot be used with --csv, --markdown or --wide",
                ));
            }
            Ok((None, true))
        }
        Some(p) => Ok((Some(p.clone()), false)),
        None => Ok((None, false)),
    }
}

impl StatSpec {
    pub fn from_args(a: &StatArgs) -> Result<StatSpec> {
        let habits = super::habits::iostat(&a.iostat)?;
        let args: Vec<String> = habits
            .positional
            .iter()
            .chain(&a.devices)
            .cloned()
            .collect();
        let (devices, pos_interval, pos_count) = split_interval_count(&args);
        let interval_ns = match (&a.interval, pos_interval) {
            (Some(_), Some(p)) => {
                return Err(Error::usage(
                    "INTERVAL",
                    p,
                    "is given twice: as -i and as iostat's positional interval",
                ))
            }
            (None, Some(p)) if a.replay.is_some() => {
                return Err(Error::usage(
                    "INTERVAL",
                    p,
                    "cannot be used with --replay (the recording has its own intervals)",
                ))
            }
            (Some(s), None) => parse_interval(s)?,
            (None, Some(p)) => parse_interval(p).map_err(|e| match e {
                Error::Usage { reason, .. } => Error::usage("INTERVAL", p, reason),
                e => e,
            })?,
            (None, None) => 1_000_000_000,
        };
        let count = match (&a.count, pos_count) {
            (Some(_), Some(p)) => {
                return Err(Error::usage(
                    "COUNT",
                    p,
                    "is given twice: as -c and as iostat's positional count",
                ))
            }
            (Some(c), None) => Some(parse_count(c)?),
            (None, Some(p)) => Some(parse_count(p).map_err(|e| match e {
                Error::Usage { reason, .. } => Error::usage("COUNT", p, reason),
                e => e,
            })?),
            (None, None) => None,
        };
        let (output, json) = output_file(a)?;
        let mut format = super::output_format(&a.format);
        if json {
            format = Format::Json;
        }
        let mut devices = devices.to_vec();
        devices.extend(habits.devices);
        if let Some(r) = &a.record {
            crate::monitor::collect::check_record_target(r, &super::root(&a.root))?;
        }
        if let Some(p) = &a.html {
            if a.record.is_none() && a.replay.is_none() {
                return Err(Error::usage(
                    "--html",
                    p.display(),
                    "needs --record FILE (or --replay FILE): the page is drawn from a recording",
                ));
            }
        }
        let root = super::root(&a.root);
        let mut learn = super::learn::spec(&a.live.learn, &root)?;
        if let (Some(l), Some(_)) = (&mut learn, &a.replay) {
            // A recording's devices need not be this machine's: learned in memory only.
            l.state_dir = None;
        }
        let forget = match a.live.learn.forget {
            true => Some(
                super::learn::state_dir(&a.live.learn, &root)?.ok_or_else(|| {
                    Error::flag(
                        "--forget",
                        "no state directory (--state-dir, $IOSAT_STATE_DIR)",
                    )
                })?,
            ),
            false => None,
        };
        let output = super::output::Output::stdout(format)
            .stream_file(output.as_deref(), super::output::force(a.force))?
            .page(a.html.as_deref(), crate::sys::fs::Force::NotOffered)?;
        Ok(StatSpec {
            interval_ns,
            count,
            since_boot: a.since_boot,
            no_bpf: a.live.no_bpf,
            learn,
            forget,
            selection: selection(&devices, a.partitions || habits.partitions, a.all)?,
            format,
            record: a.record.clone(),
            replay: a.replay.clone(),
            root: super::root(&a.root),
            omit_idle: a.omit_idle,
            cpu: !(a.no_cpu || habits.no_cpu),
            output,
            profile_dir: super::profile::read_dirs(&a.profile, a.no_profile)?,
            caps: super::caps::per_device(&a.caps, &devices, "DEVICE")?,
            hindsight: match a.replay {
                Some(_) => None,
                None => super::hindsight::settings(&a.hindsight, &a.live.learn, &root)?,
            },
            burst_ns: match (super::hindsight::burst_window(&a.live)?, &a.replay) {
                (Some(w), None) if w < interval_ns => Some(w),
                _ => None,
            },
            cgroups: match (a.cgroups, a.live.no_bpf) {
                (true, true) => {
                    return Err(Error::usage(
                        "--cgroups",
                        "--no-bpf",
                        "needs the block-latency BPF source, which --no-bpf turns off",
                    ))
                }
                (c, _) => c,
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
        // The one parser of durations (units.rs): iostat's bare seconds and units alike.
        assert_eq!(parse_interval("1s").unwrap(), 1_000_000_000);
        assert_eq!(parse_interval("500ms").unwrap(), 500_000_000);
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
    fn trailing_numbers_are_interval_and_count() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let a = v(&["1", "5"]);
        assert_eq!(split_interval_count(&a), (&a[..0], Some("1"), Some("5")));
        let a = v(&["sda", "2", "3"]);
        assert_eq!(split_interval_count(&a), (&a[..1], Some("2"), Some("3")));
        let a = v(&["sda", "nvme0n1", "0.5"]);
        assert_eq!(split_interval_count(&a), (&a[..2], Some("0.5"), None));
        let a = v(&["sda"]);
        assert_eq!(split_interval_count(&a), (&a[..], None, None));
        // Three numbers: the first is a DEVICE (and will match none).
        let a = v(&["1", "2", "3"]);
        assert_eq!(split_interval_count(&a).0, &a[..1]);
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
