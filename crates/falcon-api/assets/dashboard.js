// Falcon dashboard: the little a page needs beyond HTML — sorting a table, picking two rows to compare, live
// statuses and log tails over Server-Sent Events, write actions as same-origin JSON POSTs, signing in. Every
// page works without it (links and GET forms); nothing here loads anything from another origin.
"use strict";

const SHAPES = { COMPLETED: ["✔", "ok"], FAILED: ["✖", "bad"], CANCELLED: ["⊘", "off"], RUNNING: ["▶", "live"],
  PROVISIONING: ["◔", "wait"], PENDING: ["○", "wait"] };
const TERMINAL = new Set(["COMPLETED", "FAILED", "CANCELLED"]);

function badge(status) {
  const [shape, cls] = SHAPES[status] || ["?", "wait"];
  const span = document.createElement("span");
  span.className = "status " + cls;
  span.dataset.status = status;
  const icon = document.createElement("span");
  icon.setAttribute("aria-hidden", "true");
  icon.textContent = shape;
  span.append(icon, " " + status);
  return span;
}

function sortable(table) {
  table.querySelectorAll("th button[data-sort]").forEach((button) => {
    button.addEventListener("click", () => {
      const col = Number(button.dataset.sort);
      const th = button.closest("th");
      const ascending = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("th").forEach((h) => h.hasAttribute("aria-sort") && h.setAttribute("aria-sort", "none"));
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      const body = table.tBodies[0];
      const key = (row) => {
        const cell = row.cells[col];
        const k = cell.dataset.key ?? cell.textContent.trim();
        const n = Number(k);
        return Number.isFinite(n) && k !== "" ? n : k.toLowerCase();
      };
      const rows = Array.from(body.rows);
      rows.sort((a, b) => {
        const x = key(a), y = key(b);
        const c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
        return ascending ? c : -c;
      });
      body.append(...rows);
    });
  });
}

function picker(form) {
  const button = form.querySelector("[data-compare]");
  const hint = form.querySelector("[data-compare-hint]");
  const update = () => {
    const picked = form.querySelectorAll("input[name=ids]:checked").length;
    button.disabled = picked !== 2;
    hint.textContent = picked === 2 ? "Ready to compare." : `Select two experiments (${picked} selected).`;
  };
  form.addEventListener("change", update);
  update();
}

function liveRows(table) {
  const rows = new Map();
  table.querySelectorAll("tbody tr[data-id]").forEach((row) => {
    const st = row.querySelector(".st .status");
    if (st && !TERMINAL.has(st.dataset.status)) rows.set(row.dataset.id, row);
  });
  if (rows.size === 0) return;
  follow(Array.from(rows.keys()), (id, status, updated) => {
    const row = rows.get(id);
    const cell = row && row.querySelector(".st");
    if (!cell) return;
    cell.replaceChildren(badge(status));
    const upd = row.querySelector(".upd");
    if (upd && updated) upd.dataset.key = updated;
  });
}

function follow(ids, onStatus) {
  const source = new EventSource("/ui/live?ids=" + encodeURIComponent(ids.join(",")));
  source.addEventListener("status", (e) => {
    const d = JSON.parse(e.data);
    onStatus(d.id, d.status, d.updated);
  });
  source.addEventListener("end", () => source.close());
  source.onerror = () => source.close();
}

function liveStatus(el) {
  const id = el.dataset.liveStatus;
  const current = el.querySelector(".status");
  if (!current || TERMINAL.has(current.dataset.status)) return;
  follow([id], (_, status) => {
    el.replaceChildren(badge(status));
    if (TERMINAL.has(status)) {
      const note = document.createElement("a");
      note.href = location.pathname;
      note.textContent = " Ended: reload for its analysis";
      el.append(note);
    }
  });
}

function followLogs(box) {
  const empty = document.querySelector("[data-log-empty]");
  const source = new EventSource(box.dataset.follow);
  const pres = new Map();
  let first = true;
  source.addEventListener("log", (e) => {
    const d = JSON.parse(e.data);
    if (first) { box.replaceChildren(); first = false; if (empty) empty.remove(); }
    let pre = pres.get(d.source);
    if (!pre) {
      const h = document.createElement("h3");
      h.textContent = d.source;
      pre = document.createElement("pre");
      pre.className = "log";
      pre.tabIndex = 0;
      box.append(h, pre);
      pres.set(d.source, pre);
    }
    const text = pre.textContent + d.text;
    pre.textContent = text.length > 65536 ? text.slice(text.indexOf("\n", text.length - 65536) + 1) : text;
    pre.scrollTop = pre.scrollHeight;
  });
  source.addEventListener("end", () => source.close());
  source.onerror = () => source.close();
}

async function post(url, body) {
  const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: body || "{}",
    credentials: "same-origin" });
  if (!r.ok) {
    let message = r.status + " " + r.statusText;
    try { message = (await r.json()).error.message; } catch (_) { /* not JSON */ }
    throw new Error(message);
  }
}

function actions() {
  document.querySelectorAll("button[data-post]").forEach((button) => {
    button.addEventListener("click", async () => {
      if (button.dataset.confirm && !confirm(button.dataset.confirm)) return;
      button.disabled = true;
      try {
        await post(button.dataset.post, button.dataset.body);
        location.reload();
      } catch (e) {
        button.disabled = false;
        const out = document.createElement("span");
        out.className = "error";
        out.setAttribute("role", "alert");
        out.textContent = " " + e.message;
        button.after(out);
      }
    });
  });
}

function signin(form) {
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const out = form.querySelector("[data-signin-error]");
    const token = form.querySelector("input[name=token]").value;
    const r = await fetch("/signin", { method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ token }), credentials: "same-origin" });
    if (r.ok) {
      location.assign(form.dataset.next || "/");
    } else {
      let message = "Sign-in failed (" + r.status + ")";
      try { message = (await r.json()).error.message; } catch (_) { /* not JSON */ }
      out.textContent = message;
    }
  });
}

function signout(form) {
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    await fetch("/signout", { method: "POST", credentials: "same-origin" });
    location.assign("/signin");
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("table.sortable").forEach(sortable);
  document.querySelectorAll("form.pick").forEach(picker);
  document.querySelectorAll("table[data-live]").forEach(liveRows);
  document.querySelectorAll("[data-live-status]").forEach(liveStatus);
  document.querySelectorAll("[data-follow]").forEach(followLogs);
  document.querySelectorAll("form[data-signin]").forEach(signin);
  document.querySelectorAll("form[data-json-form]").forEach(signout);
  actions();
});
