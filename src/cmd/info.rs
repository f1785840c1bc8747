//! `iosat info`: orchestration only.

use crate::cli::info::InfoArgs;

pub fn run(_args: &InfoArgs) -> anyhow::Result<i32> {
    anyhow::bail!("'iosat info' is not available in this build yet")
}
