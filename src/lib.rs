//! iosat: the truth about disk utilization and saturation on Linux.
//!
//! Data flows one way (docs/design.md §2): sources (`sys`) produce raw cumulative counters;
//! `monitor` turns two samples and the measured interval into rates; `load` and `fsync` run
//! experiments into typed results; `import` reads other tools' results; `analysis` turns rates
//! or levels into findings; `report` turns a typed result into bytes. Above them, `cli`
//! (syntax) → `config` (validated specs) → `cmd` (one short orchestration per subcommand).
//! CONTRIBUTING.md ("The layout") gives each module's paragraph; docs/design.md §2 the walls.

pub mod analysis;
pub mod build;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod envelope;
pub mod error;
pub mod exporter;
pub mod fsync;
pub mod import;
pub mod latency;
pub mod learn;
pub mod load;
pub mod monitor;
pub mod profile;
pub mod report;
pub mod sys;
pub mod ui;
pub mod units;

/// Run one parsed command line; returns the process exit code.
pub fn run(cli: cli::Cli) -> anyhow::Result<i32> {
    use cli::Command;
    match &cli.command {
        Command::Stat(a) => cmd::stat::run(a),
        Command::Info(a) => cmd::info::run(a),
        Command::Sweep(a) => cmd::sweep::run(a),
        Command::Fsync(a) => cmd::fsync::run(a),
        Command::Analyze(a) => cmd::analyze::run(a),
        Command::Report(a) => cmd::report::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Top(a) => cmd::top::run(a),
        Command::Exporter(a) => cmd::exporter::run(a),
        Command::Profile(a) => cmd::profile::run(a),
        Command::Completions(a) => cmd::completions::completions(a),
        Command::Man(a) => cmd::completions::man(a),
    }
}
