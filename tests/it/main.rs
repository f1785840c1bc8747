//! The single integration-test binary (DESIGN.md §2): one module per area.

mod cli;
mod sweep;
