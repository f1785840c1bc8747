//! A small line chart that writes braille cells straight into the frame's buffer: the charts
//! of `iosat top` (draw.rs) without ratatui's Chart and Canvas, which cost a third of a
//! refresh (BENCHMARKS.md, "Instruction counts per refresh"): a Canvas per dataset, each with
//! its own grid, a UTF-16 string per layer and a pass over the whole graph area.
//! Imports only: nothing.
//!
//! The picture is ratatui 0.29's `Chart` with two labels per axis, the legend at the top left
//! (hidden when wider or taller than half the graph) and `GraphType::Line` datasets with
//! braille or dot markers: the same layout, the same grid coordinates, the same line
//! algorithm (Bresenham over the dot grid) and the same rule where datasets cross (a cell
//! shows the last dataset that has a dot in it, only that dataset's dots). Here one grid of
//! the graph area serves every dataset and is written to the buffer once. Draws only.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::symbols;
use ratatui::widgets::Widget;

/// One line of the chart.
pub struct Dataset<'a> {
    /// Shown in the legend.
    pub name: &'a str,
    /// (x, y) points in the chart's coordinates, x ascending.
    pub data: &'a [(f64, f64)],
    /// Its colour (None: the terminal's, e.g. with NO_COLOR).
    pub color: Option<Color>,
    /// A dotted reference line ('•' per cell) instead of a braille line.
    pub dots: bool,
}

/// A line chart in a bordered box with a title: the datasets in drawing order, the bounds
/// and two labels per axis (x: left and right end; y: bottom and top).
pub struct LineChart<'a> {
    /// At the top left of the box, on its border.
    pub title: &'a str,
    /// The style of the box's borders (and so of the title and the legend box).
    pub border: Style,
    pub datasets: &'a [Dataset<'a>],
    pub x_bounds: [f64; 2],
    pub y_bounds: [f64; 2],
    pub x_labels: [&'a str; 2],
    pub y_labels: [&'a str; 2],
}

/// Where things go inside the block (ratatui's `ChartLayout` with both axes labelled).
#[derive(Debug, PartialEq, Eq)]
struct Layout {
    label_x: Option<u16>,
    axis_x: Option<u16>,
    axis_y: Option<u16>,
    graph: Rect,
    legend: Option<Rect>,
}

impl LineChart<'_> {
    fn layout(&self, area: Rect) -> Option<Layout> {
        if area.height == 0 || area.width == 0 {
            return None;
        }
        let mut x = area.left();
        let mut y = area.bottom() - 1;
        let mut label_x = None;
        if y > area.top() {
            label_x = Some(y);
            y -= 1;
        }
        // The y labels, and the first x label's part left of the y axis (it ends under the
        // axis): at most a third of the width.
        let ylab = self.y_labels.iter().map(|l| width(l)).max().unwrap_or(0);
        let xlab = width(self.x_labels[0]).saturating_sub(1);
        x += ylab.max(xlab).min(area.width / 3);
        let mut axis_x = None;
        if y > area.top() {
            axis_x = Some(y);
            y -= 1;
        }
        let mut axis_y = None;
        if x + 1 < area.right() {
            axis_y = Some(x);
            x += 1;
        }
        let graph = Rect::new(
            x,
            area.top(),
            area.right().saturating_sub(x),
            y.saturating_sub(area.top()).saturating_add(1),
        );
        let names = self.datasets.iter().map(|d| width(d.name));
        let legend = names.clone().max().and_then(|inner| {
            let (w, h) = (inner + 2, names.count() as u16 + 2);
            (inner > 0 && w <= half(graph.width) && h <= half(graph.height))
                .then(|| Rect::new(graph.left(), graph.top(), w, h))
        });
        Some(Layout {
            label_x,
            axis_x,
            axis_y,
            graph,
            legend,
        })
    }
}

/// Half a length as ratatui's layout solver rounds `Constraint::Ratio(1, 2)`.
fn half(n: u16) -> u16 {
    (f64::from(n) / 2.0).round() as u16
}

/// Columns a label takes (labels are ASCII, the legend's names too, but count chars).
fn width(s: &str) -> u16 {
    s.chars().count() as u16
}

/// Write `s` into the row `y` between `x` and `x + w`, left- or right-aligned, cut to fit
/// (a right-aligned label loses its start, as ratatui's right-aligned Line does).
fn label(buf: &mut Buffer, x: u16, y: u16, w: u16, s: &str, right: bool) {
    let len = width(s);
    let n = len.min(w);
    let (x, s) = if right {
        let cut = s
            .char_indices()
            .nth(usize::from(len - n))
            .map_or("", |(i, _)| &s[i..]);
        (x + w - n, cut)
    } else {
        (x, s)
    };
    buf.set_stringn(x, y, s, usize::from(n), Style::default());
}

