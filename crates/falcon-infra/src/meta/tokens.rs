//! Bearer tokens of the Web API (`api_tokens`): a name, a scope and the SHA-256 of the token, never the token;
//! and the dashboard's sign-in sessions (`api_signins`): the SHA-256 of an opaque session id and the token it
//! speaks for. The rules (who may create one, what a scope allows, how a token or session id is made, how long a
//! session lasts) are EXP's and the API's; this module only stores and finds rows.

use super::rows::RowExt;
use super::{check_short, now, query_err, with_pool, MetaStore};
use crate::error::{InfraError, Result};
use falcon_core::time::Millis;

const TABLE: &str = "api_tokens";
const SIGNINS: &str = "api_signins";

/// A token as stored (its hash stays here: it is not part of what is shown).
#[derive(Debug, Clone, PartialEq, Eq)]
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

    /// Whether the store has ever held a token, revoked ones included (a revoked token keeps its row). A server
    /// whose store has is never open without one again.
    pub async fn any_token_ever(&self) -> Result<bool> {
        with_pool!(self, pool => {
            let row = sqlx::query("SELECT COUNT(*) AS n FROM api_tokens")
                .fetch_one(pool)
                .await
                .map_err(query_err("count tokens"))?;
            Ok(row.int(TABLE, "n")? > 0)
        })
    }

    /// Whether any live token exists.
    pub async fn any_live_token(&self) -> Result<bool> {
        with_pool!(self, pool => {
            let row = sqlx::query("SELECT COUNT(*) AS n FROM api_tokens WHERE revoked_ms IS NULL")
                .fetch_one(pool)
                .await
                .map_err(query_err("count tokens"))?;
            Ok(row.int(TABLE, "n")? > 0)
        })
    }

    /// Records a sign-in session for the live token `token_name`, found later by `id_hash` (the SHA-256 of the
    /// session id the browser holds) until `expires`. Not found when the token is not live.
    pub async fn insert_signin(&self, id_hash: &str, token_name: &str, expires: Millis) -> Result<()> {
        check_short(SIGNINS, "id_hash", id_hash)?;
        check_short(SIGNINS, "token_name", token_name)?;
        let at = now();
        let inserted = with_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO api_signins (id_hash, token_name, created_ms, expires_ms, ended_ms) \
                 SELECT ?, name, ?, ?, NULL FROM api_tokens WHERE name = ? AND revoked_ms IS NULL",
            )
            .bind(id_hash)
            .bind(at.0)
            .bind(expires.0)
            .bind(token_name)
            .execute(pool)
            .await
            .map_err(query_err("insert sign-in"))?
            .rows_affected()
        });
        if inserted == 0 {
            return Err(InfraError::NotFound { what: "live token", id: token_name.to_string() });
        }
        Ok(())
    }

    /// The live token a session speaks for: the session not ended nor expired at `at`, its token not revoked.
    pub async fn find_signin_token(&self, id_hash: &str, at: Millis) -> Result<Option<TokenRecord>> {
        with_pool!(self, pool => {
            let row = sqlx::query(
                "SELECT t.name AS name, t.scope AS scope, t.created_ms AS created_ms, t.revoked_ms AS revoked_ms \
                 FROM api_signins s JOIN api_tokens t ON t.name = s.token_name \
                 WHERE s.id_hash = ? AND s.ended_ms IS NULL AND s.expires_ms > ? AND t.revoked_ms IS NULL",
            )
            .bind(id_hash)
            .bind(at.0)
            .fetch_optional(pool)
            .await
            .map_err(query_err("find sign-in"))?;
            row.map(|r| token_from_row(&r)).transpose()
        })
    }

    /// Ends a session (signing out); whether it was live. Sessions past their end are deleted on the way.
    pub async fn end_signin(&self, id_hash: &str) -> Result<bool> {
        let at = now();
        with_pool!(self, pool => {
            let ended = sqlx::query("UPDATE api_signins SET ended_ms = ? WHERE id_hash = ? AND ended_ms IS NULL")
                .bind(at.0)
                .bind(id_hash)
                .execute(pool)
                .await
                .map_err(query_err("end sign-in"))?
                .rows_affected();
            // Expired or ended a day ago: nothing refers to them any more.
            sqlx::query("DELETE FROM api_signins WHERE expires_ms < ? OR ended_ms < ?")
                .bind(at.0)
                .bind(at.0 - 86_400_000)
                .execute(pool)
                .await
                .map_err(query_err("delete old sign-ins"))?;
            Ok(ended > 0)
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
