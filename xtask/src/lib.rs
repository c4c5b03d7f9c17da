//! Repository checks that run as ordinary tests.
//!
//! [`layering_violations`] enforces the arrows of docs/DESIGN.md §1 over `cargo metadata`: which Falcon crates
//! each crate may name directly, which crates must never appear below it, and which storage and cluster
//! clients the interface crates must not name. Dev-dependencies are ignored (tests may use anything).

pub mod modules;

use cargo_metadata::{DependencyKind, Metadata, Node, PackageId};
use std::collections::{BTreeSet, HashMap, VecDeque};

/// The interface crates: checked on their direct normal and build dependencies.
pub const INTERFACE_CRATES: &[&str] = &["falcon-cli", "falcon-api", "falcon-mcp", "falcon-app"];

/// The test-only fake that no product crate may depend on (normal or build edges; dev-dependencies may).
pub const TEST_ONLY: &str = "fake-kube-apiserver";

/// Crates an interface crate must not name directly: the lower layers and every storage or cluster client.
pub const INTERFACE_FORBIDDEN: &[&str] =
    &["falcon-infra", "falcon-job", "sqlx", "opendal", "object_store", "kube", "k8s-openapi"];

/// The Falcon crates each crate may depend on directly (docs/DESIGN.md §1, "may depend on").
pub const ALLOWED_FALCON_DEPS: &[(&str, &[&str])] = &[
    ("falcon-core", &[]),
    ("falcon-infra", &["falcon-core"]),
    ("falcon-job", &["falcon-core", "falcon-infra"]),
    ("falcon-exp", &["falcon-core", "falcon-infra", "falcon-job"]),
    ("falcon-xplane", &[]),
    ("falcon-analysis", &["falcon-core", "falcon-infra", "falcon-xplane"]),
    ("falcon-app", &["falcon-core", "falcon-exp", "falcon-analysis"]),
    ("falcon-cli", &["falcon-core", "falcon-app", "falcon-api", "falcon-mcp"]),
    // The two protocol front ends sit side by side on falcon-app: neither names the other.
    ("falcon-api", &["falcon-core", "falcon-app"]),
    ("falcon-mcp", &["falcon-core", "falcon-app"]),
];

/// Crates that must never be reachable (transitively, through normal and build dependencies) from a crate.
pub const FORBIDDEN_BELOW: &[(&str, &[&str])] = &[
    (
        "falcon-core",
        &[
            "falcon-infra",
            "falcon-job",
            "falcon-exp",
            "falcon-xplane",
            "falcon-analysis",
            "falcon-app",
            "falcon-cli",
            "falcon-api",
            "falcon-mcp",
            "sqlx",
            "opendal",
            "kube",
        ],
    ),
    (
        "falcon-xplane",
        &[
            "falcon-core",
            "falcon-infra",
            "falcon-job",
            "falcon-exp",
            "falcon-analysis",
            "falcon-app",
            "falcon-cli",
            "falcon-api",
            "falcon-mcp",
        ],
    ),
    (
        "falcon-infra",
        &[
            "falcon-job",
            "falcon-exp",
            "falcon-xplane",
            "falcon-analysis",
            "falcon-app",
            "falcon-cli",
            "falcon-api",
            "falcon-mcp",
        ],
    ),
    ("falcon-job", &["falcon-exp", "falcon-analysis", "falcon-app", "falcon-cli", "falcon-api", "falcon-mcp"]),
    ("falcon-exp", &["falcon-analysis", "falcon-app", "falcon-cli", "falcon-api", "falcon-mcp"]),
    ("falcon-analysis", &["falcon-exp", "falcon-job", "falcon-app", "falcon-cli", "falcon-api", "falcon-mcp"]),
];

/// One broken rule, printable.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    /// The crate that breaks the rule.
    pub krate: String,
    /// The crate it must not depend on.
    pub dependency: String,
    /// Which rule, and the path that leads there.
    pub rule: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} → {}: {}", self.krate, self.dependency, self.rule)
    }
}