/// No dataset has a dot in the cell.
const EMPTY: u8 = u8::MAX;

/// The dot grid of the graph area: per cell the dataset shown and its dots there.
struct Grid {
    width: usize,
    owner: Vec<u8>,
    bits: Vec<u8>,
}

impl Grid {
    /// Dataset `k` puts the dot (`px`, `py`) of the braille grid (2x4 dots per cell) or, with
    /// `dots`, of the cell grid. Its first dot in a cell replaces what earlier datasets drew
    /// there, as a later Canvas layer does.
    fn paint(&mut self, k: u8, dots: bool, px: usize, py: usize) {
        let (i, bit) = if dots {
            (py * self.width + px, 1)
        } else {
            // Braille dot numbering (U+2800 + bits): ratatui's symbols::braille::DOTS.
            let b = symbols::braille::DOTS[py % 4][px % 2];
            (py / 4 * self.width + px / 2, b as u8)
        };
        if i >= self.owner.len() {
            return;
        }
        if self.owner[i] != k {
            self.owner[i] = k;
            self.bits[i] = 0;
        }
        self.bits[i] |= bit;
    }
}

/// ratatui's `Painter::get_point`: a point in chart coordinates on a grid of `res` dots.
fn grid_point(
    x: f64,
    y: f64,
    xb: [f64; 2],
    yb: [f64; 2],
    res: (f64, f64),
) -> Option<(usize, usize)> {
    let (left, right, bottom, top) = (xb[0], xb[1], yb[0], yb[1]);
    if x < left || x > right || y < bottom || y > top {
        return None;
    }
    let width = (right - left).abs();
    let height = (top - bottom).abs();
    if width == 0.0 || height == 0.0 {
        return None;
    }
    let px = ((x - left) * (res.0 - 1.0) / width) as usize;
    let py = ((top - y) * (res.1 - 1.0) / height) as usize;
    Some((px, py))
}

/// The dots of a segment between two grid points (ratatui's canvas `Line`: Bresenham).
fn segment(a: (usize, usize), b: (usize, usize), paint: &mut impl FnMut(usize, usize)) {
    let ((x1, y1), (x2, y2)) = (a, b);
    let dx = x1.abs_diff(x2);
    let dy = y1.abs_diff(y2);
    if dx == 0 {
        (y1.min(y2)..=y1.max(y2)).for_each(|y| paint(x1, y));
    } else if dy == 0 {
        (x1.min(x2)..=x1.max(x2)).for_each(|x| paint(x, y1));
    } else if dy < dx {
        // Along x, stepping y.
        let (p, q) = if x1 > x2 { (b, a) } else { (a, b) };
        walk(p, q, dy, &mut |x, y| paint(x, y));
    } else {
        // Along y, stepping x.
        let (p, q) = if y1 > y2 {
            ((y2, x2), (y1, x1))
        } else {
            ((y1, x1), (y2, x2))
        };
        walk(p, q, dx, &mut |y, x| paint(x, y));
    }
}

/// Bresenham from `p` to `q` (major coordinate first, `p.0 <= q.0`), the minor one moving by
/// `d_minor` in all.
fn walk(
    p: (usize, usize),
    q: (usize, usize),
    d_minor: usize,
    paint: &mut impl FnMut(usize, usize),
) {
    let (dmaj, dmin) = ((q.0 - p.0) as isize, d_minor as isize);
    let mut d = 2 * dmin - dmaj;
    let mut m = p.1;
    for a in p.0..=q.0 {
        paint(a, m);
        if d > 0 {
            m = if p.1 > q.1 {
                m.saturating_sub(1)
            } else {
                m.saturating_add(1)
            };
            d -= 2 * dmaj;
        }
        d += 2 * dmin;
    }
}

/// A box with the four plain borders in `border` and `title` at the top left, as ratatui's
/// `Block::default().borders(Borders::ALL).title(title).border_style(border)` draws it
/// (the Block also patches the whole area with its style, the default one: no change to any
/// cell, so left out, with the Line machinery of the title). `area` is within `buf`.
fn bordered(buf: &mut Buffer, area: Rect, title: &str, border: Style) {
    if area.is_empty() {
        return;
    }
    let set = symbols::border::PLAIN;
    let (l, r, t, b) = (area.left(), area.right() - 1, area.top(), area.bottom() - 1);
    // Sides first, then corners over them (the Block's order).
    for y in t..=b {
        buf[(l, y)].set_symbol(set.vertical_left).set_style(border);
    }
    for x in l..=r {
        buf[(x, t)].set_symbol(set.horizontal_top).set_style(border);
    }
    for y in t..=b {
        buf[(r, y)].set_symbol(set.vertical_right).set_style(border);
    }
    for x in l..=r {
        buf[(x, b)]
            .set_symbol(set.horizontal_bottom)
            .set_style(border);
    }
    buf[(r, b)].set_symbol(set.bottom_right).set_style(border);
    buf[(r, t)].set_symbol(set.top_right).set_style(border);
    buf[(l, b)].set_symbol(set.bottom_left).set_style(border);
    buf[(l, t)].set_symbol(set.top_left).set_style(border);
    let room = area.width.saturating_sub(2);
    if room > 0 && !title.is_empty() {
        let n = usize::from(width(title).min(room));
        buf.set_stringn(l + 1, t, title, n, Style::default());
    }
}

