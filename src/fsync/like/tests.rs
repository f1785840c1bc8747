//! Unit tests of `fsync --like`: the recommendation, its noise and its words.

use super::*;

/// An entry of `commits_per_s` commits per second, every commit taking 1/rate.
pub(crate) fn entry(method: &str, pattern: Pattern, wpc: u32, commits_per_s: f64) -> LikeEntry {
    let ns = (1e9 / commits_per_s) as u64;
    LikeEntry {
        method: method.into(),
        pattern,
        writes_per_commit: wpc,
        write_bytes: 8192,
        access: String::new(),
        durable: method != "write" && method != "O_DIRECT_NO_FSYNC",
        commits: (commits_per_s as u64).max(1),
        elapsed_ns: 1_000_000_000,
        commits_per_s,
        latency_ns: LatencySummary {
            min: ns / 2,
            mean: ns,
            p50: ns,
            p90: ns,
            p95: ns,
            p99: ns + ns / 10,
            p999: ns * 2,
            max: ns * 3,
        },
        device_flushes: None,
        flush_evidence: Vec::new(),
        verification: Verification::of(Ok(())),
        interrupted: false,
        rate_cv: None,
        repeat_per_s: None,
    }
}

#[test]
fn settings_within_each_others_noise_are_equivalent_and_the_default_is_kept() {
    // open_sync measured 25 % faster than the default, but every setting's rate scattered
    // with a CV of 15 % over its windows (±13 % each at 95 %): the two are the same speed
    // here, the default is kept, and the others are named as equivalent.
    let mut e = pg(&[
        ("open_datasync", 4200.0),
        ("fdatasync", 4000.0),
        ("fsync", 3900.0),
        ("open_sync", 5000.0),
    ]);
    for x in e.iter_mut() {
        x.rate_cv = Some(0.15);
    }
    let r = &recommend(Database::Postgres, &e, "")[0];
    assert_eq!(r.value, "fdatasync", "{}", r.text);
    assert!(r.equivalent.contains(&"open_sync".to_string()), "{r:?}");
    assert!(r.text.contains("as fast within the noise"), "{}", r.text);
    assert!(!r.provisional);
    // Steady windows (CV 1 %): open_sync is 25 % faster beyond the noise and chosen.
    for x in e.iter_mut() {
        x.rate_cv = Some(0.01);
    }
    let r = &recommend(Database::Postgres, &e, "")[0];
    assert_eq!(r.value, "open_sync", "{}", r.text);
    assert!(r.equivalent.is_empty(), "{r:?}");
}

#[test]
fn a_repeat_that_moved_widens_the_noise_the_windows_did_not_see() {
    // Steady windows (CV 1 %) in both passes, but the repeat of fdatasync ran 30 % faster
    // than its first pass: open_sync's 25 % lead is within the two noises, the default is kept.
    let mut e = pg(&[("fdatasync", 4000.0), ("open_sync", 5000.0)]);
    for x in e.iter_mut() {
        x.rate_cv = Some(0.01);
    }
    e[0].repeat_per_s = Some(5200.0);
    e[2].repeat_per_s = Some(5000.0);
    assert!((e[0].rate_noise_rel() - 1200.0 / 4600.0).abs() < 1e-9);
    let r = &recommend(Database::Postgres, &e, "")[0];
    assert_eq!(r.value, "fdatasync", "{}", r.text);
    assert_eq!(r.equivalent, vec!["open_sync".to_string()], "{r:?}");
    // A repeat that agreed leaves the lead standing.
    e[0].repeat_per_s = Some(4050.0);
    let r = &recommend(Database::Postgres, &e, "")[0];
    assert_eq!(r.value, "open_sync", "{}", r.text);
}

#[test]
fn a_disturbed_run_says_its_advice_is_provisional() {
    let mut e = pg(&[
        ("open_datasync", 4000.0),
        ("fdatasync", 4000.0),
        ("fsync", 3900.0),
    ]);
    e[2].rate_cv = Some(0.4);
    let r = &recommend(Database::Postgres, &e, "")[0];
    assert!(r.provisional);
    assert!(
        r.text.starts_with("Provisional (the run was disturbed"),
        "{}",
        r.text
    );
    // Two writes a commit faster than one is the same sign.
    let mut e = pg(&[("fdatasync", 4000.0), ("fsync", 3900.0)]);
    e[1].commits_per_s = 7000.0;
    assert!(recommend(Database::Postgres, &e, "")[0].provisional);
}

