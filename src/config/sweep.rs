//! `iosat sweep` arguments → a validated [`SweepSpec`]. Every error names the flag and the value.
//! No clap type goes past this file.
//! Must not import: cmd/, ui/, monitor/.

use crate::cli::sweep::{PatternArg, SweepArgs};
use crate::error::{Error, Result};
use crate::load::target::TargetSpec;
use crate::load::Pattern;
use crate::sys::fs::Force;
use std::path::PathBuf;

/// The default concurrency levels: seed 000's 1, 4, 16, 64, 256 with the powers of two between.
/// The most passes `--repeat` may ask for: ten passes of the default series already take
/// four minutes.
pub const MAX_REPEAT: u32 = 100;

pub const DEFAULT_LEVELS: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];
pub use crate::load::engine::EngineChoice;
pub use crate::load::plan::{Levels, MAX_CONCURRENCY};

#[derive(Debug, Clone, PartialEq)]
pub struct SweepSpec {
    pub target: TargetSpec,
    pub engine: EngineChoice,
    /// `--engine` was given: never replaced by the loop/zram default (load::engine).
    pub engine_given: bool,
    /// Passes over the level series (`--repeat`).
    pub repeat: u32,
    /// `--budget`: ramp + measured time all levels may take, re-measures included (0: none).
    pub budget_ns: u64,
    pub pattern: Pattern,
    pub block_size: u64,
    pub levels: Levels,
    /// The levels flag as given, for the report.
    pub levels_text: String,
    pub duration_ns: u64,
    pub ramp_ns: u64,
    pub max_threads: u32,
    pub seed: u64,
    /// Standard output, `-o FILE` and the `--html FILE` page, rewritten after every level
    /// (neither may exist: sweep's --force is --save-profile's).
    pub output: super::output::Output,
    pub save_profile: bool,
    /// `--force`: save the profile although its measurement was unstable or disturbed.
    pub force: bool,
    pub profile_dir: Option<PathBuf>,
    /// Every directory profiles are read from: the swept device's profile gives the cap it
    /// was declared with when no `--cap-*` says (issue 42).
    pub profile_dirs: crate::profile::ProfileDirs,
    pub no_progress: bool,
    /// `--no-bpf`: no block-layer timing of the levels.
    pub no_bpf: bool,
    /// Where kernel files are read (--proc-root, --sys-root).
    pub root: crate::sys::Root,
    /// `--rate`: the open loop (load/open/), None for a closed-loop sweep only.
    pub open: Option<crate::load::open::spec::OpenPlan>,
    /// `--max-concurrency`, `--rate-limit`: the gentle mode (none given: default).
    pub limits: crate::analysis::evidence::SweepLimits,
    /// `--cap-iops`, `--cap-mbps`: what the device was provisioned with (issue 42).
    pub declared_cap: Option<crate::analysis::declared::DeclaredCap>,
}

/// `--max-concurrency` and `--rate-limit` into the sweep's limits, the levels cut at the
/// first (`auto` becomes the doublings up to it) and the engine the second needs (sync: it
/// paces each request; the sim has no clock to pace and uring batches its submissions).
fn gentle(
    a: &SweepArgs,
    levels: Levels,
    engine: EngineChoice,
) -> Result<(crate::analysis::evidence::SweepLimits, Levels, EngineChoice)> {
    let mut limits = crate::analysis::evidence::SweepLimits::default();
    let mut levels = levels;
    if let Some(n) = a.max_concurrency {
        if n == 0 || n > MAX_CONCURRENCY {
            return Err(Error::usage(
                "--max-concurrency",
                n,
                format!("must be between 1 and {MAX_CONCURRENCY}"),
            ));
        }
        levels = match levels {
            Levels::Auto => Levels::List(
                std::iter::successors(Some(1u32), |c| c.checked_mul(2))
                    .take_while(|&c| c <= n)
                    .collect(),
            ),
            Levels::List(v) => {
                let kept: Vec<u32> = v.into_iter().filter(|&c| c <= n).collect();
                if kept.is_empty() {
                    return Err(Error::usage(
                        "--max-concurrency",
                        n,
                        "is below every level of --levels",
                    ));
                }
                Levels::List(kept)
            }
        };
        limits.max_concurrency = Some(n);
    }
    let mut engine = engine;
    if let Some(text) = &a.rate_limit {
        let iops: f64 = text
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 1.0)
            .ok_or_else(|| {
                Error::usage("--rate-limit", text, "must be a number of IOPS, at least 1")
            })?;
        engine = match (engine, a.engine.is_some()) {
            (EngineChoice::Sim(_), _) => {
                return Err(Error::usage(
                    "--rate-limit",
                    text,
                    "paces a real target's requests, not the sim engine's",
                ))
            }
            (EngineChoice::Uring, true) => {
                return Err(Error::usage(
                    "--rate-limit",
                    text,
                    "runs the sync engine (it paces each request): drop --engine uring",
                ))
            }
            _ => EngineChoice::Sync,
        };
        limits.rate_limit_iops = Some(iops);
    }
    Ok((limits, levels, engine))
}

