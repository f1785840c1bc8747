//! Group commit: N concurrent committers writing to ONE shared log, where whoever finds no flush in
//! progress becomes the leader and fsyncs for every writer whose record is already written
//! (InnoDB's log_write_up_to, PostgreSQL's XLogFlush), against N committers each writing and
//! fsyncing its own file. Imports fsync/file.rs for the test files, never runner.rs (which calls
//! this).
//! Must not import: fsync/runner.rs, cli/, config/, cmd/, ui/, report/, exporter/, import/, load/.
//!
//! The Mutex/Condvar here is the thing being measured (the commit queue of a database), not
//! bookkeeping: statistics stay thread-local and are merged after join.

use super::block;
use super::device;
use super::file::{corrupt, preallocate, verify, Ctx, Expect, Namer};
use super::io::{self, AlignedBuf, Handle, TestFile};
use super::report::*;
use super::{Method, SyncCall, GROUP_FILE_BLOCKS, GROUP_LOG_BLOCKS};
use crate::error::{Error, Result};
use crate::latency::Recorder;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The commit queue of the shared log.
struct Queue {
    state: Mutex<QState>,
    cv: Condvar,
    /// PostgreSQL's commit_delay: the leader sleeps this long before taking the group's
    /// target, so committers arriving meanwhile share its flush (zero: no sleep; also zero
    /// when fewer than commit_siblings other committers run, as XLogFlush checks).
    delay: Duration,
}

#[derive(Default)]
struct QState {
    /// Tickets handed out to writers whose pwrite has returned, in completion order.
    written: u64,
    /// Every ticket ≤ this is covered by a completed fsync.
    flushed: u64,
    flushing: bool,
    syncs: u64,
    /// A leader's fsync failed: every waiter fails too (never retried into success).
    failed: bool,
}

impl Queue {
    /// Called after this writer's pwrite returned: wait until an fsync that started after it
    /// has completed, leading one if nobody is flushing.
    fn commit(&self, h: &Handle, first_error: &Mutex<Option<Error>>) -> bool {
        let mut g = self.state.lock().unwrap();
        g.written += 1;
        let mine = g.written;
        loop {
            if g.failed {
                return false;
            }
            if g.flushed >= mine {
                return true;
            }
            if !g.flushing {
                g.flushing = true;
                if !self.delay.is_zero() {
                    drop(g);
                    std::thread::sleep(self.delay);
                    g = self.state.lock().unwrap();
                }
                // Every ticket ≤ target had its pwrite complete before this fsync starts.
                let target = g.written;
                drop(g);
                let r = h.sync(SyncCall::Fsync);
                g = self.state.lock().unwrap();
                g.flushing = false;
                g.syncs += 1;
                match r {
                    Ok(()) => g.flushed = target,
                    Err(e) => {
                        g.failed = true;
                        first_error.lock().unwrap().get_or_insert(e);
                    }
                }
                self.cv.notify_all();
            } else {
                g = self.cv.wait(g).unwrap();
            }
        }
    }
}

struct WorkerOut {
    lat: Recorder,
    /// Sequences used by this worker's own file (separate files) — next unused.
    next_seq: u64,
    syncs: u64,
}

