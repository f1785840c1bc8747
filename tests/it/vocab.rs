//! The one vocabulary (issue 26, src/analysis/state.rs): for the same intervals of the same
//! recording, `iosat stat --json`, `iosat top` (its TestBackend frame), the exporter's
//! /metrics and the shipped alerts (`promtool test rules` on the exporter's series) name the
//! same state.

use crate::exporter::{fixture_root, have_promtool, promtool_check_metrics};
use crate::util::iosat;
use iosat::exporter::metrics;
use iosat::exporter::scrape::{Devices, Scraper};
use iosat::learn::{Learned, State};
use iosat::monitor::replay::{Replay, Step};
use iosat::monitor::select::Selection;
use iosat::ui::top::app::{App, Source};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::process::Command;

/// The last intervals' mean latency in ms (the baseline is 1 ms) and the state each is.
const TAIL: [(f64, State); 3] = [
    (2.0, State::Saturated),
    (5.0, State::Overloaded),
    (1.1, State::Ok),
];

/// One disk, sdx: 60 s of 1,000 reads/s of 4 KiB at 1 ms each with one in flight (what
/// learning takes for the baseline), then one second at each of [`TAIL`]'s latencies.
fn recording() -> String {
    let mut out =
        String::from("#iosat-record 1\nR 1795333857000000000 1000000000\nD 8:0 sdx disk sdx\n");
    let (mut reads, mut sectors, mut ms, mut busy) = (0u64, 0u64, 0u64, 0u64);
    let (mut mono, mut wall) = (1_000_000_000_000u64, 1_795_333_857_000_000_000u64);
    let emit = |out: &mut String, r: u64, s: u64, m: u64, b: u64, t: u64, w: u64| {
        out.push_str(&format!(
            "T {t} {w}\n   8       0 sdx {r} 0 {s} {m} 0 0 0 0 0 {b} {m} 0 0 0 0 0 0\n"
        ));
    };
    emit(&mut out, 0, 0, 0, 0, mono, wall);
    let lat: Vec<f64> = std::iter::repeat(1.0)
        .take(60)
        .chain(TAIL.iter().map(|t| t.0))
        .collect();
    for l in lat {
        reads += 1000;
        sectors += 8000;
        ms += (1000.0 * l) as u64;
        busy += 1000;
        mono += 1_000_000_000;
        wall += 1_000_000_000;
        emit(&mut out, reads, sectors, ms, busy, mono, wall);
    }
    out
}

/// What `iosat stat --replay --json` learned of sdx in each interval.
fn stat_learned(rec: &std::path::Path) -> Vec<serde_json::Value> {
    let o = iosat()
        .args(["stat", "--json", "--no-profile", "--replay"])
        .arg(rec)
        .arg("sdx")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .flat_map(|v| v["devices"].as_array().cloned().unwrap_or_default())
        .filter(|d| d["disk_device"] == "sdx")
        .map(|d| {
            let mut l = d["learned"].clone();
            // The device's one judgement beside what was learned (monitor::judge).
            l["judgement"] = d["judgement"].clone();
            l
        })
        .collect()
}

/// `iosat top`'s gauge line for sdx after each interval of the same recording, learned the
/// way `top --replay` learns.
fn top_lines(text: &str) -> Vec<String> {
    let mut replay =
        Replay::new(text, Selection::default(), false, Box::new(|_: &str| None)).unwrap();
    replay
        .replayer_mut()
        .observe_with(iosat::learn::in_memory());
    let mut app = App::new(
        Source::Live {
            host: "h".into(),
            kernel: "6.1.0".into(),
        },
        Selection::default(),
        false,
    );
    let mut out = vec![];
    for step in replay {
        if let Step::Report(r) = step.unwrap() {
            app.on_report(r);
            let mut t = Terminal::new(TestBackend::new(120, 30)).unwrap();
            t.draw(|f| iosat::ui::top::draw::draw(f, &app)).unwrap();
            let frame = iosat::ui::top::draw::to_text(t.backend().buffer());
            out.push(
                frame
                    .lines()
                    .find(|l| l.contains("sdx: ") && l.contains("headroom"))
                    .unwrap_or_default()
                    .to_string(),
            );
        }
    }
    out
}

