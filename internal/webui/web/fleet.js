// The fleet page: renders GET /ui/fleet.json (rows formatted by the daemon:
// sizes as the CLI prints them, times in UTC, the attention column) and
// GET /status (the daemon line, progress, leases) every few seconds;
// tables needing attention first, sortable by any column, filterable by
// name/URL and state. Talks to this daemon only.
"use strict";
(function () {
  const REFRESH_MS = 3000;
  let rows = [], status = {}, replica = "", sortKey = "", sortDir = 1;
  const $ = (s) => document.querySelector(s);

  function lease(t) {
    if (!replica) return "no leases";
    if (!t) return "—";
    if (t.state === "running") return replica + " (this daemon)";
    const r = t.last_run && t.last_run.report;
    if (r && r.skipped && /lease/.test(r.skip_reason || "")) return "another replica";
    return "—";
  }
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);
    return e;
  }
  function stateCell(r, t) {
    const td = el("td", { class: "state-cell" }, el("span", { class: "state state-" + r.state }, r.state));
    const p = t && t.progress;
    if (r.state === "running" && p && typeof p === "object") {
      const done = p.done ?? p.jobs_done ?? p.completed, total = p.total ?? p.jobs_total;
      if (typeof done === "number" && typeof total === "number" && total > 0) {
        td.append(" ", el("progress", { max: total, value: done }), " " + done + "/" + total);
      }
    }
    if (r.queue) td.append(el("div", { class: "queue", "data-queue": "" }, r.queue));
    return td;
  }
  function attentionCell(r) {
    const td = el("td", { class: "attention" });
    for (const a of r.attention) td.append(el("span", { class: "attn attn-" + a.kind, "data-kind": a.kind }, a.text));
    return td;
  }
  function key(r, k) {
    if (k === "name" || k === "state" || k === "result") return r[k];
    if (k === "quarantined") return r.quarantined;
    if (k === "lease") return lease(status[r.name]);
    return r.sort[k];
  }
  function render() {
    const f = $("#filter").value.trim().toLowerCase(), s = $("#state").value, only = $("#attention-only").checked;
    const shown = rows.filter((r) =>
      (!f || r.name.toLowerCase().includes(f) || (r.url || "").toLowerCase().includes(f)) && (!s || r.state === s) &&
      (!only || r.attention.length > 0));
    // Without a chosen column, the daemon's order: attention first.
    if (sortKey) {
      shown.sort((a, b) => { const x = key(a, sortKey), y = key(b, sortKey);
        return (x < y ? -1 : x > y ? 1 : 0) * sortDir || (a.name < b.name ? -1 : 1); });
    }
    const num = (v) => el("td", { class: "num" }, v);
    $("#fleet tbody").replaceChildren(...shown.map((r) => el("tr",
      { "data-table": r.name, "data-state": r.state, "data-attention": String(r.attention.length) },
      el("td", null, el("a", { href: "/tables/" + encodeURIComponent(r.name) }, r.name)),
      attentionCell(r), stateCell(r, status[r.name]),
      el("td", { class: "time" }, r.last_run), el("td", { class: "result" }, r.result), el("td", { class: "next-run" }, r.next_run),
      num(r.mergeable), num(r.stuck), num(r.dv_ratio), num(r.unclustered), num(String(r.quarantined)),
      el("td", null, lease(status[r.name])))));
    $("#empty").hidden = shown.length > 0;
    document.querySelectorAll("#fleet th[data-key]").forEach((th) => {
      th.classList.toggle("sorted-asc", th.dataset.key === sortKey && sortDir > 0);
      th.classList.toggle("sorted-desc", th.dataset.key === sortKey && sortDir < 0);
    });
  }
  async function refresh() {
    try {
      const [fr, sr] = await Promise.all([fetch("/ui/fleet.json", { cache: "no-store" }), fetch("/status", { cache: "no-store" })]);
      const fleet = await fr.json(), page = await sr.json();
      rows = fleet.tables || [];
      status = {};
      for (const t of page.tables || []) status[t.name] = t;
      replica = page.replica || "";
      const need = rows.filter((r) => r.attention.length > 0).length;
      $("#daemon").textContent = rows.length + " tables · " + need + " need attention · " + page.workers + " workers · poll " + page.poll_interval;
      const re = $("#reload-error");
      re.hidden = !page.reload_error;
      re.textContent = page.reload_error ? "policy reload failed: " + page.reload_error : "";
      $("#updated").textContent = "updated " + fleet.now;
      document.body.dataset.loaded = "1";
      render();
    } catch (e) {
      $("#updated").textContent = "refresh failed: " + e;
    }
  }
  document.querySelectorAll("#fleet th[data-key]").forEach((th) => th.addEventListener("click", () => {
    if (sortKey === th.dataset.key) sortDir = -sortDir; else { sortKey = th.dataset.key; sortDir = 1; }
    render();
  }));
  $("#filter").addEventListener("input", render);
  $("#state").addEventListener("change", render);
  $("#attention-only").addEventListener("change", render);
  refresh();
  setInterval(refresh, REFRESH_MS);
})();
