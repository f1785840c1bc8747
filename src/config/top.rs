//! `iosat top` arguments → TopSpec, with stat's interval, device and profile rules
//! (config::stat, config::profile). Each bad value is one Usage error naming the flag.
//! Must not import: cmd/, ui/.

use crate::cli::top::TopArgs;
use crate::error::Result;
use crate::monitor::select::Selection;
use crate::sys::Root;
use std::path::PathBuf;

/// A validated `iosat top` request.
#[derive(Debug, Clone, PartialEq)]
pub struct TopSpec {
    /// Between samples (live) or between shown intervals (--replay).
    pub interval_ns: u64,
    /// The devices shown without the `a` key.
    pub selection: Selection,
    pub record: Option<PathBuf>,
    pub replay: Option<PathBuf>,
    pub root: Root,
    pub profile_dir: crate::profile::ProfileDirs,
    /// `--no-bpf`: no block-latency source (live percentiles), none shown from a recording.
    pub no_bpf: bool,
    /// Production learning (config::learn); None with --no-learn; in memory for --replay.
    pub learn: Option<crate::learn::LearnSpec>,
    /// `--cap DEV:…`, `--cap-iops/--cap-mbps` for the one device named (issue 42).
    pub caps: super::caps::DeviceCaps,
    /// Hindsight (monitor::hindsight): None when off, on a replay, or with nowhere to write.
    pub hindsight: Option<crate::monitor::hindsight::Settings>,
    /// The bursts' short window (`--burst-window`), ns; None when off, on a replay, or when
    /// not shorter than the interval (no window to read between samples).
    pub burst_ns: Option<u64>,
    /// `--cgroups`: who loads each device, in a pane of its own (monitor::cgroups).
    pub cgroups: bool,
}

impl TopSpec {
    pub fn from_args(a: &TopArgs) -> Result<TopSpec> {
        if a.live.learn.forget {
            return Err(crate::error::Error::flag(
                "--forget",
                "is iosat stat's: iosat stat --forget removes what was learned",
            ));
        }
        let root = super::root(&a.root);
        let mut learn = super::learn::spec(&a.live.learn, &root)?;
        if let (Some(l), Some(_)) = (&mut learn, &a.replay) {
            l.state_dir = None;
        }
        let interval_ns = match &a.interval {
            Some(s) => super::stat::parse_interval(s)?,
            None => 1_000_000_000,
        };
        Ok(TopSpec {
            learn,
            interval_ns,
            selection: super::stat::selection(&a.devices, a.partitions, a.all)?,
            record: a.record.clone(),
            replay: a.replay.clone(),
            root: super::root(&a.root),
            no_bpf: a.live.no_bpf,
            profile_dir: super::profile::read_dirs(&a.profile, a.no_profile)?,
            caps: super::caps::per_device(&a.caps, &a.devices, "DEVICE")?,
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
                    return Err(crate::error::Error::usage(
                        "--cgroups",
                        "--no-bpf",
                        "needs the block-latency BPF source, which --no-bpf turns off",
                    ))
                }
                (c, _) => c,
            },
        })
    }

    /// What the sampling side reads: every device, so that `a` can show them; the app hides
    /// what [`TopSpec::selection`] leaves out.
    pub fn collected(&self) -> Selection {
        Selection {
            patterns: self.selection.patterns.clone(),
            partitions: true,
            all: true,
        }
    }
}
