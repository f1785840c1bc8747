//! `iosat exporter`'s library side: the Prometheus text exposition (metrics, pure, with the wrap
//! extension of the ms totals; the declared caps' families in caps), the protobuf exposition with native histograms (proto, pure), the collector that feeds it (scrape, reading through monitor/, sys/
//! and profile/), the HTTP server (server: hyper, timeouts, caps, TLS and basic auth), the web
//! configuration file (webconfig, pure) and the shipped Prometheus rules and Grafana dashboard
//! (rules, embedded from prometheus/). The block layer's queue and device time: split.
//! Must not import: cli/, config/, cmd/, ui/, report/, load/, fsync/, import/.

pub mod burst;
pub mod caps;
pub mod cgroups;
pub mod metrics;
pub mod proto;
pub mod rules;
pub mod scrape;
pub mod server;
pub mod split;
pub mod webconfig;