impl Widget for LineChart<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let area = area.intersection(buf.area);
        if area.is_empty() {
            return;
        }
        bordered(buf, area, self.title, self.border);
        let inner = Rect::new(
            area.x + 1,
            area.y + 1,
            area.width.saturating_sub(2),
            area.height.saturating_sub(2),
        );
        // The legend box takes the style of the box's top-left cell (its border's), as in
        // ratatui's Chart.
        let legend_style = buf[(area.left(), area.top())].style();
        let Some(l) = self.layout(inner) else {
            return;
        };
        let g = l.graph;
        if let Some(y) = l.label_x {
            let between = g.width / 2;
            let left = g.left().saturating_sub(inner.left());
            label(buf, inner.left(), y, left, self.x_labels[0], true);
            label(buf, g.right() - between, y, between, self.x_labels[1], true);
        }
        // Bottom label on the graph's last row, top label on its first.
        let lw = g.left().saturating_sub(inner.left()).saturating_sub(1);
        label(
            buf,
            inner.left(),
            g.bottom() - 1,
            lw,
            self.y_labels[0],
            false,
        );
        label(buf, inner.left(), g.top(), lw, self.y_labels[1], false);
        if let Some(y) = l.axis_x {
            for x in g.left()..g.right() {
                buf[(x, y)].set_symbol(symbols::line::HORIZONTAL);
            }
        }
        if let Some(x) = l.axis_y {
            for y in g.top()..g.bottom() {
                buf[(x, y)].set_symbol(symbols::line::VERTICAL);
            }
            if let Some(y) = l.axis_x {
                buf[(x, y)].set_symbol(symbols::line::BOTTOM_LEFT);
            }
        }
        let (w, h) = (usize::from(g.width), usize::from(g.height));
        let mut grid = Grid {
            width: w,
            owner: vec![EMPTY; w * h],
            bits: vec![0; w * h],
        };
        for (k, d) in self.datasets.iter().enumerate().take(usize::from(EMPTY)) {
            let k = k as u8;
            let res = if d.dots {
                (w as f64, h as f64)
            } else {
                (w as f64 * 2.0, h as f64 * 4.0)
            };
            let at = |&(x, y): &(f64, f64)| grid_point(x, y, self.x_bounds, self.y_bounds, res);
            let mut paint = |px, py| grid.paint(k, d.dots, px, py);
            for p in d.data {
                if let Some((px, py)) = at(p) {
                    paint(px, py);
                }
            }
            for pair in d.data.windows(2) {
                if let (Some(a), Some(b)) = (at(&pair[0]), at(&pair[1])) {
                    segment(a, b, &mut paint);
                }
            }
        }
        for (i, (&k, &bits)) in grid.owner.iter().zip(&grid.bits).enumerate() {
            if k == EMPTY {
                continue;
            }
            let d = &self.datasets[usize::from(k)];
            let ch = if d.dots {
                '•'
            } else {
                char::from_u32(u32::from(symbols::braille::BLANK) + u32::from(bits)).unwrap_or(' ')
            };
            let (x, y) = (g.left() + (i % w) as u16, g.top() + (i / w) as u16);
            let cell = buf[(x, y)].set_char(ch);
            if let Some(c) = d.color.filter(|c| *c != Color::Reset) {
                cell.set_fg(c);
            }
        }
        if let Some(r) = l.legend {
            buf.set_style(r, legend_style);
            bordered(buf, r, "", Style::default());
            for (i, d) in self.datasets.iter().enumerate() {
                let style = d.color.map_or(Style::default(), |c| Style::default().fg(c));
                let row = Rect::new(r.x + 1, r.y + 1 + i as u16, r.width - 2, 1);
                // The whole row takes the name's colour (ratatui's Line does).
                buf.set_style(row, style);
                buf.set_stringn(row.x, row.y, d.name, usize::from(row.width), style);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::layout::Constraint;
    use ratatui::style::Modifier;
    use ratatui::symbols::Marker;
    use ratatui::widgets::{Axis, Block, Borders, Chart, GraphType, LegendPosition};

    /// ratatui's Chart as draw.rs used it before this widget: the picture to keep.
    fn ratatui_chart(c: &LineChart, area: Rect) -> Buffer {
        let sets = c
            .datasets
            .iter()
            .map(|d| {
                let style = d.color.map_or(Style::default(), |c| Style::default().fg(c));
                ratatui::widgets::Dataset::default()
                    .name(d.name)
                    .marker(if d.dots { Marker::Dot } else { Marker::Braille })
                    .graph_type(GraphType::Line)
                    .style(style)
                    .data(d.data)
            })
            .collect();
        let chart = Chart::new(sets)
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(c.title)
                    .border_style(c.border),
            )
            .x_axis(
                Axis::default()
                    .bounds(c.x_bounds)
                    .labels(c.x_labels.map(str::to_string)),
            )
            .y_axis(
                Axis::default()
                    .bounds(c.y_bounds)
                    .labels(c.y_labels.map(str::to_string)),
            )
            .legend_position(Some(LegendPosition::TopLeft))
            .hidden_legend_constraints((Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)));
        let mut buf = Buffer::empty(area);
        chart.render(area, &mut buf);
        buf
    }

    fn ours(c: LineChart, area: Rect) -> Buffer {
        let mut buf = Buffer::empty(area);
        c.render(area, &mut buf);
        buf
    }

    /// Every cell the same: symbol, colours, modifiers.
    fn same(a: &Buffer, b: &Buffer) -> Result<(), String> {
        for (i, (x, y)) in a.content.iter().zip(&b.content).enumerate() {
            if x != y {
                let w = a.area.width as usize;
                return Err(format!(
                    "cell ({}, {}): ratatui {x:?}, ours {y:?}\nratatui:\n{}\nours:\n{}",
                    i % w,
                    i / w,
                    crate::ui::top::draw::to_text(a),
                    crate::ui::top::draw::to_text(b)
                ));
            }
        }
        Ok(())
    }

    #[test]
    fn draws_what_ratatuis_chart_draws() {
        let wave: Vec<(f64, f64)> = (0..120)
            .map(|i| {
                (
                    f64::from(i) / 2.0 - 60.0,
                    5.0 + 4.0 * (f64::from(i) / 7.0).sin(),
                )
            })
            .collect();
        let steep: Vec<(f64, f64)> = (0..40)
            .map(|i| (f64::from(i) - 40.0, f64::from(i % 7) * 1.6))
            .collect();
        // A point above the top: its segments are left out, as ratatui leaves them.
        let spike = [(-50.0, 1.0), (-30.0, 12.0), (-20.0, 2.0), (-5.0, 0.5)];
        let flat = [(-60.0, 3.0), (0.0, 3.0)];
        let high = [(-60.0, 9.5), (0.0, 9.5)];
        let borders = [
            Style::default().add_modifier(Modifier::DIM),
            Style::default().add_modifier(Modifier::BOLD),
        ];
        for color in [true, false] {
            let c = |col: Color| color.then_some(col);
            let sets = [
                Dataset {
                    name: "r_await",
                    data: &wave,
                    color: c(Color::Cyan),
                    dots: false,
                },
                Dataset {
                    name: "w_await",
                    data: &steep,
                    color: c(Color::Magenta),
                    dots: false,
                },
                Dataset {
                    name: "r_p95",
                    data: &spike,
                    color: c(Color::LightBlue),
                    dots: false,
                },
                Dataset {
                    name: "baseline 0.100 ms",
                    data: &flat,
                    color: c(Color::DarkGray),
                    dots: true,
                },
                Dataset {
                    name: "10x",
                    data: &high,
                    color: c(Color::DarkGray),
                    dots: true,
                },
            ];
            let sizes = [
                (80, 22),
                (81, 23),
                (38, 8),
                (40, 7),
                (12, 4),
                (7, 5),
                (3, 3),
                (2, 2),
                (1, 1),
                (60, 1),
            ];
            for (w, h) in sizes {
                let (border, title) = if w % 2 == 0 {
                    (borders[0], " vda latency ms (log) ")
                } else {
                    (borders[1], " %busy ")
                };
                let chart = || LineChart {
                    title,
                    border,
                    datasets: &sets,
                    x_bounds: [-60.0, 0.0],
                    y_bounds: [0.0, 10.0],
                    x_labels: ["-60s", "now"],
                    y_labels: ["0", "10.0"],
                };
                let area = Rect::new(0, 0, w, h);
                let (a, b) = (ratatui_chart(&chart(), area), ours(chart(), area));
                if let Err(e) = same(&a, &b) {
                    panic!("{w}x{h}, colour {color}: {e}");
                }
            }
        }
    }
}
