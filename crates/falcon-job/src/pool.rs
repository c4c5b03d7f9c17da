//! Resource pools as the Job module uses them: a configured pool checked against the catalog.

use crate::error::{JobError, Result};
use falcon_core::catalog::{self, AcceleratorType};
use falcon_core::config::{Platform, PoolBackend, PoolConfig};
use serde::Serialize;

/// A pool, validated: a [`PoolConfig`] whose name is set, capacity positive and accelerator types known to the
/// catalog, of the pool's platform, under their canonical names. It reads (and serializes) as the config it
/// wraps; only [`Pool::from_config`] makes one.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Pool(PoolConfig);

/// The config's schema as output, inlined where a pool is shown (`PoolUsage` flattens it): refusing unknown
/// keys, the `settings` default and the file's own description are about reading a config file, not about a
/// pool shown.
impl schemars::JsonSchema for Pool {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Pool".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = PoolConfig::json_schema(generator);
        if let Some(object) = schema.as_object_mut() {
            object.remove("additionalProperties");
            object.remove("description");
            let settings = object.get_mut("properties").and_then(|p| p.get_mut("settings"));
            if let Some(settings) = settings.and_then(|s| s.as_object_mut()) {
                settings.remove("default");
            }
        }
        schema
    }
}

impl std::ops::Deref for Pool {
    type Target = PoolConfig;

    fn deref(&self) -> &PoolConfig {
        &self.0
    }
}

impl Pool {
    /// Checks a configured pool: known accelerator types of the pool's platform, a positive capacity.
    pub fn from_config(config: &PoolConfig) -> Result<Pool> {
        let bad = |message: String| JobError::InvalidPool { pool: config.name.clone(), message };
        if config.name.trim().is_empty() {
            return Err(bad("a pool needs a name".into()));
        }
        if config.capacity == 0 {
            return Err(bad("capacity must be positive".into()));
        }
        if config.accelerators.is_empty() {
            return Err(bad("accelerators: list at least one accelerator type".into()));
        }
        let mut accelerators = Vec::new();
        for (i, name) in config.accelerators.iter().enumerate() {
            let accel = catalog::lookup(name).map_err(|e| bad(format!("accelerators[{i}]: {e}")))?;
            if accel.platform != config.platform {
                return Err(bad(format!(
                    "accelerators[{i}]: {} is a {:?} type but the pool's platform is {:?}",
                    accel.name, accel.platform, config.platform
                )));
            }
            accelerators.push(accel.name.clone());
        }
        if config.backend == PoolBackend::Local && config.platform == Platform::Tpu {
            return Err(bad("the local backend cannot offer TPUs".into()));
        }
        Ok(Pool(PoolConfig { accelerators, ..config.clone() }))
    }

    /// Whether the pool offers this accelerator type.
    pub fn offers(&self, accel: &AcceleratorType) -> bool {
        self.accelerators.contains(&accel.name)
    }

    /// A string setting, if present.
    pub fn setting(&self, key: &str) -> Option<&str> {
        self.settings.get(key).and_then(|v| v.as_str())
    }
}

/// What `pools` offer, for messages about a job none of them can run: `local: cpu, 16 chips (zone local);
/// tpu-east: v6e-8, v6e-16, 64 chips (zone us-east5-b)`.
pub fn describe_offers(pools: &[Pool]) -> String {
    let each: Vec<String> = pools
        .iter()
        .map(|p| format!("{}: {}, {} chips (zone {})", p.name, p.accelerators.join(", "), p.capacity, p.zone))
        .collect();
    each.join("; ")
}

/// Validates every pool; the first problem is an error naming the pool and field.
pub fn pools_from_config(configs: &[PoolConfig]) -> Result<Vec<Pool>> {
    let mut seen = std::collections::BTreeSet::new();
    configs
        .iter()
        .map(|c| {
            if !seen.insert(c.name.as_str()) {
                return Err(JobError::InvalidPool { pool: c.name.clone(), message: "the name is used twice".into() });
            }
            Pool::from_config(c)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn config(accels: &[&str], platform: Platform) -> PoolConfig {
        PoolConfig {
            name: "p".into(),
            backend: PoolBackend::Kubernetes,
            zone: "us-east5-b".into(),
            platform,
            accelerators: accels.iter().map(|s| s.to_string()).collect(),
            capacity: 64,
            settings: BTreeMap::new(),
        }
    }

    #[test]
    fn aliases_become_canonical_names() {
        let pool = Pool::from_config(&config(&["v5e-16", "v6e-8"], Platform::Tpu)).unwrap();
        assert_eq!(pool.accelerators, ["v5litepod-16", "v6e-8"]);
    }

    #[test]
    fn wrong_pools_name_the_problem() {
        let err = Pool::from_config(&config(&["v6e-7"], Platform::Tpu)).unwrap_err().to_string();
        assert!(err.contains("pool `p`") && err.contains("accelerators[0]"), "{err}");
        let err = Pool::from_config(&config(&["h100-80gb-8"], Platform::Tpu)).unwrap_err().to_string();
        assert!(err.contains("platform"), "{err}");
        let mut zero = config(&["v6e-8"], Platform::Tpu);
        zero.capacity = 0;
        assert!(Pool::from_config(&zero).unwrap_err().to_string().contains("capacity"));
        let twice = [config(&["v6e-8"], Platform::Tpu), config(&["v6e-8"], Platform::Tpu)];
        assert!(pools_from_config(&twice).unwrap_err().to_string().contains("twice"));
    }
}
