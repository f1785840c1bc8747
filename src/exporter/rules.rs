//! The Prometheus rules and the Grafana dashboard shipped in `prometheus/`, embedded so that
//! `iosat exporter --print-rules` / `--print-alerts` / `--print-dashboard` print exactly the
//! files in the repository. Data only.
//! Imports only: nothing.

/// `prometheus/recording.yml` (1-minute windows): rates, concurrency, mean and p95 latency,
/// saturation and state, the load gate, headroom, stacked devices on a judged disk.
pub const RECORDING: &str = include_str!("../../prometheus/recording.yml");

/// `prometheus/alerts.yml`: saturated, overloaded, slow but not loaded, profile missing,
/// collector failing (Alertmanager's inhibit rules: `prometheus/alertmanager.yml`).
pub const ALERTS: &str = include_str!("../../prometheus/alerts.yml");

/// `prometheus/grafana-dashboard.json`: the verdict row, the four charts, throughput, queue,
/// discards and flushes, and the fleet table.
pub const DASHBOARD: &str = include_str!("../../prometheus/grafana-dashboard.json");
