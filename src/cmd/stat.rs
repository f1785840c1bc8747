//! `iosat stat`: orchestration only. Live: tick the one collector (monitor::collect) on a
//! monotonic schedule and print each interval. Replay: the one replay (monitor::replay) of a
//! recording through the same engine and views, so the output is byte-identical to the live
//! run that made it. `--html`: the recording page, drawn from the chart history in memory;
//! `-o FILE`: the reports written there as well.
//! Must not import: cmd/analyze.rs, cmd/compare.rs, cmd/completions.rs, cmd/exporter.rs,
//! cmd/fsync.rs, cmd/info.rs, cmd/report.rs, cmd/sweep.rs, cmd/top.rs.

use crate::cli::stat::StatArgs;
use crate::cmd::sink::{Sink, Stream};
use crate::config::stat::StatSpec;
use crate::error::Error;
use crate::monitor::collect::{Collector, RecordingWriter, Schedule};
use crate::monitor::record::Source;
use crate::monitor::replay::{RecordingText, Replay, Step};
use crate::monitor::series::{SeriesStore, StatSeries};
use crate::profile::ProfileCache;
use crate::report::stat_view as view;
use crate::report::Format;
use crate::sys::clock;
use std::path::Path;

pub fn run(args: &StatArgs) -> anyhow::Result<i32> {
    let spec = StatSpec::from_args(args)?;
    let mut out = spec.output.open()?;
    if let Some(dir) = &spec.forget {
        let removed = crate::learn::store::forget(dir, None)?;
        crate::error::say(format_args!(
            "removed the learned state of {} device(s) from {}",
            removed.len(),
            crate::learn::store::learned_dir(dir).display()
        ));
        return Ok(crate::error::exit::OK);
    }
    let profiles = ProfileCache::new(spec.profile_dir.clone(), spec.root.clone());
    match &spec.replay {
        Some(path) => {
            if let Some(page) = replay(&spec, path, profiles, &mut |r| out.stream(r))? {
                out.page(&page)?;
            }
        }
        None => {
            // Ctrl-C (or SIGTERM, SIGHUP) ends the run between samples: the recording ends on
            // a whole sample and the --html page is drawn from all of it before exiting 130.
            crate::sys::signal::catch_stop_signals(false);
            let r = live(&spec, profiles, &mut out);
            // The -o file is closed (synced, its close checked) on the way out, Ctrl-C too.
            let closed = out.close();
            r?;
            closed?;
            return Ok(crate::error::exit::OK);
        }
    }
    out.close()?;
    Ok(crate::error::exit::OK)
}

/// While recording with --html, the page is redrawn at most this often and once at the end.
const PAGE_EVERY_NS: u64 = 5_000_000_000;

/// `--html`: the page `iosat report` draws for the same recording, with the diagnosis of
/// the recording file (`rec`: its path and text) when there is one.
fn page_of(series: (Vec<StatSeries>, Vec<String>), rec: Option<(&Path, &str)>) -> String {
    let (devs, idle) = series;
    let diagnosis = rec
        .map(|(p, t)| crate::import::recording_diagnosis(p, t))
        .unwrap_or_default();
    crate::report::stat::render_with_diagnosis(&devs, &idle, &diagnosis, Format::Html)
}

/// The `--record` file's text as the page reads it (None without one, or when unreadable:
/// the page is then drawn without the diagnosis).
fn recorded_text(rec: Option<&Path>) -> Option<String> {
    RecordingText::open(rec?).ok().map(|r| r.text)
}

/// The JSON lines' envelope: this host, started at the run's first sample (the first
/// interval's start; the end of the since-boot report, whose start is the boot), so live and
/// replay of the same recording print the same bytes.
fn stat_envelope(first: &crate::monitor::interval::IntervalReport) -> crate::envelope::Envelope {
    let wall_ns = if first.since_boot {
        first.end_wall_ns
    } else {
        first.start_wall_ns
    };
    crate::envelope::Envelope::at("stat", view::SCHEMA_VERSION, wall_ns)
}

