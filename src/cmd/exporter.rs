//! `iosat exporter`: orchestration only. Print a shipped rules or dashboard file, or start the server
//! (exporter::server) over the collector (exporter::scrape) and serve until a stop signal.
//! Must not import: cmd/analyze.rs, cmd/compare.rs, cmd/completions.rs, cmd/fsync.rs, cmd/info.rs,
//! cmd/report.rs, cmd/stat.rs, cmd/sweep.rs, cmd/top.rs.

use crate::cli::exporter::ExporterArgs;
use crate::config::exporter::{ExporterSpec, Print};
use crate::exporter::scrape::Scraper;
use crate::exporter::server::Server;

pub fn run(args: &ExporterArgs) -> anyhow::Result<i32> {
    let spec = ExporterSpec::from_args(args)?;
    if let Some(p) = spec.print {
        let text = match p {
            Print::Rules => crate::exporter::rules::RECORDING,
            Print::Alerts => crate::exporter::rules::ALERTS,
            Print::Dashboard => crate::exporter::rules::DASHBOARD,
        };
        crate::cmd::sink::print(text)?;
        return Ok(crate::error::exit::OK);
    }
    crate::sys::signal::catch_stop_signals(true);
    let scraper = Scraper::new(
        spec.root.clone(),
        spec.devices.clone(),
        spec.profile_dir.clone(),
    )
    // Before the source is attached, so its program is loaded once, with the cgroup code.
    .count_cgroups(spec.cgroups)
    .cgroup_depth(spec.cgroup_depth)
    .use_block_latency(spec.no_bpf)
    .learn_with(spec.learn.clone())
    .keep_hindsight(spec.hindsight.clone())
    .use_bursts(spec.burst_ns)
    .declare_caps(spec.caps.clone());
    let server = Server::start(&spec.server, scraper)?;
    let scheme = if spec.server.web.tls.is_some() {
        "https"
    } else {
        "http"
    };
    crate::error::say(format_args!(
        "iosat: exporter listening on {scheme}://{}/metrics",
        server.addr()
    ));
    while !crate::sys::signal::stop_requested() {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    drop(server);
    // Stopped by a signal, like every long-running command (systemd: SuccessExitStatus=130).
    Ok(crate::error::exit::INTERRUPTED)
}