/// `--rate`: `auto` or a comma list of positive rates (IOPS; `k` suffix for thousands).
pub fn parse_rates(s: &str) -> Result<crate::load::open::spec::Rates> {
    use crate::load::open::spec::Rates;
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(Rates::Auto);
    }
    let bad = || {
        Error::usage(
            "--rate",
            s,
            "must be `auto` or a comma-separated list of positive rates in IOPS (2000, 2k)",
        )
    };
    let mut out = Vec::new();
    for part in s.split(',') {
        let p = part.trim().to_ascii_lowercase();
        let (num, mul) = match p.strip_suffix('k') {
            Some(n) => (n, 1000.0),
            None => (p.as_str(), 1.0),
        };
        let v: f64 = num.trim().parse().map_err(|_| bad())?;
        let v = v * mul;
        if !(v.is_finite() && v > 0.0) {
            return Err(bad());
        }
        out.push(v);
    }
    Ok(Rates::List(out))
}

/// The open-loop part of the arguments (None without `--rate`); `--arrivals` and
/// `--max-inflight` without `--rate` are refused.
fn open_plan(a: &SweepArgs) -> Result<Option<crate::load::open::spec::OpenPlan>> {
    use crate::load::schedule::Arrivals;
    let target = parse_target(a)?;
    let searching = target.is_some();
    let rate_text = match (&a.rate, target) {
        (Some(r), _) => Some(r.clone()),
        (None, Some(_)) => Some("search".to_string()),
        (None, None) => None,
    };
    let Some(text) = &rate_text else {
        if a.arrivals.is_some() {
            return Err(Error::flag("--arrivals", "only applies to --rate"));
        }
        if a.max_inflight.is_some() {
            return Err(Error::flag("--max-inflight", "only applies to --rate"));
        }
        return Ok(None);
    };
    let rates = if searching {
        crate::load::open::spec::Rates::Search
    } else {
        parse_rates(text)?
    };
    let arrivals = match a.arrivals.as_deref().map(str::trim) {
        None | Some("poisson") => Arrivals::Poisson,
        Some("uniform") => Arrivals::Uniform,
        Some(other) => {
            return Err(Error::usage(
                "--arrivals",
                other,
                "must be poisson or uniform",
            ))
        }
    };
    if let Some(n) = a.max_inflight {
        if n == 0 || n > MAX_CONCURRENCY {
            return Err(Error::usage(
                "--max-inflight",
                n,
                format!("must be between 1 and {MAX_CONCURRENCY}"),
            ));
        }
    }
    // The closed loop runs first when asked for (--levels given) or needed (--rate auto).
    let levels_given = a.levels.trim() != DEFAULT_LEVELS_TEXT;
    Ok(Some(crate::load::open::spec::OpenPlan {
        closed_first: levels_given || !matches!(rates, crate::load::open::spec::Rates::List(_)),
        target,
        rates,
        rates_text: text.trim().to_string(),
        arrivals,
        max_inflight: a.max_inflight,
    }))
}