fn level(
    ctx: &Ctx,
    namer: &mut Namer,
    layout: Layout,
    n: u32,
    commit_delay_us: u32,
) -> Result<GroupLevel> {
    let spec = ctx.spec;
    let size = spec.group_size;
    let size64 = size as u64;
    let run_id = ctx.run_id;
    let dur = Duration::from_nanos(spec.duration_ns);
    let first_error: Mutex<Option<Error>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(n as usize + 1);

    let blocks = log_blocks(layout);
    let (files, handles) = lay_out(namer, layout, n, size, run_id)?;
    // MinimumActiveBackends(commit_siblings): every committer here is always in a commit.
    let delay_on = n > super::like::COMMIT_SIBLINGS;
    let queue = Queue {
        state: Mutex::new(QState::default()),
        cv: Condvar::new(),
        delay: if delay_on {
            Duration::from_micros(commit_delay_us as u64)
        } else {
            Duration::ZERO
        },
    };
    let shared_seq = AtomicU64::new(GROUP_LOG_BLOCKS);

    let mark = device::window(ctx.watch);
    let mut start = Instant::now();
    let outs: Vec<WorkerOut> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..n as usize)
            .map(|w| {
                let h = match layout {
                    Layout::SharedLog => &handles[0],
                    Layout::SeparateFiles => &handles[w],
                };
                let (queue, shared_seq, stop, barrier, first_error) =
                    (&queue, &shared_seq, &stop, &barrier, &first_error);
                s.spawn(move || {
                    let mut buf = AlignedBuf::new(size as usize);
                    block::fill_payload(buf.as_mut_slice(), run_id);
                    let mut lat = Recorder::new();
                    let mut own_seq = blocks;
                    let mut syncs = 0u64;
                    barrier.wait();
                    let deadline = Instant::now() + dur;
                    loop {
                        if stop.load(Ordering::Relaxed) || io::interrupted() {
                            break;
                        }
                        let seq = match layout {
                            Layout::SharedLog => shared_seq.fetch_add(1, Ordering::Relaxed),
                            Layout::SeparateFiles => {
                                own_seq += 1;
                                own_seq - 1
                            }
                        };
                        let off = (seq % blocks) * size64;
                        block::stamp(buf.as_mut_slice(), run_id, off, seq);
                        let t0 = Instant::now();
                        if let Err(e) = h.write_all_at(buf.as_slice(), off) {
                            first_error.lock().unwrap().get_or_insert(e);
                            stop.store(true, Ordering::Relaxed);
                            break;
                        }
                        let ok = match layout {
                            Layout::SharedLog => queue.commit(h, first_error),
                            Layout::SeparateFiles => {
                                syncs += 1;
                                match h.sync(SyncCall::Fsync) {
                                    Ok(()) => true,
                                    Err(e) => {
                                        first_error.lock().unwrap().get_or_insert(e);
                                        false
                                    }
                                }
                            }
                        };
                        if !ok {
                            stop.store(true, Ordering::Relaxed);
                            break;
                        }
                        let t1 = Instant::now();
                        lat.record((t1 - t0).as_nanos() as u64);
                        if t1 >= deadline {
                            break;
                        }
                    }
                    WorkerOut {
                        lat,
                        next_seq: own_seq,
                        syncs,
                    }
                })
            })
            .collect();
        barrier.wait();
        start = Instant::now();
        workers
            .into_iter()
            .map(|w| w.join().expect("committer thread panicked"))
            .collect()
    });
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    let device_flushes = device::finish(ctx.watch, mark);
    drop(handles);
    if let Some(e) = first_error.into_inner().unwrap() {
        return Err(e);
    }

    let mut lat = Recorder::new();
    let mut syncs = queue.state.lock().unwrap().syncs;
    for o in &outs {
        lat += &o.lat;
        syncs += o.syncs;
    }

    let verification = if spec.verify {
        let totals: Vec<u64> = match layout {
            Layout::SharedLog => vec![shared_seq.load(Ordering::Relaxed)],
            Layout::SeparateFiles => outs.iter().map(|o| o.next_seq).collect(),
        };
        Verification::of(read_back(ctx, &files, layout, &totals)?)
    } else {
        Verification::default()
    };
    drop(files);

    let mut l = measured(n, layout, &lat, syncs, elapsed_ns);
    l.commit_delay_us = commit_delay_us;
    l.device_flushes = device_flushes;
    l.verification = verification;
    Ok(l)
}

/// Blocks per file: one log of the whole group, or a smaller file per committer.
fn log_blocks(layout: Layout) -> u64 {
    match layout {
        Layout::SharedLog => GROUP_LOG_BLOCKS,
        Layout::SeparateFiles => GROUP_FILE_BLOCKS,
    }
}

