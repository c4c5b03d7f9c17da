//! Long series thinned for charts and for the JSON that feeds them: at most about `max` points, each bucket kept
//! as its lowest and highest point, so spikes survive. The experiment page's metric charts (`experiments`) and
//! the SVG line charts (`render::svg`) both thin with it.

/// At most about `max` points of `points` (x order kept): the points split into `max / 2` buckets, each kept
/// as its lowest and highest point in x order; the first and last points are always kept.
pub fn downsample(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    let max = max.max(4);
    if points.len() <= max {
        return points.to_vec();
    }
    let buckets = max / 2;
    let size = points.len().div_ceil(buckets);
    let mut out = Vec::with_capacity(max + 2);
    for chunk in points.chunks(size) {
        let (mut lo, mut hi) = (0, 0);
        for (i, p) in chunk.iter().enumerate() {
            if p.1 < chunk[lo].1 {
                lo = i;
            }
            if p.1 > chunk[hi].1 {
                hi = i;
            }
        }
        let (a, b) = (lo.min(hi), lo.max(hi));
        out.push(chunk[a]);
        if b != a {
            out.push(chunk[b]);
        }
    }
    if out.first() != points.first() {
        out.insert(0, points[0]);
    }
    if out.last() != points.last() {
        out.push(points[points.len() - 1]);
    }
    out
}
