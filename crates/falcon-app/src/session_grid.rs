//! A sweep as a grid: one metric over the first two swept keys (rows × columns; every combination of the further
//! keys gives one grid each, a facet), each cell the median of its runs' medians (repeats of one point share a
//! cell), the best cell by the metric's direction. `session show` prints it, `--json`, `GET
//! /api/v1/sessions/{id}` and the MCP tool `session_show` carry it, and the dashboard's session page draws it.
//!
//! The metric: the one asked for, else the session's goal's metric when its runs logged it, else the first of
//! `step_time_s`, `tokens_per_s`, `loss` they logged, else the first they logged, else `step_time_s`. A session
//! without stored axes (made before they were kept, or repeating one spec) is one row of its runs.

use crate::experiments::MetricSummaries;
use falcon_core::ids::ExperimentId;
use falcon_core::stats::descriptive::median;
use falcon_core::stats::verdict::direction_for;
use falcon_core::stats::Direction;
use falcon_core::status::ExperimentStatus;
use falcon_exp::ExperimentRecord;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;

/// The grid of one session for one metric.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SessionGrid {
    /// The metric shown.
    pub metric: String,
    /// Every metric the session's runs logged (what may be asked for instead).
    pub metrics: Vec<String>,
    /// Which way the metric is better; `null` when it has no standard direction (then no cell is best).
    pub direction: Option<Direction>,
    /// The swept key along the rows; `null` with fewer than two keys (one row).
    pub rows_key: Option<String>,
    /// Its values, one per row (empty: one row of all runs).
    pub row_values: Vec<Value>,
    /// The swept key along the columns; `null` without stored axes (one column).
    pub columns_key: Option<String>,
    /// Its values, one per column (empty: one column).
    pub column_values: Vec<Value>,
    /// One grid per combination of the further keys' values (one facet, with no `fixed` keys, when there are
    /// at most two keys).
    pub facets: Vec<GridFacet>,
    /// The best cell value over all facets, by `direction`.
    pub best: Option<f64>,
    /// The smallest and largest cell values (the colour scale's ends).
    pub range: Option<[f64; 2]>,
    /// The session has no stored sweep axes: its runs are one row.
    pub no_axes: bool,
}

/// One facet: the further keys' values it fixes, and its cells by row, then column.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GridFacet {
    pub fixed: Vec<FixedKey>,
    pub cells: Vec<Vec<GridCell>>,
}

/// A swept key held at one value in a facet.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FixedKey {
    pub key: String,
    pub value: Value,
}

/// One point of the sweep: its runs, their statuses and the median of their metric values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GridCell {
    pub experiments: Vec<ExperimentId>,
    pub statuses: Vec<ExperimentStatus>,
    /// The median of the runs' medians of the metric; `null` before any run logged it.
    pub value: Option<f64>,
    /// This cell holds the best value.
    pub best: bool,
}

/// One swept key and its values, from the session's stored sweep.
struct Axis {
    key: String,
    values: Vec<Value>,
}

fn axes(spec: &Value) -> Vec<Axis> {
    let Some(list) = spec.get("axes").and_then(Value::as_array) else { return Vec::new() };
    list.iter()
        .filter_map(|a| {
            let key = a.get("key")?.as_str()?.to_string();
            let values = a.get("values")?.as_array()?.clone();
            Some(Axis { key, values })
        })
        .collect()
}

/// The value at a dotted spec path (`config.batch_size`; a number segment indexes a list).
fn at<'a>(spec: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(spec, |v, seg| match v {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => a.get(seg.parse::<usize>().ok()?),
        _ => None,
    })
}

/// The metric to show (see the module doc).
fn choose_metric(asked: Option<&str>, goal_metric: Option<&str>, metrics: &BTreeSet<String>) -> String {
    asked
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_string)
        .or(goal_metric.filter(|m| metrics.contains(*m)).map(str::to_string))
        .or_else(|| {
            [crate::requests::DEFAULT_METRIC, "tokens_per_s", "loss"]
                .iter()
                .find(|m| metrics.contains(**m))
                .map(|m| m.to_string())
        })
        .or_else(|| metrics.iter().next().cloned())
        .unwrap_or_else(crate::requests::default_metric)
}

