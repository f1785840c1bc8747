//! `iosat top`, the live terminal view: the app state and its keys (app, pure), the frames
//! (draw, ratatui; chart, its own braille line chart), the terminal (term: raw mode, the guard that restores the screen, the
//! event loop). Interval reports arrive through a channel from the sampling thread (cmd/top);
//! nothing here reads /proc.
//! Must not import: cli/, config/, cmd/, exporter/.

pub mod app;
pub mod chart;
pub mod draw;
pub mod term;
