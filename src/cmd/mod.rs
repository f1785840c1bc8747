//! One orchestration function per subcommand: validated spec in, report out, exit code back.
//! Imports only: error.

pub mod analyze;
pub mod compare;
pub mod completions;
pub mod exporter;
pub mod fsync;
pub mod info;
pub mod report;
pub mod stat;
pub mod sweep;
pub mod top;

/// Write a command's result to standard output (a broken pipe is the caller's to ignore).
pub fn print(text: &str) -> crate::error::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| crate::error::Error::io("<stdout>", e))
}
