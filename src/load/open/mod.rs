//! The open loop (`iosat sweep --rate`): requests offered on a schedule of intended starts
//! (load/schedule.rs) whatever the device does, each timed from its intended start (what a
//! user waits) and from its submission (what the device took), and how late it went out.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/.
//!
//! The files, each importing only those listed before it (no circle):
//! - spec.rs: what a run and a level ask for (rates, pool, [`spec::OpenSpec`], the schedule);
//! - ci.rs: the 95 % intervals of a level's latency figures;
//! - result.rs: what a level measured ([`result::OpenStats`]) and the level in the sweep JSON;
//! - threads.rs, uring.rs, sim.rs: the generators (a pool of threads, one thread on io_uring,
//!   the sim's device in simulated time);
//! - generator.rs: the generator chosen once from the typed engine choice, and
//!   [`generator::OpenLoop`], what the driver asks of one;
//! - driver.rs: the level driver, shaped like the closed loop's (load/driver.rs).

pub mod ci;
pub mod driver;
pub mod generator;
pub mod result;
pub mod sim;
pub mod spec;
pub mod threads;
pub mod uring;
