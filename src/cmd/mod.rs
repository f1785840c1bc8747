//! One orchestration function per subcommand: validated spec in, report out, exit code back.
//! Imports only: error.

pub mod analyze;
pub mod compare;
pub mod completions;
pub mod exporter;
pub mod fsync;
pub mod info;
pub mod profile;
pub mod report;
pub mod sink;
pub mod stat;
pub mod sweep;
pub mod top;