/// Create the level's files (one shared log, or one per committer), lay out stamped blocks and
/// open one handle per file.
fn lay_out(
    namer: &mut Namer,
    layout: Layout,
    n: u32,
    size: u32,
    run_id: u64,
) -> Result<(Vec<TestFile>, Vec<Handle>)> {
    let files: Vec<TestFile> = match layout {
        Layout::SharedLog => vec![TestFile::create(&namer.next_path())?],
        Layout::SeparateFiles => (0..n)
            .map(|_| TestFile::create(&namer.next_path()))
            .collect::<Result<_>>()?,
    };
    let blocks = log_blocks(layout);
    for f in &files {
        preallocate(f, size, blocks, run_id)?;
    }
    let handles: Vec<Handle> = files
        .iter()
        .map(|f| f.open_with(0).map_err(|e| e.into_error(&f.path)))
        .collect::<Result<_>>()?;
    Ok((files, handles))
}

/// Read every file back (after the corruption hook, if set) until the first that fails.
/// `totals[w]`: the sequences written to file `w` (the shared log's count, or each committer's).
fn read_back(
    ctx: &Ctx,
    files: &[TestFile],
    layout: Layout,
    totals: &[u64],
) -> Result<std::result::Result<(), String>> {
    let (size, blocks) = (ctx.spec.group_size, log_blocks(layout));
    let mut result = Ok(());
    for (f, &total) in files.iter().zip(totals) {
        if let Some(k) = ctx.spec.corrupt_block {
            corrupt(f, size, k)?;
        }
        let expect = match layout {
            Layout::SharedLog => Expect::Concurrent { blocks, total },
            Layout::SeparateFiles => Expect::RoundRobin { blocks, total },
        };
        result = verify(f, size, ctx.run_id, expect)?;
        if result.is_err() {
            break;
        }
    }
    Ok(result)
}

/// A level's figures from its merged latencies and fsync count, read when its files are gone;
/// the caller adds the device's flushes and the read-back.
fn measured(n: u32, layout: Layout, lat: &Recorder, syncs: u64, elapsed_ns: u64) -> GroupLevel {
    let commits = lat.count;
    GroupLevel {
        committers: n,
        layout,
        commit_delay_us: 0,
        commits,
        elapsed_ns,
        commits_per_s: per_second(commits, elapsed_ns),
        syncs,
        commits_per_sync: if syncs > 0 {
            commits as f64 / syncs as f64
        } else {
            0.0
        },
        latency_ns: lat.summary(),
        device_flushes: None,
        verification: Verification::default(),
        interrupted: io::interrupted(),
    }
}

