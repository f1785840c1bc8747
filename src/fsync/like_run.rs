//! The timed loops of `iosat fsync --like`: each setting of like.rs on files laid out as the
//! database lays them out (a zero-filled 16 MiB WAL segment, a preallocated redo log, a
//! tablespace and a doublewrite area), the device's flush counters around each, the read-back,
//! and the kernel's evidence per setting. Called by runner.rs; imports file.rs, io.rs, like.rs.
//! Must not import: fsync/runner.rs, cli/, config/, cmd/, ui/, report/, exporter/, import/, load/.

use super::block;
use super::device;
use super::file::{inverse_mod_pow2, verify, zero_fill, Ctx, Expect, Namer};
use super::io::{self, AlignedBuf, OpenError, TestFile};
use super::like::*;
use super::report::{CaseResult, Verification};
use super::{Method, Mode, SyncCall};
use crate::error::Result;
use crate::latency::Recorder;
use std::time::{Duration, Instant};

/// Pages go to slot (seq × PAGE_STRIDE) mod pages: odd, so every page of the tablespace has its
/// turn, and far apart, as a flush list's pages are.
const PAGE_STRIDE: u64 = 389;

/// What one timed loop produced.
struct Timed {
    lat: Recorder,
    total: u64,
    elapsed_ns: u64,
    flushes: Option<super::report::FlushStats>,
    interrupted: bool,
    /// Commits completed in each of [`RATE_WINDOWS`] equal parts of the duration.
    per_window: [u64; RATE_WINDOWS],
}

/// Equal parts of a setting's duration whose commit rates say how steady it was (the same
/// eight as a sweep level's sub-windows).
const RATE_WINDOWS: usize = 8;

/// Bytes the --like files need at most at once (the page flush: tablespace + doublewrite).
pub fn need_bytes(db: Database) -> u64 {
    match db {
        Database::Postgres => PG_SEGMENT_BYTES,
        Database::Innodb | Database::Mariadb => {
            INNODB_REDO_BYTES.max(INNODB_DATA_BYTES + (DBLWR_BATCH_PAGES * INNODB_PAGE) as u64)
        }
    }
}

/// The timed loops [`run`] plans for `db`: each setting once per writes-per-commit count, and
/// the recommendable ones ([`repeated`]) a second time.
pub fn planned(db: Database) -> usize {
    settings(db)
        .iter()
        .map(|s| match s.pattern {
            Pattern::Commit => writes_per_commit(db).len(),
            Pattern::PageFlush => 1,
        })
        .sum::<usize>()
        + settings(db).iter().filter(|s| s.durable).count()
}

/// An entry the recommendation may rank (durable, at the fewest writes a commit: what
/// like.rs's `find` picks) gets a second pass.
fn repeated(db: Database, e: &LikeEntry) -> bool {
    e.durable
        && e.commits > 0
        && match e.pattern {
            Pattern::Commit => writes_per_commit(db).first() == Some(&e.writes_per_commit),
            Pattern::PageFlush => true,
        }
}

