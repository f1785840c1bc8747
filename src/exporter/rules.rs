//! The Prometheus rules shipped in `prometheus/`, embedded so that `iosat exporter
//! --print-rules` / `--print-alerts` print exactly the files in the repository. Data only.

/// `prometheus/recording.yml`: rates, concurrency, mean latency, saturation, load, headroom.
pub const RECORDING: &str = include_str!("../../prometheus/recording.yml");

/// `prometheus/alerts.yml`: saturated, overloaded, slow but not loaded, profile missing,
/// collector failing.
pub const ALERTS: &str = include_str!("../../prometheus/alerts.yml");
