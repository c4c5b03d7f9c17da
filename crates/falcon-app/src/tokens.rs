//! Web API tokens as every front end manages them (`falcon token create | list | revoke`, and the API's own
//! authentication): EXP keeps them, hashed; this layer parses what a front end received and shapes the answers.

use crate::page::Page;
use crate::{App, AppError, Result};
use falcon_core::auth::Scope;
use falcon_core::time::Millis;
use serde::Serialize;

/// A token just created: the only time its secret is shown.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CreatedToken {
    pub name: String,
    pub scope: Scope,
    /// The bearer secret (`Authorization: Bearer …`); not stored, never shown again.
    pub token: String,
}

/// A token as listed (never its secret).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TokenView {
    pub name: String,
    pub scope: String,
    pub created: Millis,
    #[schemars(with = "String")]
    #[serde(serialize_with = "falcon_core::time::rfc3339")]
    pub created_iso: Millis,
    pub revoked: Option<Millis>,
    #[schemars(with = "Option<String>")]
    #[serde(serialize_with = "falcon_core::time::rfc3339_opt")]
    pub revoked_iso: Option<Millis>,
}

impl From<falcon_exp::tokens::TokenRecord> for TokenView {
    fn from(t: falcon_exp::tokens::TokenRecord) -> Self {
        TokenView {
            name: t.name,
            scope: t.scope,
            created: t.created,
            created_iso: t.created,
            revoked: t.revoked,
            revoked_iso: t.revoked,
        }
    }
}

/// Who a request comes from, once its token checked out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Principal {
    /// The token's name (the default owner of what the request claims).
    pub name: String,
    pub scope: Scope,
}

/// Parses a scope a front end received (a usage error otherwise).
pub fn parse_scope(text: &str) -> Result<Scope> {
    text.parse().map_err(|e: String| AppError::usage(format!("scope: {e}")))
}

impl App {
    /// Creates a token; its secret is in the answer and nowhere else.
    pub async fn create_token(&self, name: &str, scope: Scope) -> Result<CreatedToken> {
        let created = self.exp().await?.create_token(name, scope).await?;
        Ok(CreatedToken { name: created.record.name, scope, token: created.secret })
    }

    /// Every token, revoked ones included, by name.
    pub async fn tokens(&self, cursor: Option<&str>, limit: usize) -> Result<Page<TokenView>> {
        let all = self.exp().await?.tokens().await?.into_iter().map(TokenView::from).collect();
        Page::of_all(all, cursor, limit)
    }

    /// Revokes a live token by name (exit 3 when there is none).
    pub async fn revoke_token(&self, name: &str) -> Result<TokenView> {
        Ok(self.exp().await?.revoke_token(name).await?.into())
    }

    /// The principal a bearer secret stands for; `None` for an unknown or revoked one.
    pub async fn authenticate(&self, secret: &str) -> Result<Option<Principal>> {
        Ok(self.exp().await?.authenticate(secret).await?.map(|(t, scope)| Principal { name: t.name, scope }))
    }

    /// Whether any live token exists.
    pub async fn tokens_exist(&self) -> Result<bool> {
        Ok(self.exp().await?.any_token().await?)
    }

    /// Whether the store has ever held a token, revoked ones included: a server over such a store is never open.
    pub async fn tokens_ever(&self) -> Result<bool> {
        Ok(self.exp().await?.any_token_ever().await?)
    }

    /// Signs a browser in with a bearer secret: the principal and a new session id lasting `lifetime` (the
    /// browser keeps the id, never the token); `None` for an unknown or revoked secret.
    pub async fn sign_in(&self, secret: &str, lifetime: std::time::Duration) -> Result<Option<(Principal, String)>> {
        let made = self.exp().await?.create_signin(secret, lifetime).await?;
        Ok(made.map(|(t, scope, id)| (Principal { name: t.name, scope }, id)))
    }

    /// The principal a session id stands for; `None` when it is unknown, signed out, expired or its token revoked.
    pub async fn signin_principal(&self, id: &str) -> Result<Option<Principal>> {
        Ok(self.exp().await?.signin(id).await?.map(|(t, scope)| Principal { name: t.name, scope }))
    }

    /// Signs a session out (server-side: the id opens nothing afterwards); whether it was live.
    pub async fn sign_out(&self, id: &str) -> Result<bool> {
        Ok(self.exp().await?.end_signin(id).await?)
    }
}