fn pg(rates: &[(&str, f64)]) -> Vec<LikeEntry> {
    rates
        .iter()
        .flat_map(|&(m, r)| {
            [
                entry(m, Pattern::Commit, 1, r),
                entry(m, Pattern::Commit, 2, r / 2.0),
            ]
        })
        .collect()
}

#[test]
fn postgres_fdatasync_wins_in_postgres_words() {
    // The example: fdatasync at p99 0.91 ms, 1.9x open_datasync.
    let mut e = pg(&[
        ("open_datasync", 600.0),
        ("fdatasync", 1140.0),
        ("fsync", 1000.0),
        ("open_sync", 550.0),
        ("write", 400_000.0),
    ]);
    for x in e.iter_mut().filter(|x| x.method == "fdatasync") {
        x.latency_ns.p99 = 910_000;
    }
    let r = recommend(Database::Postgres, &e, "ext4");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].variable, "wal_sync_method");
    assert_eq!(r[0].value, "fdatasync");
    assert_eq!(r[0].versus.as_deref(), Some("fsync"));
    assert!(
        r[0].text
            .starts_with("wal_sync_method = fdatasync: commit p99 0.91 ms"),
        "{}",
        r[0].text
    );
    assert!(
        r[0].text
            .contains("faster than fsync on this filesystem (ext4)")
            || r[0].text.contains("as fast as fsync"),
        "{}",
        r[0].text
    );
    // The non-synced ceiling is never recommended, however fast.
    assert!(!r.iter().any(|x| x.value == "write"));
}

#[test]
fn postgres_open_datasync_only_when_clearly_faster_than_the_default() {
    let e = pg(&[
        ("open_datasync", 1900.0),
        ("fdatasync", 1000.0),
        ("fsync", 990.0),
        ("open_sync", 1800.0),
    ]);
    let r = &recommend(Database::Postgres, &e, "")[0];
    assert_eq!(r.value, "open_datasync");
    assert_eq!(r.versus.as_deref(), Some("fdatasync"));
    assert!(
        r.text
            .contains("1.9× faster than fdatasync on this filesystem"),
        "{}",
        r.text
    );
    assert!(
        !caveats(Database::Postgres, &e, "")
            .iter()
            .any(|c| c.contains("disturbed")),
        "two writes at half the rate of one: nothing odd"
    );
    // One write slower than two: no disk does that; the caveat says the run was disturbed.
    let mut odd = e.clone();
    odd[2].commits_per_s = 100.0;
    let c = caveats(Database::Postgres, &odd, "");
    assert!(
        c.iter()
            .any(|l| l
                .starts_with("fdatasync made 500 commits/s with two writes a commit against 100")),
        "{c:?}"
    );
    // 5 % faster is noise: the default stays.
    let e = pg(&[("open_datasync", 1050.0), ("fdatasync", 1000.0)]);
    let r = &recommend(Database::Postgres, &e, "")[0];
    assert_eq!(r.value, "fdatasync");
    assert!(r.text.contains("keep the default"), "{}", r.text);
}

#[test]
fn innodb_names_the_variable_and_prefers_the_faster_page_flush_on_a_tie() {
    let mut e = vec![
        entry("fsync", Pattern::Commit, 1, 1000.0),
        entry("O_DSYNC", Pattern::Commit, 1, 700.0),
        entry("O_DIRECT", Pattern::Commit, 1, 1010.0),
        entry("O_DIRECT_NO_FSYNC", Pattern::Commit, 1, 1005.0),
        entry("fsync", Pattern::PageFlush, 9, 200.0),
        entry("O_DSYNC", Pattern::PageFlush, 9, 200.0),
        entry("O_DIRECT", Pattern::PageFlush, 9, 320.0),
        entry("O_DIRECT_NO_FSYNC", Pattern::PageFlush, 9, 900.0),
    ];
    let r = recommend(Database::Innodb, &e, "xfs");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].variable, "innodb_flush_method");
    // Commits tie; O_DIRECT flushes pages 1.6x faster than fsync. O_DIRECT_NO_FSYNC's
    // page writes are not durable by themselves: never the recommendation.
    assert_eq!(r[0].value, "O_DIRECT", "{:?}", r[0]);
    assert!(
        r[0].text
            .starts_with("innodb_flush_method = O_DIRECT: page flush p99"),
        "{}",
        r[0].text
    );
    // A much faster commit decides over pages.
    e[1].commits_per_s = 3000.0;
    let r = recommend(Database::Innodb, &e, "");
    assert_eq!(r[0].value, "O_DSYNC", "{:?}", r[0]);
    assert!(r[0].text.contains("faster than fsync"), "{}", r[0].text);
    let c = caveats(Database::Innodb, &e, "xfs");
    assert!(
        c[0].contains("O_DIRECT_NO_FSYNC") && c[0].contains("XFS"),
        "{c:?}"
    );
}

