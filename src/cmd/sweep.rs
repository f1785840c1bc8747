//! `iosat sweep`: orchestration only.

use crate::cli::sweep::SweepArgs;

pub fn run(_args: &SweepArgs) -> anyhow::Result<i32> {
    anyhow::bail!("'iosat sweep' is not available in this build yet")
}
