//! The single integration-test binary (DESIGN.md §2): one module per area.

mod analysis;
mod analyze;
mod cli;
mod exporter;
mod fsync;
mod report;
mod sim;
mod stat;
mod stat_extras;
mod sweep;
mod util;
