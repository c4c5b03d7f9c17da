//! The agent skills as MCP prompts: one prompt per skill (`falcon skills list`), named like it, described by
//! its frontmatter's `description`, whose message is the skill's procedure — `SKILL.md` after its frontmatter.

use falcon_app::Result;
use rmcp::model::{GetPromptResult, Prompt, PromptMessage, Role};

/// Every skill as a prompt.
pub fn list() -> Result<Vec<Prompt>> {
    Ok(falcon_app::skills::list()?.into_iter().map(|s| Prompt::new(s.name, Some(s.description), None)).collect())
}

/// One skill's procedure as a prompt; a not-found error for an unknown name.
pub fn get(name: &str) -> Result<GetPromptResult> {
    let skill = falcon_app::skills::show(name)?;
    let body = body(&skill.text);
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, body)])
        .with_description(skill.summary.description))
}

/// The text after a leading YAML frontmatter (`---` … `---`), trimmed; the whole text when it has none.
pub fn body(text: &str) -> String {
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return text.trim().to_string();
    }
    let rest: Vec<&str> = lines.collect();
    match rest.iter().position(|l| l.trim_end() == "---") {
        Some(end) => rest[end + 1..].join("\n").trim().to_string(),
        None => text.trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::body;

    #[test]
    fn the_body_is_what_follows_the_frontmatter() {
        assert_eq!(body("---\nname: x\ndescription: y\n---\n\n# Do it\nstep\n"), "# Do it\nstep");
        assert_eq!(body("# No frontmatter\n"), "# No frontmatter");
        assert_eq!(body("---\nunterminated\n"), "---\nunterminated");
    }

    #[test]
    fn every_embedded_skill_is_a_prompt_with_its_procedure() {
        let prompts = super::list().unwrap();
        assert!(prompts.len() >= 3, "{} prompts", prompts.len());
        for p in &prompts {
            let got = super::get(&p.name).unwrap();
            assert_eq!(got.messages.len(), 1);
            let text = serde_json::to_value(&got.messages[0]).unwrap()["content"]["text"].as_str().unwrap().to_string();
            assert!(!text.starts_with("---") && text.contains("falcon "), "{}: {text:.200}", p.name);
            assert!(p.description.as_deref().is_some_and(|d| !d.is_empty()));
        }
        assert!(super::get("no-such-skill").is_err());
    }
}
