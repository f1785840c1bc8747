//! `iosat exporter`'s library side: the Prometheus text exposition (metrics, pure), the
//! collector that feeds it (scrape, reading through monitor/ and sys/). Must not import cli/,
//! cmd/ or ui/.

pub mod metrics;
pub mod rules;
pub mod scrape;
pub mod server;
pub mod webconfig;
