//! `iosat fsync` arguments → FsyncSpec. Every error names the flag and the value.
//! Must not import: cmd/, ui/, monitor/.

use crate::cli::fsync::FsyncArgs;
use crate::error::{Error, Result};
use crate::fsync::like::Database;
use crate::fsync::{FsyncSpec, Method, Mode};
use std::path::{Path, PathBuf};

/// Longest accepted --duration per case.
const MAX_DURATION_S: f64 = 3600.0;
const MAX_SIZE: u32 = 16 << 20;
const MAX_COMMITTERS: u32 = 1024;
/// Shortest accepted --duration per case: below it a verdict rests on a handful of commits.
const MIN_DURATION_S: f64 = 0.01;
/// Highest accepted --target-tps (a million commits per second is beyond any device).
const MAX_TPS: f64 = 1e6;

pub fn parse_methods(s: &str) -> Result<Vec<Method>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        if part.eq_ignore_ascii_case("all") {
            for m in Method::ALL {
                if !out.contains(&m) {
                    out.push(m);
                }
            }
            continue;
        }
        let m = Method::from_name(part).ok_or_else(|| {
            let names: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
            Error::usage(
                "--methods",
                part,
                format!("is not a method; choose from {} or all", names.join(", ")),
            )
        })?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    Ok(out)
}

pub fn parse_sizes(s: &str) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let v = super::size_arg("--sizes", part).map_err(|_| {
            Error::usage("--sizes", part, "must be a size in bytes, e.g. 4096 or 4k")
        })?;
        if v == 0 || v % 512 != 0 {
            return Err(Error::usage("--sizes", part, "must be a multiple of 512"));
        }
        if v > MAX_SIZE as u64 {
            return Err(Error::usage("--sizes", part, "must be at most 16M"));
        }
        if !out.contains(&(v as u32)) {
            out.push(v as u32);
        }
    }
    Ok(out)
}

pub fn parse_mode(s: &str) -> Result<Vec<Mode>> {
    match s.trim() {
        "overwrite" => Ok(vec![Mode::Overwrite]),
        "append" => Ok(vec![Mode::Append]),
        "both" => Ok(vec![Mode::Overwrite, Mode::Append]),
        other => Err(Error::usage(
            "--mode",
            other,
            "must be overwrite, append or both",
        )),
    }
}

pub fn duration_ns(s: &str) -> Result<u64> {
    let ns = super::duration_arg("--duration", s)?;
    if ns == 0 || ns as f64 > MAX_DURATION_S * 1e9 {
        return Err(Error::usage(
            "--duration",
            s,
            "must be more than 0 and at most 3600 seconds",
        ));
    }
    if (ns as f64) < MIN_DURATION_S * 1e9 {
        return Err(Error::usage(
            "--duration",
            s,
            "must be at least 0.01 seconds: a verdict needs more than a few commits",
        ));
    }
    Ok(ns)
}

pub fn parse_committers(s: &str) -> Result<Vec<u32>> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for part in t.split(',').map(str::trim) {
        let v: u32 = part.parse().map_err(|_| {
            Error::usage(
                "--committers",
                part,
                "must be a list of whole numbers, e.g. 1,2,4,8, or none",
            )
        })?;
        if v == 0 || v > MAX_COMMITTERS {
            return Err(Error::usage(
                "--committers",
                part,
                "must be between 1 and 1024 (none skips group commit)",
            ));
        }
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out.sort_unstable();
    Ok(out)
}

pub fn parse_tps(s: &str) -> Result<f64> {
    let v: f64 = s.trim().parse().map_err(|_| {
        Error::usage(
            "--target-tps",
            s,
            "must be a number of transactions per second",
        )
    })?;
    if !(v.is_finite() && v > 0.0) {
        return Err(Error::usage("--target-tps", s, "must be more than 0"));
    }
    if v > MAX_TPS {
        return Err(Error::usage(
            "--target-tps",
            s,
            "must be at most 1000000 transactions per second",
        ));
    }
    Ok(v)
}

fn check_dir(dir: &Path) -> Result<PathBuf> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => std::fs::canonicalize(dir).map_err(|e| Error::io(dir, e)),
        Ok(_) => Err(Error::usage(
            "DIR",
            dir.display(),
            "is not a directory (iosat fsync only writes files it creates inside a directory)",
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(Error::usage("DIR", dir.display(), "does not exist"))
        }
        Err(e) => Err(Error::io(dir, e)),
    }
}

/// What `iosat fsync` runs and how it prints: the experiment's spec plus the presentation
/// choices, all validated here (cmd/ reads no clap field).
#[derive(Debug, Clone)]
pub struct FsyncRun {
    pub spec: FsyncSpec,
    /// The format standard output gets.
    pub format: crate::report::Format,
    /// Standard output, `--html FILE` (checked not to exist) and `-o FILE` (checked not to
    /// exist unless `--force`).
    pub output: super::output::Output,
}

pub fn build(a: &FsyncArgs) -> Result<FsyncRun> {
    super::habits::fio(&a.fio, super::habits::FioOn::Fsync)?;
    super::habits::fio_fsync(&a.fio_fsync)?;
    let spec = spec(a)?;
    let format = super::output_format(&a.format);
    let output = super::output::Output::stdout(format)
        .page(a.html.as_deref(), crate::sys::fs::Force::NotOffered)?
        .file(
            "-o",
            a.output.output.as_deref(),
            super::output::force(a.output.force),
        )?;
    Ok(FsyncRun {
        spec,
        format,
        output,
    })
}

/// PostgreSQL's limit on commit_delay, µs.
pub const MAX_COMMIT_DELAY_US: u64 = 100_000;

