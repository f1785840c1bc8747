//! The frames of `iosat top` (ratatui): the context line, the device table, the four charts of
//! the selected device (latency with the baseline, %busy, load with the knee, saturation with
//! the 1.5x and 3x lines) and its headroom gauge, the key line, the help. Draws the app state
//! only; reads nothing.
//! Must not import: cli/, config/, cmd/, exporter/.

use super::app::{col_width, App, ChartPoint, Col, Pane, Row, Source};
use super::chart::{Dataset, LineChart};
use crate::analysis::text::{fmt_iops, fmt_latency_ns, fmt_ratio};
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use ratatui::widgets::{Block, Borders, Cell, Clear, Gauge, Paragraph, Row as TRow, Table, Wrap};
use ratatui::Frame;

/// Latency at this multiple of the baseline: saturated (analysis::state, the one vocabulary of
/// stat, top, the exporter and the alerts; drawn as the 1.5x line).
pub const SATURATED: f64 = crate::analysis::state::SATURATED_RATIO;
/// Latency at this multiple of the baseline: overloaded (analysis::state, seed 001's 3x rule;
/// drawn as the 3x line).
pub const OVERLOADED: f64 = crate::analysis::state::OVERLOADED_RATIO;

/// The smallest terminal drawn in full.
pub const MIN_W: u16 = 60;
pub const MIN_H: u16 = 16;

/// The key line at the bottom.
pub const KEYS: &str = "q quit ? help / filter p pause ←→ sort r reverse +- window a all Tab pane";

/// The help text.
pub const HELP: &[(&str, &str)] = &[
    ("q, Ctrl-C", "quit"),
    ("?", "this help (Esc closes)"),
    ("↑ ↓, k j", "select a device"),
    ("← →, < >", "sort column"),
    ("r", "reverse the sort"),
    ("/", "filter devices (Enter keeps, Esc clears)"),
    ("p, space", "pause; n or . steps one interval"),
    ("+ -", "chart window (30 s to 10 min)"),
    ("a", "all devices (loop, zram, partitions)"),
    ("Tab", "devices, charts, processes, cgroups (--cgroups)"),
    ("sat", "latency ÷ baseline: 1.5x saturated, 3x overloaded"),
    ("load", "aqu-sz ÷ the profile's knee concurrency"),
    ("r_p95", "the block layer's live p95 (BPF; --no-bpf: off)"),
    (
        "r_p95/b",
        "live p95 ÷ baseline p95: 1.5x saturated, 3x overloaded",
    ),
    ("%busy", "time with ≥1 request in flight: not capacity"),
    ("rq%", "share of the latency spent in the kernel's queue"),
];

/// Styles, plain when colours are off (NO_COLOR).
struct Theme {
    color: bool,
}

impl Theme {
    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    /// A ratio to the baseline by its state (analysis::state): ok, saturated (≥ 1.5x),
    /// overloaded (≥ 3x).
    fn saturation(&self, v: Option<f64>) -> Style {
        use crate::analysis::state::State;
        match v.map(|v| State::of_ratio(Some(v))) {
            Some(State::Overloaded) => self.fg(Color::Red).add_modifier(Modifier::BOLD),
            Some(State::Saturated) => self.fg(Color::Yellow),
            Some(_) => self.fg(Color::Green),
            None => Style::default(),
        }
    }

    fn cell(&self, c: Col, row: &Row) -> Style {
        let v = c.value(row);
        match c.key {
            k if is_baseline_ratio(k) => self.saturation(v),
            "r_await" => self.saturation(row.sat.as_ref().and_then(|s| s.saturation_r)),
            "w_await" => self.saturation(row.sat.as_ref().and_then(|s| s.saturation_w)),
            // The live p95 at the 1.5x/3x limits (analysis::state) of its own ratio to the baseline p95.
            "r_p95_ms" => self.saturation(row.latency.as_ref().and_then(|m| m.p95_vs_baseline_r)),
            "w_p95_ms" => self.saturation(row.latency.as_ref().and_then(|m| m.p95_vs_baseline_w)),
            "load_vs_knee" => match v {
                Some(v) if v > 1.0 => self.fg(Color::Yellow),
                _ => Style::default(),
            },
            "headroom_iops" => match v {
                Some(v) if v < 0.0 => self.fg(Color::Red),
                _ => Style::default(),
            },
            // Busy time, not capacity: dimmed.
            "util" => Style::default().add_modifier(Modifier::DIM),
            _ => Style::default(),
        }
    }
}

