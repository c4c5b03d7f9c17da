//! The scheduling decision: which queued job goes to which pool, in memory and without I/O.
//!
//! Jobs are taken highest priority first, FIFO within a priority. A job's candidates are the pools that offer
//! its accelerator type, lie in one of its zones (any zone when it names none), were not left behind by a
//! capacity failover, and can ever hold it. Among candidates with enough free chips it picks the most preferred
//! zone, then the fewest jobs already waiting per free chip, then the most free chips, then the name. It never
//! exceeds a pool's capacity; a job that fits nowhere now waits, with the reason. A job that no pool could ever
//! hold, whatever their load ([`never_fits`]: no pool offers its accelerator in its zones, or none is large
//! enough), is [`Decision::Unplaceable`], so it fails instead of waiting forever.

use crate::pool::Pool;
use falcon_core::config::PoolBackend;
use falcon_core::ids::JobId;
use serde::Serialize;
use std::collections::HashMap;

/// A queued job as the scheduler sees it.
#[derive(Debug, Clone)]
pub struct QueuedJob<'a> {
    /// Id.
    pub id: JobId,
    /// Higher first.
    pub priority: i64,
    /// Canonical accelerator type name.
    pub accelerator: &'a str,
    /// Chips needed in all.
    pub chips: u32,
    /// Allowed zones, most preferred first (empty: any).
    pub zones: &'a [String],
    /// Pools it must not go back to.
    pub excluded: &'a [String],
    /// Whether it names a container image (Kubernetes pools need one).
    pub has_image: bool,
}

/// Jobs that wait for the same reason: accelerator, chips, zones, excluded pools, whether it has an image.
type ReasonKey<'a> = (&'a str, u32, &'a [String], &'a [String], bool);

/// What each pool already carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolLoad {
    /// Chips held by jobs placed on it and not finished.
    pub used: u32,
    /// Jobs placed on it that the backend has not started yet (its queue depth).
    pub waiting: u32,
}

/// The decision for one job.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Submit to this pool.
    Place {
        /// The job.
        job: JobId,
        /// Index into the pool list.
        pool: usize,
        /// Why this pool (for `why` in status).
        why: String,
    },
    /// No pool could ever run it, whatever their load: fail it with the reason (`no pool offers h100-80gb-8;
    /// the pools offer: …`).
    Unplaceable {
        /// The job.
        job: JobId,
        /// Why, naming what the pools offer.
        reason: String,
    },
    /// Stay queued.
    Wait {
        /// The job.
        job: JobId,
        /// Why (`no pool offers v6e-8 in us-east5`).
        reason: String,
    },
}

