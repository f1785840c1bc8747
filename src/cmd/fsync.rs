//! `iosat fsync`: orchestration only.

use crate::cli::fsync::FsyncArgs;

pub fn run(_args: &FsyncArgs) -> anyhow::Result<i32> {
    anyhow::bail!("'iosat fsync' is not available in this build yet")
}