/// `--target-p99 TIME` or `--target PCT=TIME` (None without either); the error names the flag.
fn parse_target(a: &SweepArgs) -> Result<Option<crate::analysis::open::Target>> {
    use crate::analysis::open::{Percentile, Target};
    let (flag, pct, time) = match (&a.target_p99, &a.latency_target) {
        (Some(t), _) => ("--target-p99", "p99", t.as_str()),
        (None, Some(t)) => {
            let (p, time) = t.split_once('=').ok_or_else(|| {
                Error::usage("--target", t, "must be PCT=TIME, as p99=2ms or p95=500us")
            })?;
            ("--target", p, time)
        }
        (None, None) => return Ok(None),
    };
    let percentile = Percentile::parse(pct).ok_or_else(|| {
        Error::usage(
            flag,
            pct,
            "the percentile is one of mean, p50, p90, p95, p99, p99.9",
        )
    })?;
    let limit_ns = super::duration_arg(flag, time)?;
    if limit_ns == 0 {
        return Err(Error::usage(flag, time, "must be a positive time"));
    }
    Ok(Some(Target {
        percentile,
        limit_ns: limit_ns as f64,
    }))
}

/// `--levels`' default as clap writes it (cli/sweep.rs).
const DEFAULT_LEVELS_TEXT: &str = "1,2,4,8,16,32,64,128,256";

pub fn parse_levels(s: &str) -> Result<Levels> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(Levels::Auto);
    }
    let mut out = Vec::new();
    for part in s.split(',') {
        let n: u32 = part.trim().parse().map_err(|_| {
            Error::usage(
                "--levels",
                s,
                "must be `auto` or a comma-separated list of concurrency levels",
            )
        })?;
        if n == 0 || n > MAX_CONCURRENCY {
            return Err(Error::usage(
                "--levels",
                s,
                format!("levels must be between 1 and {MAX_CONCURRENCY}"),
            ));
        }
        if out.last().is_some_and(|&prev| n <= prev) {
            return Err(Error::usage("--levels", s, "must be strictly increasing"));
        }
        out.push(n);
    }
    Ok(Levels::List(out))
}

pub fn parse_engine(s: &str) -> Result<EngineChoice> {
    match s.trim() {
        "uring" | "io_uring" => Ok(EngineChoice::Uring),
        "sync" => Ok(EngineChoice::Sync),
        other if other == "sim" || other.starts_with("sim:") => {
            // Validated here so a bad spec fails before anything else happens.
            other.parse::<crate::load::sim::SimSpec>()?;
            Ok(EngineChoice::Sim(other.to_string()))
        }
        _ => Err(Error::usage(
            "--engine",
            s,
            "must be uring, sync or sim:units=K,service=DURATION[,...]",
        )),
    }
}

