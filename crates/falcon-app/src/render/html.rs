//! The building blocks of the self-contained HTML reports (`profile compare` and `goal report` with
//! `--format html`): the page around already-rendered sections with its inline stylesheet (no scripts,
//! fonts, images or other external resources), escaping, tables, cards, notes and number formatting.

use super::svg;
use std::fmt::Write;

pub use super::markup::escape;

/// A `<table>` of text cells (escaped here). Cells that look numeric (`12.5 ms`, `+3 %`, `–`) are
/// right-aligned; a cell starting with `+` or `−`/`-` followed by a digit is coloured as a worse/better delta
/// when the column header starts with `Δ`.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<div class=\"table-wrap\"><table>\n<thead><tr>");
    for h in headers {
        let _ = write!(s, "<th>{}</th>", escape(h));
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        s.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let delta = headers.get(i).is_some_and(|h| h.starts_with('Δ'));
            let mut class = Vec::new();
            if looks_numeric(cell) {
                class.push("num");
            }
            if delta && cell.starts_with('+') && cell.chars().nth(1).is_some_and(|c| c.is_ascii_digit()) {
                class.push("worse");
            } else if delta
                && (cell.starts_with('−') || cell.starts_with('-'))
                && cell.chars().nth(1).is_some_and(|c| c.is_ascii_digit())
            {
                class.push("better");
            }
            if class.is_empty() {
                let _ = write!(s, "<td>{}</td>", escape(cell));
            } else {
                let _ = write!(s, "<td class=\"{}\">{}</td>", class.join(" "), escape(cell));
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table></div>\n");
    s
}

fn looks_numeric(cell: &str) -> bool {
    let t = cell.trim_start_matches(['+', '-', '−']);
    t == "–" || t.chars().next().is_some_and(|c| c.is_ascii_digit())
}

// ---------------------------------------------------------------------------------------------------------
// Cards and notes

/// A summary card: `label` above `value_html` (already HTML), then one escaped line each of `lines`;
/// `class` (`good`, `bad`, `unsure`, `same`) colours it.
pub fn card(class: &str, label: &str, value_html: &str, lines: &[String]) -> String {
    let mut s = format!(
        "<div class=\"card {class}\"><div class=\"label\">{}</div><div class=\"value\">{value_html}</div>",
        escape(label)
    );
    for l in lines {
        let _ = write!(s, "<div class=\"sub\">{}</div>", escape(l));
    }
    s.push_str("</div>\n");
    s
}

/// A muted paragraph (escaped), said where a chart or table has nothing to show.
pub fn note(text: &str) -> String {
    format!("<p class=\"note\">{}</p>\n", escape(text))
}

// ---------------------------------------------------------------------------------------------------------
// Number formatting

/// A time given in microseconds, in the unit that suits it (`812 ns`, `3.4 µs`, `12.48 ms`, `2.1 s`).
pub fn fmt_us(us: f64) -> String {
    if !us.is_finite() {
        return "–".to_string();
    }
    let a = us.abs();
    if a >= 1e6 {
        format!("{:.3} s", us / 1e6)
    } else if a >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else if a >= 1.0 || a == 0.0 {
        format!("{us:.1} µs")
    } else {
        format!("{:.0} ns", us * 1e3)
    }
}

/// A signed time delta in microseconds (`+1.20 ms`, `−3.4 µs`).
pub fn fmt_delta_us(us: f64) -> String {
    signed(us, fmt_us(us.abs()))
}

/// `abs_text` (the magnitude of `v`, formatted) with `v`'s sign: `+`, `−` (minus sign) or none for zero;
/// `–` when `v` is not finite.
pub fn signed(v: f64, abs_text: String) -> String {
    if !v.is_finite() {
        "–".to_string()
    } else if v > 0.0 {
        format!("+{abs_text}")
    } else if v < 0.0 {
        format!("−{abs_text}")
    } else {
        abs_text
    }
}

/// A relative change (`+12.3 %`); `–` when absent.
pub fn fmt_rel(r: Option<f64>) -> String {
    match r.filter(|r| r.is_finite()) {
        None => "–".to_string(),
        Some(r) => {
            let p = r * 100.0;
            let text = if p.abs() >= 100.0 { format!("{:.0} %", p.abs()) } else { format!("{:.1} %", p.abs()) };
            signed(p, text)
        }
    }
}

/// Bytes with a binary prefix (`1.50 GiB`), signed when `sign`.
pub fn fmt_bytes(b: f64, sign: bool) -> String {
    if !b.is_finite() {
        return "–".to_string();
    }
    let a = b.abs();
    let text = [(1u64 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
        .into_iter()
        .find(|(d, _)| a >= *d as f64)
        .map_or_else(|| format!("{a:.0} B"), |(d, u)| format!("{:.2} {u}", a / d as f64));
    if sign {
        signed(b, text)
    } else {
        text
    }
}

/// A p-value (`0.034`, `2.1e-5`); `–` when absent.
pub fn fmt_p(p: Option<f64>) -> String {
    match p.filter(|p| p.is_finite()) {
        None => "–".to_string(),
        Some(p) if p != 0.0 && p < 1e-3 => format!("{p:.1e}"),
        Some(p) => format!("{p:.3}"),
    }
}

/// A fraction as a percentage (`31.25 %`, as for MFU); `–` when absent.
pub fn fmt_frac_pct(x: Option<f64>) -> String {
    match x.filter(|x| x.is_finite()).map(|x| x * 100.0) {
        None => "–".to_string(),
        Some(p) if p != 0.0 && p.abs() < 0.01 => format!("{p:.2e} %"),
        Some(p) => format!("{p:.2} %"),
    }
}

/// A time given in milliseconds, as [`fmt_us`] writes it; `–` when absent.
pub fn fmt_ms(ms: Option<f64>) -> String {
    ms.filter(|m| m.is_finite()).map_or_else(|| "–".to_string(), |m| fmt_us(m * 1e3))
}

/// A number with an SI prefix ([`svg::si`]); `–` when not finite.
pub fn fmt_num(x: f64) -> String {
    if x.is_finite() {
        svg::si(x)
    } else {
        "–".to_string()
    }
}

// ---------------------------------------------------------------------------------------------------------
// Page

/// The reports' stylesheet (the dashboard's builds on it).
pub const STYLE: &str = r#"
:root { color-scheme: light; --fg: #212529; --muted: #6c757d; --line: #dee2e6; --bg: #ffffff; --panel: #f8f9fa;
  --good: #2b8a3e; --bad: #c92a2a; --unsure: #e67700; --same: #495057; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; }
header.page { padding: 18px 28px; border-bottom: 1px solid var(--line); background: var(--panel); }
header.page h1 { margin: 0; font-size: 22px; word-break: break-all; }
header.page p { margin: 4px 0 0; color: var(--muted); font-size: 12px; }
main { padding: 8px 28px 40px; max-width: 1280px; }
section { margin: 18px 0 30px; }
h2 { font-size: 19px; margin: 18px 0 10px; word-break: break-all; }
h3 { font-size: 16px; margin: 26px 0 8px; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: var(--panel); font-weight: 600; white-space: nowrap; }
td { max-width: 460px; overflow-wrap: anywhere; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.worse { color: var(--bad); } td.better { color: var(--good); }
table.pairs th { text-align: left; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 14px 0; }
.card { border: 1px solid var(--line); border-left: 5px solid var(--same); border-radius: 6px; padding: 10px 14px;
  min-width: 210px; background: var(--panel); }
.card .label { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.card .value { font-size: 20px; font-weight: 650; margin: 2px 0 4px; font-variant-numeric: tabular-nums; }
.card .sub { font-size: 12.5px; color: var(--fg); font-variant-numeric: tabular-nums; }
.card.good { border-left-color: var(--good); } .card.good .value { color: var(--good); }
.card.bad { border-left-color: var(--bad); } .card.bad .value { color: var(--bad); }
.card.unsure { border-left-color: var(--unsure); } .card.unsure .value { color: var(--unsure); }
.card.same .value { color: var(--same); }
figure { margin: 8px 0 14px; }
figure svg { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
figcaption { font-size: 12.5px; color: var(--muted); margin-top: 4px; max-width: 960px; }
p.note { color: var(--muted); font-style: italic; margin: 6px 0; }
ul.notes li { margin: 2px 0; }
footer { padding: 12px 28px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--line); }
"#;

/// A complete self-contained HTML5 page (inline stylesheet; no scripts, fonts, images or other requests)
/// titled `title` around already-rendered sections.
pub fn render_page(title: &str, sections: &[String]) -> String {
    let mut s = String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    // An empty data: icon, so that no browser asks for /favicon.ico.
    s.push_str("<link rel=\"icon\" href=\"data:,\">\n");
    let _ = writeln!(s, "<title>{}</title>", escape(title));
    let _ = writeln!(s, "<style>{STYLE}</style>\n</head>\n<body>");
    let _ = writeln!(
        s,
        "<header class=\"page\"><h1>{}</h1><p>falcon {}</p></header>\n<main>",
        escape(title),
        escape(env!("CARGO_PKG_VERSION"))
    );
    for sec in sections {
        s.push_str(sec);
        if !sec.ends_with('\n') {
            s.push('\n');
        }
    }
    s.push_str("</main>\n<footer>Self-contained report: inline styles and SVG, no scripts or external resources.</footer>\n</body>\n</html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_replaces_markup_characters() {
        assert_eq!(
            escape(r#"<a href="x">Tom & 'Jerry'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
        );
        assert_eq!(escape("plain µs → ok"), "plain µs → ok");
        let t = table(&["op", "Δ"], &[vec!["<b>".to_string(), "+1.0 ms".to_string()]]);
        assert!(t.contains("<td>&lt;b&gt;</td>") && t.contains("<td class=\"num worse\">+1.0 ms</td>"), "{t}");
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_us(12_480.0), "12.48 ms");
        assert_eq!(fmt_us(0.5), "500 ns");
        assert_eq!(fmt_us(2_100_000.0), "2.100 s");
        assert_eq!(fmt_delta_us(-3.44), "−3.4 µs");
        assert_eq!(fmt_rel(Some(1.8708)), "+187 %");
        assert_eq!(fmt_rel(Some(-0.0123)), "−1.2 %");
        assert_eq!(fmt_rel(Some(f64::NAN)), "–");
        assert_eq!(fmt_bytes((3u64 << 29) as f64, false), "1.50 GiB");
        assert_eq!(fmt_bytes(-2048.0, true), "−2.00 KiB");
    }
}