/// The exporter's /metrics with sda judged as `l` (the Learned stat printed, read back).
fn exporter_text(l: &Learned) -> String {
    let all = Devices {
        selection: Selection {
            all: true,
            ..Selection::default()
        },
        exclude: vec![],
    };
    let mut s = Scraper::new(fixture_root(), all, None).scrape();
    for d in &mut s.devices {
        if d.line.name == "sda" {
            crate::exporter::judged(d, l.clone());
        }
    }
    metrics::render(&s)
}

fn prometheus_file(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("prometheus")
        .join(name)
}

/// A `promtool test rules` case: the exporter's series of a device read at `ratio` times its
/// learned baseline of `baseline_s` (1,000 reads/s); the alert named by `state` fires (with
/// its state in its summary) and the other state alert does not.
fn rules_case(ratio: f64, baseline_s: f64, state: State) -> String {
    let alerts = std::fs::read_to_string(prometheus_file("alerts.yml")).unwrap();
    let doc = &yaml_rust2::YamlLoader::load_from_str(&alerts).unwrap()[0];
    let rules = doc["groups"][0]["rules"].as_vec().unwrap();
    let labels = r#"job="node",instance="h:9019",device="sdx",op="read""#;
    let mut t = format!(
        "  - interval: 1m\n    input_series:\n\
         \x20     - series: 'iosat_disk_requests_completed_total{{{labels}}}'\n        values: '0+60000x60'\n\
         \x20     - series: 'iosat_disk_request_time_seconds_total{{{labels}}}'\n        values: '0+{}x60'\n\
         \x20     - series: 'iosat_disk_baseline_latency_seconds{{{labels},source=\"learned\"}}'\n        values: '{baseline_s}x60'\n\
         \x20   alert_rule_test:\n",
        60000.0 * ratio * baseline_s
    );
    for (name, st) in [
        ("IosatDiskSaturated", State::Saturated),
        ("IosatDiskOverloaded", State::Overloaded),
    ] {
        t.push_str(&format!(
            "      - eval_time: 30m\n        alertname: {name}\n"
        ));
        if st != state {
            t.push_str("        exp_alerts: []\n");
            continue;
        }
        let rule = rules
            .iter()
            .find(|r| r["alert"].as_str() == Some(name))
            .unwrap();
        let runbook = rule["annotations"]["runbook"].as_str().unwrap();
        // No cap declared in these series: the `cap` annotation's last branch (issue 42).
        let cap = rule["annotations"]["cap"].as_str().unwrap();
        let no_cap = cap.rsplit("{{ else }}").next().unwrap();
        let no_cap = no_cap.trim_end().strip_suffix("{{ end }}").unwrap();
        // No queue/device split in these series either: the `split` annotation's first
        // branch (issue 40).
        let split = rule["annotations"]["split"].as_str().unwrap();
        let no_split = split
            .split("{{ if lt $share 0.0 }}")
            .nth(1)
            .and_then(|t| t.split("{{ else }}").next())
            .unwrap();
        // No judgement flags in these series: the `cpu` annotation's last branch.
        let cpu = rule["annotations"]["cpu"].as_str().unwrap();
        let no_flags = cpu.rsplit("{{ else }}").next().unwrap();
        let no_flags = no_flags.trim_end().strip_suffix("{{ end }}").unwrap();
        let severity = rule["labels"]["severity"].as_str().unwrap();
        let summary = format!(
            "h:9019 sdx read: {} ({ratio:.1}x baseline latency)",
            st.as_str()
        );
        t.push_str(&format!(
            "        exp_alerts:\n          - exp_labels:\n              severity: {severity}\n\
             \x20             job: node\n              instance: h:9019\n              device: sdx\n\
             \x20             op: read\n            exp_annotations:\n              summary: {}\n\
             \x20             runbook: {}\n              cap: {}\n              split: {}\n\
             \x20             cpu: {}\n",
            serde_json::to_string(&summary).unwrap(),
            serde_json::to_string(runbook).unwrap(),
            serde_json::to_string(no_cap).unwrap(),
            serde_json::to_string(no_split).unwrap(),
            serde_json::to_string(no_flags).unwrap()
        ));
    }
    t
}

