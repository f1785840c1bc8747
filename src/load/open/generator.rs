//! Which generator runs the open loop, chosen once from the typed engine choice the sweep runs
//! (load/engine.rs, after any fallback): the sim's device in simulated time (sim.rs), one
//! thread on io_uring (uring.rs) when the sweep runs the uring engine and the kernel has what
//! the generator needs, else a pool of threads (threads.rs); and [`OpenLoop`], what the level
//! driver (driver.rs) asks of any of them: an [`Engine`] that offers the next level at a rate.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/.

use super::result::OpenStats;
use super::spec::{LevelRun, OpenSpec, Schedule, UNSENT_GRACE_NS};
use crate::error::{Error, Result};
use crate::load::engine::EngineChoice;
use crate::load::schedule::{count_between, intended_starts};
use crate::load::target::Target;
use crate::load::uring::Tuning;
use crate::load::workload::Window;
use crate::load::{Engine, LevelCtl, LevelSpec, LevelStats};
use std::os::fd::RawFd;
use std::path::PathBuf;

/// An engine that runs open-loop levels: each level follows the [`OpenSpec`] last offered.
/// (Not a method of [`Engine`]: the closed-loop engines have no schedule to keep.)
pub trait OpenLoop: Engine + Send {
    /// Offer the next levels at `open`'s rate, arrivals and pool.
    fn offer(&mut self, open: OpenSpec);
    /// The threads that issue the requests at the rate offered (their scheduler delay is the
    /// machine's share of the lateness).
    fn generator_threads(&self) -> u32 {
        1
    }
}

/// Which generator runs the open loop on a real target: the pool of threads (one
/// pread/pwrite each), or one thread on io_uring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generator {
    Threads,
    Uring(Tuning),
}

impl Generator {
    /// For the report: "threads" or "io_uring".
    pub fn as_str(&self) -> &'static str {
        match self {
            Generator::Threads => "threads",
            Generator::Uring(_) => "io_uring",
        }
    }
}

/// The open loop's generator, ready: the engine, its name for the report
/// (`open_loop.generator`: "sim", "io_uring", "threads") and a note when the engine chosen
/// could not run it.
pub struct Chosen {
    pub engine: Box<dyn OpenLoop>,
    pub name: &'static str,
    pub note: Option<String>,
}

/// The generator for `--rate` when the sweep runs `ran` (its engine after any fallback): the
/// sim's, in simulated time; on a target, io_uring when `ran` is the uring engine and the
/// kernel has what the generator needs ([`super::uring::unsupported`]), tuned as the engine
/// is, else the threads (with a note when io_uring was chosen but can't run the open loop).
/// None without a target.
pub fn choose(ran: &EngineChoice, t: Option<&Target>) -> Result<Option<Chosen>> {
    let unset = OpenSpec {
        rate_per_s: 1.0,
        arrivals: Default::default(),
        max_inflight: 1,
    };
    let t = match (ran, t) {
        (EngineChoice::Sim(text), _) => {
            return Ok(Some(Chosen {
                engine: Box::new(super::sim::OpenSimEngine::new(text.parse()?, unset)),
                name: "sim",
                note: None,
            }))
        }
        (_, None) => return Ok(None),
        (_, Some(t)) => t,
    };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&t.file);
    let (generator, note) = match ran {
        EngineChoice::Uring => {
            let tuning = Tuning::from_env()?;
            match super::uring::unsupported(fd) {
                None => (Generator::Uring(tuning), None),
                Some(why) => (
                    Generator::Threads,
                    Some(format!("{why}: the open loop runs on threads instead")),
                ),
            }
        }
        _ => (Generator::Threads, None),
    };
    Ok(Some(Chosen {
        engine: Box::new(OpenEngine::new(
            fd,
            t.size_bytes,
            t.path.clone(),
            unset,
            generator,
        )),
        name: generator.as_str(),
        note,
    }))
}

/// The open-loop generator on one open target (the fd stays the target's, which outlives
/// the engine). Implements [`Engine`] so the level driver's kernel view, scheduler counters
/// and progress serve it unchanged; `open` is offered before each level.
pub struct OpenEngine {
    fd: RawFd,
    size_bytes: u64,
    path: PathBuf,
    pub open: OpenSpec,
    generator: Generator,
}

impl OpenEngine {
    pub fn new(
        fd: RawFd,
        size_bytes: u64,
        path: PathBuf,
        open: OpenSpec,
        generator: Generator,
    ) -> OpenEngine {
        OpenEngine {
            fd,
            size_bytes,
            path,
            open,
            generator,
        }
    }
}

impl OpenLoop for OpenEngine {
    fn offer(&mut self, open: OpenSpec) {
        self.open = open;
    }

    fn generator_threads(&self) -> u32 {
        match self.generator {
            Generator::Threads => self.open.max_inflight.max(1),
            Generator::Uring(_) => 1,
        }
    }
}

impl Engine for OpenEngine {
    fn name(&self) -> &str {
        "open"
    }

    fn run_level(&mut self, spec: &LevelSpec, ctl: &LevelCtl) -> Result<LevelStats> {
        let span_ns = spec.ramp_ns + spec.duration_ns;
        let starts = intended_starts(self.open.rate_per_s, span_ns, self.open.arrivals, spec.seed)
            .map_err(|why| Error::usage("--rate", self.open.rate_per_s, why))?;
        let window = Window::starting_now(spec);
        let schedule = Schedule {
            starts: &starts,
            origin_ns: window.measure_from_ns - spec.ramp_ns,
            window,
        };
        let run = LevelRun {
            fd: self.fd,
            size_bytes: self.size_bytes,
            path: &self.path,
            spec,
            schedule: &schedule,
            max_inflight: self.open.max_inflight,
        };
        let (mut total, taken) = match &self.generator {
            Generator::Threads => super::threads::run_level(&run, ctl)?,
            Generator::Uring(tuning) => super::uring::run_level(&run, tuning, ctl)?,
        };
        let open = total.open.get_or_insert_with(OpenStats::new);
        open.scheduled = count_between(&starts, spec.ramp_ns, span_ns);
        // Requests never taken: their intended start came while every thread (slot) was busy
        // until the level ended.
        let taken = taken.min(starts.len());
        open.unsent += starts[taken..]
            .iter()
            .filter(|&&t| t >= spec.ramp_ns && t + UNSENT_GRACE_NS < span_ns)
            .count() as u64;
        Ok(total)
    }
}