/// A column that is a latency ÷ the profile's baseline (await or the live p95): drawn as a
/// ratio and coloured at the 1.5x/3x limits (analysis::state).
fn is_baseline_ratio(key: &str) -> bool {
    matches!(
        key,
        "saturation" | "saturation_r" | "saturation_w" | "p95_vs_baseline_r" | "p95_vs_baseline_w"
    )
}

/// A value in at most `w` characters, right-aligned.
fn num(c: Col, v: Option<f64>, w: usize) -> String {
    let Some(v) = v else {
        return format!("{:>w$}", "-");
    };
    let s = match c.key {
        k if is_baseline_ratio(k) || k == "load_vs_knee" || k == "peak_to_mean" => fmt_ratio(v),
        "headroom_iops" | "r_peak" | "w_peak" => fmt_iops(v),
        _ => {
            let mut d = 2;
            loop {
                let s = format!("{v:.d$}");
                if s.len() <= w || d == 0 {
                    break s;
                }
                d -= 1;
            }
        }
    };
    format!("{s:>w$}")
}

/// Draw the whole frame.
pub fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    if area.width < MIN_W || area.height < MIN_H {
        let msg = format!(
            "iosat top: {}x{} is too small ({MIN_W}x{MIN_H})",
            area.width, area.height
        );
        one_line(f.buffer_mut(), area, &msg, Style::default());
        return;
    }
    let theme = Theme { color: app.color };
    let rows = app.visible();
    let shown = rows.len() as u16;
    let table_h = (shown + 3).clamp(4, (area.height - 4) * 2 / 5);
    let parts = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Length(table_h),
            Constraint::Min(6),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .split(area);
    one_line(
        f.buffer_mut(),
        parts[0],
        &context_line(app),
        Style::default(),
    );
    table(f, app, &rows, &theme, parts[1]);
    if app.pane == Pane::Processes {
        processes(f, app, parts[2]);
    } else if app.pane == Pane::Cgroups {
        cgroups(f, app, parts[2]);
    } else {
        charts(f, app, &theme, parts[2]);
    }
    gauge(f, app, &theme, parts[3]);
    let bottom = if app.filter_editing {
        format!("filter: {}▏ (Enter keeps, Esc clears)", app.filter)
    } else if let Some(w) = &app.warning {
        format!("warning: {w} (Esc)")
    } else {
        KEYS.to_string()
    };
    let dim = Style::default().add_modifier(Modifier::DIM);
    one_line(f.buffer_mut(), parts[4], &bottom, dim);
    if app.help {
        help(f, area);
    }
}

/// One line of text in `area` as `Paragraph::new(text).style(style)` draws it there (the
/// area in `style`, the text's first line from the left, cut at the edge), without the
/// paragraph's text model and line composer: a third of a frame's paragraph cost, and the
/// context, headroom and key lines are drawn every frame.
fn one_line(buf: &mut Buffer, area: Rect, text: &str, style: Style) {
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    let first = text.lines().next().unwrap_or("");
    if first.contains(char::is_control) {
        // A tab or such: the paragraph keeps what set_stringn drops.
        Paragraph::new(text).style(style).render(area, buf);
        return;
    }
    buf.set_style(area, style);
    buf.set_stringn(
        area.x,
        area.y,
        first,
        usize::from(area.width),
        Style::default(),
    );
}

/// Host, kernel (live) or the file (replay); the interval, the window, the state.
fn context_line(app: &App) -> String {
    let mut s = match &app.source {
        Source::Live { host, kernel } => format!("iosat top · {host} · kernel {kernel}"),
        Source::Replay { file } => format!("iosat top · replay {file}"),
    };
    // The CPU explains a noisy disk more often than the disk does.
    if let Some(h) = &app.host {
        let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}%"));
        s.push_str(&format!(
            " · cpu {} iowait {} steal {}",
            pct(h.cpu_busy_pct),
            pct(h.cpu_iowait_pct),
            pct(h.cpu_steal_pct)
        ));
        if let Some(p) = h.psi_io_some_pct {
            s.push_str(&format!(" · psi io {p:.1}%"));
        }
    }
    if app.interval_s > 0.0 {
        s.push_str(&format!(" · every {:.2} s", app.interval_s));
    }
    s.push_str(&format!(" · window {} s", app.window_s()));
    if !app.filter.is_empty() {
        s.push_str(&format!(" · filter '{}'", app.filter));
    }
    if app.show_all {
        s.push_str(" · all devices");
    }
    if app.paused {
        s.push_str(&format!(" · PAUSED ({} waiting; n steps)", app.backlog()));
    } else if app.ended {
        s.push_str(" · end of recording");
    }
    s
}

