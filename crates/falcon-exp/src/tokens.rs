//! Bearer tokens of the Web API: created with a scope and shown once, stored as a SHA-256 only, listed,
//! revoked, and looked up by the secret a request carries. Names are 1–64 of `A-Za-z0-9._-`; a secret is
//! `falcon_` and 48 hex digits from the operating system's randomness (two version-4 UUIDs). A dashboard sign-in
//! makes a session instead of keeping the token in the browser: an id `falcon_s_` and 48 hex digits, stored as its
//! SHA-256, that speaks for its token while the token is live, until it expires or is signed out.

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

/// The clock, in milliseconds since the epoch.
fn now() -> falcon_core::time::Millis {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    falcon_core::time::Millis(d.as_millis() as i64)
}

/// The hash a token (or a session id) is stored and found by.
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

    /// Whether any live token exists.
    pub async fn any_token(&self) -> Result<bool> {
        Ok(self.meta.any_live_token().await?)
    }

    /// Whether the store has ever held a token, revoked ones included (never: a loopback server may be open).
    pub async fn any_token_ever(&self) -> Result<bool> {
        Ok(self.meta.any_token_ever().await?)
    }

    /// Signs in with a bearer secret: a new session for its live token, lasting `lifetime`. Returns the token and
    /// the session id (`falcon_s_` and 48 hex digits, shown once, stored only as its SHA-256); `None` for an
    /// unknown or revoked secret.
    pub async fn create_signin(
        &self,
        secret: &str,
        lifetime: std::time::Duration,
    ) -> Result<Option<(TokenRecord, Scope, String)>> {
        let Some((record, scope)) = self.authenticate(secret).await? else { return Ok(None) };
        let random = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        let id = format!("falcon_s_{}", &random[..48]);
        let expires = now().0.saturating_add(lifetime.as_millis() as i64);
        self.meta.insert_signin(&hash(&id), &record.name, falcon_core::time::Millis(expires)).await?;
        Ok(Some((record, scope, id)))
    }

    /// The live token a session id speaks for, with its scope; `None` when the session is unknown, ended or
    /// expired, or its token revoked.
    pub async fn signin(&self, id: &str) -> Result<Option<(TokenRecord, Scope)>> {
        if !id.starts_with("falcon_s_") || id.len() > 128 {
            return Ok(None);
        }
        let Some(record) = self.meta.find_signin_token(&hash(id), now()).await? else {
            return Ok(None);
        };
        let scope = record.scope.parse::<Scope>().map_err(ExpError::Invalid)?;
        Ok(Some((record, scope)))
    }

    /// Ends a session (signing out); whether it was live.
    pub async fn end_signin(&self, id: &str) -> Result<bool> {
        if !id.starts_with("falcon_s_") || id.len() > 128 {
            return Ok(false);
        }
        Ok(self.meta.end_signin(&hash(id)).await?)
    }
}
