//! `iosat completions SHELL` and `iosat man [SUBCOMMAND]`: generated from the same clap
//! definitions the parser uses (clap_complete, clap_mangen), so they never drift from it.
//! Must not import: cmd/analyze.rs, cmd/compare.rs, cmd/exporter.rs, cmd/fsync.rs, cmd/info.rs,
//! cmd/report.rs, cmd/stat.rs, cmd/sweep.rs, cmd/top.rs.

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::error::Error;
use clap::CommandFactory;

pub fn completions(args: &CompletionsArgs) -> anyhow::Result<i32> {
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "iosat", &mut buf);
    write_stdout(&buf)?;
    Ok(crate::error::exit::OK)
}

pub fn man(args: &ManArgs) -> anyhow::Result<i32> {
    let cmd = Cli::command();
    let (page, title) = match &args.subcommand {
        None => (cmd, "iosat".to_string()),
        Some(name) => {
            let names: Vec<String> = cmd
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .collect();
            let Some(sub) = cmd.find_subcommand(name) else {
                return Err(Error::usage(
                    "SUBCOMMAND",
                    name,
                    format!(
                        "is not an iosat subcommand; choose from {}",
                        names.join(", ")
                    ),
                )
                .into());
            };
            // iosat-stat(1): the page is named after the command line that runs it.
            // clap names are &'static str (without its "string" feature): one name, leaked
            // once by a command that prints and exits.
            let full: &'static str = Box::leak(format!("iosat-{name}").into_boxed_str());
            let sub = sub.clone().name(full).version(env!("CARGO_PKG_VERSION"));
            (sub, format!("iosat-{name}"))
        }
    };
    let mut buf = Vec::new();
    clap_mangen::Man::new(page)
        .title(title)
        .render(&mut buf)
        .map_err(|e| Error::io("<stdout>", e))?;
    write_stdout(&buf)?;
    Ok(crate::error::exit::OK)
}

/// Through the one writer of standard output (config::output::print).
fn write_stdout(bytes: &[u8]) -> Result<(), Error> {
    crate::config::output::print(&String::from_utf8_lossy(bytes))
}
