// The dashboard in a real browser (Debian's Chromium through playwright-core), against a `falcon serve` that
// scripts/check-dashboard.sh started on a fresh store:
//
//   node tests/browser/dashboard.mjs BASE_URL SPEC_DIR OUT_DIR
//
// SPEC_DIR holds baseline.yaml and variant.yaml (the example workload with few steps). The script submits both
// through the API, opens the experiments page at once and waits — without reloading — until both rows say
// COMPLETED; then makes a goal and a 2x2 sweep around the baseline, and opens every page: experiments,
// experiment, compare, goals, goal, session (4 cells), history. On each page it fails on a console error, a
// failed request or a request outside the server's origin, runs axe-core (no serious or critical violation),
// checks that the page does not scroll sideways at 1280 and 1920 pixels, tabs through it (the focus moves and
// stays visible), and keeps a screenshot in OUT_DIR.
import { chromium } from "playwright-core";
import { readFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";

const [base, specDir, outDir] = process.argv.slice(2);
if (!base || !specDir || !outDir) {
  console.error("usage: node dashboard.mjs BASE_URL SPEC_DIR OUT_DIR");
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
const origin = new URL(base).origin;
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const failures = [];
const fail = (msg) => { failures.push(msg); console.error("FAIL " + msg); };
const log = (msg) => console.error("dashboard: " + msg);

async function api(method, path, body, type = "application/json") {
  const r = await fetch(base + path, { method, headers: body ? { "content-type": type } : {}, body });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return JSON.parse(text);
}

async function waitFor(what, check, seconds) {
  const until = Date.now() + seconds * 1000;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out after ${seconds} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

const browser = await chromium.launch({
  executablePath: process.env.FALCON_CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });

/// A page that records what must not happen on it.
async function open(name, path) {
  const page = await context.newPage();
  const problems = [];
  page.on("console", (m) => { if (m.type() === "error") problems.push(`console error: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`script error: ${e.message}`));
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (u.protocol !== "data:" && u.origin !== origin) problems.push(`request outside the origin: ${r.url()}`);
  });
  page.on("requestfailed", (r) => {
    // An event stream the page closes itself, or one cut when the page goes away, is not a failure.
    if (!r.url().includes("/ui/live") && !r.url().endsWith("/logs")) problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  const response = await page.goto(base + path, { waitUntil: "load" });
  if (response.status() !== 200) problems.push(`${path} answered ${response.status()}`);
  return { page, problems, name, path };
}

async function check(p) {
  const { page, problems, name, path } = p;
  // Accessibility: axe-core's WCAG 2 A/AA rules (evaluated through the DevTools protocol, so the page's
  // Content-Security-Policy, which forbids inline scripts, stays as it is).
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => window.axe.run(document, { runOnly: ["wcag2a", "wcag2aa", "best-practice"] }));
  for (const v of result.violations) {
    if (v.impact === "serious" || v.impact === "critical") {
      problems.push(`axe ${v.impact}: ${v.id} (${v.help}) at ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}`);
    }
  }
  // A laptop screen and a wide monitor: the page itself never scrolls sideways (wide tables scroll in their box).
  for (const [w, h] of [[1280, 800], [1920, 1080]]) {
    await page.setViewportSize({ width: w, height: h });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    if (overflow > 1) problems.push(`at ${w}x${h} the page is ${overflow}px wider than the window`);
  }
  await page.setViewportSize({ width: 1366, height: 900 });
  // Keyboard: Tab moves the focus to a visible element.
  await page.keyboard.press("Tab");
  await page.keyboard.press("Tab");
  const focused = await page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return null;
    const r = el.getBoundingClientRect();
    return { tag: el.tagName, visible: r.width > 0 && r.height > 0 };
  });
  if (!focused || !focused.visible) problems.push("Tab does not move the focus to a visible element");
  await page.screenshot({ path: `${outDir}/${name}.png`, fullPage: true });
  // FALCON_DASHBOARD_DOCS=docs/dashboard: also the first screen of each page as a small JPEG, for the docs.
  if (process.env.FALCON_DASHBOARD_DOCS) {
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: `${process.env.FALCON_DASHBOARD_DOCS}/${name}.jpg`, type: "jpeg", quality: 70 });
  }
  for (const m of problems) fail(`${path}: ${m}`);
  log(`${path}: ${problems.length ? problems.length + " problem(s)" : "ok"} (axe: ${result.violations.length} violation(s) in all, none serious unless listed)`);
  await page.close();
}

try {
  // Two runs submitted, the experiments page opened while they wait or run: it must show them completing.
  const a = await api("POST", "/api/v1/experiments", readFileSync(`${specDir}/baseline.yaml`, "utf8"), "application/yaml");
  const b = await api("POST", "/api/v1/experiments", readFileSync(`${specDir}/variant.yaml`, "utf8"), "application/yaml");
  const list = await open("experiments-live", "/");
  const statusOf = (id) => list.page.locator(`tr[data-id="${id}"] .st .status`).getAttribute("data-status");
  const before = [await statusOf(a.id), await statusOf(b.id)];
  log(`the list shows ${a.id} ${before[0]}, ${b.id} ${before[1]}; waiting for COMPLETED without a reload`);
  if (before.every((s) => s === "COMPLETED")) fail("both runs had completed before the page opened: nothing was live");
  for (const id of [a.id, b.id]) {
    await list.page.locator(`tr[data-id="${id}"] .st .status[data-status="COMPLETED"]`).waitFor({ timeout: 240_000 });
  }
  log("both rows reached COMPLETED in place");
  await check(list);

  // A goal around the baseline and a 2x2 sweep of it (the session page's grid).
  const goal = await api("POST", "/api/v1/goals", JSON.stringify({
    title: "more tokens per second", metric: "tokens_per_s", baseline: a.id, target: 8000 }));
  const sweep = `base: ${a.id}\nsweep:\n  config.batch_size: [4, 8]\n  config.remat: [none, full]\n`;
  const session = await api("POST", "/api/v1/sessions", JSON.stringify({ sweep, name: "grid", goal: goal.id }));
  await waitFor(`${session.id} to complete`, async () => (await api("GET", `/api/v1/sessions/${session.id}`)).status === "COMPLETED", 420);
  log(`${session.id} completed`);

  await check(await open("experiments", "/"));
  const exp = await open("experiment", `/experiments/${b.id}`);
  if (await exp.page.locator("figure svg").count() < 2) fail("the experiment page draws fewer than 2 charts");
  if (await exp.page.locator("table.steps tbody tr").count() < 1) fail("the experiment page has no per-step trace breakdown");
  if (await exp.page.locator(".stack.goodput span").count() < 2) fail("the experiment page has no goodput bar (productive and a cause at least)");
  const exported = await fetch(`${base}/api/v1/traces/${b.id}/export`);
  const gz = Buffer.from(await exported.arrayBuffer());
  if (exported.status !== 200 || gz[0] !== 0x1f || gz[1] !== 0x8b) fail(`the Chrome-trace export answered ${exported.status}, not gzip`);
  await check(exp);
  const cmp = await open("compare", `/compare/${a.id}/${b.id}`);
  if (!(await cmp.page.locator("text=Config diff").count())) fail("the compare page has no config diff");
  await check(cmp);
  await check(await open("goals", "/goals"));
  await check(await open("goal", `/goals/${goal.id}`));
  const ses = await open("session", `/sessions/${session.id}`);
  const cells = await ses.page.locator("table.grid td.cell").count();
  if (cells !== 4) fail(`the session page of a 2x2 sweep shows ${cells} cells, not 4`);
  await check(ses);
  await check(await open("history", `/history?name=${encodeURIComponent(a.name)}&metric=tokens_per_s`));
} catch (e) {
  fail(e.stack || String(e));
} finally {
  await browser.close();
}
if (failures.length) {
  console.error(`dashboard: ${failures.length} failure(s)`);
  process.exit(1);
}
console.error("dashboard: every page passed");