/// Run every setting of `db`; `lbs` is the device's logical block size. Returns the section
/// and whether Ctrl-C cut it short.
pub fn run(
    ctx: &Ctx,
    namer: &mut Namer,
    db: Database,
    lbs: u32,
    progress: &mut dyn FnMut(&str),
) -> Result<(LikeResult, bool)> {
    let direct_ok = probe_direct(namer)?;
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    let mut interrupted = false;
    'settings: for s in settings(db) {
        let direct = s.access.open_flags & libc::O_DIRECT != 0;
        let size = match s.pattern {
            Pattern::Commit => db.commit_write_bytes(),
            Pattern::PageFlush => INNODB_PAGE,
        };
        let why_not = if direct && !direct_ok {
            Some("n/a: the filesystem refuses O_DIRECT (pg_test_fsync prints n/a* here)".into())
        } else if direct && size % lbs != 0 {
            Some(format!(
                "O_DIRECT needs a multiple of the logical block size ({lbs} bytes)"
            ))
        } else {
            None
        };
        if let Some(reason) = why_not {
            skipped.push(LikeSkipped {
                method: s.value.into(),
                pattern: s.pattern,
                reason,
            });
            continue;
        }
        let wpcs: &[u32] = match s.pattern {
            Pattern::Commit => writes_per_commit(db),
            Pattern::PageFlush => &[1 + DBLWR_BATCH_PAGES],
        };
        for &wpc in wpcs {
            let e = match s.pattern {
                Pattern::Commit => commit_entry(ctx, namer, db, &s, wpc)?,
                Pattern::PageFlush => page_flush_entry(ctx, namer, &s)?,
            };
            progress(&format!(
                "{} {} {} x {} B: {:.0}/s, p99 {:.3} ms",
                s.value,
                s.pattern.name(),
                e.writes_per_commit,
                e.write_bytes,
                e.commits_per_s,
                e.latency_ns.p99 as f64 / 1e6
            ));
            let stop = e.interrupted;
            entries.push(e);
            if stop {
                interrupted = true;
                break 'settings;
            }
        }
    }
    if !interrupted {
        interrupted = repeat_pass(ctx, namer, db, &mut entries, progress)?;
    }
    let dev = ctx.watch.device.as_ref();
    let flush_ms = device_flush_ms(&entries);
    let blk_absent = ctx.watch.block_latency_absent.clone();
    for e in entries.iter_mut() {
        e.flush_evidence = flush_evidence(e, dev, flush_ms, blk_absent.as_deref());
    }
    let fs = crate::sys::fs::fs_name_at(&ctx.spec.dir).unwrap_or("");
    Ok((
        LikeResult {
            database: db,
            variable: db.variable().into(),
            recommendations: recommend(db, &entries, fs),
            caveats: caveats(db, &entries, fs),
            entries,
            skipped,
            block_latency_absent: blk_absent,
        },
        interrupted,
    ))
}

/// The second pass: every recommendable entry again for half the duration, in the reverse
/// order, so a host or device that drifted during the first pass moves the settings measured
/// early and late apart and [`LikeEntry::rate_noise_rel`] says so. Returns whether Ctrl-C cut it.
fn repeat_pass(
    ctx: &Ctx,
    namer: &mut Namer,
    db: Database,
    entries: &mut [LikeEntry],
    progress: &mut dyn FnMut(&str),
) -> Result<bool> {
    let spec = super::FsyncSpec {
        duration_ns: (ctx.spec.duration_ns / 2).max(1),
        ..ctx.spec.clone()
    };
    let half = Ctx {
        spec: &spec,
        ..*ctx
    };
    let all = settings(db);
    for e in entries.iter_mut().rev().filter(|e| repeated(db, e)) {
        let Some(s) = all
            .iter()
            .find(|s| s.value == e.method && s.pattern == e.pattern)
        else {
            continue;
        };
        let again = match s.pattern {
            Pattern::Commit => commit_entry(&half, namer, db, s, e.writes_per_commit)?,
            Pattern::PageFlush => page_flush_entry(&half, namer, s)?,
        };
        if again.interrupted {
            return Ok(true);
        }
        if again.verification.failed() {
            e.verification = again.verification;
        }
        progress(&format!(
            "{} {} again: {:.0}/s (first {:.0}/s)",
            e.method,
            e.pattern.name(),
            again.commits_per_s,
            e.commits_per_s
        ));
        e.repeat_per_s = Some(again.commits_per_s);
    }
    Ok(false)
}

/// Does the filesystem accept O_DIRECT at all (tmpfs before Linux 6.6 refuses it)?
fn probe_direct(namer: &mut Namer) -> Result<bool> {
    let probe = TestFile::create(&namer.next_path())?;
    match probe.open_with(libc::O_DIRECT) {
        Ok(_) => Ok(true),
        Err(OpenError::DirectRefused) => Ok(false),
        Err(OpenError::Other(e)) => Err(e),
    }
}

