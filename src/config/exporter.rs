//! `iosat exporter` arguments → ExporterSpec. Each bad value is one Usage error naming the flag.
//! Must not import: cmd/, ui/.

use crate::cli::exporter::ExporterArgs;
use crate::error::{Error, Result};
use crate::exporter::scrape::Devices;
use crate::exporter::server::ServerSpec;
use crate::exporter::webconfig::{self, WebConfig};
use crate::monitor::select::Selection;
use crate::sys::Root;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// What `--print-*` asks for instead of serving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Print {
    Rules,
    Alerts,
    Dashboard,
}

/// A validated `iosat exporter` request.
#[derive(Debug, Clone, PartialEq)]
pub struct ExporterSpec {
    /// `--no-bpf`: no block-latency histograms.
    pub no_bpf: bool,
    pub server: ServerSpec,
    pub devices: Devices,
    pub root: Root,
    pub profile_dir: crate::profile::ProfileDirs,
    /// Production learning (`--no-learn`: None), resolved as `stat` resolves it.
    pub learn: Option<crate::learn::LearnSpec>,
    pub print: Option<Print>,
    /// `--cap DEV:…`, `--cap-iops/--cap-mbps` for the one `--device-include` (issue 42).
    pub caps: super::caps::DeviceCaps,
    /// Hindsight (monitor::hindsight): None when off or with nowhere to write; kept with
    /// `--no-learn` too (the ring and its judgement run at their own cadence).
    pub hindsight: Option<crate::monitor::hindsight::Settings>,
    /// The bursts' short window (`--burst-window`), ns; None when off.
    pub burst_ns: Option<u64>,
    /// `--cgroups` (issue 40): cgroups per device with series of their own
    /// (`--cgroup-limit`); None when off.
    pub cgroups: Option<usize>,
    /// `--cgroup-depth`: cgroups labelled by their ancestor at this depth; None: their own path.
    pub cgroup_depth: Option<usize>,
}

/// `--cgroup-depth`: needs `--cgroups`, a whole number from 1 to 16 (the walk's own bound).
fn cgroup_depth(a: &ExporterArgs) -> Result<Option<usize>> {
    let Some(s) = &a.cgroup_depth else {
        return Ok(None);
    };
    if !a.cgroups {
        return Err(Error::flag("--cgroup-depth", "needs --cgroups"));
    }
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=16).contains(&n) => Ok(Some(n)),
        _ => Err(Error::usage(
            "--cgroup-depth",
            s,
            "must be a whole number from 1 to 16",
        )),
    }
}

/// `--cgroups` and `--cgroup-limit`: refused with `--no-bpf` (the counts come from the BPF
/// source) and a limit without `--cgroups`.
fn cgroups(a: &ExporterArgs) -> Result<Option<usize>> {
    if !a.cgroups {
        return match &a.cgroup_limit {
            Some(_) => Err(Error::flag("--cgroup-limit", "needs --cgroups")),
            None => Ok(None),
        };
    }
    if a.live.no_bpf {
        return Err(Error::usage(
            "--cgroups",
            "--no-bpf",
            "needs the block-latency BPF source, which --no-bpf turns off",
        ));
    }
    match &a.cgroup_limit {
        None => Ok(Some(crate::exporter::cgroups::DEFAULT_LIMIT)),
        Some(s) => match s.trim().parse::<usize>() {
            Ok(n) if (1..=10_000).contains(&n) => Ok(Some(n)),
            _ => Err(Error::usage(
                "--cgroup-limit",
                s,
                "must be a whole number from 1 to 10000",
            )),
        },
    }
}

/// `IP:PORT`, `[IPv6]:PORT`, or `:PORT` (every interface, as node_exporter reads it).
pub fn parse_listen(s: &str) -> Result<SocketAddr> {
    let parsed = match s.strip_prefix(':') {
        Some(port) => port
            .parse::<u16>()
            .ok()
            .map(|p| SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), p)),
        None => s.parse::<SocketAddr>().ok(),
    };
    parsed.ok_or_else(|| {
        Error::usage(
            "--web.listen-address",
            s,
            "must be IP:PORT, [IPv6]:PORT or :PORT, e.g. 127.0.0.1:9019",
        )
    })
}

