//! `falcon token …`: the Web API's bearer tokens through `falcon-app`.

use crate::cli::{GlobalArgs, TokenCommand};
use crate::output::{print_json, print_page, print_stdout};
use falcon_app::tokens::parse_scope;
use falcon_app::App;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, command: &TokenCommand) -> anyhow::Result<ExitCode> {
    match command {
        TokenCommand::Create { name, scope } => {
            let created = app.create_token(name, parse_scope(scope)?).await?;
            if global.json {
                print_json(&created)?;
            } else {
                print_stdout(&created.token)?;
                eprintln!(
                    "token `{}` ({}) created: the line above is its secret, shown this once; send it as \
                     `Authorization: Bearer …`",
                    created.name, created.scope
                );
            }
        }
        TokenCommand::List(page) => {
            let r = falcon_app::requests::PageRequest::from(page);
            let tokens = app.tokens(r.cursor.as_deref(), r.page_size()?).await?;
            if global.json {
                print_page(&tokens)?;
            } else {
                let mut table = falcon_app::render::text::new_table(false, ["name", "scope", "created", "revoked"]);
                for t in &tokens.items {
                    table.add_row([
                        t.name.clone(),
                        t.scope.clone(),
                        t.created.to_rfc3339(),
                        t.revoked.map_or("—".into(), |r| r.to_rfc3339()),
                    ]);
                }
                print_stdout(&table.to_string())?;
            }
        }
        TokenCommand::Revoke { name } => {
            let revoked = app.revoke_token(name).await?;
            if !app.tokens_exist().await? {
                eprintln!(
                    "falcon: warning: that was the last live token: `falcon serve` over this store now refuses every \
                     request (it never opens again by itself); `falcon token create --name NAME --scope admin` lets \
                     someone in"
                );
            }
            if global.json {
                print_json(&revoked)?;
            } else {
                print_stdout(&format!("token `{}` revoked", revoked.name))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