/// Decides placements for `jobs` given the pools and their current load; `load` is updated with the
/// placements made, so a pass never over-commits a pool.
pub fn schedule(jobs: &[QueuedJob<'_>], pools: &[Pool], load: &mut [PoolLoad]) -> Vec<Decision> {
    assert_eq!(pools.len(), load.len(), "one load entry per pool");
    let mut offering: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, pool) in pools.iter().enumerate() {
        for accel in &pool.accelerators {
            offering.entry(accel.as_str()).or_default().push(i);
        }
    }
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| jobs[b].priority.cmp(&jobs[a].priority).then(jobs[a].id.cmp(&jobs[b].id)));

    let mut decisions = Vec::with_capacity(jobs.len());
    let empty = Vec::new();
    // Buffers reused across jobs, and waiting reasons reused while no placement changes the load: after the
    // pools fill up, thousands of queued jobs share a handful of reasons.
    let (mut in_zone, mut usable, mut big_enough) = (Vec::new(), Vec::new(), Vec::new());
    let mut generation = 0u64;
    let mut reasons: HashMap<ReasonKey<'_>, (u64, String)> = HashMap::new();
    // Jobs that fit no pool at all, by what they ask for (independent of the load).
    let mut never: HashMap<(&str, u32, &[String], bool), Option<String>> = HashMap::new();
    for j in order {
        let job = &jobs[j];
        let never_key = (job.accelerator, job.chips, job.zones, job.has_image);
        if let Some(reason) = never.entry(never_key).or_insert_with(|| never_fits(job, pools)) {
            decisions.push(Decision::Unplaceable { job: job.id, reason: reason.clone() });
            continue;
        }
        let key = (job.accelerator, job.chips, job.zones, job.excluded, job.has_image);
        if let Some((g, reason)) = reasons.get(&key) {
            if *g == generation {
                decisions.push(Decision::Wait { job: job.id, reason: reason.clone() });
                continue;
            }
        }
        let offered = offering.get(job.accelerator).unwrap_or(&empty);
        let zone_rank = |p: &Pool| {
            if job.zones.is_empty() {
                Some(0)
            } else {
                job.zones.iter().position(|z| *z == p.zone)
            }
        };
        in_zone.clear();
        in_zone.extend(offered.iter().copied().filter(|&p| zone_rank(&pools[p]).is_some()));
        usable.clear();
        usable.extend(
            in_zone
                .iter()
                .copied()
                .filter(|&p| !job.excluded.contains(&pools[p].name))
                .filter(|&p| job.has_image || pools[p].backend != PoolBackend::Kubernetes),
        );
        big_enough.clear();
        big_enough.extend(usable.iter().copied().filter(|&p| pools[p].capacity >= job.chips));
        let free = |p: usize| pools[p].capacity - load[p].used.min(pools[p].capacity);
        let best = big_enough.iter().copied().filter(|&p| free(p) >= job.chips).min_by(|&a, &b| {
            let rank = |p: usize| zone_rank(&pools[p]).unwrap_or(usize::MAX);
            let per_free = |p: usize| f64::from(load[p].waiting) / f64::from(free(p));
            rank(a)
                .cmp(&rank(b))
                .then(per_free(a).total_cmp(&per_free(b)))
                .then(free(b).cmp(&free(a)))
                .then(pools[a].name.cmp(&pools[b].name))
        });
        if let Some(p) = best {
            let before = free(p);
            load[p].used += job.chips;
            load[p].waiting += 1;
            generation += 1;
            decisions.push(Decision::Place {
                job: job.id,
                pool: p,
                why: format!(
                    "{} has {before} of {} chips free in zone {}",
                    pools[p].name, pools[p].capacity, pools[p].zone
                ),
            });
            continue;
        }
        let reason = wait_reason(job, pools, load, &in_zone, &usable, &big_enough);
        reasons.insert(key, (generation, reason.clone()));
        decisions.push(Decision::Wait { job: job.id, reason });
    }
    decisions
}

/// Why `job` can never run on any of `pools`, whatever their load and the pools it moved away from: no pool
/// offers its accelerator in its zones, the ones that do are Kubernetes pools and it names no image, or none of
/// them has as many chips as it needs. The reason names what the pools offer. `None` when some pool could hold
/// it (now, or once chips free up), and with no pools at all (nothing is known about where it may run).
pub fn never_fits(job: &QueuedJob<'_>, pools: &[Pool]) -> Option<String> {
    if pools.is_empty() {
        return None;
    }
    let in_zone: Vec<&Pool> = pools
        .iter()
        .filter(|p| p.accelerators.iter().any(|a| a == job.accelerator))
        .filter(|p| job.zones.is_empty() || job.zones.contains(&p.zone))
        .collect();
    let offered = crate::pool::describe_offers(pools);
    if in_zone.is_empty() {
        let where_ = if job.zones.is_empty() { String::new() } else { format!(" in {}", job.zones.join(", ")) };
        return Some(format!("no pool offers {}{where_}; the pools offer: {offered}", job.accelerator));
    }
    let usable: Vec<&Pool> =
        in_zone.iter().copied().filter(|p| job.has_image || p.backend != PoolBackend::Kubernetes).collect();
    if usable.is_empty() {
        let names: Vec<&str> = in_zone.iter().map(|p| p.name.as_str()).collect();
        return Some(format!(
            "the pools offering {} ({}) are Kubernetes pools and the job names no image",
            job.accelerator,
            names.join(", ")
        ));
    }
    let largest = usable.iter().max_by_key(|p| p.capacity).expect("usable is not empty");
    (largest.capacity < job.chips).then(|| {
        format!(
            "no pool is large enough: needs {} chips of {} but the largest pool offering it (`{}`) has {}; the pools \
             offer: {offered}",
            job.chips, job.accelerator, largest.name, largest.capacity
        )
    })
}