fn focus(app: &App, pane: Pane, title: String) -> Block<'static> {
    Block::default()
        .borders(Borders::ALL)
        .title(title)
        .border_style(border(app, pane))
}

/// The borders of the pane with the focus are bold, the others' dim.
fn border(app: &App, pane: Pane) -> Style {
    let m = if app.pane == pane {
        Modifier::BOLD
    } else {
        Modifier::DIM
    };
    Style::default().add_modifier(m)
}

/// The learned baseline the view judges by, in words: the selected device's, else the first
/// shown device's that has one.
fn basis(app: &App, rows: &[&Row]) -> Option<String> {
    // The device's learned object, or a direction's where only that one judges (a second
    // of a few writes beside reads with a baseline: Learned::judging).
    let has = |r: &&&Row| r.learned.as_ref().is_some_and(|l| l.judging().is_some());
    let r = rows
        .iter()
        .filter(has)
        .find(|r| app.selected.as_deref() == Some(r.name.as_str()))
        .or_else(|| rows.iter().find(has))?;
    let l = r.learned.as_ref()?.judging()?;
    Some(format!("{} ({})", crate::learn::basis_words(l), r.name))
}

fn table(f: &mut Frame, app: &App, rows: &[&Row], theme: &Theme, area: Rect) {
    let cols = app.columns_of(rows, area.width.saturating_sub(2));
    let arrow = if app.reverse { "↑" } else { "↓" };
    let header = TRow::new(cols.iter().map(|c| {
        let w = col_width(*c) as usize;
        let h = if c.key == app.sort {
            format!("{}{arrow}", c.header())
        } else {
            c.header().to_string()
        };
        let text = if c.key == "device" {
            format!("{h:<w$}")
        } else {
            format!("{h:>w$}")
        };
        let mut st = Style::default().add_modifier(Modifier::BOLD);
        if c.key == "util" {
            st = st.add_modifier(Modifier::DIM);
        }
        Cell::from(text).style(st)
    }));
    // Only the rows that fit are built (1,000 devices cost one screenful), scrolled so that
    // the selected one is on screen.
    let fit = area.height.saturating_sub(3).max(1) as usize;
    let at = rows
        .iter()
        .position(|r| app.selected.as_deref() == Some(r.name.as_str()));
    let first = at.map_or(0, |i| (i + 1).saturating_sub(fit));
    let body: Vec<TRow> = rows
        .iter()
        .skip(first)
        .take(fit)
        .map(|r| {
            let cells = cols.iter().map(|c| {
                let w = col_width(*c) as usize;
                if c.key == "device" {
                    let name: String = r.meta.display_name.chars().take(w).collect();
                    let name = if name.is_empty() {
                        r.name.clone()
                    } else {
                        name
                    };
                    return Cell::from(format!("{name:<w$}"));
                }
                Cell::from(num(*c, c.value(r), w)).style(theme.cell(*c, r))
            });
            let mut row = TRow::new(cells);
            if app.selected.as_deref() == Some(r.name.as_str()) {
                row = row.style(Style::default().add_modifier(Modifier::REVERSED));
            }
            row
        })
        .collect();
    let title = if rows.is_empty() {
        if app.reports == 0 {
            " devices: waiting for the first interval ".to_string()
        } else {
            " devices: none shown (a: all, Esc: clear the filter) ".to_string()
        }
    } else if rows.iter().any(|r| r.profile.is_some()) {
        // Which profile judges the selected device: its own or a model profile, whose sweep.
        let selected = rows
            .iter()
            .find(|r| app.selected.as_deref() == Some(r.name.as_str()))
            .and_then(|r| r.profile.as_deref());
        match selected {
            Some(p) => format!(
                " devices ({}) · sat = await ÷ baseline of {} ",
                rows.len(),
                p.judged_against()
            ),
            None => format!(" devices ({}) · sat = await ÷ baseline ", rows.len()),
        }
    } else if let Some(l) = basis(app, rows) {
        // Which baseline the view judges against: the one learned from this traffic.
        format!(" devices ({}) · judged against: {l} ", rows.len())
    } else {
        format!(
            " devices ({}) · no profile: iosat sweep DEVICE --save-profile (read-only) ",
            rows.len()
        )
    };
    let widths: Vec<Constraint> = cols
        .iter()
        .map(|c| Constraint::Length(col_width(*c)))
        .collect();
    let t = Table::new(body, widths)
        .header(header)
        .column_spacing(1)
        .block(focus(app, Pane::Devices, title));
    f.render_widget(t, area);
}

