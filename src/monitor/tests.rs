//! Hand-computed expectations for the sysstat formulas on recorded sample pairs.

use super::*;
use crate::sys::diskstats::parse_line;

fn line(s: &str) -> DiskStatLine {
    parse_line(s).unwrap()
}

fn close(got: f64, want: f64) {
    let tol = want.abs() * 1e-3; // 0.1 % relative
    assert!(
        (got - want).abs() <= tol.max(1e-9),
        "got {got}, want {want} (0.1 %)"
    );
}

/// 1 s: 400 reads taking 800 ms in all (2 ms each), 100 writes taking 500 ms (5 ms), weighted
/// 1300 ms (aqu-sz 1.3), busy 0.9 s. The judgement's and the saturation's tests judge it.
pub(super) fn one_second() -> DiskRates {
    DiskRates::from_delta(&DiskDelta {
        dt_ns: 1_000_000_000,
        reads: 400,
        read_ms: 800,
        writes: 100,
        write_ms: 500,
        weighted_ms: 1300,
        io_ms: 900,
        ..DiskDelta::default()
    })
}

const PREV: &str =
    " 259       0 nvme0n1 1000 10 80000 500 2000 100 160000 3000 2 900 3600 50 5 40000 100 30 60";
const CUR: &str = " 259       0 nvme0n1 2000 260 144000 1300 2500 600 168000 4500 4 1850 6000 60 5 60480 120 70 140";
const DT_NS: u64 = 1_002_500_000;

#[test]
fn every_column_matches_the_sysstat_formulas() {
    let d = DiskDelta::between(&line(PREV), &line(CUR), DT_NS).unwrap();
    assert_eq!(d.wrapped_fields, 0);
    let r = DiskRates::from_delta(&d);
    // Values worked out by hand from the two lines above and dt = 1.0025 s.
    close(r.interval_s, 1.0025);
    close(r.r_s, 997.5062);
    close(r.w_s, 498.7531);
    close(r.d_s.unwrap(), 9.97506);
    close(r.f_s.unwrap(), 39.90025);
    close(r.rkb_s, 31920.1995);
    close(r.wkb_s, 3990.0249);
    close(r.dkb_s.unwrap(), 10214.4638);
    close(r.rrqm_s, 249.3766);
    close(r.wrqm_s, 498.7531);
    close(r.drqm_s.unwrap(), 0.0);
    close(r.rrqm_pct, 20.0);
    close(r.wrqm_pct, 50.0);
    close(r.drqm_pct.unwrap(), 0.0);
    close(r.r_await.unwrap(), 0.8);
    close(r.w_await.unwrap(), 3.0);
    close(r.d_await.unwrap(), 2.0);
    close(r.f_await.unwrap(), 2.0);
    close(r.rareq_sz.unwrap(), 32.0);
    close(r.wareq_sz.unwrap(), 8.0);
    close(r.dareq_sz.unwrap(), 1024.0);
    close(r.aqu_sz, 2.394015);
    close(r.util_pct, 94.763);
    close(r.read_concurrency, 0.798005);
    close(r.write_concurrency, 1.496259);
    close(r.discard_concurrency.unwrap(), 0.019950);
    close(r.flush_concurrency.unwrap(), 0.079800);
    assert_eq!(r.in_flight, 4);
    // Little's law closes on >= 5.7: the per-direction concurrencies sum to aqu-sz.
    close(
        r.read_concurrency
            + r.write_concurrency
            + r.discard_concurrency.unwrap()
            + r.flush_concurrency.unwrap(),
        r.aqu_sz,
    );
}

#[test]
fn sysstat_json_uses_iostat_key_names() {
    let d = DiskDelta::between(&line(PREV), &line(CUR), DT_NS).unwrap();
    let m = DiskRates::from_delta(&d).sysstat_json();
    for k in [
        "r/s", "w/s", "d/s", "f/s", "rkB/s", "wkB/s", "dkB/s", "rrqm/s", "wrqm/s", "drqm/s",
        "rrqm", "wrqm", "drqm", "r_await", "w_await", "d_await", "f_await", "rareq-sz", "wareq-sz",
        "dareq-sz", "aqu-sz", "util",
    ] {
        assert!(m.contains_key(k), "missing {k}");
    }
    assert_eq!(m.len(), 22);
    close(m["w_await"].as_f64().unwrap(), 3.0);
    close(m["util"].as_f64().unwrap(), 94.763);
}

#[test]
fn idle_interval_has_no_await_and_no_request_size() {
    let a = line("8 0 sda 5 0 40 3 0 0 0 0 0 3 3");
    let d = DiskDelta::between(&a, &a, 1_000_000_000).unwrap();
    let r = DiskRates::from_delta(&d);
    assert_eq!(r.r_s, 0.0);
    assert_eq!(r.r_await, None);
    assert_eq!(r.rareq_sz, None);
    assert_eq!(r.rrqm_pct, 0.0);
    // 14-field kernel: discard and flush columns are undefined, not zero.
    assert_eq!(r.d_s, None);
    assert_eq!(r.f_await, None);
    assert!(r.sysstat_json()["d/s"].is_null());
}