pub fn build(a: &SweepArgs) -> Result<SweepSpec> {
    super::habits::fio(&a.fio, super::habits::FioOn::Sweep)?;
    let read_pct =
        match (&a.read_pct, a.pattern) {
            (None, _) => None,
            (Some(v), PatternArg::Randrw) => {
                let n: u8 =
                    v.trim().parse().ok().filter(|&n| n <= 100).ok_or_else(|| {
                        Error::usage("--read-pct", v, "must be a percentage 0..100")
                    })?;
                Some(n)
            }
            (Some(v), _) => {
                return Err(Error::usage(
                    "--read-pct",
                    v,
                    "only applies to --pattern randrw",
                ))
            }
        };
    let pattern = match a.pattern {
        PatternArg::Randread => Pattern::RandRead,
        PatternArg::Randwrite => Pattern::RandWrite,
        PatternArg::Read => Pattern::Read,
        PatternArg::Write => Pattern::Write,
        PatternArg::Randrw => Pattern::RandRw {
            read_pct: read_pct.unwrap_or(70),
        },
    };
    let block_size = super::size_arg("--bs", &a.bs)?;
    // Sectors are 512 bytes: no device takes less; the target's own logical block size is
    // checked once it is open.
    if block_size == 0 || block_size % 512 != 0 {
        return Err(Error::usage("--bs", &a.bs, "must be a multiple of 512"));
    }
    if block_size > 64 << 20 {
        return Err(Error::usage("--bs", &a.bs, "must be at most 64m"));
    }
    let duration_ns = super::duration_arg("--duration", &a.duration)?;
    if duration_ns < 1_000_000 {
        return Err(Error::usage(
            "--duration",
            &a.duration,
            "must be at least 1ms",
        ));
    }
    let ramp_ns = super::duration_arg("--ramp", &a.ramp)?;
    let budget_ns = super::duration_arg("--budget", &a.budget)?;
    let size_bytes = a
        .size
        .as_deref()
        .map(|s| super::size_arg("--size", s))
        .transpose()?;
    if let (Some(sz), Some(text)) = (size_bytes, &a.size) {
        if sz < block_size {
            return Err(Error::usage(
                "--size",
                text,
                "must be at least one block (--bs)",
            ));
        }
    }
    if a.threads == 0 || a.threads > MAX_CONCURRENCY {
        return Err(Error::usage(
            "--threads",
            a.threads,
            format!("must be between 1 and {MAX_CONCURRENCY}"),
        ));
    }
    let engine = parse_engine(a.engine.as_deref().unwrap_or("uring"))?;
    if a.repeat == 0 || a.repeat > MAX_REPEAT {
        return Err(Error::usage(
            "--repeat",
            a.repeat,
            format!("must be between 1 and {MAX_REPEAT}"),
        ));
    }
    if a.force && !a.save_profile {
        return Err(Error::flag("--force", "only applies to --save-profile"));
    }
    let (limits, levels, engine) = gentle(a, parse_levels(&a.levels)?, engine)?;
    let open = open_plan(a)?;
    // `--rate auto` and a target need the closed loop's maximum only: doubling until it
    // plateaus, unless --levels was given.
    let searching = open
        .as_ref()
        .is_some_and(|o| !matches!(o.rates, crate::load::open::spec::Rates::List(_)))
        && a.levels.trim() == DEFAULT_LEVELS_TEXT;
    let writes = !matches!(pattern, Pattern::RandRead | Pattern::Read);
    // -o is rewritten after every level: refuse a user's file before the run, not after it.
    let output = super::output::Output::stdout(super::output_format(&a.format))
        .page(a.html.as_deref(), Force::NotOffered)?
        .file("-o", a.output.as_deref(), Force::NotOffered)?;
    Ok(SweepSpec {
        target: TargetSpec {
            path: a.target.clone(),
            size_bytes,
            writes,
            direct: a.direct,
            destructive: a.destructive,
            overwrite_found: a.overwrite_found.clone(),
            allow_tmpfs: a.allow_tmpfs,
            block_size,
        },
        engine,
        engine_given: a.engine.is_some() || limits.rate_limit_iops.is_some(),
        repeat: a.repeat,
        budget_ns,
        pattern,
        block_size,
        levels: if searching { Levels::Auto } else { levels },
        levels_text: if searching {
            "auto".to_string()
        } else {
            a.levels.trim().to_string()
        },
        duration_ns,
        ramp_ns,
        max_threads: a.threads,
        seed: a.seed,
        output,
        save_profile: a.save_profile,
        force: a.force,
        profile_dir: super::profile::resolve(&a.profile, super::profile::Access::Save)?,
        profile_dirs: super::profile::resolve_dirs(&a.profile, super::profile::Access::Save)?,
        no_progress: a.no_progress,
        no_bpf: a.no_bpf,
        root: super::root(&a.root),
        open,
        limits,
        declared_cap: super::caps::one(&a.cap)?,
    })
}