/// Time `commit` until the duration ends (or Ctrl-C), with the device's flush counters around
/// the loop. `commit(seq, t0)` stamps the blocks of one commit starting at write sequence
/// `seq`, sets `t0` to the moment its first write starts (the stamping, a CRC per block, is
/// not the database's cost: the clock starts after it, as in runner.rs), makes the commit and
/// returns the next sequence. No allocation or printing inside.
fn timed(ctx: &Ctx, mut commit: impl FnMut(u64, &mut Instant) -> Result<u64>) -> Result<Timed> {
    let mut lat = Recorder::new();
    let dur = Duration::from_nanos(ctx.spec.duration_ns);
    let mark = device::window(ctx.watch);
    let start = Instant::now();
    let deadline = start + dur;
    let mut seq = 0u64;
    let mut interrupted = false;
    let mut per_window = [0u64; RATE_WINDOWS];
    let span_ns = (ctx.spec.duration_ns / RATE_WINDOWS as u64).max(1);
    loop {
        if io::interrupted() {
            interrupted = true;
            break;
        }
        let mut t0 = Instant::now();
        seq = commit(seq, &mut t0)?;
        let t1 = Instant::now();
        lat.record((t1 - t0).as_nanos() as u64);
        let w = ((t1 - start).as_nanos() as u64 / span_ns) as usize;
        per_window[w.min(RATE_WINDOWS - 1)] += 1;
        if t1 >= deadline {
            break;
        }
    }
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    Ok(Timed {
        lat,
        total: seq,
        elapsed_ns,
        flushes: device::finish(ctx.watch, mark),
        interrupted,
        per_window,
    })
}

/// One log write (or two) per commit, in order through a zero-filled, preallocated file that
/// wraps (a WAL segment is recycled, InnoDB's redo log is circular), then the setting's sync.
fn commit_entry(
    ctx: &Ctx,
    namer: &mut Namer,
    db: Database,
    s: &Setting,
    wpc: u32,
) -> Result<LikeEntry> {
    let size = db.commit_write_bytes();
    let file_bytes = match db {
        Database::Postgres => PG_SEGMENT_BYTES,
        Database::Innodb | Database::Mariadb => INNODB_REDO_BYTES,
    };
    let blocks = file_bytes / size as u64;
    let path = namer.next_path();
    let file = TestFile::create(&path)?;
    zero_fill(&file, file_bytes)?;
    let h = file
        .open_with(s.access.open_flags)
        .map_err(|e| e.into_error(&path))?;
    let run_id = ctx.run_id;
    // One block per write of a commit, each written by its own pwrite (as pg_test_fsync
    // writes its two 8 kB blocks).
    let sz = size as usize;
    let mut buf = AlignedBuf::new(sz * wpc as usize);
    for w in 0..wpc as usize {
        block::fill_payload(&mut buf.as_mut_slice()[w * sz..(w + 1) * sz], run_id);
    }
    let sync = s.access.sync;
    let t = timed(ctx, |seq, t0| {
        let off = |w: u64| ((seq + w) % blocks) * size as u64;
        for w in 0..wpc as usize {
            let b = &mut buf.as_mut_slice()[w * sz..(w + 1) * sz];
            block::stamp(b, run_id, off(w as u64), seq + w as u64);
        }
        *t0 = Instant::now();
        for w in 0..wpc as usize {
            h.write_all_at(&buf.as_slice()[w * sz..(w + 1) * sz], off(w as u64))?;
        }
        h.sync(sync)?;
        Ok(seq + wpc as u64)
    })?;
    drop(h);
    let expect = Expect::Scattered {
        blocks,
        total: t.total,
        stride_inv: 1,
    };
    let checked = check(ctx, &file, size, expect)?;
    Ok(entry(s, wpc, size, t, checked))
}

