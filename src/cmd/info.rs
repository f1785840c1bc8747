//! `iosat info`: orchestration only. The facts are gathered by monitor::info, rendered by
//! report::info, written through the one output sink (cmd/sink.rs).
//! Must not import: cmd/analyze.rs, cmd/compare.rs, cmd/completions.rs, cmd/exporter.rs,
//! cmd/fsync.rs, cmd/report.rs, cmd/stat.rs, cmd/sweep.rs, cmd/top.rs.

use crate::cli::info::InfoArgs;
use crate::config::info::InfoSpec;
use crate::profile::ProfileCache;

pub fn run(args: &InfoArgs) -> anyhow::Result<i32> {
    let spec = InfoSpec::from_args(args)?;
    let mut profiles = ProfileCache::new(spec.profile_dir.clone(), spec.root.clone());
    let report = crate::monitor::info::gather(&spec.root, &spec.selection, &mut profiles)?;
    spec.output
        .open()?
        .result(&|f| crate::report::info::render(&report, f))?;
    Ok(crate::error::exit::OK)
}