#[test]
fn mariadb_recommends_the_log_and_the_data_file_settings() {
    let e = vec![
        entry("innodb_log_file_buffering=ON", Pattern::Commit, 1, 1000.0),
        entry("innodb_log_file_buffering=OFF", Pattern::Commit, 1, 1020.0),
        entry(
            "innodb_log_file_write_through=ON",
            Pattern::Commit,
            1,
            2500.0,
        ),
        entry(
            "innodb_data_file_buffering=ON",
            Pattern::PageFlush,
            9,
            100.0,
        ),
        entry(
            "innodb_data_file_buffering=OFF",
            Pattern::PageFlush,
            9,
            104.0,
        ),
        entry(
            "innodb_data_file_write_through=ON",
            Pattern::PageFlush,
            9,
            60.0,
        ),
    ];
    let r = recommend(Database::Mariadb, &e, "");
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[0].variable, "innodb_log_file_write_through");
    assert_eq!(r[0].value, "ON");
    assert!(
        r[0].text
            .starts_with("innodb_log_file_write_through = ON: commit p99"),
        "{}",
        r[0].text
    );
    assert!(
        r[0].text
            .contains("2.5× faster than innodb_log_file_buffering=OFF"),
        "{}",
        r[0].text
    );
    // The data files: buffering=OFF is the default and within 10 % of the fastest.
    assert_eq!(r[1].variable, "innodb_data_file_buffering");
    assert_eq!(r[1].value, "OFF");
}

#[test]
fn evidence_names_write_through_no_flushes_and_a_commit_below_the_flush_time() {
    let dev = |wc: &str, fua| DiskFacts {
        name: "loop3".into(),
        write_cache: Some(wc.into()),
        fua: Some(fua),
        ..Default::default()
    };
    let mut e = entry("fdatasync", Pattern::Commit, 1, 5000.0);
    e.device_flushes = Some(FlushStats::sample(0, 0.0, 0.0));
    let wt = flush_evidence(&e, Some(&dev("write through", false)), None, None);
    assert!(
        wt[0].contains("/sys/block/loop3/queue/write_cache = write through"),
        "{wt:?}"
    );
    assert!(wt[0].contains("no-op"), "{wt:?}");
    assert!(
        wt[1].contains("0 flush requests completed during 5000 commits"),
        "{wt:?}"
    );
    let wb = flush_evidence(&e, Some(&dev("write back", false)), Some(1.0), None);
    assert!(
        wb.iter().any(|l| l.contains("as no flush at all")),
        "{wb:?}"
    );
    assert!(
        wb.iter()
            .any(|l| l.contains("below the device's own flush time (1.000 ms")),
        "{wb:?}"
    );
    // O_DSYNC on a FUA device: no flush, and that is how it should be.
    let mut o = entry("open_datasync", Pattern::Commit, 1, 5000.0);
    o.access = "O_DSYNC|O_DIRECT + no sync call".into();
    o.device_flushes = Some(FlushStats::sample(0, 0.0, 0.0));
    let fua = flush_evidence(&o, Some(&dev("write back", true)), None, None);
    assert!(fua.iter().any(|l| l.contains("fua = 1")), "{fua:?}");
    assert!(
        !fua.iter().any(|l| l.contains("as no flush at all")),
        "{fua:?}"
    );
    // A flush per commit at the device's pace: only the count.
    let mut ok = entry("fsync", Pattern::Commit, 1, 500.0);
    ok.device_flushes = Some(FlushStats::sample(500, 1.5, 0.7));
    let l = flush_evidence(&ok, Some(&dev("write back", false)), Some(1.5), None);
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(l[0].contains("1.00 per commit, 1.500 ms each"), "{l:?}");
}

