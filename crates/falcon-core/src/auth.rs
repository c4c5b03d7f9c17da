//! The Web API's access vocabulary: what a bearer token may do.

use serde::{Deserialize, Serialize};

/// A token's scope, each including the ones before it: `read` (every GET), `write` (submit, cancel, claim,
/// close — what changes experiments and goals), `admin` (token management, and cancelling or closing other owners'
/// work).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Read,
    Write,
    Admin,
}

impl Scope {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Admin => "admin",
        }
    }

    /// Whether a token of this scope may do what `needed` allows.
    pub fn allows(self, needed: Scope) -> bool {
        self >= needed
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "read" => Ok(Scope::Read),
            "write" => Ok(Scope::Write),
            "admin" => Ok(Scope::Admin),
            other => Err(format!("`{other}` is not a scope: read, write or admin")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_include_the_ones_below() {
        assert!(Scope::Admin.allows(Scope::Write) && Scope::Write.allows(Scope::Read));
        assert!(!Scope::Read.allows(Scope::Write) && !Scope::Write.allows(Scope::Admin));
        assert_eq!("write".parse::<Scope>(), Ok(Scope::Write));
        assert!("root".parse::<Scope>().unwrap_err().contains("read, write or admin"));
    }
}