/// `--commit-delay LIST`: commit_delay values, a bare number in µs (PostgreSQL's unit) or a
/// duration ("100us", "1ms"); 0 is always run, so it may be left out.
pub fn parse_commit_delays(s: &str) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let us = if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
            part.parse::<u64>().ok()
        } else {
            crate::units::parse_duration_ns(part)
                .ok()
                .map(|ns| ns / 1000)
        };
        match us {
            Some(us) if us <= MAX_COMMIT_DELAY_US => {
                if !out.contains(&(us as u32)) {
                    out.push(us as u32);
                }
            }
            _ => {
                return Err(Error::usage(
                    "--commit-delay",
                    part,
                    "must be a list of delays up to 100000 µs, e.g. 0,100,1000 or 0,100us,1ms",
                ))
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// `--like DB`: the database, or a usage error naming the flag.
pub fn parse_like(s: &str) -> Result<Database> {
    Database::from_name(s)
        .ok_or_else(|| Error::usage("--like", s, "must be postgres, innodb or mariadb"))
}

pub fn spec(a: &FsyncArgs) -> Result<FsyncSpec> {
    let dir = check_dir(a.dir.as_deref().unwrap_or(Path::new(".")))?;
    let o = &a.opts;
    let methods_explicit = o.methods.trim() != "all";
    let like = o.like.as_deref().map(parse_like).transpose()?;
    if like.is_some() && methods_explicit {
        return Err(Error::usage(
            "--methods",
            &o.methods,
            "cannot be combined with --like, which measures the database's own settings",
        ));
    }
    Ok(FsyncSpec {
        dir,
        methods: if like.is_some() {
            Vec::new()
        } else {
            parse_methods(&o.methods)?
        },
        methods_explicit,
        sizes: parse_sizes(&o.sizes)?,
        modes: parse_mode(&o.mode)?,
        duration_ns: duration_ns(&o.duration)?,
        committers: parse_committers(&o.committers)?,
        // The group-commit records are the database's commit writes under --like.
        group_size: like.map_or(4096, |d| d.commit_write_bytes()),
        target_tps: o.target_tps.as_deref().map(parse_tps).transpose()?,
        verify: !o.no_verify,
        root: super::root(&a.root),
        corrupt_block: o.test_corrupt_block,
        like,
        no_bpf: o.no_bpf,
        commit_delays_us: match o.commit_delay.as_deref() {
            None => Vec::new(),
            Some(s) if like == Some(Database::Postgres) => parse_commit_delays(s)?,
            Some(s) => {
                return Err(Error::usage(
                    "--commit-delay",
                    s,
                    "is PostgreSQL's commit_delay: it needs --like postgres",
                ))
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_parse_and_name_the_bad_one() {
        assert_eq!(parse_methods("all").unwrap().len(), 8);
        assert_eq!(
            parse_methods("fsync, rwf_dsync,fsync").unwrap(),
            vec![Method::Fsync, Method::RwfDsync]
        );
        let e = parse_methods("fsync,fsnyc").unwrap_err().to_string();
        assert!(e.starts_with("'--methods' is not a method"), "{e}");
        assert!(e.contains("(got 'fsnyc')"), "{e}");
    }

    #[test]
    fn sizes_must_be_sector_multiples() {
        assert_eq!(parse_sizes("512,4k,16K").unwrap(), vec![512, 4096, 16384]);
        assert_eq!(parse_sizes("1m").unwrap(), vec![1 << 20]);
        assert!(parse_sizes("1000")
            .unwrap_err()
            .to_string()
            .contains("multiple of 512"));
        assert!(parse_sizes("0").is_err());
        assert!(parse_sizes("abc").is_err());
        assert!(parse_sizes("32m").is_err());
    }

    #[test]
    fn durations_committers_modes_tps() {
        assert_eq!(duration_ns("0.2").unwrap(), 200_000_000);
        assert_eq!(duration_ns("2s").unwrap(), 2_000_000_000);
        assert!(duration_ns("0").is_err());
        assert!(duration_ns("-1").is_err());
        assert!(duration_ns("nan").is_err());
        assert_eq!(parse_committers("8,1,2").unwrap(), vec![1, 2, 8]);
        assert!(parse_committers("none").unwrap().is_empty());
        assert!(parse_committers("1,x").is_err());
        assert!(parse_committers("2000").is_err());
        // Issue 12 case 17: no silent skip, no one-commit verdict, no absurd rate.
        let e = parse_committers("0").unwrap_err().to_string();
        assert!(e.contains("none skips"), "{e}");
        assert!(duration_ns("1us")
            .unwrap_err()
            .to_string()
            .contains("at least 0.01"));
        assert!(duration_ns("0.01").is_ok());
        assert!(parse_tps("1e308")
            .unwrap_err()
            .to_string()
            .contains("at most"));
        assert!(parse_tps("1e6").is_ok());
        assert_eq!(parse_mode("both").unwrap().len(), 2);
        assert!(parse_mode("sideways").is_err());
        assert_eq!(parse_tps("200").unwrap(), 200.0);
        assert_eq!(parse_like("PostgreSQL").unwrap(), Database::Postgres);
        assert_eq!(parse_like("mariadb").unwrap(), Database::Mariadb);
        assert_eq!(
            parse_commit_delays("1ms, 0,100us,1000").unwrap(),
            vec![0, 100, 1000]
        );
        let e = parse_commit_delays("0,200ms").unwrap_err().to_string();
        assert!(e.contains("--commit-delay") && e.contains("200ms"), "{e}");
        let e = parse_like("oracle").unwrap_err().to_string();
        assert!(e.contains("--like") && e.contains("oracle"), "{e}");
        assert!(parse_tps("0").is_err());
    }
}
