//! Which engine runs a sweep: the choice (io_uring, sync threads, the sim; the default for the
//! disk under the target when `--engine` is not given) and the factory that
//! binds it to its target, falling back from io_uring to sync threads with a note when the kernel
//! refuses io_uring.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/.

use super::sim::{SimEngine, SimSpec};
use super::sync::SyncEngine;
use super::target::Target;
use super::{uring, Engine};
use crate::error::Result;
use crate::monitor::watch::DeviceWatch;
use crate::sys::device::DevKind;

/// The engine asked for (`--engine`).
#[derive(Debug, Clone, PartialEq)]
pub enum EngineChoice {
    Uring,
    Sync,
    /// The whole `sim:...` text, handed to the sim engine's own parser.
    Sim(String),
}

impl EngineChoice {
    /// The engine's own description for the report (the sim parameters), else "".
    pub fn spec_text(&self) -> &str {
        match self {
            EngineChoice::Sim(s) => s,
            _ => "",
        }
    }
}

/// A ready engine, the choice it runs (io_uring falls back to sync threads when the kernel
/// refuses it: the open loop's generator follows what runs) and a one-line remark about how
/// it was chosen (fallback), if any.
pub type Chosen = (Box<dyn Engine + Send>, EngineChoice, Option<String>);

/// The engine to run when the user did not pass `--engine`: io_uring, except on loop and zram
/// disks, where io_uring punts every request to its worker threads (neither driver can take a
/// request without blocking), so a level would measure those threads rather than the device;
/// there the sync engine, and a note saying why. `disk` is the whole disk under the target.
pub fn default_for(disk: Option<(DevKind, &str)>) -> (EngineChoice, Option<String>) {
    match disk {
        Some((kind @ (DevKind::Loop | DevKind::Zram), name)) => (
            EngineChoice::Sync,
            Some(format!(
                "{name} is a {} device: using the sync engine (io_uring hands every I/O to \
                 worker threads there); --engine uring to override",
                kind.as_str()
            )),
        ),
        _ => (EngineChoice::Uring, None),
    }
}

/// The engine a sweep runs: `--engine` when given (and the sim always), else the default for
/// the whole disk under the target ([`default_for`]), with the note saying why.
pub fn choose(
    asked: &EngineChoice,
    given: bool,
    watch: Option<&DeviceWatch>,
) -> (EngineChoice, Option<String>) {
    match (watch, given) {
        (Some(w), false) => {
            default_for(crate::sys::device::kind(&w.root, &w.dev).map(|k| (k, w.dev.name.as_str())))
        }
        _ => (asked.clone(), None),
    }
}

/// Bind the chosen engine to its target (None only for `sim`).
pub fn make(choice: &EngineChoice, target: Option<&Target>) -> Result<Chosen> {
    let t = match choice {
        EngineChoice::Sim(text) => {
            let sim: SimSpec = text.parse()?;
            return Ok((Box::new(SimEngine::new(sim)), choice.clone(), None));
        }
        EngineChoice::Sync | EngineChoice::Uring => target.expect("real engines have a target"),
    };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&t.file);
    let sync = || Box::new(SyncEngine::new(fd, t.size_bytes, t.path.clone()));
    if *choice == EngineChoice::Uring {
        let tuning = uring::Tuning::from_env()?;
        return Ok(match uring::probe(fd) {
            None => (
                Box::new(uring::UringEngine::new(
                    fd,
                    t.size_bytes,
                    t.path.clone(),
                    tuning,
                )),
                EngineChoice::Uring,
                (tuning != uring::Tuning::default()).then(|| {
                    format!(
                        "uring engine tuned by ${}: {tuning} (the defaults: {})",
                        uring::TUNING_ENV,
                        uring::Tuning::default()
                    )
                }),
            ),
            Some(why) => (
                sync(),
                EngineChoice::Sync,
                Some(format!("{why}: using the sync engine instead")),
            ),
        });
    }
    Ok((sync(), EngineChoice::Sync, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_and_zram_default_to_sync_with_a_note() {
        let (e, n) = default_for(Some((DevKind::Zram, "zram0")));
        assert_eq!(e, EngineChoice::Sync);
        assert!(n
            .unwrap()
            .starts_with("zram0 is a zram device: using the sync engine"));
        assert_eq!(
            default_for(Some((DevKind::Loop, "loop3"))).0,
            EngineChoice::Sync
        );
        assert_eq!(
            default_for(Some((DevKind::Disk, "vda"))),
            (EngineChoice::Uring, None)
        );
        assert_eq!(default_for(None), (EngineChoice::Uring, None));
    }
}
