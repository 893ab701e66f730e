//! Charts as inline SVG, drawn here rather than by a charting library: the report must open
//! offline as one file, and the few chart kinds it needs (bars, points joined by a line, error
//! bars) are a few dozen lines each. Every mark carries `data-*` attributes with the figures it
//! stands for, exactly as the JSON has them, so that a test (or a reader's script) can check
//! the drawing against the data.

use std::fmt::Write;

use super::esc;

const W: f64 = 640.0;
const H: f64 = 260.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 56.0;

/// How far a bar's label is slanted, in degrees.
const LABEL_SLANT: f64 = 35.0;

/// The longest bar label drawn whole (characters); a longer one ends in `…`.
const LABEL_CHARS: usize = 26;

/// A label's line height, and the width of one of its characters at most (11 px type; wide
/// letters and capitals are rare in labels made of names and MIME types): what the view makes
/// room for.
const LABEL_HEIGHT: f64 = 14.0;
const LABEL_CHAR_WIDTH: f64 = 7.0;

fn short_label(l: &str) -> String {
    if l.chars().count() <= LABEL_CHARS {
        return l.to_string();
    }
    let mut s: String = l.chars().take(LABEL_CHARS - 1).collect();
    s.push('…');
    s
}

fn label_width(l: &str) -> f64 {
    l.chars().count() as f64 * LABEL_CHAR_WIDTH
}

