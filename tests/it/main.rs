//! The single integration-test binary (docs/design.md §2): one module per area.

mod alerts;
mod analysis;
mod analyze;
mod aws;
mod bpf;
mod burst;
mod caps;
mod cgexport;
mod cgroups;
mod cli;
mod compare;
mod evidence;
mod exporter;
mod exporter_safety;
mod fsync;
mod fsync_like;
mod fuzz;
mod habits;
mod hindsight;
mod layering;
mod learn;
mod one_judgement;
mod packaging;
mod profile_cmd;
mod report;
mod safety;
mod schema;
mod sim;
mod split;
mod stat;
mod stat_extras;
mod support;
mod sweep;
mod top;
mod truth;
mod vocab;
mod who;

// The helpers' home is support/; every test names them from the root, as crate::util::iosat.
use support::{busy, failfs, knowndev, ownloop, util};