/// The grid of a session's runs (`sweep`: the session's stored spec, with its `axes`).
pub fn session_grid(
    sweep: &Value,
    runs: &[(&ExperimentRecord, &MetricSummaries)],
    asked: Option<&str>,
    goal_metric: Option<&str>,
) -> SessionGrid {
    let metrics: BTreeSet<String> = runs.iter().flat_map(|(_, m)| m.keys().cloned()).collect();
    let metric = choose_metric(asked, goal_metric, &metrics);
    let direction = direction_for(&metric);
    let axes = axes(sweep);
    let (rows_axis, cols_axis, facet_axes) = match axes.len() {
        0 => (None, None, &axes[..0]),
        1 => (None, Some(&axes[0]), &axes[..0]),
        _ => (Some(&axes[0]), Some(&axes[1]), &axes[2..]),
    };
    // Facets: every combination of the further axes' values.
    let mut combos: Vec<Vec<FixedKey>> = vec![Vec::new()];
    for a in facet_axes {
        combos = combos
            .into_iter()
            .flat_map(|f| {
                a.values.iter().map(move |v| {
                    let mut f = f.clone();
                    f.push(FixedKey { key: a.key.clone(), value: v.clone() });
                    f
                })
            })
            .collect();
    }
    let row_values: Vec<Option<&Value>> = match rows_axis {
        Some(a) => a.values.iter().map(Some).collect(),
        None => vec![None],
    };
    let col_values: Vec<Option<&Value>> = match cols_axis {
        Some(a) => a.values.iter().map(Some).collect(),
        None => vec![None],
    };
    let place = |axis: Option<&Axis>, values: &[Option<&Value>], spec: &Value| match axis {
        Some(a) => values.iter().position(|v| at(spec, &a.key) == *v),
        None => Some(0),
    };
    let mut facets = Vec::new();
    for fixed in combos {
        let mut cells: Vec<Vec<GridCell>> =
            row_values.iter().map(|_| col_values.iter().map(|_| GridCell::default()).collect()).collect();
        let mut values: Vec<Vec<Vec<f64>>> =
            row_values.iter().map(|_| col_values.iter().map(|_| Vec::new()).collect()).collect();
        for (record, summaries) in runs {
            if fixed.iter().any(|f| at(&record.spec, &f.key) != Some(&f.value)) {
                continue;
            }
            let (Some(ri), Some(ci)) =
                (place(rows_axis, &row_values, &record.spec), place(cols_axis, &col_values, &record.spec))
            else {
                continue;
            };
            cells[ri][ci].experiments.push(record.id);
            cells[ri][ci].statuses.push(record.status);
            if let Some(v) = summaries.get(&metric).map(|m| m.median) {
                values[ri][ci].push(v);
            }
        }
        for (row, vs) in cells.iter_mut().zip(values) {
            for (cell, v) in row.iter_mut().zip(vs) {
                cell.value = median(&v);
            }
        }
        facets.push(GridFacet { fixed, cells });
    }
    let all: Vec<f64> = facets.iter().flat_map(|f| f.cells.iter().flatten().filter_map(|c| c.value)).collect();
    let (lo, hi) = all.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(*v), h.max(*v)));
    let range = (lo <= hi).then_some([lo, hi]);
    let best = range.and_then(|[lo, hi]| match direction {
        Some(Direction::LowerIsBetter) => Some(lo),
        Some(Direction::HigherIsBetter) => Some(hi),
        None => None,
    });
    for cell in facets.iter_mut().flat_map(|f| f.cells.iter_mut().flatten()) {
        cell.best = best.is_some() && cell.value == best;
    }
    SessionGrid {
        metric,
        metrics: metrics.into_iter().collect(),
        direction,
        rows_key: rows_axis.map(|a| a.key.clone()),
        row_values: rows_axis.map(|a| a.values.clone()).unwrap_or_default(),
        columns_key: cols_axis.map(|a| a.key.clone()),
        column_values: cols_axis.map(|a| a.values.clone()).unwrap_or_default(),
        facets,
        best,
        range,
        no_axes: axes.is_empty(),
    }
}

/// A swept value as a label: a string without its quotes, anything else as JSON.
pub fn value_label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
