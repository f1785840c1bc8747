//! `iosat analyze`: orchestration only.

use crate::cli::analyze::AnalyzeArgs;

pub fn run(_args: &AnalyzeArgs) -> anyhow::Result<i32> {
    anyhow::bail!("'iosat analyze' is not available in this build yet")
}