/// Replay a recording: each report, rendered in the format asked, goes to `out` as it comes
/// (stdout and -o for `stat --replay`; a string for `iosat report FILE --csv`). Returns the
/// `--html` page when the spec has one.
pub(crate) fn replay(
    spec: &StatSpec,
    path: &Path,
    mut profiles: ProfileCache,
    out: &mut dyn FnMut(Stream) -> Result<(), Error>,
) -> Result<Option<String>, Error> {
    let RecordingText { text, warnings } =
        RecordingText::open(path).map_err(|e| e.for_flag("--replay"))?;
    warnings.into_iter().for_each(crate::error::warn);
    {
        let mut told = std::collections::HashSet::new();
        let notes = |profiles: &mut ProfileCache, id: &str| {
            for w in profiles.take_warnings() {
                crate::error::warn(w);
            }
            // A recording has no model facts: say once that model profiles can't match.
            if let Some(why) = profiles.model_facts_missing(id) {
                if told.insert(id.to_string()) {
                    crate::error::warn(format_args!("{}: {why}", path.display()));
                }
            }
        };
        let mut steps = Replay::open(
            &text,
            path,
            spec.selection.clone(),
            spec.since_boot,
            &mut profiles,
            notes,
            spec.learn.clone().map(crate::learn::observer),
        )?;
        steps.replayer_mut().set_caps(spec.caps.clone());
        if spec.since_boot && steps.source() == Source::PtDiskstats {
            return Err(Error::usage(
                "--since-boot",
                path.display(),
                "needs an iosat recording: pt-diskstats/pt-stalk files carry no monotonic clock",
            ));
        }
        let mut reports = 0u64;
        let mut envelope = None;
        for step in steps {
            match step? {
                Step::Start { judged } => {
                    out(&|f, s| s.push_str(&view::preamble(f, &judged, spec.learn.is_some())))?
                }
                Step::Warning(w) => crate::error::warn(format_args!("{}: {w}", path.display())),
                Step::Report(r) => {
                    let r = r.shown(spec.cpu, spec.omit_idle);
                    let env = envelope.get_or_insert_with(|| stat_envelope(&r));
                    out(&|f, s| view::render_into(&r, f, env, spec.learn.is_some(), s))?;
                    reports += 1;
                    if spec.count.is_some_and(|c| reports >= c) {
                        break;
                    }
                }
            }
        }
    }
    if spec.output.page.is_none() {
        return Ok(None);
    }
    let mut store = SeriesStore::new(Some(crate::learn::in_memory()));
    // Devices named, or --all: the page draws what the replay showed, as without them.
    if spec.selection != crate::monitor::select::Selection::default() {
        store.choose(spec.selection.clone());
    }
    store.feed_text(&text).map_err(|e| e.at(path))?;
    Ok(Some(page_of(
        store.series(&mut profiles),
        Some((path, &text)),
    )))
}

fn live(spec: &StatSpec, profiles: ProfileCache, out: &mut Sink) -> Result<(), Error> {
    let page = out.has_page();
    let recording = RecordingWriter::for_flag(spec.record.as_deref(), spec.interval_ns, &spec.root);
    let mut collector = Collector::new(
        spec.root.clone(),
        spec.selection.clone(),
        spec.since_boot,
        profiles,
        recording,
    );
    // Before the source is attached, so its program is loaded once, with the cgroup code.
    if spec.cgroups {
        collector.count_cgroups();
    }
    collector.use_block_latency(spec.no_bpf);
    collector.declare_caps(spec.caps.clone());
    collector.use_bursts(spec.burst_ns);
    match &spec.hindsight {
        Some(h) => collector.keep_hindsight(h.clone()),
        None => collector.hindsight_off(),
    }
    if let Some(l) = &spec.learn {
        collector.observe_with(crate::learn::observer(l.clone()));
    }
    if let (true, Some(rec)) = (page, &spec.record) {
        // The page shows the whole file: what earlier runs recorded is read once, here.
        let mut store = SeriesStore::new(Some(crate::learn::in_memory()));
        // What is skipped is said by the recording writer, which cuts a partial last line.
        match RecordingText::open(rec).map(|r| r.text) {
            Ok(t) if !t.trim().is_empty() => store.feed_text(&t).map_err(|e| e.at(rec))?,
            Ok(_) => {}
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        collector.keep_series(store);
    }
    let mut page_at = clock::monotonic_ns();
    let mut schedule = Schedule::new(spec.interval_ns);
    let mut reports = 0u64;
    let mut envelope = None;
    let mut stopped = false;
    loop {
        let tick = collector.tick()?;
        schedule.sampled(tick.mono_ns);
        if let Some(judged) = tick.started {
            out.stream(&|f, s| s.push_str(&view::preamble(f, &judged, spec.learn.is_some())))?;
        }
        if let Some(r) = tick.report {
            let r = r.shown(spec.cpu, spec.omit_idle);
            let env = envelope.get_or_insert_with(|| stat_envelope(&r));
            out.stream(&|f, s| view::render_into(&r, f, env, spec.learn.is_some(), s))?;
            reports += 1;
        }
        if page {
            let now = clock::monotonic_ns();
            if now.saturating_sub(page_at) >= PAGE_EVERY_NS {
                let text = recorded_text(spec.record.as_deref());
                let rec = spec.record.as_deref().zip(text.as_deref());
                out.page(&page_of(collector.series().unwrap_or_default(), rec))?;
                page_at = now;
            }
        }
        if spec.count.is_some_and(|c| reports >= c) {
            break;
        }
        // Woken early only by a signal; then check whether it was a stop. Samples of the
        // collector's own (hindsight's cadence) are read in between.
        let next = schedule.next_at(clock::monotonic_ns());
        collector.wait_until(next, &crate::sys::signal::stop_requested, &|t| {
            clock::sleep_until_ns(t);
        });
        if crate::sys::signal::stop_requested() {
            stopped = true;
            break;
        }
    }
    collector.finish()?;
    if let (true, Some(series)) = (page, collector.series()) {
        let text = recorded_text(spec.record.as_deref());
        let rec = spec.record.as_deref().zip(text.as_deref());
        out.page(&page_of(series, rec))?;
    }
    collector.save_learning();
    if stopped {
        return Err(Error::Interrupted);
    }
    Ok(())
}
