//! Web API tokens as every front end manages them (`falcon token create | list | revoke`, and the API's own
//! authentication): EXP keeps them, hashed; this layer parses what a front end received and shapes the answers.

use crate::page::Page;
use crate::{ctx::Ctx, AppError, Result};
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

pub(crate) async fn create_token(cx: &Ctx, name: &str, scope: Scope) -> Result<CreatedToken> {
    let created = cx.exp().await?.create_token(name, scope).await?;
    Ok(CreatedToken { name: created.record.name, scope, token: created.secret })
}

pub(crate) async fn tokens(cx: &Ctx, cursor: Option<&str>, limit: usize) -> Result<Page<TokenView>> {
    let all = cx.exp().await?.tokens().await?.into_iter().map(TokenView::from).collect();
    Page::of_all(all, cursor, limit)
}

pub(crate) async fn revoke_token(cx: &Ctx, name: &str) -> Result<TokenView> {
    Ok(cx.exp().await?.revoke_token(name).await?.into())
}

pub(crate) async fn authenticate(cx: &Ctx, secret: &str) -> Result<Option<Principal>> {
    Ok(cx.exp().await?.authenticate(secret).await?.map(|(t, scope)| Principal { name: t.name, scope }))
}

pub(crate) async fn tokens_exist(cx: &Ctx) -> Result<bool> {
    Ok(cx.exp().await?.any_token().await?)
}

pub(crate) async fn tokens_ever(cx: &Ctx) -> Result<bool> {
    Ok(cx.exp().await?.any_token_ever().await?)
}

pub(crate) async fn sign_in(
    cx: &Ctx,
    secret: &str,
    lifetime: std::time::Duration,
) -> Result<Option<(Principal, String)>> {
    let made = cx.exp().await?.create_signin(secret, lifetime).await?;
    Ok(made.map(|(t, scope, id)| (Principal { name: t.name, scope }, id)))
}

pub(crate) async fn signin_principal(cx: &Ctx, id: &str) -> Result<Option<Principal>> {
    Ok(cx.exp().await?.signin(id).await?.map(|(t, scope)| Principal { name: t.name, scope }))
}

pub(crate) async fn sign_out(cx: &Ctx, id: &str) -> Result<bool> {
    Ok(cx.exp().await?.end_signin(id).await?)
}
