//! The dashboard as `falcon serve` serves it, over HTTP with the real binary: the experiments page lists what
//! ran (filters, paging, the JSON link, store text escaped), the experiment page draws its metrics, timeline,
//! log and artifacts, two picked experiments compare with a config diff and verdicts, statuses stream live, and
//! signing in with a token sets an HttpOnly, SameSite=Strict cookie holding a sign-in id (never the token) that the
//! pages and the API then accept until it is signed out, expires, or its token is revoked.
//! (The browser suite in `tests/browser/` checks the same pages in Chromium.)

use crate::common;

use crate::common::serve::{client, events, get_json, post, project, spec, Server};
use crate::common::{code, falcon};
use std::time::{Duration, Instant};

async fn page(c: &reqwest::Client, url: &str) -> (u16, String, reqwest::header::HeaderMap) {
    let r = c.get(url).send().await.unwrap();
    let (status, headers) = (r.status().as_u16(), r.headers().clone());
    (status, r.text().await.unwrap(), headers)
}

async fn wait_completed(c: &reqwest::Client, server: &Server, id: &str) {
    let started = Instant::now();
    loop {
        let (_, v) = get_json(c, &server.url(&format!("/api/v1/experiments/{id}"))).await;
        if v["status"] == "COMPLETED" {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "{id} still {}", v["status"]);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_show_what_ran_and_compare_two() {
    let dir = project(None);
    let server = Server::start(dir.path(), &[], &[]);
    let c = client();
    let mut ids = Vec::new();
    for (name, ms) in [("<script>alert(1)</script>", 100), ("dash-b", 120)] {
        let (s, v) = post(&c, &server.url("/api/v1/experiments"), "application/yaml", spec(name, ms)).await;
        assert_eq!(s, 201, "{v:#}");
        ids.push(v["id"].as_str().unwrap().to_string());
    }
    let (a, b) = (ids[0].clone(), ids[1].clone());
    // Live statuses: the stream says where each is now, then each change, and ends when both have ended.
    let live = c.get(server.url(&format!("/ui/live?ids={a},{b}"))).send().await.unwrap();
    assert_eq!(live.headers()["content-type"], "text/event-stream");
    let got = events(live, Duration::from_secs(120)).await;
    let (last, end) = got.last().cloned().unwrap_or_default();
    assert_eq!((last.as_str(), end["all_ended"].as_bool()), ("end", Some(true)), "{got:?}");
    for id in [&a, &b] {
        let statuses: Vec<&str> = got
            .iter()
            .filter(|(e, d)| e == "status" && d["id"] == id.as_str())
            .filter_map(|(_, d)| d["status"].as_str())
            .collect();
        assert_eq!(statuses.last(), Some(&"COMPLETED"), "{id}: {got:?}");
    }
    wait_completed(&c, &server, &a).await;
    wait_completed(&c, &server, &b).await;

    // The experiments page: both rows, newest first, the script name escaped, the JSON one link away.
    let (s, html, headers) = page(&c, &server.url("/")).await;
    assert_eq!(s, 200, "{html}");
    assert!(headers["content-type"].to_str().unwrap().starts_with("text/html"));
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("script-src 'self'") && csp.contains("default-src 'self'"), "{csp}");
    let (pa, pb) = (html.find(&format!(">{a}</a>")).unwrap(), html.find(&format!(">{b}</a>")).unwrap());
    assert!(pb < pa, "newest first");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && !html.contains("<script>alert"), "escaped");
    assert!(html.contains("href=\"/api/v1/experiments\""), "the JSON link");
    assert_eq!(html.matches("data-status=\"COMPLETED\"").count(), 2);
    // Filters (empty form fields ignored), paging, a bad parameter as a page with the API's status.
    let (s, html, _) = page(&c, &server.url("/?status=COMPLETED&goal=&name=dash-b")).await;
    assert_eq!(s, 200);
    assert!(html.contains(&format!(">{b}</a>")) && !html.contains(&format!(">{a}</a>")), "{html}");
    let (_, html, _) = page(&c, &server.url("/?limit=1")).await;
    let before_next = html.split("rel=\"next\"").next().unwrap();
    let older = before_next.rsplit("href=\"").next().unwrap().split('"').next().unwrap().to_string();
    assert_eq!(older, format!("/?limit=1&amp;cursor={b}"));
    let (_, html, _) = page(&c, &server.url(&older.replace("&amp;", "&"))).await;
    assert!(html.contains(&format!(">{a}</a>")) && !html.contains(&format!(">{b}</a>")), "the second page");
    let (s, html, _) = page(&c, &server.url("/?bogus=1")).await;
    assert_eq!(s, 400);
    assert!(html.contains("role=\"alert\"") && html.contains("unknown query parameter"), "{html}");

    // The experiment page: metrics drawn, warm-up shaded, timeline, the log, artifacts to download, config.
    let (s, html, _) = page(&c, &server.url(&format!("/experiments/{b}"))).await;
    assert_eq!(s, 200, "{html}");
    for part in [
        "Metrics by step",
        "<svg",
        "step_time_s by step",
        "class=\"warmup\"",
        "Status timeline",
        "RUNNING",
        "step 9 of 120 ms",
        &format!("href=\"/api/v1/experiments/{b}/artifacts/"),
        "metrics.jsonl",
        "Config snapshot",
        "&quot;base_ms&quot;: 120",
        // Its metrics lines carry no `time`: the goodput section says why there is none.
        "<h2>Goodput</h2>",
        "goodput unknown: no step clock",
    ] {
        assert!(html.contains(part), "experiment page lacks {part:?}");
    }
    let (s, _, _) = page(&c, &server.url("/experiments/e-999999")).await;
    assert_eq!(s, 404);

    // Compare: the picked pair goes to /compare/A/B (older first); diff and verdicts shown.
    let r = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(server.url(&format!("/compare?ids={b}&ids={a}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(r.headers()["location"], format!("/compare/{a}/{b}").as_str());
    let (s, html, _) = page(&c, &server.url(&format!("/compare/{a}/{b}"))).await;
    assert_eq!(s, 200, "{html}");
    assert!(html.contains("Config diff") && html.contains("config.base_ms"), "{html}");
    assert!(html.contains("step_time_s") && html.contains("class=\"verdict"), "{html}");
    let (s, _, _) = page(&c, &server.url(&format!("/compare?ids={a}"))).await;
    assert_eq!(s, 400);

    // A goal with a 2×2 sweep: the session page draws the grid (4 cells, the best marked), the goal page its
    // progress and ranking, the history page a name's runs.
    let out = falcon(
        dir.path(),
        &[
            "goal",
            "create",
            "--title",
            "faster",
            "--metric",
            "step_time_s",
            "--target",
            "0.09",
            "--baseline",
            &a,
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let goal = common::json(&out)["id"].as_str().unwrap().to_string();
    let base: String = spec("grid", 100).lines().map(|l| format!("  {l}\n")).collect();
    let sweep = format!("base:\n{base}sweep:\n  config.base_ms: [100, 120]\n  labels.k: [x, y]\n");
    let body = serde_json::json!({ "sweep": sweep, "name": "grid", "goal": goal }).to_string();
    let (s, session) = post(&c, &server.url("/api/v1/sessions"), "application/json", body).await;
    assert_eq!(s, 201, "{session:#}");
    assert_eq!(session["spec"]["axes"][0]["key"], "config.base_ms", "the axes are kept: {session:#}");
    let sid = session["id"].as_str().unwrap().to_string();
    for e in session["experiments"].as_array().unwrap() {
        wait_completed(&c, &server, e["id"].as_str().unwrap()).await;
    }
    let (s, html, _) = page(&c, &server.url(&format!("/sessions/{sid}"))).await;
    assert_eq!(s, 200, "{html}");
    assert_eq!(html.matches("<td class=\"cell").count(), 4, "{html}");
    // base_ms 100 is best (0.100 s), in both label columns alike: a tie, both marked; the 120 row is not.
    assert_eq!(html.matches("<td class=\"cell best\"").count(), 2, "{html}");
    assert_eq!(html.matches("★ 0.1</a>").count(), 2, "{html}");
    assert!(html.contains("config.base_ms ↓ · labels.k →") && html.contains("step_time_s over the sweep"), "{html}");
    let (s, html, _) = page(&c, &server.url(&format!("/goals/{goal}"))).await;
    assert_eq!(s, 200, "{html}");
    for part in
        ["Progress", "<svg", "target 0.09", "Ranking", "data-post=\"/api/v1/goals/claim\"", "/report?format=html"]
    {
        assert!(html.contains(part), "goal page lacks {part:?}: {html}");
    }
    let (s, html, _) = page(&c, &server.url("/goals")).await;
    assert!(s == 200 && html.contains(&format!(">{goal}</a>")), "{html}");
    let (s, html, _) = page(&c, &server.url("/history?name=dash-b&metric=step_time_s")).await;
    assert_eq!(s, 200, "{html}");
    assert!(html.contains("step_time_s of “dash-b”") && html.contains(&format!(">{b}</a>")), "{html}");

    // Assets come from the binary.
    let (s, js, h) = page(&c, &server.url("/assets/dashboard.js")).await;
    assert_eq!(s, 200);
    assert!(h["content-type"].to_str().unwrap().starts_with("text/javascript") && js.contains("EventSource"));
}

/// A bisection made for real (`examples/bisect/make-repo.sh`: 6 commits, the 4th slower, then one empty commit
/// whose subject is markup, the bad end), then served: its session page draws the search, not a sweep's grid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bisections_session_page_draws_its_search() {
    let dir = project(None);
    let repo = dir.path().join("repo");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bisect/make-repo.sh");
    // A 25 % slowdown against 3 % run-to-run noise: two runs a commit name it every time.
    let out = std::process::Command::new(&script)
        .arg(&repo)
        .args(["--commits", "6", "--culprit", "4", "--slowdown", "0.25"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let made = common::json(&out);
    let evil = "<script>alert(1)</script> & \"quotes\"";
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .current_dir(&repo)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["commit", "--allow-empty", "-q", "-m", evil]);
    git(&["tag", "-f", "v-bad"]);
    let spec = repo.join("falcon.yaml");
    let args = ["--good", "v-good", "--bad", "v-bad", "--wait", "--json", "--min-runs", "2", "--max-runs", "6"];
    let out = falcon(dir.path(), &[&["bisect", spec.to_str().unwrap()][..], &args[..]].concat());
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let v = common::json(&out);
    let culprit = made["culprit"].as_str().unwrap();
    assert_eq!((v["state"].as_str(), v["culprit"]["commit"].as_str()), (Some("decided"), Some(culprit)), "{v:#}");
    let sid = v["session"].as_str().unwrap().to_string();
    let tested = v["tested"].as_array().unwrap();

    let server = Server::start(dir.path(), &["--no-worker"], &[]);
    let c = client();
    let (s, html, _) = page(&c, &server.url(&format!("/sessions/{sid}"))).await;
    assert_eq!(s, 200, "{html}");
    // The answer first: the culprit's full SHA, subject, author and date, the verdict lines; then the chart.
    let answer = html.find("<strong>Culprit</strong>").unwrap_or_else(|| panic!("no culprit named: {html}"));
    let svg = html.find("<svg").unwrap_or_else(|| panic!("no chart: {html}"));
    assert!(answer < svg, "the answer before the chart");
    let named = &html[answer..svg];
    for part in [culprit, made["culprit_subject"].as_str().unwrap(), "Falcon Demo", "data-state=\"decided\""] {
        assert!(named.contains(part), "the answer lacks {part:?}: {named}");
    }
    assert!(named.contains("Ends (bad vs good)") && named.contains("step_time_s: Δ median"), "{named}");
    assert!(named.contains("Culprit vs its parent") && named.contains("→ regressed"), "{named}");
    assert!(html.contains(&format!("href=\"/api/v1/bisect/{sid}\"")), "the JSON link is the bisection's");
    assert!(!html.contains("over the sweep") && !html.contains("<td class=\"cell"), "no sweep grid: {html}");
    // The chart: a column per tested commit, a dot per run measured, the culprit marked.
    assert_eq!(html.matches("<g class=\"column\">").count(), tested.len(), "{html}");
    let measured: u64 = tested.iter().map(|t| t["measured"].as_u64().unwrap()).sum();
    assert!(html.matches("fill-opacity=\"0.6\"").count() as u64 >= measured, "a dot per run: {html}");
    assert!(html.contains(&format!("culprit {}", &culprit[..12])), "the culprit marked: {html}");
    // A row per tested commit, with its experiments linked; the culprit's row marked.
    assert_eq!(html.matches("<tr data-commit=").count(), tested.len(), "{html}");
    for t in tested {
        let sha = t["commit"].as_str().unwrap();
        let row = html.split(&format!("<tr data-commit=\"{sha}\"")).nth(1).unwrap().split("</tr>").next().unwrap();
        assert!(row.contains(&format!(">{}</code>", &sha[..12])), "{row}");
        let verdict = t["verdict"].as_str().unwrap();
        assert!(row.contains(&format!(" {verdict}</span>")), "{verdict}: {row}");
        for e in t["experiments"].as_array().unwrap() {
            assert!(row.contains(&format!("href=\"/experiments/{}\"", e.as_str().unwrap())), "{row}");
        }
        assert_eq!(row.contains("★ culprit"), sha == culprit, "{row}");
    }
    // The bad end's subject is markup: escaped wherever it is shown.
    assert!(!html.contains("<script>alert"), "escaped");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;"), "{html}");
    let (s, json) = get_json(&c, &server.url(&format!("/api/v1/bisect/{sid}"))).await;
    assert_eq!((s, json["culprit"]["commit"].as_str()), (200, Some(culprit)), "{json:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_in_keeps_a_sign_in_id_not_the_token_in_a_strict_cookie() {
    let dir = project(None);
    let out = falcon(dir.path(), &["token", "create", "--name", "viewer", "--scope", "read", "--json"]);
    assert_eq!(code(&out), 0);
    let token = common::json(&out)["token"].as_str().unwrap().to_string();
    let out = falcon(dir.path(), &["goal", "create", "--title", "t", "--metric", "step_time_s", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let server = Server::start(dir.path(), &["--no-worker"], &[]);
    let bare = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();

    // No token: a page sends the browser to sign in (and back), the API says 401, assets and the form load.
    let r = bare.get(server.url("/?status=COMPLETED")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(r.headers()["location"], "/signin?next=%2F%3Fstatus%3DCOMPLETED");
    assert_eq!(bare.get(server.url("/api/v1/experiments")).send().await.unwrap().status().as_u16(), 401);
    assert_eq!(bare.get(server.url("/assets/dashboard.css")).send().await.unwrap().status().as_u16(), 200);
    let form = bare.get(server.url("/signin?next=//evil.example/")).send().await.unwrap().text().await.unwrap();
    assert!(form.contains("data-next=\"/\""), "an outside next is refused: {form}");

    // A wrong token, a form-encoded post (what another site could send): refused, no cookie.
    let r = bare
        .post(server.url("/signin"))
        .header("content-type", "application/json")
        .body("{\"token\": \"nope\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    assert!(r.headers().get("set-cookie").is_none());
    let r = bare
        .post(server.url("/signin"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 415);

    // The right token: the cookie is HttpOnly and SameSite=Strict, and it opens pages and the API.
    let r = common::serve::sign_in(&bare, &server, &token).await;
    assert_eq!(r.status().as_u16(), 200);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(
        cookie.contains("Max-Age=43200") && !cookie.contains("Secure"),
        "12 hours; plain HTTP on loopback: {cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_string();
    assert!(
        !cookie.contains(&token) && pair.starts_with("falcon_session=falcon_s_"),
        "an opaque id, not the token: {pair}"
    );
    let r = bare.get(server.url("/")).header("cookie", &pair).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let html = r.text().await.unwrap();
    assert!(html.contains("viewer (read)") && html.contains("Sign out"), "{html}");
    let r = bare.get(server.url("/api/v1/experiments")).header("cookie", &pair).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // Write actions appear only for a principal allowed to write: none for a read token.
    let goal = bare.get(server.url("/goals/g-1")).header("cookie", &pair).send().await.unwrap().text().await.unwrap();
    assert!(goal.contains("Ranking") && !goal.contains("data-post"), "{goal}");
    // A read token writes nothing, cookie or not.
    let r = bare
        .post(server.url("/api/v1/experiments"))
        .header("cookie", &pair)
        .header("content-type", "application/yaml")
        .body(spec("nope", 100))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    // Signing out ends the sign-in on the server: a copy of the cookie opens nothing afterwards; another sign-in
    // of the same token still works.
    let signin = || {
        bare.post(server.url("/signin"))
            .header("content-type", "application/json")
            .body(serde_json::json!({ "token": token }).to_string())
            .send()
    };
    let other =
        signin().await.unwrap().headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    assert_ne!(other, pair, "each sign-in is a session of its own");
    let r = bare.post(server.url("/signout")).header("cookie", &other).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(r.headers()["set-cookie"].to_str().unwrap().contains("Max-Age=0"));
    assert_eq!(r.json::<serde_json::Value>().await.unwrap()["signed_out"], true);
    let r = bare.get(server.url("/api/v1/experiments")).header("cookie", &other).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 401, "a signed-out cookie replayed");
    assert_eq!(bare.get(server.url("/")).header("cookie", &pair).send().await.unwrap().status().as_u16(), 200);
    // Revoked: the cookie no longer opens anything.
    assert_eq!(code(&falcon(dir.path(), &["token", "revoke", "viewer"])), 0);
    let r = bare.get(server.url("/")).header("cookie", &pair).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 303);
}
