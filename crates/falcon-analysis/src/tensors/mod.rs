//! Tensor dump comparison: two dumps (`.npy`, `.npz`, `.safetensors`, or a directory of `.npy` files),
//! matched by name (plus an optional mapping file), compared tensor by tensor. A is the reference.
//!
//! Per tensor, computed in `f64` over chunks that worker threads read with positional reads (so memory stays
//! at a few MiB per thread; only a deflated `.npz` member, or a pair stored in different memory orders, is
//! held in memory whole, one pair at a time per worker): max abs error (with its index and the values
//! there), max rel error |b−a|/|a| over a ≠ 0 (with the count of a == 0, b ≠ 0 apart), mean abs error,
//! relative L2 ‖b−a‖/‖a‖, cosine similarity, max ULP distance in the tensor's dtype, `allclose` with `torch.testing.assert_close`'s
//! default tolerances per dtype (or the caller's), the fraction of close elements, and NaN/Inf counts. The
//! error metrics are over positions where both values are finite; NaN positions must match to be close
//! (`metrics.rs` has the exact definitions). Results do not depend on the number of threads: chunk results
//! are merged in element order.
//!
//! Readers accept `.npy` format 1.0/2.0/3.0, both byte orders, C and Fortran order, `f2 f4 f8`, ints,
//! `b1`, and bfloat16 as numpy writes an `ml_dtypes.bfloat16` (JAX) array (`<V2`); safetensors `F16 BF16
//! F32 F64`, ints and `BOOL`. Malformed files give [`AnalysisError::Invalid`] naming the file and the
//! problem, never a panic.

mod dtype;
mod dump;
mod mapping;
mod metrics;
mod npy;

use crate::error::{AnalysisError, Result};
use dtype::{pair_tolerance, ulp_dtype, DType};
use dump::{Data, Dump, Entry};
use metrics::{accumulate_bytes, Kernel, Partial, Scratch};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Elements per unit of parallel work (1 MiB of f32 per side).
const CHUNK: u64 = 1 << 18;

/// How to compare.
#[derive(Clone, Debug, Default)]
pub struct TensorOptions {
    /// Name mapping file (`A_NAME B_NAME` or `A_NAME=B_NAME` per line).
    pub map: Option<PathBuf>,
    /// Relative tolerance for every tensor (default: torch's per dtype).
    pub rtol: Option<f64>,
    /// Absolute tolerance for every tensor (default: torch's per dtype).
    pub atol: Option<f64>,
    /// Worker threads (default: the available parallelism).
    pub threads: Option<usize>,
    /// The cap on the bytes the deflated members of an `.npz` inflate to (default:
    /// [`crate::limits::DEFAULT_MAX_DECOMPRESSED_BYTES`]).
    pub max_decompressed_bytes: Option<u64>,
}

/// The comparison of two dumps.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct TensorReport {
    /// The reference dump, as given.
    pub a: String,
    /// The candidate dump, as given.
    pub b: String,
    /// Compared tensors, worst first: failing ones first, then by relative L2 error, largest first.
    pub tensors: Vec<TensorDiff>,
    /// Names in A with no counterpart in B.
    pub only_in_a: Vec<String>,
    /// Names in B with no counterpart in A.
    pub only_in_b: Vec<String>,
    /// Matched names whose shapes differ (not compared).
    pub shape_mismatches: Vec<ShapeMismatch>,
    /// Tensors that pass `allclose`.
    pub passed: usize,
    /// Tensors that fail `allclose`.
    pub failed: usize,
    /// Data bytes read: A's and B's of every compared tensor.
    pub bytes_compared: u64,
    /// Wall time of the comparison (opening, matching, reading, computing).
    pub seconds: f64,
    /// Things worth knowing that are not errors (how a dtype was read, mapping lines that matched nothing).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl TensorReport {
    /// Whether the dumps disagree: a tensor fails `allclose`, shapes differ, or no tensor could be compared
    /// although the dumps hold some.
    pub fn mismatched(&self) -> bool {
        self.failed > 0
            || !self.shape_mismatches.is_empty()
            || (self.tensors.is_empty() && !(self.only_in_a.is_empty() && self.only_in_b.is_empty()))
    }
}

