//! Validation: turns clap argument structs into domain specs. No clap type goes past this
//! module; errors name the flag and the value (DESIGN.md §3.7).

pub mod analyze;
pub mod fsync;
pub mod info;
pub mod stat;
pub mod sweep;
