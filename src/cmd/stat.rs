//! `iosat stat`: orchestration only.

use crate::cli::stat::StatArgs;

pub fn run(_args: &StatArgs) -> anyhow::Result<i32> {
    anyhow::bail!("'iosat stat' is not available in this build yet")
}