/// One compared tensor.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct TensorDiff {
    /// The name in B.
    pub name: String,
    /// The name in A (differs from `name` when the mapping paired them).
    pub a_name: String,
    /// A's dtype (`f32`, `bf16`, `i64`, …).
    pub dtype: String,
    /// B's dtype when it differs from A's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype_b: Option<String>,
    pub shape: Vec<usize>,
    pub elements: u64,
    /// max |b − a| over positions where both are finite (0 when there are none).
    pub max_abs_err: f64,
    /// Where it occurs (multi-index in the tensor's shape); `None` when no position is finite on both sides.
    pub max_abs_err_index: Option<Vec<usize>>,
    /// A's value there.
    pub a_at_max_abs_err: Option<f64>,
    /// B's value there.
    pub b_at_max_abs_err: Option<f64>,
    /// max |b − a|/|a| over finite positions with a ≠ 0; `None` when there are none.
    pub max_rel_err: Option<f64>,
    /// Finite positions with a == 0 and b ≠ 0 (left out of `max_rel_err`).
    pub zero_a_nonzero_b: u64,
    /// mean |b − a| over positions where both are finite.
    pub mean_abs_err: f64,
    /// ‖b − a‖₂ / ‖a‖₂ (finite positions); 0 when both norms are 0, `None` when only ‖a‖ is (infinite).
    pub rel_l2: Option<f64>,
    /// a·b / (‖a‖‖b‖) (finite positions); `None` when either norm is 0.
    pub cosine: Option<f64>,
    /// Largest distance in units in the last place of the dtype (of the coarser dtype when they differ);
    /// `None` for integers and booleans.
    pub max_ulp: Option<u64>,
    /// The tolerances `allclose` used.
    pub rtol: f64,
    pub atol: f64,
    /// Every element close: |b − a| ≤ atol + rtol·|a|, NaN where the other is NaN, equal infinities.
    pub allclose: bool,
    /// Share of close elements (1 for an empty tensor).
    pub close_fraction: f64,
    pub nan_a: u64,
    pub nan_b: u64,
    pub inf_a: u64,
    pub inf_b: u64,
}

/// A matched pair with different shapes.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ShapeMismatch {
    pub name: String,
    pub a_name: String,
    pub shape_a: Vec<usize>,
    pub shape_b: Vec<usize>,
    pub dtype_a: String,
    pub dtype_b: String,
}