/// `--web.config.file`: read and checked here; the certificate itself when the server starts.
fn web_config(path: &std::path::Path) -> Result<WebConfig> {
    let bytes = crate::sys::fs::read_regular(path)
        .map_err(|reason| Error::usage("--web.config.file", path.display(), reason))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::usage("--web.config.file", path.display(), "not UTF-8 text"))?;
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    webconfig::parse(&text, dir)
        .map_err(|reason| Error::usage("--web.config.file", path.display(), reason))
}

fn timeout(flag: &str, s: &str) -> Result<Duration> {
    let ns = super::duration_arg(flag, s)?;
    if ns < 1_000_000 {
        return Err(Error::usage(flag, s, "must be at least 1ms"));
    }
    Ok(Duration::from_nanos(ns))
}

fn glob(flag: &str, s: &str) -> Result<String> {
    if s.is_empty() {
        return Err(Error::usage(flag, s, "must not be empty"));
    }
    Ok(s.to_string())
}

impl ExporterSpec {
    pub fn from_args(a: &ExporterArgs) -> Result<ExporterSpec> {
        if a.live.learn.forget {
            return Err(Error::flag(
                "--forget",
                "is iosat stat's: iosat stat --forget removes what was learned",
            ));
        }
        let max_requests = match a.max_requests.trim().parse::<usize>() {
            Ok(n) if (1..=10_000).contains(&n) => n,
            _ => {
                return Err(Error::usage(
                    "--web.max-requests",
                    &a.max_requests,
                    "must be a whole number from 1 to 10000",
                ))
            }
        };
        let include = a
            .device_include
            .iter()
            .map(|s| glob("--device-include", s))
            .collect::<Result<Vec<_>>>()?;
        let exclude = a
            .device_exclude
            .iter()
            .map(|s| glob("--device-exclude", s))
            .collect::<Result<Vec<_>>>()?;
        Ok(ExporterSpec {
            server: ServerSpec {
                listen: parse_listen(&a.listen_address)?,
                read_timeout: timeout("--web.read-timeout", &a.read_timeout)?,
                write_timeout: timeout("--web.write-timeout", &a.write_timeout)?,
                scrape_timeout: timeout("--scrape.timeout", &a.scrape_timeout)?,
                max_requests,
                web: match &a.web_config_file {
                    Some(path) => web_config(path)?,
                    None => WebConfig::default(),
                },
                web_file: a.web_config_file.clone(),
            },
            devices: Devices {
                selection: Selection {
                    patterns: include,
                    partitions: a.partitions,
                    all: a.all,
                },
                exclude,
            },
            caps: super::caps::per_device(&a.caps, &a.device_include, "--device-include")?,
            learn: super::learn::spec(&a.live.learn, &super::root(&a.root))?,
            hindsight: super::hindsight::settings(
                &a.hindsight,
                &a.live.learn,
                &super::root(&a.root),
            )?,
            burst_ns: super::hindsight::burst_window(&a.live)?,
            cgroups: cgroups(a)?,
            cgroup_depth: cgroup_depth(a)?,
            root: super::root(&a.root),
            no_bpf: a.live.no_bpf,
            profile_dir: super::profile::read_dirs(&a.profile, a.no_profile)?,
            print: if a.print_rules {
                Some(Print::Rules)
            } else if a.print_alerts {
                Some(Print::Alerts)
            } else if a.print_dashboard {
                Some(Print::Dashboard)
            } else {
                None
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        assert_eq!(
            parse_listen("127.0.0.1:9019").unwrap(),
            "127.0.0.1:9019".parse().unwrap()
        );
        assert_eq!(
            parse_listen(":9019").unwrap(),
            "0.0.0.0:9019".parse().unwrap()
        );
        assert_eq!(
            parse_listen("[::1]:80").unwrap(),
            "[::1]:80".parse().unwrap()
        );
        for bad in ["", "9019", "localhost", "1.2.3.4:99999", ":x"] {
            let e = parse_listen(bad).unwrap_err().to_string();
            assert!(e.contains("--web.listen-address"), "{e}");
        }
    }
}