/// One bar, or one point.
pub struct Mark {
    /// Shown under the bar, or at the point's x position.
    pub label: String,
    /// Its height, or the point's y.
    pub value: f64,
    /// An interval around `value`, drawn as an error bar.
    pub interval: Option<(f64, f64)>,
    /// `data-*` attributes (name without the prefix, value as written).
    pub data: Vec<(&'static str, String)>,
    /// Shown on hover.
    pub title: String,
}

/// Y-axis ticks: about four round numbers from 0 to at least `max`.
fn ticks(max: f64) -> (f64, Vec<f64>) {
    if max <= 0.0 || !max.is_finite() {
        return (1.0, vec![0.0, 1.0]);
    }
    let raw = max / 4.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let n = (max / step).ceil();
    let top = n * step;
    // Near f64's largest values the rounded top is past them: the maximum itself is the top.
    if !top.is_finite() || !(1.0..=10.0).contains(&n) {
        return (max, vec![0.0, max]);
    }
    (top, (0..=n as usize).map(|i| i as f64 * step).collect())
}

/// Ticks for an axis of `y_label`: bytes in round numbers of the binary unit the tables use
/// (KiB, MiB, GiB), anything else in round decimal numbers. Returns the top, the ticks, and
/// the unit and its name for the labels (1 and "" for a count).
fn axis(max: f64, y_label: &str) -> (f64, Vec<f64>, f64, &'static str) {
    if y_label != "bytes" {
        let (top, ts) = ticks(max);
        return (top, ts, 1.0, "");
    }
    let (unit, name) = [
        (1u64 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ]
    .into_iter()
    .find(|(u, _)| max >= *u as f64)
    .map_or((1.0, "B"), |(u, n)| (u as f64, n));
    let (top, ts) = ticks(max / unit);
    (
        top * unit,
        ts.into_iter().map(|t| t * unit).collect(),
        unit,
        name,
    )
}

/// A tick's text: in `unit`s named `name` on a bytes axis, else a decimal count.
fn tick_text(v: f64, unit: f64, name: &str) -> String {
    if name.is_empty() {
        tick_label(v)
    } else if v == 0.0 {
        "0".into()
    } else {
        format!("{} {name}", trim(v / unit))
    }
}

fn tick_label(v: f64) -> String {
    if v >= 1e9 {
        format!("{}G", trim(v / 1e9))
    } else if v >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if v >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn frame(out: &mut String, id: &str, title: &str, y_label: &str, max: f64) -> f64 {
    frame_in(out, id, title, y_label, max, (0.0, W, H))
}

/// As [`frame`], in a view from `x0` to `x1` and down to `bottom`: room for labels that reach
/// past the plot's frame.
fn frame_in(
    out: &mut String,
    id: &str,
    title: &str,
    y_label: &str,
    max: f64,
    (x0, x1, bottom): (f64, f64, f64),
) -> f64 {
    let (top, ticks, unit, name) = axis(max, y_label);
    let _ = write!(
        out,
        r#"<svg class="chart" id="{id}" viewBox="{x0:.0} 0 {w:.0} {bottom:.0}" role="img" aria-label="{t}"><title>{t}</title>"#,
        w = x1 - x0,
        t = esc(title)
    );
    let plot_h = H - TOP - BOTTOM;
    for t in &ticks {
        let y = TOP + plot_h * (1.0 - t / top);
        let _ = write!(
            out,
            r#"<line class="grid" x1="{LEFT}" x2="{x2}" y1="{y:.1}" y2="{y:.1}"/><text class="tick" x="{lx}" y="{ty:.1}" text-anchor="end">{l}</text>"#,
            x2 = W - RIGHT,
            lx = LEFT - 6.0,
            ty = y + 4.0,
            l = tick_text(*t, unit, name)
        );
    }
    let _ = write!(
        out,
        r#"<text class="axis" transform="translate(14 {y}) rotate(-90)" text-anchor="middle">{l}</text>"#,
        y = TOP + plot_h / 2.0,
        l = esc(y_label)
    );
    top
}

fn data_attrs(out: &mut String, m: &Mark) {
    for (k, v) in &m.data {
        let _ = write!(out, r#" data-{k}="{}""#, esc(v));
    }
}

fn error_bar(out: &mut String, x: f64, lo: f64, hi: f64, y_of: &dyn Fn(f64) -> f64) {
    let (y1, y2) = (y_of(lo), y_of(hi));
    let _ = write!(
        out,
        r#"<path class="err" d="M{x:.1} {y1:.1}V{y2:.1}M{a:.1} {y1:.1}h8M{a:.1} {y2:.1}h8"/>"#,
        a = x - 4.0
    );
}

/// A bar chart, one bar per mark, labels under the bars.
pub fn bars(id: &str, title: &str, y_label: &str, marks: &[Mark]) -> String {
    let mut out = String::new();
    let max = marks
        .iter()
        .map(|m| m.interval.map_or(m.value, |(_, hi)| hi.max(m.value)))
        .fold(0.0, f64::max);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let n = marks.len().max(1) as f64;
    let slot = plot_w / n;
    let bw = (slot * 0.7).max(1.0);
    let every = (marks.len() / 16).max(1);
    // The labels, slanted under their bars, shortened past LABEL_CHARS (whole in the bar's
    // title), and the view made as large as they reach: to the left of the first bar and
    // below the frame (labels cut off at the chart's edge said nothing).
    let labels: Vec<String> = marks.iter().map(|m| short_label(&m.label)).collect();
    let (sin, cos) = LABEL_SLANT.to_radians().sin_cos();
    let (mut x0, mut bottom) = (0.0f64, H);
    for (i, l) in labels.iter().enumerate().filter(|(i, _)| i % every == 0) {
        let w = label_width(l);
        let cx = LEFT + slot * i as f64 + slot / 2.0;
        x0 = x0.min(cx - w * cos - 4.0);
        bottom = bottom.max(TOP + plot_h + 14.0 + w * sin + LABEL_HEIGHT);
    }
    let top = frame_in(
        &mut out,
        id,
        title,
        y_label,
        max,
        (x0.floor(), W, bottom.ceil()),
    );
    let y_of = |v: f64| TOP + plot_h * (1.0 - v / top);
    for (i, m) in marks.iter().enumerate() {
        let x = LEFT + slot * i as f64 + (slot - bw) / 2.0;
        let y = y_of(m.value);
        let _ = write!(
            out,
            r#"<rect class="mark bar" x="{x:.1}" y="{y:.1}" width="{bw:.1}" height="{h:.1}""#,
            h = (TOP + plot_h - y).max(0.0)
        );
        data_attrs(&mut out, m);
        let _ = write!(out, "><title>{}</title></rect>", esc(&m.title));
        if let Some((lo, hi)) = m.interval {
            error_bar(&mut out, x + bw / 2.0, lo, hi, &y_of);
        }
        if i % every == 0 {
            let _ = write!(
                out,
                r#"<text class="label" x="{cx:.1}" y="{ly:.1}" text-anchor="end" transform="rotate(-{LABEL_SLANT} {cx:.1} {ly:.1})">{l}</text>"#,
                cx = x + bw / 2.0,
                ly = TOP + plot_h + 14.0,
                l = esc(&labels[i])
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// Points at evenly spaced x positions joined by a line (a curve over ordered labels), and
/// apart points (`extra`) placed at fractional positions, drawn as diamonds.
pub fn curve(
    id: &str,
    title: &str,
    y_label: &str,
    marks: &[Mark],
    extra: &[(f64, Mark)],
) -> String {
    let mut out = String::new();
    let max = marks
        .iter()
        .chain(extra.iter().map(|(_, m)| m))
        .map(|m| m.interval.map_or(m.value, |(_, hi)| hi.max(m.value)))
        .fold(0.0, f64::max);
    let top = frame(&mut out, id, title, y_label, max);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let n = marks.len().max(1) as f64;
    let slot = plot_w / n;
    let x_of = |pos: f64| LEFT + slot * (pos + 0.5);
    let y_of = |v: f64| TOP + plot_h * (1.0 - v / top);
    let line: Vec<String> = marks
        .iter()
        .enumerate()
        .map(|(i, m)| format!("{:.1},{:.1}", x_of(i as f64), y_of(m.value)))
        .collect();
    let _ = write!(
        out,
        r#"<polyline class="line" points="{}"/>"#,
        line.join(" ")
    );
    for (i, m) in marks.iter().enumerate() {
        let (x, y) = (x_of(i as f64), y_of(m.value));
        if let Some((lo, hi)) = m.interval {
            error_bar(&mut out, x, lo, hi, &y_of);
        }
        let _ = write!(
            out,
            r#"<circle class="mark point" cx="{x:.1}" cy="{y:.1}" r="5""#
        );
        data_attrs(&mut out, m);
        let _ = write!(out, "><title>{}</title></circle>", esc(&m.title));
        let _ = write!(
            out,
            r#"<text class="label" x="{x:.1}" y="{ly:.1}" text-anchor="middle">{l}</text>"#,
            ly = TOP + plot_h + 18.0,
            l = esc(&m.label)
        );
    }
    for (pos, m) in extra {
        let (x, y) = (x_of(*pos), y_of(m.value));
        if let Some((lo, hi)) = m.interval {
            error_bar(&mut out, x, lo, hi, &y_of);
        }
        let _ = write!(
            out,
            r#"<path class="mark diamond" d="M{x:.1} {a:.1}l7 7l-7 7l-7 -7z""#,
            a = y - 7.0
        );
        data_attrs(&mut out, m);
        let _ = write!(out, "><title>{}</title></path>", esc(&m.title));
        let _ = write!(
            out,
            r#"<text class="label extra" x="{x:.1}" y="{ly:.1}" text-anchor="middle">{l}</text>"#,
            ly = TOP + plot_h + 36.0,
            l = esc(&m.label)
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_maximum() {
        let (top, t) = ticks(3.7);
        assert_eq!(top, 4.0);
        assert_eq!(t, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        let (top, t) = ticks(1234.0);
        assert!(top >= 1234.0 && t.len() <= 6, "{top} {t:?}");
        assert_eq!(ticks(0.0).0, 1.0);
        // Any number a JSON report can hold: a few ticks, the maximum covered, no overflow.
        for max in [1.7e308, f64::MAX, 1e-300, f64::MIN_POSITIVE] {
            let (top, t) = ticks(max);
            assert!(
                top >= max && top.is_finite() && (2..=11).contains(&t.len()),
                "{max}: {top} {t:?}"
            );
        }
    }

    #[test]
    fn a_bytes_axis_counts_in_the_binary_units_the_tables_use() {
        let m = |v: f64| Mark {
            label: String::new(),
            value: v,
            interval: None,
            data: Vec::new(),
            title: String::new(),
        };
        // 3 GiB: ticks at round numbers of GiB, written so.
        let svg = bars("c", "t", "bytes", &[m(3.0 * (1u64 << 30) as f64)]);
        let ticks: Vec<&str> = svg
            .split(r#"class="tick""#)
            .skip(1)
            .map(|t| t.split('>').nth(1).unwrap().split('<').next().unwrap())
            .collect();
        assert_eq!(ticks, ["0", "1 GiB", "2 GiB", "3 GiB"], "{svg}");
        // A count stays decimal.
        let svg = bars("c", "t", "files", &[m(30_000.0)]);
        assert!(svg.contains(">30k<") && !svg.contains("iB"), "{svg}");
    }

    #[test]
    fn a_long_tile_label_keeps_its_end() {
        let t = |label: &str, value: f64| Tile {
            label: label.into(),
            value,
            shade: 0.0,
            data: Vec::new(),
            title: String::new(),
        };
        // The second tile is about a quarter of the width: its label is cut, from the left.
        let svg = treemap(
            "m",
            "t",
            &[
                t("/usr/lib", 3.0),
                t("/usr/share/doc/a-package-with-a-long-name", 1.0),
            ],
        );
        let labels: Vec<&str> = svg
            .split(r#"class="tile-label""#)
            .skip(1)
            .map(|l| l.split('>').nth(1).unwrap().split('<').next().unwrap())
            .collect();
        let cut = labels
            .iter()
            .find(|l| l.contains("long"))
            .expect("labelled");
        assert!(
            cut.starts_with('…') && cut.ends_with("long-name"),
            "{labels:?}"
        );
    }

    #[test]
    fn every_mark_carries_its_data_and_bars_stand_in_proportion() {
        let m = |v: f64| Mark {
            label: format!("{v}"),
            value: v,
            interval: None,
            data: vec![("value", format!("{v}"))],
            title: String::new(),
        };
        let svg = bars("c", "t", "y", &[m(1.0), m(2.0)]);
        assert_eq!(svg.matches("class=\"mark bar\"").count(), 2);
        assert!(svg.contains(r#"data-value="2""#));
        let heights: Vec<f64> = svg
            .split("height=\"")
            .skip(1)
            .map(|s| s.split('"').next().unwrap().parse().unwrap())
            .collect();
        assert!((heights[1] / heights[0] - 2.0).abs() < 0.01, "{heights:?}");
    }
}

/// One rectangle of a treemap: its area is `value`; `shade` (0 to 1) colours it.
pub struct Tile {
    /// Written on the tile when it is large enough.
    pub label: String,
    /// Its area.
    pub value: f64,
    /// Its colour's depth (0 to 1).
    pub shade: f64,
    /// `data-` attributes (name, value) for the page's script.
    pub data: Vec<(&'static str, String)>,
    /// Its tooltip.
    pub title: String,
}

/// Lays out `values` (largest first) in the rectangle (x, y, w, h) as a squarified treemap:
/// rows are filled along the shorter side while the worst aspect ratio in the row improves.
fn squarify(values: &[f64], x: f64, y: f64, w: f64, h: f64, out: &mut Vec<(f64, f64, f64, f64)>) {
    let total: f64 = values.iter().sum();
    if values.is_empty() || total <= 0.0 || w <= 0.0 || h <= 0.0 {
        out.extend(values.iter().map(|_| (x, y, 0.0, 0.0)));
        return;
    }
    let scale = w * h / total;
    let areas: Vec<f64> = values.iter().map(|v| v * scale).collect();
    let side = w.min(h);
    let worst = |row: &[f64]| {
        let s: f64 = row.iter().sum();
        let (mx, mn) = row
            .iter()
            .fold((0f64, f64::MAX), |(mx, mn), a| (mx.max(*a), mn.min(*a)));
        (side * side * mx / (s * s)).max(s * s / (side * side * mn))
    };
    let mut n = 1;
    while n < areas.len() && worst(&areas[..n + 1]) <= worst(&areas[..n]) {
        n += 1;
    }
    let row_area: f64 = areas[..n].iter().sum();
    let thick = row_area / side;
    let mut at = 0.0;
    for a in &areas[..n] {
        let len = a / thick;
        if w >= h {
            out.push((x, y + at, thick, len));
        } else {
            out.push((x + at, y, len, thick));
        }
        at += len;
    }
    let rest = &values[n..];
    if w >= h {
        squarify(rest, x + thick, y, w - thick, h, out);
    } else {
        squarify(rest, x, y + thick, w, h - thick, out);
    }
}

/// A treemap of tiles (largest first), each a `mark` with its data.
pub fn treemap(id: &str, title: &str, tiles: &[Tile]) -> String {
    let (tw, th) = (W, 360.0);
    let mut rects = Vec::new();
    let values: Vec<f64> = tiles.iter().map(|t| t.value.max(0.0)).collect();
    squarify(&values, 0.0, 0.0, tw, th, &mut rects);
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg class="chart treemap" id="{id}" viewBox="0 0 {tw} {th}" role="img" aria-label="{t}"><title>{t}</title>"#,
        t = esc(title)
    );
    for (t, (x, y, w, h)) in tiles.iter().zip(rects) {
        // Light blue for data held once, towards orange for data that is all duplicate.
        let s = t.shade.clamp(0.0, 1.0);
        let (r, g, b) = (
            (155.0 + 45.0 * s) as u8,
            (183.0 - 98.0 * s) as u8,
            (222.0 - 161.0 * s) as u8,
        );
        let _ = write!(
            out,
            r##"<rect class="mark tile" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="#{r:02x}{g:02x}{b:02x}" stroke="#fff""##
        );
        for (k, v) in &t.data {
            let _ = write!(out, r#" data-{k}="{}""#, esc(v));
        }
        let _ = write!(out, "><title>{}</title></rect>", esc(&t.title));
        if w > 60.0 && h > 16.0 {
            // Cut from the left: a path's end is what tells tiles apart.
            let max_chars = (w / 6.5) as usize;
            let n = t.label.chars().count();
            let l: String = if n > max_chars {
                let tail: String = t.label.chars().skip(n + 1 - max_chars).collect();
                format!("…{tail}")
            } else {
                t.label.clone()
            };
            let _ = write!(
                out,
                r#"<text class="tile-label" x="{:.1}" y="{:.1}">{}</text>"#,
                x + 4.0,
                y + 13.0,
                esc(&l)
            );
        }
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod treemap_tests {
    use super::*;

    #[test]
    fn tiles_cover_the_area_in_proportion_without_overlap() {
        let values = [50.0, 25.0, 12.0, 8.0, 5.0];
        let mut rects = Vec::new();
        squarify(&values, 0.0, 0.0, 200.0, 100.0, &mut rects);
        assert_eq!(rects.len(), values.len());
        for (v, (_, _, w, h)) in values.iter().zip(&rects) {
            assert!((w * h - v * 200.0).abs() < 1e-6, "{v}: {w}x{h}");
        }
        for (i, a) in rects.iter().enumerate() {
            for b in &rects[i + 1..] {
                let ox = (a.0 + a.2).min(b.0 + b.2) - a.0.max(b.0);
                let oy = (a.1 + a.3).min(b.1 + b.3) - a.1.max(b.1);
                assert!(ox <= 1e-9 || oy <= 1e-9, "{a:?} overlaps {b:?}");
            }
            assert!(
                a.0 >= -1e-9
                    && a.1 >= -1e-9
                    && a.0 + a.2 <= 200.0 + 1e-9
                    && a.1 + a.3 <= 100.0 + 1e-9
            );
        }
    }
}

/// One series of a stacked bar chart: a name, a CSS class (its colour) and a value per bar.
pub struct Series {
    /// Shown in the legend.
    pub name: String,
    /// Its CSS class (its colour).
    pub class: &'static str,
    /// One value per bar.
    pub values: Vec<u64>,
}

/// Stacked bars, one per label, a segment per series; each segment is a `mark` with
/// `data-bar`, `data-series` and `data-value`. A legend names the series.
pub fn stacked(
    id: &str,
    title: &str,
    y_label: &str,
    labels: &[String],
    series: &[Series],
) -> String {
    let mut out = String::new();
    let totals: Vec<u64> = (0..labels.len())
        .map(|i| series.iter().map(|s| s.values[i]).sum())
        .collect();
    let max = totals.iter().copied().max().unwrap_or(0) as f64;
    let top = frame(&mut out, id, title, y_label, max);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let slot = plot_w / labels.len().max(1) as f64;
    let bw = (slot * 0.7).max(1.0);
    let every = (labels.len() / 16).max(1);
    for (i, l) in labels.iter().enumerate() {
        let x = LEFT + slot * i as f64 + (slot - bw) / 2.0;
        let mut base = 0u64;
        for s in series {
            let v = s.values[i];
            if v == 0 {
                continue;
            }
            let y1 = TOP + plot_h * (1.0 - (base + v) as f64 / top);
            let y0 = TOP + plot_h * (1.0 - base as f64 / top);
            let _ = write!(
                out,
                r#"<rect class="mark {}" x="{x:.1}" y="{y1:.1}" width="{bw:.1}" height="{:.1}" data-bar="{}" data-series="{}" data-value="{v}"><title>{}: {} {v}</title></rect>"#,
                s.class,
                (y0 - y1).max(0.5),
                esc(l),
                esc(&s.name),
                esc(l),
                esc(&s.name)
            );
            base += v;
        }
        if i % every == 0 {
            let _ = write!(
                out,
                r#"<text class="label" x="{cx:.1}" y="{ly:.1}" text-anchor="middle">{l}</text>"#,
                cx = x + bw / 2.0,
                ly = TOP + plot_h + 16.0,
                l = esc(l)
            );
        }
    }
    // The legend, along the bottom.
    let mut lx = LEFT;
    for s in series {
        let _ = write!(
            out,
            r#"<rect class="{}" x="{lx:.1}" y="{ly:.1}" width="10" height="10"/><text class="label" x="{tx:.1}" y="{ty:.1}">{}</text>"#,
            s.class,
            esc(&s.name),
            ly = H - 16.0,
            tx = lx + 14.0,
            ty = H - 7.0
        );
        lx += 24.0 + 7.0 * s.name.len() as f64;
    }
    out.push_str("</svg>");
    out
}
