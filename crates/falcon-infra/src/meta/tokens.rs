//! Bearer tokens of the Web API (`api_tokens`): a name, a scope and the SHA-256 of the token, never the token.
//! The rules (who may create one, what a scope allows, how a token is made) are EXP's and the API's; this module
//! only stores and finds rows.

use super::rows::RowExt;
use super::{check_short, now, query_err, with_pool, MetaStore};
use crate::error::{InfraError, Result};
use falcon_core::time::Millis;
use serde::Serialize;

const TABLE: &str = "api_tokens";

/// A token as stored (its hash stays here: it is not part of what is shown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TokenRecord {
    /// Unique name (who or what holds it).
    pub name: String,
    /// `read`, `write` or `admin`.
    pub scope: String,
    /// When it was created.
    pub created: Millis,
    /// When it was revoked; `None` while it works.
    pub revoked: Option<Millis>,
}

fn token_from_row(r: &impl RowExt) -> Result<TokenRecord> {
    Ok(TokenRecord {
        name: r.text(TABLE, "name")?,
        scope: r.text(TABLE, "scope")?,
        created: Millis(r.int(TABLE, "created_ms")?),
        revoked: r.opt_int(TABLE, "revoked_ms")?.map(Millis),
    })
}

impl MetaStore {
    /// Records a token by the hash of its secret. A name already used (even by a revoked token) is a conflict.
    pub async fn insert_token(&self, name: &str, scope: &str, token_hash: &str) -> Result<TokenRecord> {
        check_short(TABLE, "name", name)?;
        check_short(TABLE, "scope", scope)?;
        check_short(TABLE, "token_hash", token_hash)?;
        let at = now();
        with_pool!(self, pool => {
            let inserted = sqlx::query(
                "INSERT INTO api_tokens (name, scope, token_hash, created_ms, revoked_ms) VALUES (?, ?, ?, ?, NULL)",
            )
            .bind(name)
            .bind(scope)
            .bind(token_hash)
            .bind(at.0)
            .execute(pool)
            .await;
            match inserted {
                Ok(_) => {}
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                    return Err(InfraError::Conflict(format!("a token named `{name}` exists already")));
                }
                Err(e) => return Err(query_err("insert token")(e)),
            }
        });
        Ok(TokenRecord { name: name.to_string(), scope: scope.to_string(), created: at, revoked: None })
    }

    /// Every token, revoked ones included, by name.
    pub async fn list_tokens(&self) -> Result<Vec<TokenRecord>> {
        with_pool!(self, pool => {
            let rows = sqlx::query("SELECT name, scope, created_ms, revoked_ms FROM api_tokens ORDER BY name")
                .fetch_all(pool)
                .await
                .map_err(query_err("list tokens"))?;
            rows.iter().map(token_from_row).collect()
        })
    }

    /// The live (not revoked) token whose secret hashes to `token_hash`, if any.
    pub async fn find_live_token(&self, token_hash: &str) -> Result<Option<TokenRecord>> {
        with_pool!(self, pool => {
            let row = sqlx::query(
                "SELECT name, scope, created_ms, revoked_ms FROM api_tokens WHERE token_hash = ? AND revoked_ms IS NULL",
            )
            .bind(token_hash)
            .fetch_optional(pool)
            .await
            .map_err(query_err("find token"))?;
            row.map(|r| token_from_row(&r)).transpose()
        })
    }

    /// Whether any live token exists (with none, a loopback server is open).
    pub async fn any_live_token(&self) -> Result<bool> {
        with_pool!(self, pool => {
            let row = sqlx::query("SELECT COUNT(*) AS n FROM api_tokens WHERE revoked_ms IS NULL")
                .fetch_one(pool)
                .await
                .map_err(query_err("count tokens"))?;
            Ok(row.int(TABLE, "n")? > 0)
        })
    }

    /// Revokes a live token by name; not found when there is no live token of that name.
    pub async fn revoke_token(&self, name: &str) -> Result<TokenRecord> {
        let at = now();
        let changed = with_pool!(self, pool => {
            sqlx::query("UPDATE api_tokens SET revoked_ms = ? WHERE name = ? AND revoked_ms IS NULL")
                .bind(at.0)
                .bind(name)
                .execute(pool)
                .await
                .map_err(query_err("revoke token"))?
                .rows_affected()
        });
        if changed == 0 {
            return Err(InfraError::NotFound { what: "live token", id: name.to_string() });
        }
        let all = self.list_tokens().await?;
        all.into_iter()
            .find(|t| t.name == name)
            .ok_or_else(|| InfraError::NotFound { what: "token", id: name.to_string() })
    }
}