impl SweepSpec {
    /// What the level driver runs.
    pub fn plan(&self) -> crate::load::driver::SweepPlan {
        crate::load::driver::SweepPlan {
            levels: self.levels.clone(),
            levels_text: self.levels_text.clone(),
            pattern: self.pattern,
            block_size: self.block_size,
            direct: self.target.direct,
            ramp_ns: self.ramp_ns,
            duration_ns: self.duration_ns,
            max_threads: self.max_threads,
            seed: self.seed,
            repeat: self.repeat,
            budget_ns: self.budget_ns,
            remeasure_baseline: true,
            root: self.root.clone(),
            rate_limit_iops: self.limits.rate_limit_iops,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> SweepArgs {
        use clap::Parser;
        let cli =
            crate::cli::Cli::try_parse_from(["iosat", "sweep"].iter().chain(extra.iter()).copied())
                .unwrap();
        match cli.command {
            crate::cli::Command::Sweep(a) => a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_default_sweep_measures_within_half_a_minute() {
        // The budget is about 60 s for the whole default run; laying out the test
        // file (1 GiB at most) takes the rest. Sub-windows split the same per-level time.
        let plan = build(&args(&[])).unwrap().plan();
        assert_eq!(
            plan.planned_levels(),
            Some(10),
            "nine levels and the re-measure"
        );
        assert!(
            plan.planned_ns().unwrap() <= 30_000_000_000,
            "{:?}",
            plan.planned_ns()
        );
        // What is left of the 50 s budget re-measures the levels that decide the verdict.
        assert_eq!(plan.budget_ns, 50_000_000_000);
        assert_eq!(
            build(&args(&["--budget", "0"])).unwrap().plan().budget_ns,
            0
        );
        let plan = build(&args(&["--repeat", "2", "--levels", "1,2"]))
            .unwrap()
            .plan();
        assert_eq!(plan.planned_levels(), Some(5));
        assert_eq!(
            build(&args(&["--levels", "auto"]))
                .unwrap()
                .plan()
                .planned_ns(),
            None
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(crate::config::size_arg("--bs", "4k").unwrap(), 4096);
        assert_eq!(crate::config::size_arg("--bs", "64KiB").unwrap(), 65536);
        assert_eq!(crate::config::size_arg("--bs", "1m").unwrap(), 1 << 20);
        assert_eq!(crate::config::size_arg("--bs", "512").unwrap(), 512);
        let e = crate::config::size_arg("--bs", "4x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("'--bs'") && e.contains("'4x'"), "{e}");
        assert!(crate::config::size_arg("--size", "99999999999t").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(
            crate::config::duration_arg("--duration", "2").unwrap(),
            2_000_000_000
        );
        assert_eq!(
            crate::config::duration_arg("--duration", "0.2").unwrap(),
            200_000_000
        );
        assert_eq!(
            crate::config::duration_arg("--duration", "500ms").unwrap(),
            500_000_000
        );
        assert_eq!(
            crate::config::duration_arg("--duration", "1.5s").unwrap(),
            1_500_000_000
        );
        assert!(crate::config::duration_arg("--duration", "-1").is_err());
        assert!(crate::config::duration_arg("--duration", "fast").is_err());
    }

    #[test]
    fn levels() {
        assert_eq!(parse_levels("auto").unwrap(), Levels::Auto);
        assert_eq!(
            parse_levels("1, 4,16").unwrap(),
            Levels::List(vec![1, 4, 16])
        );
        assert!(parse_levels("4,2").is_err());
        assert!(parse_levels("0,1").is_err());
        assert!(parse_levels("1,,2").is_err());
    }

    #[test]
    fn open_loop_flags() {
        use crate::analysis::open::Percentile;
        use crate::load::open::spec::Rates;
        assert_eq!(
            parse_rates("1000, 2k,2.5k").unwrap(),
            Rates::List(vec![1000.0, 2000.0, 2500.0])
        );
        assert_eq!(parse_rates("AUTO").unwrap(), Rates::Auto);
        for bad in ["0", "-5", "fast", "1000,,2000"] {
            assert!(parse_rates(bad).is_err(), "{bad}");
        }
        // A list alone runs no closed loop; --levels or auto adds it first.
        let o = build(&args(&["--rate", "1000"])).unwrap().open.unwrap();
        assert!(!o.closed_first);
        assert!(
            build(&args(&["--rate", "1000", "--levels", "1,4"]))
                .unwrap()
                .open
                .unwrap()
                .closed_first
        );
        let s = build(&args(&["--rate", "auto"])).unwrap();
        assert!(s.open.unwrap().closed_first);
        assert_eq!(s.levels, Levels::Auto);
        let t = build(&args(&["--target-p99", "2ms"]))
            .unwrap()
            .open
            .unwrap();
        assert_eq!(t.rates, Rates::Search);
        let t = t.target.unwrap();
        assert_eq!((t.percentile, t.limit_ns), (Percentile::P99, 2e6));
        let t = build(&args(&["--target", "p95=500us"]))
            .unwrap()
            .open
            .unwrap();
        assert_eq!(t.target.unwrap().percentile, Percentile::P95);
        for bad in [
            &["--target", "p42=1ms"][..],
            &["--target", "2ms"],
            &["--target-p99", "0"],
            &["--arrivals", "uniform"],
            &["--rate", "100", "--arrivals", "bursty"],
        ] {
            assert!(build(&args(bad)).is_err(), "{bad:?}");
        }
        // The sim runs the open loop too (load/open/sim.rs), in simulated time.
        let s = build(&args(&[
            "--rate",
            "100",
            "--engine",
            "sim:units=4,service=1ms",
        ]))
        .unwrap();
        assert!(matches!(s.engine, EngineChoice::Sim(_)));
        assert_eq!(s.open.unwrap().rates, Rates::List(vec![100.0]));
    }

    #[test]
    fn engines() {
        assert_eq!(parse_engine("sync").unwrap(), EngineChoice::Sync);
        assert_eq!(parse_engine("uring").unwrap(), EngineChoice::Uring);
        assert_eq!(
            parse_engine("sim:units=4,service=8ms").unwrap(),
            EngineChoice::Sim("sim:units=4,service=8ms".into())
        );
        assert!(parse_engine("aio").is_err());
        assert!(parse_engine("sim").is_err());
        assert!(parse_engine("sim:units=0,service=8ms").is_err());
    }

    #[test]
    fn gentle_mode_cuts_the_levels_and_paces_the_sync_engine() {
        let spec = build(&args(&["--max-concurrency", "8"])).unwrap();
        assert_eq!(spec.levels, Levels::List(vec![1, 2, 4, 8]));
        assert_eq!(spec.limits.max_concurrency, Some(8));
        assert_eq!(spec.engine, EngineChoice::Uring);
        let spec = build(&args(&["--levels", "auto", "--max-concurrency", "6"])).unwrap();
        assert_eq!(spec.levels, Levels::List(vec![1, 2, 4]));
        let spec = build(&args(&["--rate-limit", "500"])).unwrap();
        assert_eq!(spec.limits.rate_limit_iops, Some(500.0));
        assert_eq!(spec.engine, EngineChoice::Sync);
        assert!(spec.engine_given, "never replaced by the loop/zram default");
        assert_eq!(spec.plan().rate_limit_iops, Some(500.0));
        let err = |a: &[&str]| build(&args(a)).unwrap_err().to_string();
        assert!(
            err(&["--levels", "16,32", "--max-concurrency", "8"]).contains("below every level"),
            "{}",
            err(&["--levels", "16,32", "--max-concurrency", "8"])
        );
        assert!(err(&["--max-concurrency", "0"]).contains("--max-concurrency"));
        assert!(err(&["--rate-limit", "fast"]).contains("--rate-limit"));
        assert!(err(&["--rate-limit", "0"]).contains("at least 1"));
        assert!(err(&["--rate-limit", "500", "--engine", "uring"]).contains("sync engine"));
        assert!(
            err(&["--rate-limit", "500", "--engine", "sim:units=4,service=1ms"])
                .contains("not the sim engine")
        );
        assert!(build(&args(&[])).unwrap().limits.is_none());
    }
}
