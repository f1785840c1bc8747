//! Hindsight flags (`--hindsight`, `--hindsight-tail`, `--hindsight-interval`,
//! `--hindsight-dir`, `--hindsight-max-mb`) into monitor::hindsight's [`Settings`]: durations through the one
//! duration parser, the directory the flag's or the state directory's `hindsight/`. None when
//! off (`--hindsight 0`), on a replay, or with nowhere to write (no state directory and no
//! --hindsight-dir: nothing is kept that could not be written). Errors name the flag.
//! Must not import: cmd/, ui/.

use crate::cli::{HindsightArgs, LearnArgs};
use crate::error::{Error, Result};
use crate::monitor::hindsight::Settings;
use crate::sys::Root;

/// 15 minutes before an incident, 60 s after it, 64 MiB of samples at most, 10 dumps and
/// 1 GiB of them kept.
const SPAN: &str = "15m";
const TAIL: &str = "60s";
/// One sample a second by default; 100 ms possible, 10 ms the least (a read of diskstats at
/// 1,000 devices takes about a millisecond).
const INTERVAL: &str = "1s";
const MIN_INTERVAL_NS: u64 = 10_000_000;
const MAX_MB: u64 = 64;
const KEEP: usize = 10;
const KEEP_BYTES: u64 = 1 << 30;

pub fn settings(a: &HindsightArgs, learn: &LearnArgs, root: &Root) -> Result<Option<Settings>> {
    let dur = |flag: &str, v: Option<&String>, default: &str| -> Result<u64> {
        let v = v.map_or(default, String::as_str);
        crate::units::parse_duration_ns(v).map_err(|why| Error::usage(flag, v, why))
    };
    let span_ns = dur("--hindsight", a.hindsight.as_ref(), SPAN)?;
    let tail_ns = dur("--hindsight-tail", a.hindsight_tail.as_ref(), TAIL)?;
    let interval_ns = dur(
        "--hindsight-interval",
        a.hindsight_interval.as_ref(),
        INTERVAL,
    )?;
    if interval_ns < MIN_INTERVAL_NS || (span_ns > 0 && interval_ns > span_ns) {
        let v = a.hindsight_interval.as_deref().unwrap_or(INTERVAL);
        return Err(Error::usage(
            "--hindsight-interval",
            v,
            "must be from 10ms to the --hindsight span",
        ));
    }
    let max_mb = match &a.hindsight_max_mb {
        Some(v) => match v.parse::<u64>() {
            Ok(n) if n > 0 && n <= 1 << 20 => n,
            _ => {
                return Err(Error::usage(
                    "--hindsight-max-mb",
                    v,
                    "must be a whole number of MiB from 1 to 1048576",
                ))
            }
        },
        None => MAX_MB,
    };
    if span_ns == 0 {
        return Ok(None);
    }
    let dir = match &a.hindsight_dir {
        Some(d) => {
            if d.exists() && !d.is_dir() {
                return Err(Error::usage(
                    "--hindsight-dir",
                    d.display(),
                    "is not a directory",
                ));
            }
            d.clone()
        }
        None => match super::learn::state_dir(learn, root)? {
            Some(s) => s.join("hindsight"),
            None => return Ok(None),
        },
    };
    Ok(Some(Settings {
        span_ns,
        interval_ns,
        tail_ns,
        max_bytes: (max_mb << 20) as usize,
        dir,
        keep: KEEP,
        keep_bytes: KEEP_BYTES,
    }))
}

/// `--burst-window` (issue 41's bursts): the short window in ns, None when off (`0`). From
/// 10 ms, as the ring's interval.
pub fn burst_window(a: &crate::cli::LiveArgs) -> Result<Option<u64>> {
    let v = a.burst_window.as_deref().unwrap_or("100ms");
    let ns =
        crate::units::parse_duration_ns(v).map_err(|why| Error::usage("--burst-window", v, why))?;
    match ns {
        0 => Ok(None),
        n if n < MIN_INTERVAL_NS => Err(Error::usage(
            "--burst-window",
            v,
            "must be 0 (off) or from 10ms",
        )),
        n => Ok(Some(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(span: Option<&str>, dir: Option<&str>) -> HindsightArgs {
        HindsightArgs {
            hindsight: span.map(String::from),
            hindsight_dir: dir.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_off_and_bad_values() {
        let learn = LearnArgs {
            state_dir: Some("/nonexistent/state".into()),
            ..Default::default()
        };
        let root = Root::default();
        let s = settings(&args(None, None), &learn, &root).unwrap().unwrap();
        assert_eq!(s.span_ns, 900_000_000_000);
        assert_eq!(s.tail_ns, 60_000_000_000);
        assert_eq!(s.interval_ns, 1_000_000_000);
        for bad in ["1ms", "20m", "often"] {
            let a = HindsightArgs {
                hindsight_interval: Some(bad.into()),
                ..Default::default()
            };
            let e = settings(&a, &learn, &root).unwrap_err();
            assert!(e.to_string().contains("--hindsight-interval"), "{bad}: {e}");
        }
        let fine = HindsightArgs {
            hindsight_interval: Some("100ms".into()),
            ..Default::default()
        };
        let s = settings(&fine, &learn, &root).unwrap().unwrap();
        assert_eq!(s.interval_ns, 100_000_000);
        assert_eq!(s.max_bytes, 64 << 20);
        assert_eq!(s.dir, std::path::Path::new("/nonexistent/state/hindsight"));
        assert!(settings(&args(Some("0"), None), &learn, &root)
            .unwrap()
            .is_none());
        let e = settings(&args(Some("soon"), None), &learn, &root).unwrap_err();
        assert!(e.to_string().contains("--hindsight") && e.to_string().contains("soon"));
        let bad_mb = HindsightArgs {
            hindsight_max_mb: Some("0".into()),
            ..Default::default()
        };
        let e = settings(&bad_mb, &learn, &root).unwrap_err();
        assert!(e.to_string().contains("--hindsight-max-mb"), "{e}");
    }
}
