// The table page: "Run now" posts to /tables/{name}/run (with a bearer
// token from this tab's sessionStorage when the daemon asks for one), then
// watches /status until the run has finished and reloads the page.
"use strict";
(function () {
  const name = document.body.dataset.table;
  const btn = document.getElementById("run-now"), out = document.getElementById("run-status");
  const path = "/tables/" + encodeURIComponent(name);

  async function lastEnd() {
    const page = await (await fetch("/status", { cache: "no-store" })).json();
    const t = (page.tables || []).find((x) => x.name === name);
    return t && t.last_run ? t.last_run.end : "";
  }
  async function post() {
    const headers = {};
    const tok = sessionStorage.getItem("compactord-token");
    if (tok) headers["Authorization"] = "Bearer " + tok;
    return fetch(path + "/run", { method: "POST", headers });
  }
  async function runNow() {
    btn.disabled = true;
    out.textContent = "triggering…";
    const before = await lastEnd();
    let resp = await post();
    if (resp.status === 401) {
      const tok = window.prompt("This daemon needs its bearer token (--http-token-file) to run a table:");
      if (tok) { sessionStorage.setItem("compactord-token", tok.trim()); resp = await post(); }
    }
    if (resp.status !== 202) {
      let msg = String(resp.status);
      try { msg += ": " + (await resp.json()).error; } catch (e) { /* not JSON */ }
      out.textContent = "refused: " + msg;
      btn.disabled = false;
      return;
    }
    out.textContent = "triggered; waiting for the run to finish…";
    for (let i = 0; i < 600; i++) {
      await new Promise((r) => setTimeout(r, 500));
      if ((await lastEnd()) !== before) { location.reload(); return; }
    }
    out.textContent = "the run has not finished yet; reload later";
    btn.disabled = false;
  }
  if (btn) btn.addEventListener("click", () => { runNow().catch((e) => { out.textContent = String(e); btn.disabled = false; }); });
  // Refresh the page every 30 s while nobody clicks.
  setInterval(() => { if (!btn || !btn.disabled) location.reload(); }, 30000);
})();
