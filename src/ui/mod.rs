//! Screens only: what is drawn on a terminal (progress bars, later the TUI). Never reads /proc
//! itself and renders no result kind (that is report/'s).
