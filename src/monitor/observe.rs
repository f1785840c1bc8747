//! What watches the monitor's intervals beside the views (issue 36.2): an [`Observer`] is fed
//! every interval report the one replay engine closes, live and in replay alike, and may
//! annotate its rows (`DeviceRow::learned`); it hears of each device when the collector first
//! finds it in sysfs, and keeps what it made across runs when told to. Learning (learn/) is
//! the one implementation; the monitor names only this trait, never learn/ (which implements
//! it, not the other way round).
//! Must not import: learn/.

use super::interval::{DeviceRow, IntervalReport};
use crate::sys::device::BlockDev;
use crate::sys::Root;

/// An observer of intervals (learning, learn/).
pub trait Observer: std::fmt::Debug + Send {
    /// One closed interval. `key_of` gives the name a row's device is kept under (its profile
    /// id, else its kernel name) so what is observed follows a device across names.
    fn observe(&mut self, report: &mut IntervalReport, key_of: &dyn Fn(&DeviceRow) -> String);

    /// A device found in sysfs for the first time (live only), kept under `key`: what tells it
    /// from another device later given the same key is read here, once.
    fn device_seen(&mut self, root: &Root, dev: &BlockDev, key: &str);

    /// Keep what was observed (at the end of a run, and now and then); problems become warnings.
    fn save(&mut self);

    /// Lines for the user since the last call.
    fn take_warnings(&mut self) -> Vec<String>;

    /// What the device kept under `key` would be judged at rest, after what was observed (an
    /// idle interval now: the figures of what it learned most): for a file's summary whose last
    /// interval judged by nothing learned. None: nothing observed under that key.
    fn at_rest(&self, key: &str) -> Option<crate::analysis::learned::Learned> {
        let _ = key;
        None
    }
}
