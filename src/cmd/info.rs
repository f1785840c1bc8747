//! `iosat info`: orchestration only. The facts are gathered by monitor::info, rendered by
//! report::info.
//! Must not import: cmd/analyze.rs, cmd/compare.rs, cmd/completions.rs, cmd/exporter.rs,
//! cmd/fsync.rs, cmd/report.rs, cmd/stat.rs, cmd/sweep.rs, cmd/top.rs.

use crate::cli::info::InfoArgs;
use crate::config::info::InfoSpec;
use crate::error::Error;
use crate::profile::ProfileCache;
use std::io::Write;

pub fn run(args: &InfoArgs) -> anyhow::Result<i32> {
    let spec = InfoSpec::from_args(args)?;
    let mut profiles = ProfileCache::new(spec.profile_dir.clone(), spec.root.clone());
    let report = crate::monitor::info::gather(&spec.root, &spec.selection, &mut profiles)?;
    let out = crate::report::info::render(&report, spec.format);
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(out.as_bytes())
        .and_then(|_| stdout.flush())
        .map_err(|e| Error::io("<stdout>", e))?;
    if let Some(o) = &spec.output {
        crate::sys::fs::write_new_file(&o.path, out.as_bytes(), o.force)?;
    }
    Ok(crate::error::exit::OK)
}
