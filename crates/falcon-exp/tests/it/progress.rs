//! What a wait on several experiments shows: with one CPU of capacity, the second experiment waits with its
//! job's reason (not a bare "queued") while the first reports the step its live metrics reached; at the end
//! every one has ended.

use falcon_core::config::{Config, ConfigLayer, MachineFacts};
use falcon_core::spec::parse_spec;
use falcon_core::status::ExperimentStatus;
use falcon_exp::Exp;

fn spec(name: &str) -> String {
    format!(
        "name: {name}\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'for i in $(seq 0 19); do \
         echo \"{{\\\"step\\\": $i, \\\"step_time_s\\\": 0.1}}\" >> $FALCON_ARTIFACT_DIR/metrics.jsonl; sleep 0.2; done']\n\
         resources: {{accelerator: cpu}}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_shows_steps_reached_and_why_the_others_wait() {
    let dir = crate::harness::job_dir();
    let toml = "data_dir = \".falcon\"\n[jobs]\npoll_interval_ms = 100\nlog_interval_s = 1\n\n[[pools]]\nname = \"local\"\nbackend = \"local\"\n\
                zone = \"local\"\nplatform = \"cpu\"\naccelerators = [\"cpu\"]\ncapacity = 1\n";
    let layer = ConfigLayer::from_toml(toml, "falcon.toml").unwrap().rebase(dir.path());
    let exp = Exp::init(&Config::resolve([layer], MachineFacts { cores: 2 })).await.unwrap();
    let a = exp.submit(&parse_spec(&spec("first"), "a.yaml").unwrap()).await.unwrap();
    let b = exp.submit(&parse_spec(&spec("second"), "b.yaml").unwrap()).await.unwrap();
    let (mut steps, mut waiting) = (Vec::new(), Vec::new());
    let done = exp
        .wait_all(&[a.id, b.id], Some(std::time::Instant::now() + std::time::Duration::from_secs(120)), |runs| {
            for r in runs {
                if let Some(s) = r.step {
                    steps.push(s);
                }
                if r.status == ExperimentStatus::Provisioning {
                    waiting.extend(r.reason.clone());
                }
            }
        })
        .await
        .unwrap();
    assert!(done.iter().all(|r| r.status == ExperimentStatus::Completed), "{done:?}");
    assert!(done.iter().all(|r| r.reason.is_none() && r.step.is_none()), "ended runs carry neither: {done:?}");
    assert!(!steps.is_empty() && steps.windows(2).any(|w| w[1] > w[0]), "steps reached: {steps:?}");
    assert!(steps.iter().all(|s| (0..20).contains(s)));
    assert!(
        waiting.iter().any(|r| r.contains("capacity") || r.contains("pool") || r.contains("wait")),
        "the second run says why it waits: {waiting:?}"
    );
}