/// A named line of (seconds before now, value) points and its colour.
type Series = (&'static str, Vec<(f64, f64)>, Color);

/// One chart's data: named series and labelled horizontal lines.
struct Plot {
    title: String,
    series: Vec<Series>,
    lines: Vec<(String, f64)>,
    /// Fixed upper bound (%busy: 100).
    max: Option<f64>,
    /// Allow a log scale when the values span decades.
    log_ok: bool,
}

fn xy(h: &[ChartPoint], end_ns: i64, get: impl Fn(&ChartPoint) -> Option<f64>) -> Vec<(f64, f64)> {
    h.iter()
        .filter_map(|p| get(p).map(|v| ((p.end_wall_ns - end_ns) as f64 / 1e9, v)))
        .collect()
}

fn charts(f: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    let Some(row) = app.selected_row() else {
        let block = focus(app, Pane::Charts, " charts ".into());
        f.render_widget(Paragraph::new("no device selected").block(block), area);
        return;
    };
    let h = app.history(&row.name);
    let end = app.end_wall_ns;
    let prof = row.profile.as_deref();
    let mut latency = vec![
        ("r_await", xy(&h, end, |p| p.r_await), Color::Cyan),
        ("w_await", xy(&h, end, |p| p.w_await), Color::Magenta),
    ];
    // The block layer's live p95 beside await, when the block-latency source measured it.
    let r_p95 = xy(&h, end, |p| p.r_p95);
    let w_p95 = xy(&h, end, |p| p.w_p95);
    let p95_shown = !r_p95.is_empty() || !w_p95.is_empty();
    if p95_shown {
        latency.push(("r_p95", r_p95, Color::LightBlue));
        latency.push(("w_p95", w_p95, Color::LightRed));
    }
    let mut plots = vec![
        Plot {
            title: format!(" {} latency ms ", row.name),
            series: latency,
            lines: prof
                .map(|p| {
                    let mut v = vec![(
                        format!("baseline {}", fmt_latency_ns(p.baseline_latency_ns)),
                        p.baseline_latency_ns / 1e6,
                    )];
                    // The 3x-p95 rule's reference, beside the live p95 it judges.
                    if let (true, Some(b)) = (p95_shown, p.baseline_p95_ns) {
                        v.push((format!("base p95 {}", fmt_latency_ns(b)), b / 1e6));
                    }
                    v
                })
                .unwrap_or_default(),
            max: None,
            log_ok: true,
        },
        Plot {
            title: " %busy (not capacity) ".into(),
            series: vec![("%busy", xy(&h, end, |p| Some(p.util_pct)), Color::Gray)],
            lines: vec![],
            max: Some(100.0),
            log_ok: false,
        },
        Plot {
            title: " load: requests in flight ".into(),
            series: vec![
                ("r_conc", xy(&h, end, |p| Some(p.r_conc)), Color::Cyan),
                ("w_conc", xy(&h, end, |p| Some(p.w_conc)), Color::Magenta),
            ],
            lines: prof
                .map(|p| {
                    vec![(
                        format!("knee {}", p.knee_text()),
                        f64::from(p.knee_concurrency),
                    )]
                })
                .unwrap_or_default(),
            max: None,
            log_ok: false,
        },
    ];
    if prof.is_some() {
        plots.push(Plot {
            title: " saturation x baseline ".into(),
            series: vec![
                ("sat_r", xy(&h, end, |p| p.sat_r), Color::Cyan),
                ("sat_w", xy(&h, end, |p| p.sat_w), Color::Magenta),
            ],
            lines: vec![
                (format!("{SATURATED}x"), SATURATED),
                (format!("{OVERLOADED}x"), OVERLOADED),
            ],
            max: None,
            log_ok: true,
        });
    }
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
        .split(area);
    let mut cells = Vec::new();
    for r in rows.iter() {
        cells.extend(
            Layout::default()
                .direction(Direction::Horizontal)
                .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
                .split(*r)
                .iter()
                .copied(),
        );
    }
    let window = app.window_s() as f64;
    for (i, p) in plots.iter().enumerate() {
        plot(f, app, theme, p, window, cells[i]);
    }
    // What learning judges by (Learned::judged_by): its baseline, else its estimate.
    let learned = row.learned.as_ref().and_then(|l| {
        let l = l.judging()?;
        Some((l, l.judged_by()?.1))
    });
    if let (None, Some((l, basis))) = (prof, learned) {
        // No profile, but a baseline learned (or estimated) from this device's own traffic:
        // the row's one judgement (monitor::judge, as the gauge line and every other view
        // give it), with what learning rests on, not a request for a sweep.
        let block = focus(app, Pane::Charts, " saturation (learned) ".into());
        let j = &row.judgement.device;
        let which = crate::analysis::state::basis_adjective(match j.basis {
            crate::analysis::state::Basis::None => basis,
            b => b,
        });
        let ratio = j
            .ratio
            .map(|r| format!(" at {r:.1}x the {which} baseline"))
            .unwrap_or_default();
        let text = format!(
            "{}: {}{ratio}. {}. {}",
            row.name,
            j.state.words(),
            crate::learn::basis_words(l),
            l.summary.as_ref().map_or("", |s| s.as_str())
        );
        f.render_widget(
            Paragraph::new(text).wrap(Wrap { trim: true }).block(block),
            cells[3],
        );
    } else if prof.is_none() {
        let block = focus(app, Pane::Charts, " saturation ".into());
        let text = format!(
            "no profile for {}: saturation needs its baseline. {}",
            row.name,
            crate::profile::how_to_measure(&row.name)
        );
        f.render_widget(
            Paragraph::new(text).wrap(Wrap { trim: true }).block(block),
            cells[3],
        );
    }
}

fn plot(f: &mut Frame, app: &App, theme: &Theme, p: &Plot, window: f64, area: Rect) {
    let values = p
        .series
        .iter()
        .flat_map(|s| s.1.iter().map(|v| v.1))
        .chain(p.lines.iter().map(|l| l.1));
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (if v > 0.0 { lo.min(v) } else { lo }, hi.max(v))
    });
    let log = p.log_ok && lo.is_finite() && hi / lo >= 100.0;
    let tf = |v: f64| if log { v.max(lo).log10() } else { v };
    let (y0, y1) = if log {
        (lo.log10().floor(), hi.log10().ceil())
    } else {
        (0.0, p.max.unwrap_or(if hi > 0.0 { hi * 1.15 } else { 1.0 }))
    };
    let label = |v: f64| fmt_iops(if log { 10f64.powf(v) } else { v });
    let series: Vec<Vec<(f64, f64)>> = p
        .series
        .iter()
        .map(|s| s.1.iter().map(|&(x, y)| (x, tf(y))).collect())
        .collect();
    let lines: Vec<[(f64, f64); 2]> = p
        .lines
        .iter()
        .map(|l| [(-window, tf(l.1)), (0.0, tf(l.1))])
        .collect();
    let mut sets = Vec::with_capacity(series.len() + lines.len());
    for (s, data) in p.series.iter().zip(&series) {
        sets.push(Dataset {
            name: s.0,
            data,
            color: theme.fg(s.2).fg,
            dots: false,
        });
    }
    for (l, data) in p.lines.iter().zip(&lines) {
        sets.push(Dataset {
            name: &l.0,
            data,
            color: theme.fg(Color::DarkGray).fg,
            dots: true,
        });
    }
    let title = if log {
        format!("{}(log) ", p.title)
    } else {
        p.title.clone()
    };
    let (x0, x1) = (format!("-{window:.0}s"), "now");
    let (ylo, yhi) = (label(y0), label(y1));
    let chart = LineChart {
        title: &title,
        border: border(app, Pane::Charts),
        datasets: &sets,
        x_bounds: [-window, 0.0],
        y_bounds: [y0, y1],
        x_labels: [&x0, x1],
        y_labels: [&ylo, &yhi],
    };
    f.render_widget(chart, area);
}

