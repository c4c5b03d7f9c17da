//! `falcon profile compare --format html` on real captures, opened in headless Chromium with no network:
//! the page must render (a non-trivial screenshot), log nothing to the console, request nothing over the
//! network, and carry its SVG charts in the DOM. The screenshots are kept in
//! `target/test-artifacts/profile-compare-{cpu,tpu}.png`.
//!
//! The browser is `$FALCON_CHROMIUM`, else `chromium`, `chromium-browser`, `google-chrome` or
//! `google-chrome-stable` on PATH. Without one the tests fail (`scripts/test.sh` installs Debian's `chromium`
//! when it is missing); nothing skips them.

use crate::common::{code, falcon};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `rel` under this crate, without `..` (the inputs appear in the page's title).
fn under_manifest(rel: &str) -> String {
    let p = manifest().join(rel);
    std::fs::canonicalize(&p).unwrap_or(p).to_string_lossy().into_owned()
}

fn compare_data(name: &str) -> String {
    under_manifest(&format!("../falcon-analysis/tests/data/compare/{name}"))
}

fn tpu_capture() -> String {
    under_manifest("../falcon-xplane/tests/data/tpu_v6e_inference.xplane.pb")
}

fn artifacts_dir() -> PathBuf {
    PathBuf::from(under_manifest("../..")).join("target/test-artifacts")
}

/// The browser to use; panics when there is none.
fn browser() -> PathBuf {
    if let Some(p) = std::env::var_os("FALCON_CHROMIUM").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            p.exists() || find_on_path(&p.to_string_lossy()).is_some(),
            "FALCON_CHROMIUM={} does not exist",
            p.display()
        );
        return find_on_path(&p.to_string_lossy()).unwrap_or(p);
    }
    if let Some(p) =
        ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"].iter().find_map(|n| find_on_path(n))
    {
        return p;
    }
    panic!(
        "html_report needs a Chromium browser to render the HTML report: install it (Debian/Ubuntu: `apt-get install chromium`) \
         or point FALCON_CHROMIUM at chromium/google-chrome"
    );
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return p.is_file().then_some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(name)).find(|p| p.is_file())
}

/// Runs the browser with `args` (plus the no-network, headless flags), stdout and stderr to files, killed
/// after [`BROWSER_TIMEOUT`]. Returns (exit code, stdout, stderr).
fn run_browser(browser: &Path, work: &Path, tag: &str, args: &[String]) -> (i32, String, String) {
    let out_path = work.join(format!("{tag}.stdout"));
    let err_path = work.join(format!("{tag}.stderr"));
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-extensions",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1400,3000",
    ])
    .arg(format!("--user-data-dir={}", work.join(format!("{tag}-profile")).display()))
    .args(args)
    .env("HOME", work)
    .stdin(Stdio::null())
    .stdout(std::fs::File::create(&out_path).unwrap())
    .stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {}: {e}", browser.display()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > BROWSER_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} did not finish within {BROWSER_TIMEOUT:?} ({tag}); stderr:\n{}",
                browser.display(),
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stdout = String::from_utf8_lossy(&std::fs::read(&out_path).unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&std::fs::read(&err_path).unwrap()).into_owned();
    (status.code().unwrap_or(-1), stdout, stderr)
}

/// Console messages and network errors in a browser log.
fn log_problems(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.to_ascii_lowercase().contains("console(") || l.contains("ERR_"))
        .collect()
}

