//! Commit-latency measurement: FsyncSpec → FsyncReport. Must not import ui/ or report/.