/// InnoDB's page flush with the doublewrite buffer: a batch of pages written sequentially to
/// the doublewrite area and synced, then each page written in place in the tablespace and
/// synced (both files opened and synced as the setting says). One "commit" is one batch.
fn page_flush_entry(ctx: &Ctx, namer: &mut Namer, s: &Setting) -> Result<LikeEntry> {
    let page = INNODB_PAGE as u64;
    let pages = INNODB_DATA_BYTES / page;
    let batch = DBLWR_BATCH_PAGES as u64;
    let data_path = namer.next_path();
    let data = TestFile::create(&data_path)?;
    zero_fill(&data, INNODB_DATA_BYTES)?;
    let dblwr_path = namer.next_path();
    let dblwr = TestFile::create(&dblwr_path)?;
    zero_fill(&dblwr, batch * page)?;
    let open = |f: &TestFile, p: &std::path::Path| {
        f.open_with(s.access.open_flags)
            .map_err(|e: OpenError| e.into_error(p))
    };
    let (hd, hw) = (open(&data, &data_path)?, open(&dblwr, &dblwr_path)?);
    let run_id = ctx.run_id;
    let mut buf = AlignedBuf::new((batch * page) as usize);
    for k in 0..batch as usize {
        let p = k * page as usize;
        block::fill_payload(&mut buf.as_mut_slice()[p..p + page as usize], run_id);
    }
    let sync = s.access.sync;
    let t = timed(ctx, |seq, t0| {
        for k in 0..batch {
            let slot = ((seq + k) * PAGE_STRIDE) % pages;
            let p = (k * page) as usize;
            let b = &mut buf.as_mut_slice()[p..p + page as usize];
            block::stamp(b, run_id, slot * page, seq + k);
        }
        *t0 = Instant::now();
        hw.write_all_at(buf.as_slice(), 0)?;
        hw.sync(sync)?;
        for k in 0..batch {
            let slot = ((seq + k) * PAGE_STRIDE) % pages;
            let p = (k * page) as usize;
            hd.write_all_at(&buf.as_slice()[p..p + page as usize], slot * page)?;
        }
        hd.sync(sync)?;
        Ok(seq + batch)
    })?;
    drop((hd, hw));
    let expect = Expect::Scattered {
        blocks: pages,
        total: t.total,
        stride_inv: inverse_mod_pow2(PAGE_STRIDE, pages),
    };
    let checked = check(ctx, &data, INNODB_PAGE, expect)?;
    Ok(entry(s, 1 + DBLWR_BATCH_PAGES, INNODB_PAGE, t, checked))
}

/// The read-back of a file, unless --no-verify (or the corruption test hook first).
fn check(ctx: &Ctx, f: &TestFile, size: u32, expect: Expect) -> Result<Verification> {
    if !ctx.spec.verify {
        return Ok(Verification::default());
    }
    if let Some(k) = ctx.spec.corrupt_block {
        super::file::corrupt(f, size, k)?;
    }
    Ok(Verification::of(verify(f, size, ctx.run_id, expect)?))
}

fn entry(s: &Setting, wpc: u32, size: u32, t: Timed, verification: Verification) -> LikeEntry {
    let commits = t.lat.count;
    // A setting cut short has no full windows to compare.
    let rate_cv = (!t.interrupted).then(|| rate_cv(&t.per_window)).flatten();
    LikeEntry {
        method: s.value.into(),
        pattern: s.pattern,
        writes_per_commit: wpc,
        write_bytes: size,
        access: s.access.describe(),
        durable: s.durable,
        commits,
        elapsed_ns: t.elapsed_ns,
        commits_per_s: super::report::per_second(commits, t.elapsed_ns),
        latency_ns: t.lat.summary(),
        device_flushes: t.flushes,
        flush_evidence: Vec::new(),
        verification,
        interrupted: t.interrupted,
        rate_cv,
        repeat_per_s: None,
    }
}

/// The CV of the commit counts per window (population), None without two windows that
/// committed.
fn rate_cv(w: &[u64]) -> Option<f64> {
    if w.iter().filter(|&&n| n > 0).count() < 2 {
        return None;
    }
    let n = w.len() as f64;
    let mean = w.iter().sum::<u64>() as f64 / n;
    let var = w.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    (mean > 0.0).then(|| var.sqrt() / mean)
}