#[test]
fn counter_going_backwards_is_no_value() {
    let a = line(PREV);
    let mut b = line(CUR);
    b.reads = 999;
    assert_eq!(DiskDelta::between(&a, &b, DT_NS), None);
    let mut b = line(CUR);
    b.write_sectors = 1;
    assert_eq!(DiskDelta::between(&a, &b, DT_NS), None);
    let mut b = line(CUR);
    b.discards = Some(1);
    assert_eq!(DiskDelta::between(&a, &b, DT_NS), None);
}

#[test]
fn zero_interval_is_no_value() {
    assert_eq!(DiskDelta::between(&line(PREV), &line(CUR), 0), None);
}

#[test]
fn provable_32bit_wrap_of_ms_fields_is_recognised() {
    let mut a = line(PREV);
    let mut b = line(CUR);
    // io_ms: 4294967000 → 700 is +996 ms in a 1.0025 s interval: a wrap.
    a.io_ms = 4_294_967_000;
    b.io_ms = 700;
    // read_ms: +800 across the wrap, with 1000 reads completed.
    a.read_ms = 4_294_966_996;
    b.read_ms = 504;
    let d = DiskDelta::between(&a, &b, DT_NS).unwrap();
    assert_eq!(d.io_ms, 996);
    assert_eq!(d.read_ms, 804);
    assert_eq!(d.wrapped_fields, 2);
}

#[test]
fn unprovable_ms_decrease_is_no_value() {
    let a = line(PREV);
    // io_ms falling from 900 to 100 would be a wrap of ~4.29e9 ms in 1 s: impossible.
    let mut b = line(CUR);
    b.io_ms = 100;
    assert_eq!(DiskDelta::between(&a, &b, DT_NS), None);
    // A wrap of write_ms with no write completed cannot be proven.
    let mut a2 = line(PREV);
    let mut b2 = line(PREV);
    a2.write_ms = 4_294_967_000;
    b2.write_ms = 10;
    assert_eq!(DiskDelta::between(&a2, &b2, DT_NS), None);
    // Values beyond 32 bits can't have wrapped at 2^32.
    let mut a3 = line(PREV);
    let mut b3 = line(CUR);
    a3.io_ms = 1 << 33;
    b3.io_ms = 5;
    assert_eq!(DiskDelta::between(&a3, &b3, DT_NS), None);
}

#[test]
fn sample_find_keys_by_major_minor() {
    let s = DiskSample {
        mono_ns: 1,
        wall_ns: 2,
        lines: vec![line(PREV), line("8 0 sda 5 0 40 3 0 0 0 0 0 3 3")],
    };
    assert_eq!(s.find(8, 0).unwrap().name, "sda");
    assert_eq!(s.find(259, 0).unwrap().reads, 1000);
    assert!(s.find(8, 1).is_none());
}

#[test]
fn take_reads_the_fixture_root_and_measures_time() {
    let root = Root {
        proc: concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sysroot1/proc").into(),
        sys: concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sysroot1/sys").into(),
    };
    let a = DiskSample::take(&root).unwrap();
    let b = DiskSample::take(&root).unwrap();
    assert!(b.mono_ns >= a.mono_ns);
    assert_eq!(a.lines.len(), 10);
    assert_eq!(a.find(253, 0).unwrap().name, "dm-0");
    let raw = RawSample::take(&root).unwrap();
    let (s, warnings) = raw.parse();
    assert!(warnings.is_empty());
    assert_eq!(s.lines, a.lines);
}

/// Issue 12 case 10: counters near 2^64 once overflowed `merged + ios` (%rrqm 100 instead of
/// 50 in release, a panic in debug) and the sum of completions; now exact or "no value" with
/// the reason.
#[test]
fn counters_near_2_pow_64_give_exact_values_or_no_value_with_a_reason() {
    use super::interval::NoValue;
    let big = u64::MAX - 10;
    let prev = line(" 8 0 sda 0 0 0 0 0 0 0 0 0 0 0");
    let cur = line(&format!(" 8 0 sda {big} {big} 8 1 0 0 0 0 0 1 1"));
    let d = DiskDelta::between_why(&prev, &cur, DT_NS).unwrap();
    let r = DiskRates::from_delta(&d);
    close(r.rrqm_pct, 50.0);
    // Reads + writes beyond 64 bits: no value, saying why.
    let cur = line(&format!(" 8 0 sda {big} 0 8 1 {big} 0 8 1 0 1 1"));
    assert_eq!(
        DiskDelta::between_why(&prev, &cur, DT_NS).unwrap_err(),
        NoValue::Overflow
    );
    // A zero interval is labelled as such, not as a counter going backwards.
    assert_eq!(
        DiskDelta::between_why(&prev, &prev, 0).unwrap_err(),
        NoValue::ZeroInterval
    );
    assert_eq!(
        DiskDelta::between_why(&cur, &prev, DT_NS).unwrap_err(),
        NoValue::CounterWentBackwards
    );
}
