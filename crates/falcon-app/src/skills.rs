//! The agent skills (the seed's AI-orchestration layer): the repository's `skills/<name>/` folders, embedded in
//! the binary at build time (`build.rs`), in the Agent Skills format — `SKILL.md` with YAML frontmatter (`name`
//! equal to the folder, `description`), then the procedure; optional `scripts/` (shell over `falcon … --json`) and
//! `references/`. Every front end lists, shows and installs them from here: `falcon skills`, and later the Web
//! API and the MCP server's prompts.
//!
//! Installing writes each skill folder under the target's skills directory — Claude Code `.claude/skills/`,
//! Gemini CLI `.gemini/skills/`, Codex and other harnesses `.agents/skills/`, or any folder — atomically file by
//! file, scripts executable. A folder that already holds different files is refused (exit 4) unless `force`
//! replaces it; an identical one is left as it is.

use crate::{AppError, Result};
use falcon_core::ErrorKind;
use serde::Serialize;
use std::path::{Path, PathBuf};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/skills.rs"));
}

/// One skill as `skills list` gives it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SkillSummary {
    /// The folder name (= the frontmatter's `name`).
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// Its files, relative to its folder (`SKILL.md`, `scripts/…`).
    pub files: Vec<String>,
}

/// One skill with its procedure.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Skill {
    #[serde(flatten)]
    pub summary: SkillSummary,
    /// The whole `SKILL.md`, frontmatter included.
    pub text: String,
}

/// Where `skills install` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallTarget {
    /// `.claude/skills/` (Claude Code).
    Claude,
    /// `.gemini/skills/` (Gemini CLI).
    Gemini,
    /// `.agents/skills/` (Codex and other harnesses that read it).
    Agents,
    /// A folder of the caller's.
    Dir(PathBuf),
}

impl InstallTarget {
    /// `claude`, `gemini`, `codex` or `agents` (both `.agents/skills`), else a folder.
    pub fn parse(text: &str) -> InstallTarget {
        match text {
            "claude" => InstallTarget::Claude,
            "gemini" => InstallTarget::Gemini,
            "codex" | "agents" => InstallTarget::Agents,
            dir => InstallTarget::Dir(PathBuf::from(dir)),
        }
    }

    /// The skills directory under `project` (the current folder).
    pub fn dir(&self, project: &Path) -> PathBuf {
        match self {
            InstallTarget::Claude => project.join(".claude/skills"),
            InstallTarget::Gemini => project.join(".gemini/skills"),
            InstallTarget::Agents => project.join(".agents/skills"),
            InstallTarget::Dir(d) => project.join(d),
        }
    }
}

/// What `skills install` did.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct InstallReport {
    /// The skills directory written to.
    pub target: PathBuf,
    /// One entry per skill.
    pub skills: Vec<InstalledSkill>,
}

/// One skill's folder after `skills install`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct InstalledSkill {
    pub name: String,
    pub path: PathBuf,
    /// `written` (new), `replaced` (with `force`) or `unchanged` (already identical).
    pub action: &'static str,
    pub files: usize,
}

/// The frontmatter fields of a `SKILL.md` (`name`, `description`), from its leading `---` block.
fn frontmatter(text: &str, file: &str) -> Result<(String, String)> {
    let invalid = |why: &str| AppError::new(ErrorKind::Failure, format!("{file}: {why}"));
    let rest = text.strip_prefix("---\n").ok_or_else(|| invalid("no YAML frontmatter (`---` first)"))?;
    let end = rest.find("\n---").ok_or_else(|| invalid("the frontmatter has no closing `---`"))?;
    let doc = falcon_core::spec::parse_document(&rest[..end], file)?;
    let field = |key: &str| doc.value.get(key).and_then(|v| v.as_str()).map(str::to_string);
    let name = field("name").ok_or_else(|| invalid("the frontmatter has no `name`"))?;
    let description = field("description").ok_or_else(|| invalid("the frontmatter has no `description`"))?;
    Ok((name, description))
}

/// The embedded files of the skill `name`: (path within its folder, bytes).
fn files_of(name: &str) -> Vec<(&'static str, &'static [u8])> {
    let prefix = format!("{name}/");
    embedded::FILES.iter().filter_map(|(path, bytes)| Some((path.strip_prefix(&prefix)?, *bytes))).collect()
}

fn names() -> Vec<&'static str> {
    let mut names: Vec<&str> = embedded::FILES.iter().filter_map(|(p, _)| p.strip_suffix("/SKILL.md")).collect();
    names.dedup();
    names
}

