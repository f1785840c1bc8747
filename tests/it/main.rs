//! The single integration-test binary (docs/design.md §2): one module per area.

mod analysis;
mod analyze;
mod bpf;
mod cli;
mod compare;
mod evidence;
mod exporter;
mod exporter_safety;
mod fsync;
mod fuzz;
mod habits;
mod knowndev;
mod layering;
mod learn;
mod profile_cmd;
mod report;
mod safety;
mod schema;
mod sim;
mod stat;
mod stat_extras;
mod sweep;
mod top;
mod truth;
mod util;