/// The durable one-write commit entries as the flush-honesty verdict's cases (the method that
/// opens and syncs the same way), so `device.flush_verdict` judges a --like run too.
pub fn as_cases(r: &LikeResult) -> Vec<CaseResult> {
    r.entries
        .iter()
        .filter(|e| e.durable && e.pattern == Pattern::Commit && e.writes_per_commit == 1)
        .filter_map(|e| {
            let s = settings(r.database)
                .into_iter()
                .find(|s| s.value == e.method && s.pattern == e.pattern)?;
            let direct = s.access.open_flags & libc::O_DIRECT != 0;
            let method = match (s.access.sync, direct) {
                (SyncCall::Fsync, false) => Method::Fsync,
                (SyncCall::Fsync, true) => Method::OdirectFsync,
                (SyncCall::Fdatasync, false) => Method::Fdatasync,
                (SyncCall::Fdatasync, true) => Method::OdirectFdatasync,
                (SyncCall::None, _) if s.access.open_flags & libc::O_SYNC == libc::O_SYNC => {
                    Method::Osync
                }
                (SyncCall::None, _) => Method::Odsync,
            };
            let mut c = CaseResult::measured(
                (method, Mode::Overwrite, e.write_bytes),
                e.latency_ns,
                (e.commits, e.elapsed_ns),
                None,
                e.device_flushes.clone(),
            );
            c.description = format!("{} ({})", e.method, e.access);
            c.setting = Some(match e.method.split_once('=') {
                Some((var, val)) => format!("{var} = {val}"),
                None => format!("{} = {}", r.database.variable(), e.method),
            });
            Some(c)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::device::DiskFacts;
    use super::super::like::tests::entry;
    use super::super::report::FlushStats;
    use super::*;

    fn result(db: Database, entries: Vec<LikeEntry>) -> LikeResult {
        LikeResult {
            database: db,
            variable: db.variable().into(),
            entries,
            skipped: Vec::new(),
            recommendations: Vec::new(),
            caveats: Vec::new(),
            block_latency_absent: None,
        }
    }

    /// The device verdict of a --like run names the database's settings, never iosat's
    /// methods (osync, odsync, odirect_fsync …).
    #[test]
    fn the_device_verdict_names_the_database_settings() {
        let dev = DiskFacts {
            name: "sdz".into(),
            write_cache: Some("write back".into()),
            fua: Some(false),
            rotational: Some(false),
            ..Default::default()
        };
        let with_flushes = |mut e: LikeEntry, f_await_ms: f64| {
            e.device_flushes = Some(FlushStats::sample(e.commits, f_await_ms, 1.0));
            e
        };
        // open_sync is the fastest, fdatasync the slowest: every commit 10x and more the
        // device's flush time.
        let pg = result(
            Database::Postgres,
            vec![
                with_flushes(entry("open_datasync", Pattern::Commit, 1, 90.0), 1.0),
                with_flushes(entry("fdatasync", Pattern::Commit, 1, 80.0), 1.0),
                with_flushes(entry("open_sync", Pattern::Commit, 1, 100.0), 1.0),
                with_flushes(entry("open_sync", Pattern::Commit, 2, 50.0), 1.0),
                entry("write", Pattern::Commit, 1, 9000.0),
            ],
        );
        let cases = as_cases(&pg);
        assert_eq!(cases.len(), 3, "durable one-write commits only: {cases:?}");
        let (_, why) = super::super::verdict::judge(Some(&dev), &cases, false);
        let all = why.join("\n");
        assert!(
            all.contains("Fastest durable method: wal_sync_method = open_sync 8192 B at"),
            "{all}"
        );
        assert!(
            all.contains("wal_sync_method = fdatasync 8192 B commits take"),
            "{all}"
        );
        for internal in ["osync", "odsync", "odirect", "overwrite"] {
            assert!(!all.contains(internal), "{internal} in {all}");
        }
        // InnoDB's and MariaDB's names as their manuals spell them.
        // (The helper marks O_DIRECT_NO_FSYNC not durable; its commit is: the log is fsynced.)
        let mut e = entry("O_DIRECT_NO_FSYNC", Pattern::Commit, 1, 100.0);
        e.durable = true;
        e.write_bytes = 4096;
        let c = as_cases(&result(Database::Innodb, vec![e]));
        assert_eq!(
            c[0].setting.as_deref(),
            Some("innodb_flush_method = O_DIRECT_NO_FSYNC")
        );
        let e = entry(
            "innodb_log_file_write_through=ON",
            Pattern::Commit,
            1,
            100.0,
        );
        let c = as_cases(&result(Database::Mariadb, vec![e]));
        assert_eq!(
            c[0].setting.as_deref(),
            Some("innodb_log_file_write_through = ON")
        );
    }
}
