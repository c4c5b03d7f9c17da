//! Two experiments' config diff (A → B) as an HTML section, for the pages that show it beside a comparison
//! (`profile compare` of two experiments). The terminal and Markdown forms are sections of
//! [`compare_table`](super::compare_table).

use super::html::escape;
use falcon_exp::diff::{show as show_value, Change};

/// `<section class="config-diff">` with a `path | group | A | B` table, or "no differences".
pub fn html_section(changes: &[Change]) -> String {
    let mut s = String::from("<section class=\"config-diff\">\n<h2>Config diff</h2>\n");
    if changes.is_empty() {
        s.push_str("<p>no differences</p>\n");
    } else {
        s.push_str("<table>\n<thead><tr><th>path</th><th>group</th><th>A</th><th>B</th></tr></thead>\n<tbody>\n");
        for ch in changes {
            s.push_str(&format!(
                "<tr><td><code>{}</code></td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>\n",
                escape(&ch.path),
                ch.group.as_str(),
                escape(&show_value(ch.a.as_ref())),
                escape(&show_value(ch.b.as_ref()))
            ));
        }
        s.push_str("</tbody>\n</table>\n");
    }
    s.push_str("</section>\n");
    s
}
