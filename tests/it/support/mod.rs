//! What the tests share, in one place: no test here but the helpers' own.
//!
//! - [`util`]: running iosat and the peer tools, fixtures, loop devices, strict-mode skips;
//! - [`fuse`]: the skeleton of the FUSE servers inside the test binary (mount, attributes,
//!   unmount on drop);
//! - [`knowndev`]: the known device, a loop device over a FUSE file whose units, service time,
//!   cap and flush are set (the truth the verdict tests check against);
//! - [`failfs`]: a FUSE filesystem whose write-back fails (fsync or close);
//! - [`ownloop`]: loop devices made and removed through /dev/loop-control;
//! - [`busy`]: a busy host on purpose (a CPU hog, a CPU quota);
//! - [`reap`]: every set-up above taken down also when the run is interrupted (Ctrl-C).

pub mod busy;
pub mod failfs;
pub mod fuse;
pub mod knowndev;
pub mod ownloop;
pub mod reap;
pub mod util;