/// Compares dump `b` against the reference dump `a`.
pub fn compare_dumps(a: &Path, b: &Path, opts: &TensorOptions) -> Result<TensorReport> {
    let started = Instant::now();
    for (name, v) in [("rtol", opts.rtol), ("atol", opts.atol)] {
        if let Some(v) = v {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(AnalysisError::Invalid(format!("{name} must be a finite number ≥ 0, got {v}")));
            }
        }
    }
    let cap = opts.max_decompressed_bytes.unwrap_or(crate::limits::DEFAULT_MAX_DECOMPRESSED_BYTES);
    let da = dump::open(a, "A", cap)?;
    let db = dump::open(b, "B", cap)?;
    let map = opts.map.as_deref().map(mapping::read).transpose()?;
    let mut notes: Vec<String> = da.notes.iter().chain(&db.notes).cloned().collect();
    for (side, d) in [("A", &da), ("B", &db)] {
        let voids: Vec<&str> = d.entries.iter().filter(|e| e.void_as_bf16).map(|e| e.name.as_str()).collect();
        if !voids.is_empty() {
            notes.push(format!(
                "{side}: {} read as bfloat16 (numpy's `V2`, as np.save writes ml_dtypes/JAX bfloat16 arrays)",
                list_names(&voids)
            ));
        }
    }
    let pairs = match_names(&da, &db, map.as_deref(), &mut notes);

    let mut jobs = Vec::new();
    let mut shape_mismatches = Vec::new();
    for (ea, eb) in &pairs.matched {
        if ea.shape != eb.shape {
            shape_mismatches.push(ShapeMismatch {
                name: eb.name.clone(),
                a_name: ea.name.clone(),
                shape_a: ea.shape.clone(),
                shape_b: eb.shape.clone(),
                dtype_a: ea.stored.dtype.name().into(),
                dtype_b: eb.stored.dtype.name().into(),
            });
            continue;
        }
        let (trt, tat) = pair_tolerance(ea.stored.dtype, eb.stored.dtype);
        let kernel = Kernel {
            a: ea.stored,
            b: eb.stored,
            ulp: ulp_dtype(ea.stored.dtype, eb.stored.dtype),
            rtol: opts.rtol.unwrap_or(trt),
            atol: opts.atol.unwrap_or(tat),
        };
        jobs.push(Job { a: ea, b: eb, kernel, reorder: ea.fortran_order != eb.fortran_order });
    }
    let threads = opts.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    let partials = run(&jobs, threads)?;

    let mut tensors: Vec<TensorDiff> = jobs.iter().zip(&partials).map(|(j, p)| finish(j, p)).collect();
    tensors.sort_by(|x, y| {
        x.allclose
            .cmp(&y.allclose)
            .then_with(|| y.rel_l2.unwrap_or(f64::INFINITY).total_cmp(&x.rel_l2.unwrap_or(f64::INFINITY)))
            .then_with(|| x.name.cmp(&y.name))
    });
    let failed = tensors.iter().filter(|t| !t.allclose).count();
    let bytes_compared = jobs.iter().map(|j| j.a.data_len() + j.b.data_len()).sum();
    Ok(TensorReport {
        a: a.display().to_string(),
        b: b.display().to_string(),
        passed: tensors.len() - failed,
        failed,
        tensors,
        only_in_a: pairs.only_a,
        only_in_b: pairs.only_b,
        shape_mismatches,
        bytes_compared,
        seconds: started.elapsed().as_secs_f64(),
        notes,
    })
}

fn list_names(names: &[&str]) -> String {
    const SHOW: usize = 5;
    let mut s = names.iter().take(SHOW).map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
    if names.len() > SHOW {
        s.push_str(&format!(" and {} more", names.len() - SHOW));
    }
    s
}

struct Pairs<'a> {
    matched: Vec<(&'a Entry, &'a Entry)>,
    only_a: Vec<String>,
    only_b: Vec<String>,
}

/// Pairs A's tensors with B's: through the mapping where it names the A tensor, else by the same name. Two
/// single `.npy` files pair whatever their names.
fn match_names<'a>(
    da: &'a Dump,
    db: &'a Dump,
    map: Option<&[mapping::MapEntry]>,
    notes: &mut Vec<String>,
) -> Pairs<'a> {
    if da.kind == dump::Kind::Npy && db.kind == dump::Kind::Npy {
        return Pairs { matched: vec![(&da.entries[0], &db.entries[0])], only_a: vec![], only_b: vec![] };
    }
    let by_a: BTreeMap<&str, &Entry> = da.entries.iter().map(|e| (e.name.as_str(), e)).collect();
    let by_b: BTreeMap<&str, &Entry> = db.entries.iter().map(|e| (e.name.as_str(), e)).collect();
    let mut target: BTreeMap<&str, &str> = BTreeMap::new();
    for m in map.unwrap_or_default() {
        match (by_a.contains_key(m.a.as_str()), by_b.contains_key(m.b.as_str())) {
            (true, true) => {}
            (false, _) => notes.push(format!("map line {}: `{}` is not in A", m.line, m.a)),
            (true, false) => notes.push(format!("map line {}: `{}` is not in B", m.line, m.b)),
        }
        target.insert(m.a.as_str(), m.b.as_str());
    }
    // B names a mapping claims are not matched by identity to another A tensor.
    let claimed: BTreeSet<&str> = target.values().copied().collect();
    let mut used_b = BTreeSet::new();
    let mut matched = Vec::new();
    let mut only_a = Vec::new();
    for ea in &da.entries {
        let name = match target.get(ea.name.as_str()) {
            Some(t) => Some(*t),
            None if !claimed.contains(ea.name.as_str()) => Some(ea.name.as_str()),
            None => None,
        };
        match name.and_then(|n| by_b.get(n)) {
            Some(eb) => {
                used_b.insert(eb.name.as_str());
                matched.push((ea, *eb));
            }
            None => only_a.push(ea.name.clone()),
        }
    }
    let only_b = db.entries.iter().filter(|e| !used_b.contains(e.name.as_str())).map(|e| e.name.clone()).collect();
    Pairs { matched, only_a, only_b }
}

