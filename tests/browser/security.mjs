// An artifact a workload wrote cannot script the dashboard (issue 31, finding 2), in a real browser (Debian's
// Chromium through playwright-core), against the `falcon serve` that scripts/check-dashboard.sh started and then
// closed with an admin token:
//
//   node tests/browser/security.mjs BASE_URL WORK_DIR OUT_DIR ADMIN_TOKEN
//
// A workload writes report.html with a script (it renames the page and POSTs a goal with the viewer's
// credentials) and an image from another origin. An admin signs in through the form, then opens the artifact:
// it must arrive as a download, no script may run, no request but the artifact's own may be made, and no goal
// may appear. Then the same bytes are rendered as a page anyway (the download header stripped in the browser):
// the artifact's own Content-Security-Policy must still stop the script and the image.
import { chromium } from "playwright-core";
import { writeFileSync, mkdirSync } from "node:fs";

const [base, workDir, outDir, token] = process.argv.slice(2);
if (!base || !workDir || !outDir || !token) {
  console.error("usage: node security.mjs BASE_URL WORK_DIR OUT_DIR ADMIN_TOKEN");
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
const failures = [];
const fail = (msg) => { failures.push(msg); console.error("FAIL " + msg); };
const log = (msg) => console.error("security: " + msg);

async function api(method, path, body) {
  const headers = { authorization: `Bearer ${token}` };
  if (body) headers["content-type"] = "application/yaml";
  const r = await fetch(base + path, { method, headers, body });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return JSON.parse(text);
}

const html = `<!DOCTYPE html><html><head><title>report</title></head><body><h1>report</h1>
<img src="http://198.51.100.7/beacon.png" alt="">
<script>document.title = "pwned";
fetch("/api/v1/goals", {method: "POST", headers: {"content-type": "application/json"},
  body: JSON.stringify({title: "pwned by an artifact", metric: "mfu"})});</script></body></html>`;
writeFileSync(`${workDir}/report.html`, html);
const spec = `name: hostile-report
scenario: benchmark
workload:
  framework: shell
  command: [sh, -c, 'cp "$0" "$FALCON_ARTIFACT_DIR/report.html"', ${JSON.stringify(`${workDir}/report.html`)}]
resources: {accelerator: cpu}
`;

const browser = await chromium.launch({
  executablePath: process.env.FALCON_CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  const exp = await api("POST", "/api/v1/experiments", spec);
  for (let i = 0; ; i++) {
    const e = await api("GET", `/api/v1/experiments/${exp.id}`);
    if (e.status === "COMPLETED") break;
    if (e.status === "FAILED" || i > 240) throw new Error(`${exp.id} ended ${e.status}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const goalsBefore = (await api("GET", "/api/v1/goals")).items.length;
  const artifact = `${base}/api/v1/experiments/${exp.id}/artifacts/report.html`;

  const context = await browser.newContext({ acceptDownloads: true });
  // Every request the pages start, and how those that never reached the network ended: one the artifact's
  // policy stopped in the browser (failure "csp", net::ERR_BLOCKED_BY_CSP) was not made. DEBUG=1 logs them all.
  const requests = [];
  const blocked = new Set();
  context.on("request", (r) => requests.push(`${r.method()} ${r.url()}`));
  context.on("requestfailed", (r) => {
    if (process.env.DEBUG) log(`failed: ${r.url()} ${r.failure()?.errorText}`);
    const why = r.failure()?.errorText || "";
    if (why === "csp" || why.includes("BLOCKED_BY_CSP")) blocked.add(`${r.method()} ${r.url()}`);
  });
  const made = (list) => list.filter((r) => !r.endsWith("/artifacts/report.html") && !blocked.has(r));
  const page = await context.newPage();
  const consoleLines = [];
  page.on("console", (m) => consoleLines.push(m.text()));
  if (process.env.DEBUG) context.on("console", (m) => log(`console: ${m.text()}`));

  // Sign in as an admin through the form, as a person would.
  await page.goto(`${base}/signin?next=%2F`);
  await page.fill("#token", token);
  await Promise.all([page.waitForURL(`${base}/`), page.click("button[type=submit]")]);
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === "falcon_session");
  if (!session || !session.httpOnly || session.sameSite !== "Strict") fail(`the sign-in cookie: ${JSON.stringify(cookies)}`);
  if (session && session.value.includes(token)) fail("the sign-in cookie holds the token");
  log(`signed in as admin; opening ${artifact}`);

  // 1. Opened from the signed-in browser, the artifact is a download, never a page of the origin.
  requests.length = 0;
  const download = page.waitForEvent("download", { timeout: 15_000 });
  await page.goto(artifact).catch(() => {}); // "Download is starting" aborts the navigation
  const d = await download.catch((e) => { fail(`no download: ${e.message}`); return null; });
  if (d) {
    const path = `${outDir}/downloaded-report.html`;
    await d.saveAs(path);
    if (d.suggestedFilename() !== "report.html") fail(`downloaded as ${d.suggestedFilename()}`);
  }
  await new Promise((r) => setTimeout(r, 1500));
  const onDownload = made(requests);
  if (onDownload.length) fail(`requests besides the artifact: ${onDownload.join(", ")}`);
  if ((await page.title()) === "pwned") fail("the artifact's script ran");

  // 2. Rendered anyway (the download header removed in the browser): its own policy still sandboxes it.
  const rendered = await context.newPage();
  rendered.on("console", (m) => consoleLines.push(m.text()));
  await rendered.route(artifact, async (route) => {
    const response = await route.fetch();
    const headers = { ...response.headers() };
    delete headers["content-disposition"];
    headers["content-type"] = "text/html; charset=utf-8";
    await route.fulfill({ response, headers });
  });
  requests.length = 0;
  await rendered.goto(artifact, { waitUntil: "load" });
  await new Promise((r) => setTimeout(r, 1500));
  const title = await rendered.title();
  const heading = await rendered.locator("h1").textContent();
  if (heading !== "report") fail(`the page did not render: h1 ${heading}`);
  if (title === "pwned") fail("the artifact's script ran when rendered");
  const onRender = made(requests);
  if (onRender.length) fail(`requests made by the rendered artifact: ${onRender.join(", ")}`);
  await rendered.screenshot({ path: `${outDir}/artifact-rendered.png` });

  const goalsAfter = (await api("GET", "/api/v1/goals")).items.length;
  if (goalsAfter !== goalsBefore) fail(`goals before ${goalsBefore}, after ${goalsAfter}: the artifact wrote`);
  log(`download: ${d ? d.suggestedFilename() : "none"}; rendered: title "${title}", ${blocked.size} request(s) stopped by the policy (${[...blocked].join(", ")}), ${consoleLines.filter((l) => l.includes("Content Security Policy") || l.includes("sandbox")).length} console line(s) from it`);
} catch (e) {
  fail(e.stack || String(e));
} finally {
  await browser.close();
}
if (failures.length) {
  console.error(`security: ${failures.length} failure(s)`);
  process.exit(1);
}
console.error("security: the artifact downloaded; no script ran, no request was made, nothing was written");
