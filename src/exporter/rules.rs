//! The Prometheus rules and the Grafana dashboard shipped in `prometheus/`, embedded so that
//! `iosat exporter --print-rules` / `--print-alerts` / `--print-dashboard` print exactly the
//! files in the repository. Data only.
//! Imports only: nothing.

/// `prometheus/recording.yml`: rates, concurrency, mean latency, saturation, load, headroom.
pub const RECORDING: &str = include_str!("../../prometheus/recording.yml");

/// `prometheus/alerts.yml`: saturated, overloaded, slow but not loaded, profile missing,
/// collector failing.
pub const ALERTS: &str = include_str!("../../prometheus/alerts.yml");

/// `prometheus/grafana-dashboard.json`: the verdict row, the four charts, throughput, queue,
/// discards and flushes, and the fleet table.
pub const DASHBOARD: &str = include_str!("../../prometheus/grafana-dashboard.json");
