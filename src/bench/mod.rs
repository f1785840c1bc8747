//! Load generation: WorkloadSpec → Engine (io_uring | sync threads | sim) → WorkerStats →
//! LevelResult → SweepReport. Must not import ui/ or report/.
