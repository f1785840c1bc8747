//! Screens only: what is drawn on a terminal (the sweep's progress bar, `iosat top`'s view).
//! Never reads /proc itself and renders no result kind (that is report/'s).
//! Must not import: cli/, config/, cmd/, exporter/.

pub mod progress;
pub mod top;