fn load(name: &str) -> Result<Skill> {
    let files = files_of(name);
    let text = files
        .iter()
        .find(|(p, _)| *p == "SKILL.md")
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .ok_or_else(|| not_found(name))?;
    let (declared, description) = frontmatter(&text, &format!("skills/{name}/SKILL.md"))?;
    if declared != name {
        return Err(AppError::new(
            ErrorKind::Failure,
            format!("skills/{name}/SKILL.md: its `name` is `{declared}`, not the folder's `{name}`"),
        ));
    }
    let files = files.iter().map(|(p, _)| p.to_string()).collect();
    Ok(Skill { summary: SkillSummary { name: name.to_string(), description, files }, text })
}

fn not_found(name: &str) -> AppError {
    AppError::new(ErrorKind::NotFound, format!("no skill named `{name}`"))
        .with_hint(format!("the skills are: {}", names().join(", ")))
}

/// Every embedded skill, by name.
pub fn list() -> Result<Vec<SkillSummary>> {
    names().into_iter().map(|n| load(n).map(|s| s.summary)).collect()
}

/// One skill with its `SKILL.md`; not found (exit 3) names the skills there are.
pub fn show(name: &str) -> Result<Skill> {
    if !names().contains(&name) {
        return Err(not_found(name));
    }
    load(name)
}

/// Writes every skill under `target`'s skills directory below `project` (see the module docs).
pub fn install(target: &InstallTarget, project: &Path, force: bool) -> Result<InstallReport> {
    let dir = target.dir(project);
    let mut plans = Vec::new();
    for name in names() {
        load(name)?; // a skill that does not validate is never installed
        let folder = dir.join(name);
        let files = files_of(name);
        let same = files.iter().all(|(p, b)| std::fs::read(folder.join(p)).is_ok_and(|on_disk| on_disk == *b))
            && count_files(&folder) == files.len();
        let action = match (folder.exists(), same) {
            (false, _) => "written",
            (true, true) => "unchanged",
            (true, false) if force => "replaced",
            (true, false) => {
                return Err(AppError::new(
                    ErrorKind::Conflict,
                    format!("{} exists and holds other files than the skill `{name}`", folder.display()),
                )
                .with_hint("add --force to replace the installed skills, or choose another --target"));
            }
        };
        plans.push((name, folder, files, action));
    }
    let mut skills = Vec::new();
    for (name, folder, files, action) in plans {
        if action == "replaced" {
            std::fs::remove_dir_all(&folder).map_err(|e| io_failure("removing", &folder, e))?;
        }
        if action != "unchanged" {
            for (path, bytes) in &files {
                let file = folder.join(path);
                if let Some(parent) = file.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| io_failure("creating", parent, e))?;
                }
                crate::files::write_atomically(&file, String::from_utf8_lossy(bytes).as_bytes())?;
                if path.starts_with("scripts/") {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755))
                        .map_err(|e| io_failure("making executable", &file, e))?;
                }
            }
        }
        skills.push(InstalledSkill { name: name.to_string(), path: folder, action, files: files.len() });
    }
    Ok(InstallReport { target: dir, skills })
}

fn count_files(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries.flatten().map(|e| if e.path().is_dir() { count_files(&e.path()) } else { 1 }).sum()
}

fn io_failure(what: &str, path: &Path, e: std::io::Error) -> AppError {
    AppError::new(ErrorKind::Failure, format!("{what} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_skill_loads_and_installs_once() {
        let all = list().unwrap();
        assert!(all.len() >= 9, "{} skills", all.len());
        assert!(all.iter().all(|s| !s.description.is_empty() && s.description.chars().count() <= 1024));
        let project = tempfile::tempdir().unwrap();
        let report = install(&InstallTarget::Claude, project.path(), false).unwrap();
        assert!(report.skills.iter().all(|s| s.action == "written"));
        for s in &all {
            let installed = project.path().join(".claude/skills").join(&s.name).join("SKILL.md");
            assert_eq!(std::fs::read_to_string(installed).unwrap(), show(&s.name).unwrap().text);
        }
        let again = install(&InstallTarget::Claude, project.path(), false).unwrap();
        assert!(again.skills.iter().all(|s| s.action == "unchanged"));
        std::fs::write(project.path().join(".claude/skills/falcon/SKILL.md"), "edited").unwrap();
        let refused = install(&InstallTarget::Claude, project.path(), false).unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::Conflict);
        let forced = install(&InstallTarget::Claude, project.path(), true).unwrap();
        assert!(forced.skills.iter().any(|s| s.name == "falcon" && s.action == "replaced"));
        assert_eq!(show("nope").unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(InstallTarget::parse("codex").dir(Path::new("p")), Path::new("p/.agents/skills"));
    }
}
