//! The agent layer as an agent meets it: `falcon context` (with a TPU pool configured, its peaks from the
//! catalog) and `falcon skills list | show | install`.

use crate::common::{code, falcon, json};

#[test]
fn context_lists_a_v6e_pool_with_its_peaks_and_stays_small() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("falcon.toml"),
        "[[pools]]\nname = \"gke-v6e\"\nbackend = \"kubernetes\"\nzone = \"us-east5-b\"\nplatform = \"tpu\"\n\
         accelerators = [\"v6e-8\"]\ncapacity = 64\nsettings = { api_url = \"http://127.0.0.1:9\", namespace = \"perf\" }\n\n\
         [[pools]]\nname = \"local\"\nbackend = \"local\"\nzone = \"local\"\nplatform = \"cpu\"\naccelerators = [\"cpu\"]\ncapacity = 2\n",
    )
    .unwrap();
    assert_eq!(code(&falcon(d, &["init", "--keep"])), 0);
    assert_eq!(
        code(&falcon(d, &["goal", "create", "--title", "v6e MFU 40%", "--metric", "mfu", "--target", "0.4"])),
        0
    );

    let out = falcon(d, &["context", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let ctx = json(&out);
    let pool = &ctx["pools"][0];
    assert_eq!((pool["name"].as_str(), pool["backend"].as_str()), (Some("gke-v6e"), Some("kubernetes")));
    assert_eq!((pool["capacity"].as_u64(), pool["used"].as_u64()), (Some(64), Some(0)));
    let peak = &pool["peaks"][0];
    assert_eq!(peak["accelerator"], "v6e-8");
    assert_eq!((peak["chip"].as_str(), peak["chips"].as_u64()), (Some("v6e"), Some(8)));
    assert_eq!(peak["peak_bf16_tflops"], 918.0);
    assert_eq!(peak["hbm_gbps"], 1638.0);
    assert_eq!(peak["hbm_bytes"], 32_000_000_000u64);
    assert_eq!(ctx["goals"][0]["metric"], "mfu");
    assert!(ctx["skills"].as_array().unwrap().len() >= 9);
    assert!(ctx["stores"]["db"].as_str().unwrap().starts_with("sqlite://"));

    let md = falcon(d, &["context"]);
    let text = String::from_utf8(md.stdout).unwrap();
    assert!(text.len() <= 8 * 1024, "{} bytes", text.len());
    assert!(text.contains("| gke-v6e | kubernetes | us-east5-b | v6e-8 | 64 |"), "{text}");
    assert!(text.contains("v6e-8: 918 TFLOP/s bf16, 1638 GB/s HBM, 32 GB"), "{text}");
    let both = falcon(d, &["context", "--json", "--markdown"]);
    assert_eq!(code(&both), 2);
}

#[test]
fn skills_are_listed_shown_and_installed_where_harnesses_look() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let list = json(&falcon(d, &["skills", "list", "--json"]));
    let names: Vec<&str> = list["items"].as_array().unwrap().iter().filter_map(|s| s["name"].as_str()).collect();
    for want in [
        "falcon",
        "check-setup",
        "find-a-bottleneck",
        "locate-a-memory-leak",
        "work-a-goal",
        "judge-a-change",
        "triage-a-regression",
        "find-the-commit",
        "align-accuracy",
        "analyze-kernel-bench",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    let shown = falcon(d, &["skills", "show", "locate-a-memory-leak"]);
    assert!(String::from_utf8_lossy(&shown.stdout).starts_with("---\nname: locate-a-memory-leak\n"));
    let missing = falcon(d, &["skills", "show", "nope", "--json"]);
    assert_eq!(code(&missing), 3);
    assert!(json(&missing)["error"]["hint"].as_str().unwrap().contains("find-a-bottleneck"));

    let out = falcon(d, &["skills", "install", "--target", "claude", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    for name in &names {
        let skill = d.join(".claude/skills").join(name).join("SKILL.md");
        assert!(skill.is_file(), "{}", skill.display());
    }
    let script = d.join(".claude/skills/work-a-goal/scripts/work-a-goal.sh");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o111, 0o111, "scripts are executable");
    // Again: unchanged; an edited copy is refused without --force (exit 4).
    let again = json(&falcon(d, &["skills", "install", "--target", "claude", "--json"]));
    assert!(again["skills"].as_array().unwrap().iter().all(|s| s["action"] == "unchanged"));
    std::fs::write(d.join(".claude/skills/falcon/SKILL.md"), "mine").unwrap();
    assert_eq!(code(&falcon(d, &["skills", "install", "--target", "claude"])), 4);
    assert_eq!(code(&falcon(d, &["skills", "install", "--target", "claude", "--force"])), 0);
    assert_eq!(code(&falcon(d, &["skills", "install", "--target", "codex"])), 0);
    assert!(d.join(".agents/skills/judge-a-change/SKILL.md").is_file());
}
