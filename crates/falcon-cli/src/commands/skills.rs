//! `falcon skills …` and `falcon context`: the agent layer through `falcon-app`.

use crate::cli::{ContextArgs, GlobalArgs, SkillsCommand};
use crate::output::{print_json, print_page, print_stdout, CliFailure};
use falcon_app::page::Page;
use falcon_app::skills::{self, InstallTarget};
use falcon_app::App;
use falcon_core::ErrorKind;
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, command: &SkillsCommand) -> anyhow::Result<ExitCode> {
    match command {
        SkillsCommand::List => {
            let all = skills::list()?;
            if global.json {
                print_page(&Page { items: all, next_cursor: None })?;
            } else {
                let mut table = falcon_app::render::text::new_table(false, ["skill", "what it is for"]);
                for s in &all {
                    table.add_row([s.name.clone(), s.description.clone()]);
                }
                print_stdout(&table.to_string())?;
            }
        }
        SkillsCommand::Show { name } => {
            let skill = skills::show(name)?;
            if global.json {
                print_json(&skill)?;
            } else {
                print_stdout(skill.text.trim_end())?;
            }
        }
        SkillsCommand::Install { target, force } => {
            let project = std::env::current_dir()
                .map_err(|e| CliFailure::new(ErrorKind::Failure, format!("the current folder: {e}")))?;
            let report = skills::install(&InstallTarget::parse(target), &project, *force)?;
            if global.json {
                print_json(&report)?;
            } else {
                for s in &report.skills {
                    print_stdout(&format!("{}: {} ({} files)", s.path.display(), s.action, s.files))?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn context(global: &GlobalArgs, app: &App, args: &ContextArgs) -> anyhow::Result<ExitCode> {
    if global.json && args.markdown {
        return Err(CliFailure::new(ErrorKind::Usage, "--json and --markdown: choose one").into());
    }
    let context = app.context().await?;
    if global.json {
        print_json(&context)?;
    } else {
        print_stdout(context.markdown().trim_end())?;
    }
    Ok(ExitCode::SUCCESS)
}
