//! The only code that touches /proc, /sys and raw syscalls. Readers are thin IO functions over
//! pure parsers, with a swappable root (--proc-root/--sys-root). Must not import monitor/,
//! bench/, fsync/, analysis/, report/ or ui/.

use std::path::PathBuf;

pub mod clock;
pub mod device;
pub mod diskstats;

/// Where kernel files are read from: `/proc` and `/sys` normally, a fixture tree in tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub proc: PathBuf,
    pub sys: PathBuf,
}

impl Default for Root {
    fn default() -> Self {
        Root {
            proc: PathBuf::from("/proc"),
            sys: PathBuf::from("/sys"),
        }
    }
}

impl Root {
    pub fn from_args(a: &crate::cli::RootArgs) -> Root {
        Root {
            proc: a.proc_root.clone(),
            sys: a.sys_root.clone(),
        }
    }
}