fn level(n: u32, delay_us: u32, cps: f64, p99_ms: f64) -> GroupLevel {
    let mut l = GroupLevel {
        committers: n,
        layout: Layout::SharedLog,
        commit_delay_us: delay_us,
        commits: cps as u64,
        elapsed_ns: 1_000_000_000,
        commits_per_s: cps,
        syncs: 1,
        commits_per_sync: 1.0,
        latency_ns: entry("x", Pattern::Commit, 1, 100.0).latency_ns,
        device_flushes: None,
        verification: Verification::of(Ok(())),
        interrupted: false,
    };
    l.latency_ns.p99 = (p99_ms * 1e6) as u64;
    l
}

#[test]
fn commit_delay_is_recommended_only_when_it_raises_commits() {
    let mut sep = level(16, 0, 9000.0, 0.1);
    sep.layout = Layout::SeparateFiles;
    let mut levels = vec![
        level(1, 0, 1000.0, 1.2),
        // One backend: the delay did not apply (commit_siblings); this 2x is noise.
        level(1, 1000, 2000.0, 1.2),
        level(16, 0, 5000.0, 3.0),
        level(16, 100, 5200.0, 3.1),
        level(16, 1000, 7000.0, 3.9),
        // Separate files are never the baseline or the candidate.
        sep,
    ];
    let r = commit_delay_advice(&levels).unwrap();
    assert_eq!(
        (r.variable.as_str(), r.value.as_str()),
        ("commit_delay", "1000")
    );
    assert!(
        r.text.starts_with(
            "commit_delay = 1000: raises commits/s at 16 backends by 1.4× (7000 against 5000) at a p99 cost of 0.9 ms"
        ),
        "{}",
        r.text
    );
    // 4 % more is noise: keep 0.
    levels[4].commits_per_s = 5100.0;
    levels[3].commits_per_s = 5200.0;
    let r = commit_delay_advice(&levels).unwrap();
    assert_eq!(r.value, "0");
    assert!(
        r.text
            .starts_with("keep commit_delay = 0: no delay raised commits/s by 10 %"),
        "{}",
        r.text
    );
    assert!(
        r.text.contains("commit_delay = 100 at 16 backends, 1.04×"),
        "{}",
        r.text
    );
    // No delayed level where the delay applies: nothing to say.
    levels.retain(|l| l.commit_delay_us == 0 || l.committers == 1);
    assert!(commit_delay_advice(&levels).is_none());
}

#[test]
fn evidence_gives_the_block_layers_flush_latency_or_says_it_is_absent() {
    use super::super::report::BlockFlushes;
    let dev = DiskFacts {
        name: "loop3".into(),
        write_cache: Some("write back".into()),
        fua: Some(false),
        ..Default::default()
    };
    let mut e = entry("fsync", Pattern::Commit, 1, 50.0);
    e.latency_ns.p50 = 21_400_000;
    let mut f = FlushStats::sample(50, 19.9, 1.0);
    f.block_layer = Some(BlockFlushes {
        flushes: 50,
        p50_ms: Some(19.8),
        p99_ms: Some(20.6),
    });
    e.device_flushes = Some(f);
    let l = flush_evidence(&e, Some(&dev), Some(19.9), Some("ignored"));
    assert!(
        l.iter().any(|x| x.starts_with(
            "the device's own flushes took 19.800 ms p50, 20.600 ms p99 (block layer, 50 flushes timed), commits 21.400 ms p50"
        )),
        "{l:?}"
    );
    assert!(!l.iter().any(|x| x.contains("absent")), "{l:?}");
    // Without the source: one line saying why, never a figure.
    e.device_flushes.as_mut().unwrap().block_layer = None;
    let l = flush_evidence(&e, Some(&dev), Some(19.9), Some("turned off by --no-bpf"));
    assert!(
        l.iter()
            .any(|x| x.contains("the block-latency source is absent (turned off by --no-bpf)")),
        "{l:?}"
    );
    assert!(!l.iter().any(|x| x.contains("block layer,")), "{l:?}");
}
