//! Validated domain specs built from the CLI arguments: errors name the flag and the value.

pub mod sweep;
