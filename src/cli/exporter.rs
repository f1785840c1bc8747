//! Syntax of `iosat exporter` (node_exporter's flag names where it has the flag). Values stay
//! strings here; src/config/exporter.rs validates them.
//! Imports only: cli/.

use super::{ProfileArgs, RootArgs};
use clap::Args;

/// What `iosat exporter --help` explains below the options.
pub const AFTER_LONG_HELP: &str = "\
Serves GET /metrics in Prometheus's text format: raw cumulative counters of /proc/diskstats
(Prometheus computes the rates), one metric per quantity with `device` and `op` labels, the
requests in flight per direction, device identity on iosat_disk_info, and each device's saved
profile (iosat sweep --save-profile) as gauges, so the shipped rules (--print-rules) judge
every disk against its own baseline and knee and the shipped alerts (--print-alerts) fire on
saturation, not on %util or a fixed queue length.

The default port, 9019, is outside the range 9100-9999 that Prometheus's default port
allocation list hands to exporters (now full) and outside Prometheus's own 9090-9094, so it
collides with no exporter that follows the list.

Devices: whole disks, dm and md by default, as `iosat stat` shows them; --partitions,
--all, --device-include and --device-exclude (globs of kernel or dm/md names) change that.";

/// Options of `iosat exporter`.
#[derive(Debug, Args)]
#[command(
    after_long_help = AFTER_LONG_HELP,
    mut_arg("no_bpf", |a| a.help(
        "Don't load the block-latency BPF program: no iosat_disk_request_duration_seconds"
    ))
)]
pub struct ExporterArgs {
    /// Address to listen on: IP:PORT, [IPv6]:PORT, or :PORT for every interface.
    #[arg(
        long = "web.listen-address",
        value_name = "ADDR",
        default_value = "127.0.0.1:9019"
    )]
    pub listen_address: String,

    /// Longest wait for a client's whole request head; a slower client is disconnected.
    #[arg(
        long = "web.read-timeout",
        value_name = "DURATION",
        default_value = "5s"
    )]
    pub read_timeout: String,

    /// Longest a response waits for the client to take more bytes; a client that stopped
    /// reading is disconnected.
    #[arg(
        long = "web.write-timeout",
        value_name = "DURATION",
        default_value = "10s"
    )]
    pub write_timeout: String,

    /// TLS (with client certificates), basic auth, headers and a rate limit, in
    /// exporter-toolkit's web configuration format (tls_server_config, basic_auth_users,
    /// http_server_config, rate_limit): the file node_exporter reads.
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config_file: Option<std::path::PathBuf>,

    /// Connections served at once; more are answered 503.
    #[arg(long = "web.max-requests", value_name = "N", default_value = "8")]
    pub max_requests: String,

    /// Longest a scrape may take; past it the answer says the collector failed
    /// (iosat_scrape_collector_success 0) instead of hanging.
    #[arg(long = "scrape.timeout", value_name = "DURATION", default_value = "5s")]
    pub scrape_timeout: String,

    /// Export only these devices: names or globs (kernel or dm/md names); repeatable.
    #[arg(long = "device-include", value_name = "GLOB")]
    pub device_include: Vec<String>,

    /// Never export these devices: names or globs (kernel or dm/md names); repeatable.
    #[arg(long = "device-exclude", value_name = "GLOB")]
    pub device_exclude: Vec<String>,

    /// Include partitions.
    #[arg(long)]
    pub partitions: bool,

    /// Include every device: partitions, loop, zram, ram and other virtual devices.
    #[arg(long)]
    pub all: bool,

    #[command(flatten)]
    pub profile: ProfileArgs,

    #[command(flatten)]
    pub caps: crate::cli::DeviceCapArgs,

    /// Who loads each device: per-cgroup requests, bytes, latency, queue and device time
    /// (iosat_cgroup_disk_*, each request charged to its own cgroup in the block layer; needs
    /// the BPF source), the share of the device's time and, while it is saturated, the
    /// victims and likely aggressors.
    #[arg(long)]
    pub cgroups: bool,

    /// With --cgroups: cgroups per device with series of their own, the busiest by requests;
    /// the others are summed under cgroup="other" [default: 50].
    #[arg(long = "cgroup-limit", value_name = "N")]
    pub cgroup_limit: Option<String>,

    /// With --cgroups: label each cgroup by its ancestor N levels below the root (1:
    /// system.slice, kubepods, ...), the cgroups below it summed into its series [default:
    /// the cgroup's own path].
    #[arg(long = "cgroup-depth", value_name = "N")]
    pub cgroup_depth: Option<String>,

    /// Ignore device profiles: no iosat_profile_* gauges.
    #[arg(long, conflicts_with = "profile_dir")]
    pub no_profile: bool,

    #[command(flatten)]
    pub live: crate::cli::LiveArgs,

    #[command(flatten)]
    pub hindsight: crate::cli::HindsightArgs,

    /// Print the shipped Prometheus recording rules and exit.
    #[arg(long, conflicts_with_all = ["print_alerts", "print_dashboard"])]
    pub print_rules: bool,

    /// Print the shipped Prometheus alerting rules and exit.
    #[arg(long, conflicts_with = "print_dashboard")]
    pub print_alerts: bool,

    /// Print the shipped Grafana dashboard (JSON) and exit.
    #[arg(long)]
    pub print_dashboard: bool,

    #[command(flatten)]
    pub root: RootArgs,
}