/// One pair to compare.
struct Job<'a> {
    a: &'a Entry,
    b: &'a Entry,
    kernel: Kernel,
    /// The sides are in different memory orders: both are read into memory in C order.
    reorder: bool,
}

impl Job<'_> {
    fn chunks(&self) -> u64 {
        self.a.elements.div_ceil(CHUNK)
    }

    fn load(&self) -> Result<(Data, Data)> {
        if self.reorder {
            Ok((self.a.load_c_order()?, self.b.load_c_order()?))
        } else {
            Ok((self.a.load()?, self.b.load()?))
        }
    }

    /// Whether flat indices count in Fortran order.
    fn fortran(&self) -> bool {
        self.a.fortran_order && !self.reorder
    }
}

/// A job's loaded data while some of its chunks are still to do.
struct Slot {
    data: Mutex<Option<Arc<(Data, Data)>>>,
    remaining: AtomicU64,
}

/// Computes every job's metrics on `threads` workers that take chunks in order across all jobs.
fn run(jobs: &[Job<'_>], threads: usize) -> Result<Vec<Partial>> {
    let mut starts = Vec::with_capacity(jobs.len());
    let mut total = 0u64;
    for j in jobs {
        starts.push(total);
        total += j.chunks();
    }
    let slots: Vec<Slot> =
        jobs.iter().map(|j| Slot { data: Mutex::new(None), remaining: AtomicU64::new(j.chunks()) }).collect();
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let first_error: Mutex<Option<AnalysisError>> = Mutex::new(None);
    let workers = usize::try_from(total).unwrap_or(usize::MAX).min(threads).max(1);

    let work = || -> Vec<(usize, u64, Partial)> {
        let mut out = Vec::new();
        let (mut buf_a, mut buf_b) = (Vec::new(), Vec::new());
        let mut scratch = Scratch::default();
        while !stop.load(Ordering::Relaxed) {
            let g = next.fetch_add(1, Ordering::Relaxed);
            if g >= total {
                break;
            }
            // The last job starting at or before g (a job without chunks shares its start with the next one).
            let ji = starts.partition_point(|&s| s <= g) - 1;
            let chunk = g - starts[ji];
            match chunk_partial(&jobs[ji], &slots[ji], chunk, &mut buf_a, &mut buf_b, &mut scratch) {
                Ok(p) => out.push((ji, chunk, p)),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
                    slot.get_or_insert(e);
                    break;
                }
            }
        }
        out
    };

    let mut results: Vec<(usize, u64, Partial)> = if workers <= 1 {
        work()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers).map(|_| s.spawn(work)).collect();
            handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
        })
    };
    if let Some(e) = first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    results.sort_by_key(|(j, c, _)| (*j, *c));
    let mut partials = vec![Partial::default(); jobs.len()];
    for (j, _, p) in &results {
        partials[*j].merge(p);
    }
    Ok(partials)
}

