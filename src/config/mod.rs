//! Validation: turns each subcommand's clap arguments into a domain spec; errors name the
//! flag and the value. No clap type goes past this module.

pub mod fsync;
