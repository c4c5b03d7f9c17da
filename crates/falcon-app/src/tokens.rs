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

pub(crate) async fn create_token(app: &App, name: &str, scope: Scope) -> Result<CreatedToken> {
    let created = app.exp().await?.create_token(name, scope).await?;
    Ok(CreatedToken { name: created.record.name, scope, token: created.secret })
}

pub(crate) async fn tokens(app: &App, cursor: Option<&str>, limit: usize) -> Result<Page<TokenView>> {
    let all = app.exp().await?.tokens().await?.into_iter().map(TokenView::from).collect();
    Page::of_all(all, cursor, limit)
}

pub(crate) async fn revoke_token(app: &App, name: &str) -> Result<TokenView> {
    Ok(app.exp().await?.revoke_token(name).await?.into())
}

pub(crate) async fn authenticate(app: &App, secret: &str) -> Result<Option<Principal>> {
    Ok(app.exp().await?.authenticate(secret).await?.map(|(t, scope)| Principal { name: t.name, scope }))
}

pub(crate) async fn tokens_exist(app: &App) -> Result<bool> {
    Ok(app.exp().await?.any_token().await?)
}

pub(crate) async fn tokens_ever(app: &App) -> Result<bool> {
    Ok(app.exp().await?.any_token_ever().await?)
}

pub(crate) async fn sign_in(
    app: &App,
    secret: &str,
    lifetime: std::time::Duration,
) -> Result<Option<(Principal, String)>> {
    let made = app.exp().await?.create_signin(secret, lifetime).await?;
    Ok(made.map(|(t, scope, id)| (Principal { name: t.name, scope }, id)))
}

pub(crate) async fn signin_principal(app: &App, id: &str) -> Result<Option<Principal>> {
    Ok(app.exp().await?.signin(id).await?.map(|(t, scope)| Principal { name: t.name, scope }))
}

pub(crate) async fn sign_out(app: &App, id: &str) -> Result<bool> {
    Ok(app.exp().await?.end_signin(id).await?)
}