/// The per-process pane: storage bytes per second from /proc/PID/io, busiest first.
fn processes(f: &mut Frame, app: &App, area: Rect) {
    let mut title = " processes: storage I/O (/proc/PID/io) ".to_string();
    let body = match (&app.source, &app.procs) {
        (Source::Replay { .. }, _) => {
            vec![Line::from(
                "per-process I/O is live only: recordings do not carry it.",
            )]
        }
        (_, None) => vec![Line::from("measuring (one interval)…")],
        (_, Some(p)) => {
            if p.denied > 0 {
                title = if app.as_root {
                    // Root is refused only by a security module or a container's missing
                    // CAP_SYS_PTRACE: "run as root" would say nothing.
                    format!(
                        " processes: storage I/O · {} refused even to root ",
                        p.denied
                    )
                } else {
                    format!(
                        " processes: storage I/O · {} not readable: run as root to see all ",
                        p.denied
                    )
                };
            }
            let mut lines = vec![Line::from(Span::styled(
                format!(
                    "{:>8}  {:<16} {:>10} {:>10}",
                    "PID", "COMMAND", "read MiB/s", "write MiB/s"
                ),
                Style::default().add_modifier(Modifier::BOLD),
            ))];
            if p.top.is_empty() {
                lines.push(Line::from(
                    "no process read or wrote storage in the interval",
                ));
            }
            for r in &p.top {
                let comm: String = r.comm.chars().take(16).collect();
                lines.push(Line::from(format!(
                    "{:>8}  {comm:<16} {:>11.2} {:>11.2}",
                    r.pid,
                    r.read_bps / 1_048_576.0,
                    r.write_bps / 1_048_576.0
                )));
            }
            lines
        }
    };
    f.render_widget(
        Paragraph::new(body).block(focus(app, Pane::Processes, title)),
        area,
    );
}