/// Every layering rule the workspace breaks (empty when it is clean).
pub fn layering_violations(metadata: &Metadata) -> Vec<Violation> {
    let resolve = metadata.resolve.as_ref().expect("cargo metadata was run with dependency resolution");
    let nodes: HashMap<&PackageId, &Node> = resolve.nodes.iter().map(|n| (&n.id, n)).collect();
    let name_of = |id: &PackageId| metadata[id].name.to_string();
    let members: HashMap<String, &PackageId> = metadata.workspace_members.iter().map(|id| (name_of(id), id)).collect();
    let mut out = BTreeSet::new();

    for (krate, allowed) in ALLOWED_FALCON_DEPS {
        let Some(id) = members.get(*krate) else {
            out.insert(Violation {
                krate: krate.to_string(),
                dependency: "-".into(),
                rule: "crate is missing from the workspace".into(),
            });
            continue;
        };
        for dep in direct_deps(nodes[id]) {
            let dep_name = name_of(dep);
            if dep_name.starts_with("falcon-") && !allowed.contains(&dep_name.as_str()) {
                out.insert(Violation {
                    krate: krate.to_string(),
                    dependency: dep_name,
                    rule: format!("not among the crates it may depend on ({})", list(allowed)),
                });
            }
        }
    }

    for krate in INTERFACE_CRATES {
        let Some(id) = members.get(*krate) else { continue };
        for dep in direct_deps(nodes[id]) {
            let dep_name = name_of(dep);
            if INTERFACE_FORBIDDEN.contains(&dep_name.as_str()) {
                out.insert(Violation {
                    krate: krate.to_string(),
                    dependency: dep_name,
                    rule: "interface crates reach storage and clusters only through EXP and analysis".into(),
                });
            }
        }
    }

    for (name, id) in &members {
        if name == TEST_ONLY {
            continue;
        }
        for dep in direct_deps(nodes[*id]) {
            if name_of(dep) == TEST_ONLY {
                out.insert(Violation {
                    krate: name.clone(),
                    dependency: TEST_ONLY.into(),
                    rule: "a test-only fake; product crates may name it only as a dev-dependency".into(),
                });
            }
        }
    }

    for (krate, forbidden) in FORBIDDEN_BELOW {
        let Some(start) = members.get(*krate) else { continue };
        // Breadth-first over normal and build edges, remembering how each crate was reached.
        let mut parent: HashMap<&PackageId, &PackageId> = HashMap::new();
        let mut queue = VecDeque::from([*start]);
        let mut seen = BTreeSet::from([*start]);
        while let Some(id) = queue.pop_front() {
            for dep in direct_deps(nodes[id]) {
                if seen.insert(dep) {
                    parent.insert(dep, id);
                    queue.push_back(dep);
                    let dep_name = name_of(dep);
                    if forbidden.contains(&dep_name.as_str()) {
                        let mut path = vec![dep_name.clone()];
                        let mut at = dep;
                        while let Some(p) = parent.get(at) {
                            path.push(name_of(p));
                            at = p;
                        }
                        path.reverse();
                        out.insert(Violation {
                            krate: krate.to_string(),
                            dependency: dep_name,
                            rule: format!("must never be below it (path: {})", path.join(" → ")),
                        });
                    }
                }
            }
        }
    }
    out.into_iter().collect()
}

/// Direct dependencies of a node through normal or build edges (dev-only edges are skipped).
fn direct_deps(node: &Node) -> impl Iterator<Item = &PackageId> {
    node.deps
        .iter()
        .filter(|d| d.dep_kinds.iter().any(|k| matches!(k.kind, DependencyKind::Normal | DependencyKind::Build)))
        .map(|d| &d.pkg)
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "no Falcon crate".into()
    } else {
        names.join(", ")
    }
}
