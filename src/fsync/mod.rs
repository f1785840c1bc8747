//! Commit-latency measurement: FsyncSpec → FsyncReport (seed 002). Owns the eight commit methods,
//! the test files, block headers and read-back verification, the group-commit experiment, the
//! flush-honesty verdict and the database settings of `--like` (like.rs, like_run.rs).
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, load/.

pub mod block;
pub mod device;
pub mod file;
pub mod group;
pub mod io;
pub mod like;
pub mod like_run;
pub mod report;
pub mod runner;
pub mod verdict;

pub use report::FsyncReport;
pub use runner::run;

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How one commit is made durable (issue 4's short names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    Fsync,
    Fdatasync,
    Odsync,
    Osync,
    RwfDsync,
    Odirect,
    OdirectFsync,
    OdirectFdatasync,
}

/// The system call made after each write, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncCall {
    None,
    Fsync,
    Fdatasync,
}

impl Method {
    pub const ALL: [Method; 8] = [
        Method::Fsync,
        Method::Fdatasync,
        Method::Odsync,
        Method::Osync,
        Method::RwfDsync,
        Method::Odirect,
        Method::OdirectFsync,
        Method::OdirectFdatasync,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Method::Fsync => "fsync",
            Method::Fdatasync => "fdatasync",
            Method::Odsync => "odsync",
            Method::Osync => "osync",
            Method::RwfDsync => "rwf_dsync",
            Method::Odirect => "odirect",
            Method::OdirectFsync => "odirect_fsync",
            Method::OdirectFdatasync => "odirect_fdatasync",
        }
    }

    pub fn from_name(s: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == s)
    }

    /// What the method does, in the words of seed 002.
    pub fn describe(self) -> &'static str {
        match self {
            Method::Fsync => "write + fsync",
            Method::Fdatasync => "write + fdatasync",
            Method::Odsync => "O_DSYNC write",
            Method::Osync => "O_SYNC write",
            Method::RwfDsync => "pwritev2(RWF_DSYNC)",
            Method::Odirect => "O_DIRECT write (not durable)",
            Method::OdirectFsync => "O_DIRECT write + fsync",
            Method::OdirectFdatasync => "O_DIRECT write + fdatasync",
        }
    }

    /// Extra open(2) flags.
    pub fn open_flags(self) -> libc::c_int {
        match self {
            Method::Odsync => libc::O_DSYNC,
            Method::Osync => libc::O_SYNC,
            Method::Odirect | Method::OdirectFsync | Method::OdirectFdatasync => libc::O_DIRECT,
            _ => 0,
        }
    }

    pub fn sync_call(self) -> SyncCall {
        match self {
            Method::Fsync | Method::OdirectFsync => SyncCall::Fsync,
            Method::Fdatasync | Method::OdirectFdatasync => SyncCall::Fdatasync,
            _ => SyncCall::None,
        }
    }

    pub fn direct(self) -> bool {
        self.open_flags() & libc::O_DIRECT != 0
    }

    /// False only for O_DIRECT alone: the device's volatile cache may hold the data (seed 002).
    pub fn durable(self) -> bool {
        self != Method::Odirect
    }
}

/// Where each write goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// A preallocated, fully written file rewritten in place (the seed's script): no size or
    /// block-allocation change, so fdatasync has no metadata to flush.
    Overwrite,
    /// A log that grows with every commit: the new size (and new blocks) must be flushed too.
    Append,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Overwrite => "overwrite",
            Mode::Append => "append",
        }
    }
}

/// A validated `iosat fsync` request (built by config/fsync.rs).
#[derive(Debug, Clone)]
pub struct FsyncSpec {
    /// Existing directory in which iosat creates (and removes) its test files.
    pub dir: PathBuf,
    pub methods: Vec<Method>,
    /// True when the user named the methods: then an O_DIRECT refusal is an error, not a skip.
    pub methods_explicit: bool,
    pub sizes: Vec<u32>,
    pub modes: Vec<Mode>,
    pub duration_ns: u64,
    /// Group-commit levels; empty skips the experiment.
    pub committers: Vec<u32>,
    /// Record size of the group-commit experiment.
    pub group_size: u32,
    pub target_tps: Option<f64>,
    pub verify: bool,
    /// Where kernel files are read (--proc-root, --sys-root).
    pub root: crate::sys::Root,
    /// Test hook: flip one byte of this block of every case's file before verification.
    pub corrupt_block: Option<u64>,
    /// `--like`: the database whose settings are measured (then `methods` is empty).
    pub like: Option<like::Database>,
    /// `--no-bpf`: do not attach the block-latency source (the device's own flush latency).
    pub no_bpf: bool,
    /// `--commit-delay` (with `--like postgres`): PostgreSQL commit_delay values in µs to run
    /// the shared-log group commit with, besides 0.
    pub commit_delays_us: Vec<u32>,
}

/// Blocks in an overwrite-mode file: the seed rewrites one block; cycling over a small
/// preallocated region is the same physics and lets verification check every slot.
pub const OVERWRITE_BLOCKS: u64 = 256;
/// Blocks in each file of the separate-files group-commit layout.
pub const GROUP_FILE_BLOCKS: u64 = 64;
/// Blocks in the shared group-commit log (preallocated, circular like InnoDB's redo log).
pub const GROUP_LOG_BLOCKS: u64 = 1024;
/// Upper bound of one append-mode file; a case that reaches it stops early (and says so).
pub const APPEND_CAP_BYTES: u64 = 256 << 20;
/// Below this much room for an append file iosat refuses to start.
pub const MIN_APPEND_BYTES: u64 = 4 << 20;
