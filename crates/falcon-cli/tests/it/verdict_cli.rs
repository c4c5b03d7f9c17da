//! "Same" must be earned (issue 32): two runs of one config, one a side, are `inconclusive` — never `same` —
//! and every door says so the same way: `exp compare` (text and `--json`: the verdict, the interval, the margin
//! `min_effect`, `repeats_needed` and the commands that would decide), the API's compare, and the dashboard's
//! compare page.

use crate::common::serve::{client, get_json, Server};
use crate::common::{code, falcon, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_a_side_is_inconclusive_with_the_runs_that_would_decide_it_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&falcon(dir.path(), &["init"])), 0);
    // 20 steps of about 0.1 s with a little noise of their own in each run (awk seeded by the process id).
    let script = dir.path().join("noisy.sh");
    std::fs::write(
        &script,
        r#"awk -v s=$$ 'BEGIN { srand(s); for (i = 0; i < 20; i++) printf("{\"step\": %d, \"step_time_s\": %.6f}\n", i, 0.1 + 0.002 * rand()) }' >> "$FALCON_ARTIFACT_DIR/metrics.jsonl"
"#,
    )
    .unwrap();
    let spec = format!(
        "name: noisy\nscenario: benchmark\nworkload: {{framework: shell, command: [sh, {}]}}\nresources: {{accelerator: cpu}}\n",
        script.display()
    );
    std::fs::write(dir.path().join("noisy.yaml"), spec).unwrap();
    for _ in 0..2 {
        let out = falcon(dir.path(), &["exp", "submit", "noisy.yaml", "--wait", "--json"]);
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    }

    // Two runs of one config with the same step times: nothing changed, and one run a side cannot show it.
    let out = falcon(dir.path(), &["exp", "compare", "e-1", "e-2", "--metric", "step_time_s", "--json"]);
    assert_eq!(code(&out), 0);
    let cmp = json(&out);
    assert_eq!(cmp["verdict"], "inconclusive", "{cmp:#}");
    assert_eq!(cmp["min_effect"], 0.02);
    let (lo, hi) = (cmp["ci_low_rel"].as_f64().unwrap(), cmp["ci_high_rel"].as_f64().unwrap());
    assert!(lo < -0.02 && hi > 0.02, "the interval reaches past the margin: [{lo}, {hi}]");
    let n = cmp["repeats_needed"].as_u64().expect("repeats_needed when inconclusive");
    assert!(n >= 2, "{cmp:#}");
    assert_eq!(cmp["runs"], serde_json::json!({"a": 1, "b": 1}));
    assert_eq!(cmp["between_run_cv"]["source"], "default");

    let out = falcon(dir.path(), &["exp", "compare", "e-1", "e-2", "--metric", "step_time_s"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let hash = cmp["sides"]["a"][0]["config_hash"].as_str().unwrap()[..12].to_string();
    for want in [
        "step_time_s: inconclusive".to_string(),
        "vs margin ±2 %".to_string(),
        "1 vs 1 run, between-run CV 5 % (default floor, 4 dof)".to_string(),
        format!("~{n} runs a side would show whether the two are within ±2 %"),
        format!("to decide: {n} runs a side in all"),
        format!("`falcon exp compare config:{hash} config:{hash} --metric step_time_s`"),
    ] {
        assert!(text.contains(&want), "`{want}` missing from:\n{text}");
    }

    // The API answers the same verdict, and the dashboard's compare page shows the same.
    let server = Server::start(dir.path(), &["--no-worker"], &[]);
    let c = client();
    let (s, api) = get_json(&c, &server.url("/api/v1/experiments/e-1/compare/e-2?metric=step_time_s")).await;
    assert_eq!(s, 200);
    for k in ["verdict", "ci_low_rel", "ci_high_rel", "min_effect", "repeats_needed", "runs", "between_run_cv"] {
        assert_eq!(api[k], cmp[k], "{k}");
    }
    let page = c.get(server.url("/compare/e-1/e-2")).send().await.unwrap().text().await.unwrap();
    let row = page.split("<td>step_time_s</td>").nth(1).expect("a step_time_s row").split("</tr>").next().unwrap();
    for want in ["inconclusive", "±2.0 %", "1 vs 1 run", &format!("~{n} runs a side would")] {
        assert!(row.contains(want), "`{want}` missing from the compare page's row: {row}");
    }
}
