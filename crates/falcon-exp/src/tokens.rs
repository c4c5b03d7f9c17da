//! Bearer tokens of the Web API: created with a scope and shown once, stored as a SHA-256 only, listed,
//! revoked, and looked up by the secret a request carries. Names are 1–64 of `A-Za-z0-9._-`; a secret is
//! `falcon_` and 48 hex digits from the operating system's randomness (two version-4 UUIDs).

use crate::error::{ExpError, Result};
use crate::Exp;
use falcon_core::auth::Scope;
pub use falcon_infra::meta::TokenRecord;

/// A token just created: its record and its secret, which is never shown again.
#[derive(Debug, Clone)]
pub struct NewToken {
    pub record: TokenRecord,
    pub secret: String,
}

/// The hash a token is stored and found by.
fn hash(secret: &str) -> String {
    falcon_core::artifact::sha256_hex(secret.as_bytes())
}

impl Exp {
    /// Creates a token named `name` with `scope`; a name in use (revoked tokens keep theirs) is a conflict.
    pub async fn create_token(&self, name: &str, scope: Scope) -> Result<NewToken> {
        let valid = !name.is_empty()
            && name.len() <= 64
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !valid {
            return Err(ExpError::Invalid(format!("token name `{name}`: 1 to 64 letters, digits, `.`, `_` or `-`")));
        }
        let random = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        let secret = format!("falcon_{}", &random[..48]);
        let record = self.meta.insert_token(name, scope.as_str(), &hash(&secret)).await?;
        Ok(NewToken { record, secret })
    }

    /// Every token (revoked ones with `revoked` set), by name; never a secret.
    pub async fn tokens(&self) -> Result<Vec<TokenRecord>> {
        Ok(self.meta.list_tokens().await?)
    }

    /// Revokes the live token `name` (not found when there is none).
    pub async fn revoke_token(&self, name: &str) -> Result<TokenRecord> {
        Ok(self.meta.revoke_token(name).await?)
    }

    /// The live token whose secret this is, with its scope; `None` for an unknown or revoked secret.
    pub async fn authenticate(&self, secret: &str) -> Result<Option<(TokenRecord, Scope)>> {
        if !secret.starts_with("falcon_") || secret.len() > 128 {
            return Ok(None);
        }
        let Some(record) = self.meta.find_live_token(&hash(secret)).await? else { return Ok(None) };
        let scope = record.scope.parse::<Scope>().map_err(ExpError::Invalid)?;
        Ok(Some((record, scope)))
    }

    /// Whether any live token exists (none: a loopback server is open).
    pub async fn any_token(&self) -> Result<bool> {
        Ok(self.meta.any_live_token().await?)
    }
}