#[test]
fn stat_top_the_exporter_and_the_alerts_name_the_same_state() {
    let dir = crate::util::tempdir().unwrap();
    let rec = dir.path().join("vocab.rec");
    let text = recording();
    std::fs::write(&rec, &text).unwrap();

    // stat: the baseline learned from the first minute, then the tail judged against it.
    let learned = stat_learned(&rec);
    assert!(learned.len() >= TAIL.len(), "{learned:?}");
    let tail = &learned[learned.len() - TAIL.len()..];
    let top = top_lines(&text);
    assert!(top.len() >= TAIL.len(), "{top:?}");
    let top_tail = &top[top.len() - TAIL.len()..];
    let mut cases = String::new();
    for (i, ((ms, state), l)) in TAIL.iter().zip(tail).enumerate() {
        let word = state.as_str();
        assert_eq!(l["state"], word, "stat at {ms} ms: {l}");
        let ratio = l["ratio"].as_f64().unwrap();
        assert!((ratio - ms).abs() < 0.01, "stat's ratio at {ms} ms: {l}");
        // The judgement stat prints: the same state, by the learned baseline, the reads'
        // (the only direction with I/O), no headroom once saturated.
        let j = &l["judgement"];
        assert_eq!(j["state"], word, "stat's judgement at {ms} ms: {j}");
        assert_eq!(
            (&j["basis"], &j["direction"]),
            (&"learned".into(), &"read".into())
        );
        assert_eq!(j["read"]["state"], word, "{j}");
        assert_eq!(j["write"]["state"], "idle", "{j}");
        if *state >= State::Saturated {
            assert_eq!(j["headroom_iops"], 0.0, "{j}");
            assert_eq!(j["no_headroom"], word, "{j}");
        }
        let baseline_ns = l["baseline_latency_ns"].as_f64().unwrap();
        assert!((baseline_ns - 1e6).abs() < 1e4, "{l}");

        // top: the gauge line names the same state.
        assert!(
            top_tail[i].contains(&format!("sdx: {word} ")),
            "top at {ms} ms: {:?}",
            top_tail[i]
        );

        // The exporter: the same judgement, read back from stat's JSON, served as the state.
        let parsed: Learned = serde_json::from_value(l.clone()).unwrap();
        let metrics = exporter_text(&parsed);
        let line = format!("iosat_disk_state{{device=\"sda\",state=\"{word}\"}} 1");
        assert!(
            metrics.lines().any(|m| m == line),
            "{line} not in:\n{metrics}"
        );
        for other in [State::Ok, State::Saturated, State::Overloaded] {
            if other != *state {
                let zero = format!(
                    "iosat_disk_state{{device=\"sda\",state=\"{}\"}} 0",
                    other.as_str()
                );
                assert!(
                    metrics.lines().any(|m| m == zero),
                    "{zero} not in:\n{metrics}"
                );
            }
        }
        if have_promtool() {
            promtool_check_metrics(&metrics).unwrap();
        }
        cases.push_str(&rules_case(ratio, baseline_ns / 1e9, *state));
    }

    // The shipped rules on the exporter's series at the same ratios name the same states.
    if !have_promtool() {
        return;
    }
    let file = dir.path().join("vocab_tests.yml");
    std::fs::write(
        &file,
        format!(
            "rule_files:\n  - {}\n  - {}\nevaluation_interval: 1m\ntests:\n{cases}",
            prometheus_file("recording.yml").display(),
            prometheus_file("alerts.yml").display()
        ),
    )
    .unwrap();
    let o = Command::new("promtool")
        .args(["test", "rules"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}{}\n{cases}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}
