//! Validation that turns clap arguments into domain specs; errors name the flag and value.
//! No clap type goes past this module.

pub mod analyze;