/// The URLs the page itself asked the network for (the browser's own background requests have no
/// initiator), from a Chromium NetLog.
fn page_requests(netlog: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(netlog).unwrap_or_else(|e| panic!("no NetLog at {}: {e}", netlog.display()));
    let log: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("NetLog {} is not JSON: {e}", netlog.display()));
    let mut urls: Vec<String> = log["events"]
        .as_array()
        .map(|events| {
            events
                .iter()
                .filter_map(|e| {
                    let p = &e["params"];
                    let url = p["url"].as_str()?;
                    let initiator = p["initiator"].as_str()?;
                    (initiator != "not an origin").then(|| url.to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    urls.sort();
    urls.dedup();
    urls
}

/// Static checks of the page: self-contained, no scripts, no NaN.
fn check_html(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"), "not an HTML5 page");
    assert!(html.trim_end().ends_with("</html>"));
    assert!(!html.contains("NaN"), "NaN in the page");
    let lower = html.to_ascii_lowercase();
    assert!(!lower.contains("<script"), "the page needs no script");
    let urls = lower.matches("http://").count() + lower.matches("https://").count();
    assert_eq!(
        urls,
        lower.matches("xmlns=\"http://www.w3.org/2000/svg\"").count(),
        "only the SVG namespace may name a URL"
    );
    for attr in ["src=\"", "href=\"", "url("] {
        for (i, _) in lower.match_indices(attr) {
            let rest = &lower[i + attr.len()..];
            assert!(
                rest.starts_with("data:") || rest.starts_with('#'),
                "external reference: {}",
                &html[i..(i + 80).min(html.len())]
            );
        }
    }
}

/// Writes the comparison page, checks it, renders it in the browser; returns the page and the DOM for
/// test-specific checks.
fn render(a: &str, b: &str, artifact: &str) -> (String, String) {
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let html_path = work.path().join("compare.html");
    let out =
        falcon(work.path(), &["profile", "compare", a, b, "--format", "html", "-o", &html_path.to_string_lossy()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 0, "profile compare failed:\n{stderr}");
    assert!(stderr.contains("wrote"), "no `wrote FILE` on stderr:\n{stderr}");
    let html = std::fs::read_to_string(&html_path).expect("the page was written");
    check_html(&html);

    let browser = browser();
    let url = format!("file://{}", html_path.display());
    let png = work.path().join("shot.png");
    let netlog = work.path().join("netlog.json");
    let (rc, _, log) = run_browser(
        &browser,
        work.path(),
        "screenshot",
        &[format!("--screenshot={}", png.display()), format!("--log-net-log={}", netlog.display()), url.clone()],
    );
    assert_eq!(rc, 0, "{} --screenshot failed:\n{log}", browser.display());
    let problems = log_problems(&log);
    assert!(problems.is_empty(), "console messages or network errors while rendering:\n{}", problems.join("\n"));
    let requests = page_requests(&netlog);
    assert!(requests.is_empty(), "the page requested network resources: {requests:?}");
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot at {}: {e}\n{log}", png.display()));
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "the screenshot is not a PNG");
    assert!(bytes.len() > 10 * 1024, "the screenshot is nearly empty ({} bytes)", bytes.len());
    let dir = artifacts_dir();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&png, dir.join(artifact)).unwrap();

    let (rc, dom, log) = run_browser(&browser, work.path(), "dump-dom", &["--dump-dom".to_string(), url]);
    assert_eq!(rc, 0, "{} --dump-dom failed:\n{log}", browser.display());
    let problems = log_problems(&log);
    assert!(problems.is_empty(), "console messages or network errors while loading:\n{}", problems.join("\n"));
    assert!(dom.contains("<section class=\"profile-compare\">"), "the comparison section is not in the DOM:\n{dom}");
    (html, dom)
}

#[test]
fn cpu_compare_page_renders_with_its_charts() {
    let (html, dom) = render(&compare_data("batch8"), &compare_data("batch16"), "profile-compare-cpu.png");
    assert!(html.contains("regressed"), "batch 16 is slower per step than batch 8");
    assert!(html.contains("No roofline"), "CPU captures have no roofline");
    assert_eq!(dom.matches("<svg").count(), 2, "step-time and op-delta charts");
    assert!(dom.contains("class=\"chart steps\"") && dom.contains("class=\"chart deltas\""));
    assert!(dom.matches("class=\"median\"").count() == 2, "a median per side");
    assert!(dom.matches("class=\"bar\"").count() >= 10, "regression and improvement bars");
}

#[test]
fn tpu_self_compare_page_renders_the_roofline() {
    let tpu = tpu_capture();
    let (html, dom) = render(&tpu, &tpu, "profile-compare-tpu.png");
    assert!(html.contains("Roofline changes"));
    assert!(dom.contains("class=\"chart roofline\""), "the roofline chart is in the DOM");
    assert_eq!(dom.matches("class=\"roof\"").count(), 1, "one roof: both sides ran on the same chip");
    assert!(dom.matches("class=\"op-move\"").count() >= 1, "ops on the roofline");
    assert!(dom.contains("class=\"legend\""));
}
