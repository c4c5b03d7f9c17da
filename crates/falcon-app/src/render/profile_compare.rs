//! `profile compare`'s document: the A/B comparison of two captures (A the baseline) and, when both inputs
//! were experiments, their config diff, in every format a front end offers. The comparison itself is rendered
//! by the shared `compare_*` renderers; this module puts the config diff beside it.

use super::{compare_html, compare_md, compare_table, config_diff, html, Format};
use crate::profiles::ProfileCompareResult;
use falcon_analysis::compare::ProfileComparison;
use falcon_core::stats::VerdictKind;

/// The JSON document: the comparison's object, plus `config_diff` (the changes A → B) when both inputs were
/// experiments.
pub fn json(result: &ProfileCompareResult) -> serde_json::Result<serde_json::Value> {
    let mut value = serde_json::to_value(&result.comparison)?;
    if let (Some(changes), Some(map)) = (&result.config_diff, value.as_object_mut()) {
        map.insert("config_diff".to_string(), serde_json::to_value(crate::contract::changes(changes))?);
    }
    Ok(value)
}

/// The document in `format` (at most `top` rows per ranked table): JSON is [`json`] pretty printed (and a
/// final newline); tables and Markdown show the config diff after the header; HTML is a self-contained page
/// with the config diff section first.
pub fn render(result: &ProfileCompareResult, format: Format, top: usize) -> serde_json::Result<String> {
    let c = &result.comparison;
    let config_diff = result.config_diff.as_deref();
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(&json(result)?)? + "\n",
        Format::Table => compare_table::render_with(c, top, config_diff),
        Format::Md => compare_md::render_with(c, top, 1, config_diff),
        Format::Html => {
            let title = format!("Profile comparison: {} → {}", c.a.input, c.b.input);
            let mut sections = Vec::new();
            if let Some(changes) = config_diff {
                sections.push(config_diff::html_section(changes));
            }
            sections.push(compare_html::render_section(c, top));
            html::render_page(&title, &sections)
        }
    })
}

/// Why `c.regressed()`: the verdict(s) that say so, one line each, joined by `; `.
pub fn regression_reason(c: &ProfileComparison) -> String {
    let mut why = Vec::new();
    for v in std::iter::once(&c.step_time).chain(c.mfu.verdict.as_ref()) {
        if v.verdict == VerdictKind::Regressed {
            why.push(compare_table::verdict_line(v, false));
        }
    }
    why.join("; ")
}
