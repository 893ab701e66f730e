//! The HTML report: one self-contained file (inline CSS, inline SVG charts, one small script
//! that sorts tables), built from the typed report model like the text and JSON renderers. It
//! makes no network request, uses no external font, reads in a narrow window and prints.
//!
//! [`scan`] draws a scan's report, [`catalog`] an audit catalog's; [`svg`] the charts. Pages
//! are built with maud's `html!` templates, which escape every value they are given unless it is
//! marked as markup (`PreEscaped`, used only for the charts [`svg`] draws and for the fixed
//! style and script): a name from the scanned tree cannot become markup by a forgotten call.

mod catalog;
mod scan;
mod svg;

pub use catalog::html_catalog;
pub use scan::html_scan;

use crate::{grouped_digits, human_bytes};
use maud::{DOCTYPE, Markup, PreEscaped, html};

/// Escapes text for HTML (element content and attribute values); for the hand-drawn SVG charts,
/// which are built as text.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
:root{--fg:#1d2330;--muted:#5b6475;--line:#d9dde5;--bar:#3b6fb6;--bar2:#9bb7de;--accent:#c8553d;--bg:#fff}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:1040px;padding:16px}
h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.2em;margin:1.6em 0 .4em;border-bottom:1px solid var(--line);padding-bottom:.2em}
h3{font-size:1em;margin:1em 0 .3em}
.sub{color:var(--muted);margin:0 0 1em}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid var(--line);border-radius:8px;padding:8px 12px;min-width:130px;flex:1 1 130px}
.card .v{font-size:1.35em;font-weight:600}.card .k{color:var(--muted);font-size:.85em}
.card.bad .v{color:var(--accent)}
.scroll{overflow-x:auto}#runs-table{font-size:.8em}#runs-table th,#runs-table td{padding:2px 4px}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums;margin:.4em 0}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th{white-space:normal;vertical-align:bottom}td.words{text-align:left;white-space:normal;overflow-wrap:anywhere;min-width:8em}
th:first-child,td:first-child{text-align:left}
td.path{text-align:left;white-space:pre-line;word-break:break-all}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th[aria-sort=ascending]::after{content:" \25B2"}table.sortable th[aria-sort=descending]::after{content:" \25BC"}
svg.chart{width:100%;max-width:720px;height:auto;display:block;margin:.4em 0}
svg .grid{stroke:var(--line);stroke-width:1}svg .tick,svg .label,svg .axis{font-size:11px;fill:var(--muted)}
svg .bar{fill:var(--bar)}svg .bar.alt{fill:var(--bar2)}svg .line{fill:none;stroke:var(--bar);stroke-width:2}
svg .tile-label{font-size:11px;fill:#1d2330;pointer-events:none}svg .point{fill:var(--bar)}svg .diamond{fill:var(--accent)}svg .s-corrupt{fill:#b3261e}svg .s-restored{fill:#2f6fb0}svg .s-modified{fill:#e8a33d}svg .s-missing{fill:#7b3fa0}svg .s-new{fill:#4d9a5b}svg .s-moved{fill:#5ab4c5}svg .s-unreadable{fill:#555}svg .s-uncompared{fill:#999}code{font-size:.9em;word-break:break-all}svg .err{stroke:var(--fg);stroke-width:1.2;fill:none}
.note{color:var(--muted);font-size:.9em}
footer{margin-top:2em;color:var(--muted);font-size:.85em}
@media (max-width:600px){body{padding:8px;font-size:14px}th,td{padding:3px 4px}}
@media print{body{max-width:none}h2{break-after:avoid}svg.chart,table{break-inside:avoid}.card{border-color:#999}}
"#;

/// Sorts a table by the clicked column: by each cell's `data-sort` number if it has one, else
/// by its text. It is the only script, and earns its bytes: a table of hundreds of directories
/// or files is read by sorting it.
const SORT_SCRIPT: &str = r#"
document.querySelectorAll("table.sortable").forEach(function(t){
  t.querySelectorAll("th").forEach(function(th,i){
    th.addEventListener("click",function(){
      var asc=th.getAttribute("aria-sort")!=="ascending";
      t.querySelectorAll("th").forEach(function(h){h.removeAttribute("aria-sort")});
      th.setAttribute("aria-sort",asc?"ascending":"descending");
      var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
      function key(r){var c=r.cells[i];var s=c.getAttribute("data-sort");return s===null?c.textContent:parseFloat(s)}
      rows.sort(function(a,b){var x=key(a),y=key(b);var o=(typeof x==="number")?x-y:String(x).localeCompare(String(y));return asc?o:-o});
      rows.forEach(function(r){body.appendChild(r)});
    });
  });
});
"#;

/// A whole page around `body`.
pub fn page(title: &str, body: Markup) -> String {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width,initial-scale=1";
                meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                (body)
                script { (PreEscaped(SORT_SCRIPT)) }
            }
        }
    };
    page.into_string() + "\n"
}

/// A chart [`svg`] drew: markup already (every value in it went through [`esc`]).
pub(crate) fn chart(svg: String) -> Markup {
    PreEscaped(svg)
}

/// A table cell: its text, and the number it sorts by (none: by its text).
pub(crate) type Cell = (String, Option<f64>);

/// A count, digits grouped.
pub(crate) fn num(n: u64) -> Cell {
    (group_digits(n), Some(n as f64))
}

/// Bytes in binary units, sorting by the exact count.
pub(crate) fn bytes(n: u64) -> Cell {
    (human_bytes(n), Some(n as f64))
}

pub(crate) fn text(s: impl Into<String>) -> Cell {
    (s.into(), None)
}

/// `1234567` -> `1,234,567`.
pub(crate) fn group_digits(n: u64) -> String {
    grouped_digits(n)
}

/// A headline figure.
pub fn card(key: &str, value: &str, title: &str, bad: bool) -> Markup {
    html! {
        div.card.bad[bad] title=(title) {
            div.v { (value) }
            div.k { (key) }
        }
    }
}

/// A table: `head` column names, `rows` of cells; a cell is (text, sort key if numeric). The
/// first column may be a path (wraps).
pub fn table(id: &str, head: &[&str], rows: &[Vec<Cell>], sortable: bool) -> Markup {
    html! {
        div.scroll {
            table id=(id) class=[sortable.then_some("sortable")] {
                thead { tr { @for h in head { th { (h) } } } }
                tbody {
                    @for r in rows {
                        tr {
                            @for (i, (text, key)) in r.iter().enumerate() {
                                // A path wraps at its slashes; other words (a MIME type, a
                                // list of formats) wrap where they must, numbers never.
                                td class=[if i == 0 && text.contains('/') {
                                        Some("path")
                                    } else if i > 0 && key.is_none() && text.len() > 16 {
                                        Some("words")
                                    } else {
                                        None
                                    }]
                                    data-sort=[key] { (text) }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_everywhere_it_goes() {
        assert_eq!(
            esc(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        let p = page("<t>", html! { p { "x" } });
        assert!(p.contains("<title>&lt;t&gt;</title>"));
        let c = card("<k>", "<v>", "\"t\"", true).into_string();
        assert!(c.contains("&lt;k&gt;") && c.contains("&lt;v&gt;") && c.contains("&quot;t&quot;"));
        let t = table("x", &["<h>"], &[vec![("a/<b>".into(), Some(1.0))]], true).into_string();
        assert!(
            t.contains("<th>&lt;h&gt;</th>") && t.contains("a/&lt;b&gt;"),
            "{t}"
        );
        assert!(
            !p.contains("http://") && !p.contains("https://"),
            "no address to fetch"
        );
    }
}
