//! What `iosat analyze` reports: imported files merged into one set of levels (verdict) and
//! device series (diagnosis), and that report as JSON, text, Markdown and CSV. Pure: returns
//! values and strings, does no IO. Must not import cli/, cmd/, load/ or sys/.

use super::{FileImport, Tool};
use crate::analysis::device::{diagnose, DeviceSample};
use crate::analysis::render::{levels_table, verdict_markdown, verdict_text};
use crate::analysis::{analyze, LatencyNs, LevelPoint, Verdict};
use crate::error::{Error, Result};
use crate::report::table::Table;
use serde::Serialize;

/// Version of the JSON layout below; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize)]
pub struct SourceFile {
    pub path: String,
    pub tool: Tool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Source {
    /// The tool the levels come from, else "iostat".
    pub tool: Tool,
    pub files: Vec<SourceFile>,
    pub pattern: Option<String>,
    pub block_size: Option<u64>,
    /// How fio latency was read, for the record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<String>,
    pub notes: Vec<String>,
}

/// The kernel's view of a level, under sysstat's JSON key names.
#[derive(Debug, Clone, Serialize)]
pub struct KernelView {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub util: Option<f64>,
    #[serde(rename = "aqu-sz", skip_serializing_if = "Option::is_none")]
    pub aqu_sz: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LevelOut {
    pub concurrency: u32,
    pub iops: f64,
    pub bytes_per_s: f64,
    pub latency_ns: LatencyNs,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelView>,
    /// The file, and the line where the level's result starts.
    pub file: String,
    pub line: usize,
    pub label: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceOut {
    pub device: String,
    pub file: String,
    pub samples: Vec<DeviceSample>,
    pub diagnosis: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AnalyzeReport {
    pub schema_version: u32,
    pub source: Source,
    pub levels: Vec<LevelOut>,
    /// The verdict on the levels; null when the input held only iostat logs.
    pub verdict: Option<Verdict>,
    /// Per-device series from iostat logs, each with its diagnosis.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceOut>,
}

/// Merge parsed files into one report. Levels must come from one tool and give each
/// concurrency once; `devices` (if not empty) keeps only those iostat devices.
pub fn build(imports: &[FileImport], devices: &[String]) -> Result<AnalyzeReport> {
    let level_files: Vec<&FileImport> = imports.iter().filter(|f| !f.levels.is_empty()).collect();
    if let (Some(a), Some(b)) = (
        level_files.first(),
        level_files.iter().find(|f| f.tool != level_files[0].tool),
    ) {
        return Err(Error::usage(
            "FILE",
            b.path.display(),
            format!(
                "holds {} results while {} holds {} results; analyse one tool's runs at a time",
                b.tool.name(),
                a.path.display(),
                a.tool.name()
            ),
        ));
    }
    let mut levels: Vec<LevelOut> = Vec::new();
    let mut notes = Vec::new();
    for f in &level_files {
        for l in &f.levels {
            let p = &l.point;
            let positive = |x: f64| x.is_finite() && x > 0.0;
            if p.concurrency == 0 || !positive(p.iops) || !positive(p.latency_ns.mean) {
                return Err(Error::Parse {
                    path: f.path.clone(),
                    line: l.line,
                    reason: format!(
                        "{}: expected a concurrency of at least 1 and positive IOPS and mean \
                         latency (got concurrency {}, {} IOPS, mean {} ns)",
                        l.label, p.concurrency, p.iops, p.latency_ns.mean
                    ),
                });
            }
            if let Some(prev) = levels.iter().find(|p| p.concurrency == l.point.concurrency) {
                return Err(Error::Parse {
                    path: f.path.clone(),
                    line: l.line,
                    reason: format!(
                        "concurrency {} ({}) was already given by {}:{}; expected one result \
                         per concurrency",
                        l.point.concurrency, l.label, prev.file, prev.line
                    ),
                });
            }
            let p = &l.point;
            levels.push(LevelOut {
                concurrency: p.concurrency,
                iops: p.iops,
                bytes_per_s: p.bytes_per_s,
                latency_ns: p.latency_ns.clone(),
                kernel: (p.kernel_util_pct.is_some() || p.kernel_aqu_sz.is_some()).then_some(
                    KernelView {
                        util: p.kernel_util_pct,
                        aqu_sz: p.kernel_aqu_sz,
                    },
                ),
                file: f.path.display().to_string(),
                line: l.line,
                label: l.label.clone(),
            });
        }
    }
    levels.sort_by_key(|l| l.concurrency);

    let mut patterns: Vec<&str> = Vec::new();
    for f in &level_files {
        if let Some(p) = f.pattern.as_deref() {
            if !patterns.contains(&p) {
                patterns.push(p);
            }
        }
        notes.extend(f.notes.iter().cloned());
    }
    if patterns.len() > 1 {
        notes.push(format!(
            "the files mix patterns ({}): saturation compares like with like, so read the \
             verdict with care",
            patterns.join(", ")
        ));
    }

    let points: Vec<LevelPoint> = levels
        .iter()
        .map(|l| LevelPoint {
            concurrency: l.concurrency,
            iops: l.iops,
            bytes_per_s: l.bytes_per_s,
            latency_ns: l.latency_ns.clone(),
            kernel_util_pct: l.kernel.as_ref().and_then(|k| k.util),
            kernel_aqu_sz: l.kernel.as_ref().and_then(|k| k.aqu_sz),
        })
        .collect();
    let verdict = (!points.is_empty()).then(|| analyze(&points));

    let mut devs = Vec::new();
    let series_files = || imports.iter().filter(|f| f.tool.gives_device_series());
    let iostat_files = series_files().count();
    for f in series_files() {
        notes.extend(f.notes.iter().cloned());
        for d in &f.devices {
            let wanted = if devices.is_empty() {
                d.shown_by_default
            } else {
                devices.contains(&d.device)
            };
            if !wanted {
                continue;
            }
            devs.push(DeviceOut {
                device: d.device.clone(),
                file: f.path.display().to_string(),
                diagnosis: if iostat_files > 1 {
                    diagnose(&format!("{} ({})", d.device, f.path.display()), &d.samples)
                } else {
                    diagnose(&d.device, &d.samples)
                },
                samples: d.samples.clone(),
            });
        }
    }
    if let Some(missing) = devices
        .iter()
        .find(|d| !devs.iter().any(|x| &x.device == *d))
    {
        let seen: Vec<String> = imports
            .iter()
            .flat_map(|f| f.devices.iter().map(|d| d.device.clone()))
            .collect();
        return Err(Error::usage(
            "--device",
            missing,
            format!(
                "is not in the device input (devices: {})",
                if seen.is_empty() {
                    "none".to_string()
                } else {
                    seen.join(", ")
                }
            ),
        ));
    }

    let tool = level_files
        .first()
        .map(|f| f.tool)
        .or_else(|| series_files().next().map(|f| f.tool))
        .unwrap_or(Tool::Iostat);
    Ok(AnalyzeReport {
        schema_version: SCHEMA_VERSION,
        source: Source {
            tool,
            files: imports
                .iter()
                .map(|f| SourceFile {
                    path: f.path.display().to_string(),
                    tool: f.tool,
                    version: f.version.clone(),
                })
                .collect(),
            pattern: patterns.first().map(|p| p.to_string()),
            block_size: level_files.iter().find_map(|f| f.block_size),
            latency: (tool == Tool::Fio && !levels.is_empty()).then(|| {
                "mean/min/max of fio's lat (submission + completion); percentiles of clat \
                 (or of lat with lat_percentiles=1)"
                    .to_string()
            }),
            notes,
        },
        levels,
        verdict,
        devices: devs,
    })
}

impl AnalyzeReport {
    fn points(&self) -> Vec<LevelPoint> {
        self.levels
            .iter()
            .map(|l| LevelPoint {
                concurrency: l.concurrency,
                iops: l.iops,
                bytes_per_s: l.bytes_per_s,
                latency_ns: l.latency_ns.clone(),
                kernel_util_pct: l.kernel.as_ref().and_then(|k| k.util),
                kernel_aqu_sz: l.kernel.as_ref().and_then(|k| k.aqu_sz),
            })
            .collect()
    }

    /// One line saying what was read.
    pub fn headline(&self) -> String {
        let files = self.source.files.len();
        let what = if self.levels.is_empty() {
            format!("{} device series", self.devices.len())
        } else {
            let n = self.levels.len();
            let mut s = format!("{n} level{}", if n == 1 { "" } else { "s" });
            if let Some(p) = &self.source.pattern {
                s.push_str(&format!(", {p}"));
            }
            if let Some(b) = self.source.block_size {
                s.push_str(&format!(", {} KiB requests", b as f64 / 1024.0));
            }
            s
        };
        format!(
            "{} results: {what}, from {files} file{}",
            self.source.tool.name(),
            if files == 1 { "" } else { "s" }
        )
    }

    /// The device series as one table (device, time, rates, awaits, aqu-sz, %util, svctm).
    pub fn devices_table(&self) -> Table {
        let mut t = Table::new([
            "device", "time", "r/s", "w/s", "rkB/s", "wkB/s", "r_await", "w_await", "await",
            "aqu-sz", "%util", "svctm",
        ]);
        let o = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into());
        for d in &self.devices {
            for (i, s) in d.samples.iter().enumerate() {
                t.push([
                    d.device.clone(),
                    s.time.clone().unwrap_or_else(|| format!("#{}", i + 1)),
                    format!("{:.2}", s.r_per_s),
                    format!("{:.2}", s.w_per_s),
                    o(s.rkb_per_s),
                    o(s.wkb_per_s),
                    o(s.r_await),
                    o(s.w_await),
                    o(s.effective_await_ms()),
                    o(s.aqu_sz),
                    o(s.util_pct),
                    o(s.svctm),
                ]);
            }
        }
        t
    }

    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("report serialises");
        s.push('\n');
        s
    }

    pub fn to_text(&self) -> String {
        let mut s = format!("{}\n\n", self.headline());
        if let Some(v) = &self.verdict {
            s.push_str(&levels_table(&self.points(), v).to_text());
            s.push('\n');
            s.push_str(&verdict_text(v));
        }
        if !self.devices.is_empty() {
            if self.verdict.is_some() {
                s.push('\n');
            }
            s.push_str(&self.devices_table().to_text());
            s.push_str("\nDiagnosis:\n");
            for d in &self.devices {
                for line in &d.diagnosis {
                    s.push_str(&format!("  {line}\n"));
                }
            }
        }
        if !self.source.notes.is_empty() {
            s.push_str("\nNotes:\n");
            for n in &self.source.notes {
                s.push_str(&format!("  {n}\n"));
            }
        }
        s
    }

    pub fn to_markdown(&self) -> String {
        let mut s = format!("# iosat analyze\n\n{}\n", self.headline());
        if let Some(v) = &self.verdict {
            s.push_str("\n## Levels\n\n");
            s.push_str(&levels_table(&self.points(), v).to_markdown());
            s.push_str("\n## Verdict\n\n");
            s.push_str(&verdict_markdown(v));
        }
        if !self.devices.is_empty() {
            s.push_str("\n## Devices\n\n");
            s.push_str(&self.devices_table().to_markdown());
            s.push_str("\n## Diagnosis\n\n");
            for d in &self.devices {
                for line in &d.diagnosis {
                    s.push_str(&format!("- {line}\n"));
                }
            }
        }
        if !self.source.notes.is_empty() {
            s.push_str("\n## Notes\n\n");
            for n in &self.source.notes {
                s.push_str(&format!("- {n}\n"));
            }
        }
        s
    }

    /// CSV: the levels table, or the device series when there are no levels (both, separated
    /// by an empty line, when the input held both).
    pub fn to_csv(&self) -> String {
        let mut s = String::new();
        if let Some(v) = &self.verdict {
            s.push_str(&levels_table(&self.points(), v).to_csv());
        }
        if !self.devices.is_empty() {
            if !s.is_empty() {
                s.push('\n');
            }
            s.push_str(&self.devices_table().to_csv());
        }
        s
    }
}