/// Who loads the selected device (issue 40; `--cgroups`): its busiest cgroups in the latest
/// interval — share of the device's time, rates, mean latency and its queue part, the ratio to
/// the cgroup's baseline, its role, its io.pressure where cgroup v2 gives one — and the
/// verdict's sentence while the device is saturated.
fn cgroups(f: &mut Frame, app: &App, area: Rect) {
    use crate::monitor::cgroups::ShareOf;
    let dev = app.selected_row();
    let title = match dev {
        Some(r) => format!(" cgroups on {} ", r.name),
        None => " cgroups ".to_string(),
    };
    let body: Vec<Line> = match dev.map(|r| (r, r.cgroups.as_deref())) {
        None => vec![Line::from("no device selected")],
        Some((_, None)) if app.reports < 2 => vec![Line::from("measuring (one interval)…")],
        Some((r, None)) => vec![Line::from(format!(
            "no request on {} was charged to a cgroup in the interval",
            r.name
        ))],
        Some((_, Some(c))) => {
            let of = match c.cgroups.first().map(|g| g.share_of) {
                Some(ShareOf::Requests) => "%reqs",
                _ => "%time",
            };
            let mut lines = vec![Line::from(Span::styled(
                format!(
                    "{:<20} {of:>5} {:>8} {:>8} {:>7} {:>7} {:>6}  {}",
                    "CGROUP", "r/s", "w/s", "mean ms", "queue ms", "ratio", "role"
                ),
                Style::default().add_modifier(Modifier::BOLD),
            ))];
            // Room for the verdict's line under the list (the block's borders and the
            // header take three); a row fits 78 columns, the verdict wraps.
            let room = usize::from(area.height.saturating_sub(4)).max(1);
            for g in c.cgroups.iter().take(room) {
                let weighted = |get: fn(&crate::monitor::cgroups::CgDir) -> Option<f64>| {
                    let parts = [(&g.read, g.read.requests), (&g.write, g.write.requests)];
                    let (sum, k) = parts
                        .iter()
                        .fold((0.0, 0.0), |(s, k), (d, r)| match get(d) {
                            Some(v) => (s + v * *r as f64, k + *r as f64),
                            None => (s, k),
                        });
                    (k > 0.0).then(|| sum / k)
                };
                let ms = |v: Option<f64>| v.map_or("-".to_string(), |m| format!("{m:.2}"));
                let role = g.role.map_or("", |r| match r {
                    crate::analysis::who::Role::Victim => "victim",
                    crate::analysis::who::Role::Aggressor => "aggressor",
                    crate::analysis::who::Role::Throttled => "throttled",
                });
                let name: String = g.name.chars().take(20).collect();
                // io.pressure (cgroup v2) after the role: the row then wraps.
                let pressure = g
                    .pressure_words()
                    .map_or(String::new(), |w| format!(" {w}"));
                lines.push(Line::from(format!(
                    "{name:<20} {:>4.0}% {:>8.0} {:>8.0} {:>7} {:>7} {:>6}  {role}{pressure}",
                    g.share * 100.0,
                    g.read.iops,
                    g.write.iops,
                    ms(weighted(|d| d.mean_ms)),
                    ms(weighted(|d| d.queue_ms)),
                    g.ratio.map_or("-".to_string(), |x| format!("{x:.1}x")),
                )));
            }
            lines.push(Line::from(match &c.verdict {
                Some(v) => format!("who: {}", v.sentence),
                None => "who: a verdict only while the device is saturated".to_string(),
            }));
            lines
        }
    };
    f.render_widget(
        Paragraph::new(body)
            .wrap(ratatui::widgets::Wrap { trim: true })
            .block(focus(app, Pane::Cgroups, title)),
        area,
    );
}

