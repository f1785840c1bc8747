//! `iosat report`: orchestration only.

use crate::cli::report::ReportArgs;

pub fn run(_args: &ReportArgs) -> anyhow::Result<i32> {
    anyhow::bail!("'iosat report' is not available in this build yet")
}
