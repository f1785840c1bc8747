//! The envelope every JSON result carries (sweep, fsync, analyze, stat lines, info): what it is
//! (`kind`, `schema_version`), what wrote it (`iosat_version`), where (`host`, `kernel`, `cpus`:
//! the machine iosat ran on) and when (`started_unix_s` and ISO-8601 UTC `started`). Defined once
//! and `#[serde(flatten)]`ed into each typed result; the shapes are in `schemas/*.schema.json`.
//! Files written before the envelope load through serde defaults (fsync's old `command` is read as
//! `kind`).
//! Imports only: sys/, units.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Envelope {
    /// The kind's schema version (see `schemas/`); 1 when an old file does not say.
    pub schema_version: u32,
    /// "sweep", "fsync", "analyze", "stat" or "info".
    #[serde(alias = "command", skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub iosat_version: String,
    /// Start of the run, seconds since the Unix epoch.
    #[serde(skip_serializing_if = "is_zero")]
    pub started_unix_s: u64,
    /// The same instant, ISO-8601 UTC with milliseconds.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub started: String,
    /// Host name (uname nodename).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub host: String,
    /// Kernel release (uname release).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kernel: String,
    /// CPUs online.
    #[serde(skip_serializing_if = "is_zero")]
    pub cpus: u32,
}

/// A field an old file did not have is written back absent, as it was (an old result
/// rendered by `iosat report --format json` keeps its keys); iosat fills every one.
fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

impl Default for Envelope {
    /// What a file written before the envelope is taken to carry.
    fn default() -> Envelope {
        Envelope {
            kind: String::new(),
            schema_version: 1,
            iosat_version: String::new(),
            host: String::new(),
            kernel: String::new(),
            cpus: 0,
            started_unix_s: 0,
            started: String::new(),
        }
    }
}

impl Envelope {
    /// The envelope of a result of `kind` (schema `schema_version`) starting now on this host.
    pub fn now(kind: &str, schema_version: u32) -> Envelope {
        Envelope::at(kind, schema_version, crate::sys::clock::wall_ns())
    }

    /// The same, for a run that started at `wall_ns` (ns since the epoch).
    pub fn at(kind: &str, schema_version: u32, wall_ns: i64) -> Envelope {
        let (host, kernel) = crate::sys::uname();
        Envelope {
            kind: kind.into(),
            schema_version,
            iosat_version: env!("CARGO_PKG_VERSION").into(),
            host,
            kernel,
            cpus: crate::sys::online_cpus(),
            started_unix_s: u64::try_from(wall_ns.div_euclid(1_000_000_000)).unwrap_or(0),
            started: crate::units::iso_utc(wall_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_names_the_run() {
        let e = Envelope::at("fsync", 2, 951_782_400_500_000_000);
        assert_eq!(e.kind, "fsync");
        assert_eq!(e.started_unix_s, 951_782_400);
        assert_eq!(e.started, "2000-02-29T00:00:00.500Z");
        assert!(!e.host.is_empty() && e.cpus >= 1);
        assert_eq!(e.iosat_version, env!("CARGO_PKG_VERSION"));
    }

    #[test]
    fn an_old_fsync_command_reads_as_kind() {
        let e: Envelope = serde_json::from_str(r#"{"command":"fsync"}"#).unwrap();
        assert_eq!((e.kind.as_str(), e.schema_version), ("fsync", 1));
    }
}