/// The selected device's line without a profile's gauge: its judgement in brief, or the
/// interval against a declared cap, with what an AWS volume's own counters say (issue 42).
pub(super) fn gauge_words(row: &super::app::Row) -> String {
    use crate::analysis::state::Basis;
    let j = &row.judgement;
    let words = match (j.device.basis, &j.cap, &row.aws_clause) {
        // No baseline, a declared cap (issue 42): the interval against it.
        (Basis::None, Some(c), _) => c.live_words(),
        (Basis::None, None, Some(aws)) => aws.clone(),
        // Nothing learned judges either (a second of a few writes beside reads with a
        // learned baseline is the judgement's words: Learned::judging).
        (Basis::None, None, None)
            if !row.learned.as_ref().is_some_and(|l| l.judging().is_some()) =>
        {
            "headroom needs a profile".to_string()
        }
        _ => j.brief(),
    };
    match &row.aws_clause {
        Some(aws) if !words.contains(aws.as_str()) => format!("{}: {words}; {aws}", row.name),
        _ => format!("{}: {words}", row.name),
    }
}

/// How much of the gauge is filled ([`gauge_fill`]).
enum GaugeFill {
    /// The share in use of a known room.
    Share(f64),
    /// No headroom, for the judgement's reason.
    Full,
    /// No room known.
    Unknown,
}

/// What the headroom gauge draws of a row judged by a profile: the share of the judged
/// direction's room in use and the words after the judgement. Drawn from the
/// one judgement, never from the profile's max useful IOPS on its own: the device's
/// direction serving `used` with `headroom` more within the target has `used + headroom`
/// (its ceiling in the current mix, analysis::state::ceiling_for_mix); no headroom for a
/// reason (saturated, overloaded, slow, changed) is a full gauge, whatever the IOPS against
/// the sweep's figure (an overloaded device once drew half a green gauge, "2742 of 5000");
/// a headroom not known (a mix the sweep did not measure: reads beside writes by a read
/// sweep) draws no share at all, the IOPS alone.
fn gauge_fill(
    j: &crate::analysis::state::Judgement,
    r: &crate::monitor::DiskRates,
) -> (GaugeFill, String) {
    let d = &j.device;
    let all = fmt_iops(r.r_s + r.w_s);
    match (d.headroom_iops, d.no_headroom) {
        (Some(h), None) => {
            let used = crate::monitor::judge::observed(r, d.dir, None).iops;
            let room = used + h;
            let share = if room > 0.0 { used / room } else { 1.0 };
            let at_least = if d.flags.ceiling_at_least { "≥ " } else { "" };
            (
                GaugeFill::Share(share.clamp(0.0, 1.0)),
                format!(
                    "{} of {at_least}{} {} IOPS",
                    fmt_iops(used),
                    fmt_iops(room),
                    d.dir.as_str()
                ),
            )
        }
        (_, Some(_)) => (GaugeFill::Full, format!("{all} IOPS")),
        (None, None) => (GaugeFill::Unknown, format!("{all} IOPS")),
    }
}