/// The knee: the level with the highest Kleinrock power (commits/s ÷ mean latency), the point
/// where more committers stop buying throughput without buying latency.
pub fn knee(levels: &[&GroupLevel]) -> Option<u32> {
    levels
        .iter()
        .filter(|l| l.commits > 0 && l.latency_ns.mean > 0)
        .map(|l| {
            (
                l.commits_per_s / (l.latency_ns.mean as f64 / 1e9),
                l.committers,
            )
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

fn summarise(name: &str, levels: &[&GroupLevel], knee: Option<u32>) -> Option<String> {
    let first = levels.first()?;
    let best = levels
        .iter()
        .max_by(|a, b| a.commits_per_s.total_cmp(&b.commits_per_s))?;
    let mut s = format!(
        "{name}: {:.0} commits/s at {} committer{}, best {:.0} commits/s at {} committers ({:.1}×, {:.1} commits per fsync)",
        first.commits_per_s,
        first.committers,
        if first.committers == 1 { "" } else { "s" },
        best.commits_per_s,
        best.committers,
        if first.commits_per_s > 0.0 {
            best.commits_per_s / first.commits_per_s
        } else {
            0.0
        },
        best.commits_per_sync
    );
    if let Some(k) = knee {
        s.push_str(&format!("; knee at {k} committers"));
    }
    Some(s)
}

/// The levels [`run`] measures: for each committer count, the shared log at each commit delay
/// that applies there, and separate files once.
pub fn planned(spec: &super::FsyncSpec) -> usize {
    let delays = spec.commit_delays_us.iter().filter(|&&d| d > 0).count();
    spec.committers
        .iter()
        .map(|&n| {
            let delayed = if n > super::like::COMMIT_SIBLINGS {
                delays
            } else {
                0
            };
            1 + delayed + 1
        })
        .sum()
}

pub fn run(ctx: &Ctx, namer: &mut Namer, progress: &mut dyn FnMut(&str)) -> Result<GroupCommit> {
    let mut levels = Vec::new();
    // commit_delay 0 first (the plain curve), then each delay on the shared log only.
    let delays: Vec<u32> = std::iter::once(0)
        .chain(ctx.spec.commit_delays_us.iter().copied().filter(|&d| d > 0))
        .collect();
    'outer: for &n in &ctx.spec.committers {
        // With commit_siblings or fewer other committers PostgreSQL's leader does not wait:
        // a delayed run there would measure the undelayed curve again.
        let runs = delays
            .iter()
            .filter(|&&d| d == 0 || n > super::like::COMMIT_SIBLINGS)
            .map(|&d| (Layout::SharedLog, d))
            .chain([(Layout::SeparateFiles, 0)]);
        for (layout, delay) in runs {
            let l = level(ctx, namer, layout, n, delay)?;
            progress(&format!(
                "group commit {}{} x{}: {:.0} commits/s, {:.1} commits per fsync",
                layout.name(),
                if delay > 0 {
                    format!(" commit_delay {delay} us")
                } else {
                    String::new()
                },
                n,
                l.commits_per_s,
                l.commits_per_sync
            ));
            let stop = l.interrupted;
            levels.push(l);
            if stop {
                break 'outer;
            }
        }
    }
    let shared: Vec<&GroupLevel> = levels
        .iter()
        .filter(|l| l.layout == Layout::SharedLog && l.commit_delay_us == 0)
        .collect();
    let separate: Vec<&GroupLevel> = levels
        .iter()
        .filter(|l| l.layout == Layout::SeparateFiles)
        .collect();
    let knee_shared_log = knee(&shared);
    let knee_separate_files = knee(&separate);
    let summary = [
        summarise(
            "shared log (leader fsyncs for the group)",
            &shared,
            knee_shared_log,
        ),
        summarise(
            "separate files (one fsync per commit)",
            &separate,
            knee_separate_files,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    Ok(GroupCommit {
        method: Method::Fsync,
        size: ctx.spec.group_size,
        levels,
        knee_shared_log,
        knee_separate_files,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lvl(c: u32, cps: f64, mean_ns: u64) -> GroupLevel {
        GroupLevel {
            commit_delay_us: 0,
            committers: c,
            layout: Layout::SharedLog,
            commits: 100,
            elapsed_ns: 1,
            commits_per_s: cps,
            syncs: 1,
            commits_per_sync: 1.0,
            latency_ns: LatencySummary {
                mean: mean_ns,
                ..Default::default()
            },
            device_flushes: None,
            verification: Verification::of(Ok(())),
            interrupted: false,
        }
    }

    #[test]
    fn knee_is_where_power_peaks() {
        // Throughput doubles with flat latency up to 4, then latency grows linearly.
        let ls = [
            lvl(1, 1000.0, 1_000_000),
            lvl(2, 2000.0, 1_000_000),
            lvl(4, 3800.0, 1_050_000),
            lvl(8, 4000.0, 2_000_000),
            lvl(16, 4000.0, 4_000_000),
        ];
        let refs: Vec<&GroupLevel> = ls.iter().collect();
        assert_eq!(knee(&refs), Some(4));
        assert_eq!(knee(&[]), None);
    }
}
