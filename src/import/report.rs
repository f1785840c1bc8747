//! What `iosat analyze` reports: imported files merged into one set of levels (verdict) and device
//! series (diagnosis), in the versioned JSON layout `analyze --json` writes and `iosat report`
//! reads back (report/analyze.rs renders it). Pure: returns values, does no IO.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, sys/.

use super::{FileImport, Tool};
use crate::analysis::device::{diagnose, DeviceSample};
use crate::analysis::{analyze, LatencyNs, LevelPoint, Verdict};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Version of the JSON layout below; bumped on any incompatible change. A file with a higher
/// version is refused by `iosat report` rather than misread.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SourceFile {
    pub path: String,
    pub tool: Tool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
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

impl Default for Source {
    /// What a levels file without a `source` (written by hand) is taken to be.
    fn default() -> Source {
        Source {
            tool: Tool::Iosat,
            files: Vec::new(),
            pattern: None,
            block_size: None,
            latency: None,
            notes: Vec::new(),
        }
    }
}

/// The kernel's %util and aqu-sz over an imported level, under sysstat's JSON key names
/// (the importers give no more of the kernel's view).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LevelKernel {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub util: Option<f64>,
    #[serde(rename = "aqu-sz", skip_serializing_if = "Option::is_none")]
    pub aqu_sz: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LevelOut {
    pub concurrency: u32,
    pub iops: f64,
    pub bytes_per_s: f64,
    pub latency_ns: LatencyNs,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<LevelKernel>,
    /// The file, and the line where the level's result starts.
    #[serde(default)]
    pub file: String,
    #[serde(default)]
    pub line: usize,
    #[serde(default)]
    pub label: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceOut {
    pub device: String,
    pub file: String,
    pub samples: Vec<DeviceSample>,
    pub diagnosis: Vec<String>,
    /// What production learning said of the device over the file (raw-counter files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learned: Option<crate::learn::Learned>,
    /// The block layer's split of the latency per direction over the file (issue 40):
    /// iosat recordings with the split's `B` tokens.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub split: Vec<crate::analysis::split::RunSplit>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnalyzeReport {
    /// kind "analyze", versions, host and start of the analysis (crate::envelope); `build`
    /// names the kind, the command stamps host and time. Absent before 0.1's envelope.
    #[serde(flatten, default)]
    pub envelope: crate::envelope::Envelope,
    #[serde(default)]
    pub source: Source,
    #[serde(default)]
    pub levels: Vec<LevelOut>,
    /// The verdict on the levels; null when the input held only iostat logs.
    #[serde(default)]
    pub verdict: Option<Verdict>,
    /// Per-device series from iostat logs, each with its diagnosis.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceOut>,
    /// `analyze --target-p99`: the highest rate meeting the target as the closed-loop levels
    /// suggest, labelled an estimate (analysis::open::estimate_from_closed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_estimate: Option<crate::analysis::open::TargetAnswer>,
    /// The cap declared for the device the levels measured (`--cap-iops`, `--cap-mbps`): the
    /// verdict matches its plateau to it (issue 42).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_cap: Option<crate::analysis::declared::DeclaredCap>,
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
    let levels = merged_levels(&level_files)?;
    let mut notes = Vec::new();
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

    let points: Vec<LevelPoint> = levels.iter().map(LevelOut::point).collect();
    let verdict = (!points.is_empty()).then(|| analyze(&points));
    let devs = device_outs(imports, devices, &mut notes)?;

    let series_files = || imports.iter().filter(|f| f.tool.gives_device_series());
    let tool = level_files
        .first()
        .map(|f| f.tool)
        .or_else(|| series_files().next().map(|f| f.tool))
        .unwrap_or(Tool::Iostat);
    Ok(AnalyzeReport {
        envelope: crate::envelope::Envelope {
            kind: "analyze".into(),
            schema_version: SCHEMA_VERSION,
            iosat_version: env!("CARGO_PKG_VERSION").into(),
            ..Default::default()
        },
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
        target_estimate: None,
        declared_cap: None,
    })
}

/// The levels of every file, checked (concurrency, IOPS and mean latency positive; each
/// concurrency given once), sorted by concurrency.
fn merged_levels(level_files: &[&FileImport]) -> Result<Vec<LevelOut>> {
    let mut levels: Vec<LevelOut> = Vec::new();
    for f in level_files {
        for l in &f.levels {
            let p = &l.point;
            let positive = |x: f64| x.is_finite() && x > 0.0;
            if p.concurrency == 0 || !positive(p.iops) || !positive(p.latency_ns.mean) {
                return Err(Error::parse(
                    f.path.clone(),
                    l.line,
                    format!(
                        "{}: expected a concurrency of at least 1 and positive IOPS and mean \
                         latency (got concurrency {}, {} IOPS, mean {} ns)",
                        l.label, p.concurrency, p.iops, p.latency_ns.mean
                    ),
                ));
            }
            if let Some(prev) = levels.iter().find(|p| p.concurrency == l.point.concurrency) {
                return Err(Error::parse(
                    f.path.clone(),
                    l.line,
                    format!(
                        "concurrency {} ({}) was already given by {}:{}; expected one result \
                         per concurrency",
                        l.point.concurrency, l.label, prev.file, prev.line
                    ),
                ));
            }
            let p = &l.point;
            levels.push(LevelOut {
                concurrency: p.concurrency,
                iops: p.iops,
                bytes_per_s: p.bytes_per_s,
                latency_ns: p.latency_ns.clone(),
                kernel: (p.kernel_util_pct.is_some() || p.kernel_aqu_sz.is_some()).then_some(
                    LevelKernel {
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
    Ok(levels)
}

/// The device series of the iostat-like files with their diagnoses: those shown by default,
/// or the `devices` asked for (each must be there). The files' notes go to `notes`.
fn device_outs(
    imports: &[FileImport],
    devices: &[String],
    notes: &mut Vec<String>,
) -> Result<Vec<DeviceOut>> {
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
                learned: d.learned.clone(),
                split: d.split.clone(),
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
    Ok(devs)
}

impl LevelOut {
    /// The level as the analysis sees it.
    pub fn point(&self) -> LevelPoint {
        LevelPoint {
            concurrency: self.concurrency,
            iops: self.iops,
            bytes_per_s: self.bytes_per_s,
            latency_ns: self.latency_ns.clone(),
            kernel_util_pct: self.kernel.as_ref().and_then(|k| k.util),
            kernel_aqu_sz: self.kernel.as_ref().and_then(|k| k.aqu_sz),
            ..Default::default()
        }
    }
}

impl AnalyzeReport {
    /// The levels as the analysis sees them.
    pub fn points(&self) -> Vec<LevelPoint> {
        self.levels.iter().map(LevelOut::point).collect()
    }
}