fn gauge(f: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    let Some(row) = app.selected_row() else {
        return;
    };
    // The device's one judgement (monitor::judge): its state with the ratio and headroom of
    // the same direction, whichever baseline judged it.
    let j = &row.judgement;
    let (Some(_), Some(r)) = (row.profile.as_deref(), row.rates.as_ref()) else {
        let dim = Style::default().add_modifier(Modifier::DIM);
        one_line(f.buffer_mut(), area, &gauge_words(row), dim);
        return;
    };
    let (fill, iops) = gauge_fill(j, r);
    let mut label = format!("{}: {} · {iops}", row.name, j.brief());
    if let Some(aws) = &row.aws_clause {
        label.push_str(&format!(" · {aws}"));
    }
    let (ratio, style) = match fill {
        GaugeFill::Share(s) => {
            let color = if s >= 0.9 {
                Color::Red
            } else if s >= 0.7 {
                Color::Yellow
            } else {
                Color::Green
            };
            (s, theme.fg(color).add_modifier(Modifier::REVERSED))
        }
        GaugeFill::Full => (1.0, theme.fg(Color::Red).add_modifier(Modifier::REVERSED)),
        GaugeFill::Unknown => (0.0, Style::default().add_modifier(Modifier::DIM)),
    };
    let g = Gauge::default()
        .ratio(ratio)
        .label(label)
        .gauge_style(style);
    f.render_widget(g, area);
}

fn help(f: &mut Frame, area: Rect) {
    let w = area.width.min(72);
    let h = (HELP.len() as u16 + 2).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    let lines: Vec<Line> = HELP
        .iter()
        .map(|(k, v)| {
            Line::from(vec![
                Span::styled(
                    format!("{k:>10}  "),
                    Style::default().add_modifier(Modifier::BOLD),
                ),
                Span::raw(*v),
            ])
        })
        .collect();
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines).alignment(Alignment::Left).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" keys (Esc closes) "),
        ),
        r,
    );
}

/// A frame as text, one line per row (snapshot tests, the README's captured frame).
pub fn to_text(buf: &Buffer) -> String {
    let w = buf.area.width as usize;
    let mut out = String::new();
    for line in buf.content.chunks(w) {
        let s: String = line.iter().map(|c| c.symbol()).collect();
        out.push_str(s.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_thresholds_and_no_color() {
        let t = Theme { color: true };
        assert_eq!(t.saturation(Some(1.0)).fg, Some(Color::Green));
        assert_eq!(t.saturation(Some(1.49)).fg, Some(Color::Green));
        assert_eq!(t.saturation(Some(SATURATED)).fg, Some(Color::Yellow));
        assert_eq!(t.saturation(Some(2.99)).fg, Some(Color::Yellow));
        assert_eq!(t.saturation(Some(OVERLOADED)).fg, Some(Color::Red));
        assert_eq!(t.saturation(None).fg, None);
        let plain = Theme { color: false };
        assert_eq!(plain.saturation(Some(50.0)).fg, None);
    }

    #[test]
    fn one_line_draws_what_a_paragraph_draws() {
        let texts = [
            "iosat top · replay loop.rec · every 0.50 s · window 60 s · end of recording",
            "q quit ? help / filter p pause ←→ sort r reverse +- window a all Tab pane",
            "filter: sd▏ (Enter keeps, Esc clears)",
            "warning: 日本語 wide, a\u{301} combining, tab\there, 😀 (Esc)",
            "two\nlines",
            "two\r\nlines",
            "bell\u{7}",
            "",
            "cut exactly here: 0123456789",
        ];
        for text in texts {
            for style in [
                Style::default(),
                Style::default().add_modifier(Modifier::DIM),
            ] {
                for w in [1u16, 7, 20, 29, 80] {
                    let area = Rect::new(1, 1, w, 1);
                    let outer = Rect::new(0, 0, 82, 3);
                    let mut a = Buffer::empty(outer);
                    Paragraph::new(text).style(style).render(area, &mut a);
                    let mut b = Buffer::empty(outer);
                    one_line(&mut b, area, text, style);
                    assert_eq!(a, b, "{text:?} at width {w}");
                }
            }
        }
    }

    #[test]
    fn numbers_fit_their_column() {
        let c = Col::by_key("r/s");
        assert_eq!(num(c, Some(12.345), 8), "   12.35");
        assert_eq!(num(c, Some(1234567.0), 8), " 1234567");
        assert_eq!(num(c, None, 8), "       -");
        assert_eq!(num(Col::by_key("saturation"), Some(13.94), 8), "   13.9x");
    }
}