/// The metrics of one chunk of a job (loading the job's data first if no worker has yet).
fn chunk_partial(
    job: &Job<'_>,
    slot: &Slot,
    chunk: u64,
    buf_a: &mut Vec<u8>,
    buf_b: &mut Vec<u8>,
    scratch: &mut Scratch,
) -> Result<Partial> {
    let data = {
        let mut guard = slot.data.lock().unwrap_or_else(|p| p.into_inner());
        match &*guard {
            Some(d) => d.clone(),
            None => {
                let d = Arc::new(job.load()?);
                *guard = Some(d.clone());
                d
            }
        }
    };
    let start = chunk * CHUNK;
    let n = CHUNK.min(job.a.elements - start);
    let (sa, sb) = (job.a.stored.dtype.size() as u64, job.b.stored.dtype.size() as u64);
    let a = data.0.bytes(start * sa, (n * sa) as usize, buf_a)?;
    let b = data.1.bytes(start * sb, (n * sb) as usize, buf_b)?;
    let mut p = Partial::default();
    accumulate_bytes(&job.kernel, a, b, start, &mut p, scratch);
    drop(data);
    if slot.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
        // The last chunk: free the job's memory (decompressed or reordered data).
        *slot.data.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
    Ok(p)
}

/// A flat element index as a multi-index of `shape` (`fortran`: the first index moves fastest).
fn unravel(mut flat: u64, shape: &[usize], fortran: bool) -> Vec<usize> {
    let mut idx = vec![0usize; shape.len()];
    let dims: Box<dyn Iterator<Item = usize>> =
        if fortran { Box::new(0..shape.len()) } else { Box::new((0..shape.len()).rev()) };
    for d in dims {
        let n = shape[d].max(1) as u64;
        idx[d] = (flat % n) as usize;
        flat /= n;
    }
    idx
}

fn finish(j: &Job<'_>, p: &Partial) -> TensorDiff {
    let (ta, tb) = (j.a.stored.dtype, j.b.stored.dtype);
    let found = p.max_abs_at != u64::MAX;
    let norm_a = p.sum_a2.sqrt();
    let norm_b = p.sum_b2.sqrt();
    let norm_d = p.sum_d2.sqrt();
    let rel_l2 = if norm_a > 0.0 {
        Some(norm_d / norm_a).filter(|v| v.is_finite())
    } else if norm_d == 0.0 {
        Some(0.0)
    } else {
        None
    };
    let cosine = (norm_a > 0.0 && norm_b > 0.0).then(|| p.sum_ab / (norm_a * norm_b)).filter(|v| v.is_finite());
    TensorDiff {
        name: j.b.name.clone(),
        a_name: j.a.name.clone(),
        dtype: ta.name().into(),
        dtype_b: (ta != tb).then(|| tb.name().into()),
        shape: j.a.shape.clone(),
        elements: j.a.elements,
        max_abs_err: if found { p.max_abs } else { 0.0 },
        max_abs_err_index: found.then(|| unravel(p.max_abs_at, &j.a.shape, j.fortran())),
        a_at_max_abs_err: found.then_some(p.a_at),
        b_at_max_abs_err: found.then_some(p.b_at),
        max_rel_err: (p.max_rel >= 0.0).then_some(p.max_rel),
        zero_a_nonzero_b: p.zero_a,
        mean_abs_err: if p.finite > 0 { p.sum_abs / p.finite as f64 } else { 0.0 },
        rel_l2,
        cosine,
        max_ulp: j.kernel.ulp.map(|_: DType| p.max_ulp),
        rtol: j.kernel.rtol,
        atol: j.kernel.atol,
        allclose: p.close == j.a.elements,
        close_fraction: if j.a.elements > 0 { p.close as f64 / j.a.elements as f64 } else { 1.0 },
        nan_a: p.nan_a,
        nan_b: p.nan_b,
        inf_a: p.inf_a,
        inf_b: p.inf_b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unravel_in_both_orders() {
        assert_eq!(unravel(5, &[2, 3], false), [1, 2]);
        assert_eq!(unravel(5, &[2, 3], true), [1, 2]);
        assert_eq!(unravel(1, &[2, 3], false), [0, 1]);
        assert_eq!(unravel(1, &[2, 3], true), [1, 0]);
        assert_eq!(unravel(0, &[], false), Vec::<usize>::new());
    }
}
