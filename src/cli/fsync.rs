//! Syntax of `iosat fsync`. Validation lives in config/fsync.rs.
//! Imports only: cli/.

use crate::cli::{FormatArgs, RootArgs};
use clap::Args;
use std::path::PathBuf;

/// Measure commit latency: how long a durable write takes, per method, size and mode.
///
/// iosat creates its test files (.iosat-fsync.*) in DIR (default: the current directory) and
/// removes them at the end, Ctrl-C included. The default run (8 methods × 3 sizes × 2 modes at
/// 1 s each, then 6 group-commit levels × 2 layouts) takes about a minute; narrow it with
/// --methods, --sizes, --mode, --duration or --committers none.
#[derive(Debug, Args)]
pub struct FsyncArgs {
    /// Directory in which to create the temporary test files.
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// The measurement options (boxed: keeps `Command` small, clippy::large_enum_variant).
    #[command(flatten)]
    pub opts: Box<FsyncOpts>,

    /// Also write the result as a self-contained HTML page with charts (as `iosat report`
    /// draws it). An existing FILE is refused, never replaced.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    #[command(flatten)]
    pub format: FormatArgs,

    #[command(flatten)]
    pub output: crate::cli::OutputFileArgs,

    #[command(flatten)]
    pub fio: crate::cli::habits::FioFlags,

    #[command(flatten)]
    pub fio_fsync: crate::cli::habits::FioFsyncFlags,

    #[command(flatten)]
    pub root: RootArgs,
}

#[derive(Debug, Args)]
pub struct FsyncOpts {
    /// Methods, comma-separated: fsync, fdatasync, odsync, osync, rwf_dsync, odirect,
    /// odirect_fsync, odirect_fdatasync (or "all").
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub methods: String,

    /// Write sizes in bytes (multiples of 512; k/K and m/M suffixes allowed). fio's --bs is
    /// accepted for it.
    #[arg(
        long,
        visible_alias = "bs",
        value_name = "LIST",
        default_value = "512,4096,16384"
    )]
    pub sizes: String,

    /// overwrite: rewrite a preallocated file in place (the script of Percona's "Fsync
    /// Performance on Storage Devices"); append: a log that
    /// grows with every commit (metadata must be flushed too); both.
    #[arg(long, value_name = "MODE", default_value = "both")]
    pub mode: String,

    /// Seconds each case runs (decimals allowed). The default run, 48 cases and 12
    /// group-commit levels of 1 s, takes about a minute.
    /// fio's --runtime is accepted for it.
    #[arg(
        long,
        visible_alias = "runtime",
        value_name = "SECONDS",
        default_value = "1"
    )]
    pub duration: String,

    /// Group-commit levels: concurrent committers, comma-separated, or "none" to skip.
    #[arg(long, value_name = "LIST", default_value = "1,2,4,8,16,32")]
    pub committers: String,

    /// Transactions per second the application needs: prints how many connections that takes
    /// (ceil(TPS × commit latency)).
    #[arg(long, value_name = "TPS")]
    pub target_tps: Option<String>,

    /// Measure a database's commit settings instead of the methods: postgres (the four
    /// wal_sync_method values on 8 KiB WAL writes into a zero-filled 16 MiB segment, one and two
    /// writes per commit, and the non-synced ceiling), innodb (innodb_flush_method: redo-log
    /// commits and doublewrite page flushes) or mariadb (MariaDB 11's innodb_log_file_* and
    /// innodb_data_file_* settings). Prints the recommendation in the database's own words.
    #[arg(long, value_name = "DB")]
    pub like: Option<String>,

    /// With --like postgres: PostgreSQL commit_delay values to run the group-commit curve
    /// with besides 0 (a bare number is µs, or 100us, 1ms): the leader waits that long before
    /// its flush when more than commit_siblings (5) other committers run. Recommends a
    /// commit_delay only when it raises commits/s.
    #[arg(long, value_name = "LIST")]
    pub commit_delay: Option<String>,

    /// Do not attach the block-latency BPF source (root + BTF), which times the flushes the
    /// device itself completes during each --like setting (p50/p99 beside diskstats' counts).
    #[arg(long)]
    pub no_bpf: bool,

    /// Skip reading the test files back and checking every block.
    #[arg(long)]
    pub no_verify: bool,

    /// Test hook: corrupt this block of each test file before verification.
    #[arg(long, hide = true, value_name = "BLOCK")]
    pub test_corrupt_block: Option<u64>,
}