/// Why a job that could not be placed waits, from the candidate lists computed for it.
fn wait_reason(
    job: &QueuedJob<'_>,
    pools: &[Pool],
    load: &[PoolLoad],
    in_zone: &[usize],
    usable: &[usize],
    big_enough: &[usize],
) -> String {
    if in_zone.is_empty() {
        let where_ = if job.zones.is_empty() { String::new() } else { format!(" in {}", job.zones.join(", ")) };
        return format!("no pool offers {}{where_}", job.accelerator);
    }
    let names = |list: &[usize]| list.iter().map(|&p| pools[p].name.as_str()).collect::<Vec<_>>().join(", ");
    if usable.is_empty() {
        return if in_zone.iter().all(|&p| job.excluded.contains(&pools[p].name)) {
            format!("no pool left to try for {}: already moved away from {}", job.accelerator, names(in_zone))
        } else {
            format!(
                "pools offering {} ({}) are Kubernetes pools and the job names no image",
                job.accelerator,
                names(in_zone)
            )
        };
    }
    if big_enough.is_empty() {
        let largest = usable.iter().map(|&p| &pools[p]).max_by_key(|p| p.capacity).expect("usable is not empty");
        return format!(
            "needs {} chips but the largest pool offering {} (`{}`) has {}",
            job.chips, job.accelerator, largest.name, largest.capacity
        );
    }
    let state: Vec<String> = big_enough
        .iter()
        .map(|&p| {
            format!("{} {}/{} free", pools[p].name, pools[p].capacity.saturating_sub(load[p].used), pools[p].capacity)
        })
        .collect();
    format!("waiting for {} free chips of {} ({})", job.chips, job.accelerator, state.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use falcon_core::config::Platform;
    use std::collections::BTreeMap;

    fn pool(name: &str, zone: &str, accels: &[&str], capacity: u32) -> Pool {
        pool_on(PoolBackend::Slurm, name, zone, accels, capacity)
    }

    fn pool_on(backend: PoolBackend, name: &str, zone: &str, accels: &[&str], capacity: u32) -> Pool {
        Pool::from_config(&falcon_core::config::PoolConfig {
            name: name.into(),
            backend,
            zone: zone.into(),
            platform: Platform::Tpu,
            accelerators: accels.iter().map(|s| s.to_string()).collect(),
            capacity,
            settings: BTreeMap::new(),
        })
        .unwrap()
    }

    fn job<'a>(id: i64, priority: i64, accel: &'a str, chips: u32, zones: &'a [String]) -> QueuedJob<'a> {
        QueuedJob { id: JobId(id), priority, accelerator: accel, chips, zones, excluded: &[], has_image: true }
    }

    fn placed(d: &[Decision]) -> Vec<(i64, usize)> {
        d.iter()
            .filter_map(|d| if let Decision::Place { job, pool, .. } = d { Some((job.0, *pool)) } else { None })
            .collect()
    }

    #[test]
    fn zone_preference_comes_first_then_free_capacity() {
        let pools = [
            pool("a", "us-east5-b", &["v6e-8"], 64),
            pool("b", "us-west4-a", &["v6e-8"], 64),
            pool("c", "us-west4-a", &["v6e-8"], 128),
        ];
        let zones = vec!["us-west4-a".to_string(), "us-east5-b".to_string()];
        let mut load = [PoolLoad::default(); 3];
        let d = schedule(&[job(1, 0, "v6e-8", 8, &zones)], &pools, &mut load);
        assert_eq!(placed(&d), [(1, 2)], "preferred zone, then the most free chips");
        let mut load = [PoolLoad::default(), PoolLoad { used: 64, waiting: 0 }, PoolLoad { used: 128, waiting: 0 }];
        let d = schedule(&[job(1, 0, "v6e-8", 8, &zones)], &pools, &mut load);
        assert_eq!(placed(&d), [(1, 0)], "full preferred pools: the next zone");
    }

    #[test]
    fn never_over_capacity_and_priority_then_fifo() {
        let pools = [pool("a", "z", &["v6e-8"], 16)];
        let mut load = [PoolLoad::default()];
        let jobs = [job(1, 0, "v6e-8", 8, &[]), job(2, 5, "v6e-8", 8, &[]), job(3, 5, "v6e-8", 8, &[])];
        let d = schedule(&jobs, &pools, &mut load);
        assert_eq!(placed(&d), [(2, 0), (3, 0)]);
        assert!(
            matches!(&d[2], Decision::Wait { job, reason } if job.0 == 1 && reason.contains("waiting for 8 free chips")),
            "{d:?}"
        );
        assert_eq!(load[0].used, 16);
    }

    #[test]
    fn queue_depth_per_free_chip_breaks_ties() {
        let pools = [pool("a", "z", &["v6e-8"], 64), pool("b", "z", &["v6e-8"], 64)];
        let mut load = [PoolLoad { used: 0, waiting: 4 }, PoolLoad { used: 0, waiting: 1 }];
        assert_eq!(placed(&schedule(&[job(1, 0, "v6e-8", 8, &[])], &pools, &mut load)), [(1, 1)]);
    }

    #[test]
    fn a_job_no_pool_can_ever_hold_is_unplaceable_naming_what_the_pools_offer() {
        let pools = [pool("a", "us-west4-a", &["v6e-8"], 8)];
        let offers = "the pools offer: a: v6e-8, 8 chips (zone us-west4-a)";
        let east = vec!["us-east5".to_string()];
        let cases = [
            (job(1, 0, "v6e-8", 8, &east), format!("no pool offers v6e-8 in us-east5; {offers}")),
            (job(2, 0, "v5litepod-16", 16, &[]), format!("no pool offers v5litepod-16; {offers}")),
            (
                job(3, 0, "v6e-8", 16, &[]),
                format!(
                    "no pool is large enough: needs 16 chips of v6e-8 but the largest pool offering it (`a`) has 8; \
                     {offers}"
                ),
            ),
        ];
        for (j, reason) in cases {
            let id = j.id;
            let d = schedule(&[j], &pools, &mut [PoolLoad { used: 8, waiting: 3 }]);
            assert_eq!(d, [Decision::Unplaceable { job: id, reason }], "whatever the load");
        }
        let kube = pool_on(PoolBackend::Kubernetes, "k", "z", &["v6e-8"], 64);
        let mut no_image = job(5, 0, "v6e-8", 8, &[]);
        no_image.has_image = false;
        let d = schedule(&[no_image], &[kube], &mut [PoolLoad::default()]);
        assert!(matches!(&d[0], Decision::Unplaceable { reason, .. } if reason.contains("names no image")), "{d:?}");
        assert!(
            schedule(&[job(6, 0, "v6e-8", 8, &[])], &[], &mut []).iter().all(|d| matches!(d, Decision::Wait { .. })),
            "no pools: nothing is known, the job waits"
        );
    }

    #[test]
    fn reasons_say_why_a_job_that_could_run_waits() {
        let pools = [pool("a", "us-west4-a", &["v6e-8"], 8)];
        let d = schedule(&[job(1, 0, "v6e-8", 8, &[])], &pools, &mut [PoolLoad { used: 4, waiting: 0 }]);
        assert_eq!(
            d,
            [Decision::Wait { job: JobId(1), reason: "waiting for 8 free chips of v6e-8 (a 4/8 free)".into() }]
        );
        let excluded = vec!["a".to_string()];
        let mut j = job(4, 0, "v6e-8", 8, &[]);
        j.excluded = &excluded;
        let d = schedule(&[j], &pools, &mut [PoolLoad::default()]);
        assert!(
            matches!(&d[0], Decision::Wait { reason, .. } if reason.contains("already moved away from a")),
            "{d:?}"
        );
    }
}
