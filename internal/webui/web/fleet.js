// The fleet page: renders GET /status every few seconds; sortable by any
// column, filterable by name/URL and state. Talks to this daemon only.
"use strict";
(function () {
  const REFRESH_MS = 3000;
  let tables = [], replica = "", sortKey = "name", sortDir = 1;
  const $ = (s) => document.querySelector(s);

  function size(n) {
    if (n === undefined || n === null) return "—";
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n : n.toFixed(1)) + u[i];
  }
  function when(s) {
    if (!s) return "—";
    const d = new Date(s);
    if (isNaN(d) || d.getUTCFullYear() < 2000) return "—";
    return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }
  function lease(t) {
    if (!replica) return "no leases";
    if (t.state === "running") return replica + " (this daemon)";
    const r = t.last_run && t.last_run.report;
    if (r && r.skipped && /lease/.test(r.skip_reason || "")) return "another replica";
    return "—";
  }
  function row(t) {
    const b = t.backlog || {};
    return {
      t: t, name: t.name, state: t.state,
      last_run: t.last_run ? t.last_run.end : "", result: t.last_run ? t.last_run.result : "",
      next_run: t.next_run || "", small_files: b.small_files ?? -1, small_bytes: b.small_bytes ?? -1,
      dv_ratio: b.deleted_rows_ratio ?? -1, unclustered: b.unclustered_bytes ?? -1,
      quarantined: (t.quarantined || []).length, lease: lease(t),
    };
  }
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);
    return e;
  }
  function stateCell(t) {
    const td = el("td", { class: "state-cell" }, el("span", { class: "state state-" + t.state }, t.state));
    const p = t.progress;
    if (t.state === "running" && p && typeof p === "object") {
      const done = p.done ?? p.jobs_done ?? p.completed, total = p.total ?? p.jobs_total;
      if (typeof done === "number" && typeof total === "number" && total > 0) {
        td.append(" ", el("progress", { max: total, value: done }), " " + done + "/" + total);
      } else {
        td.append(" ", el("span", { class: "muted" }, JSON.stringify(p)));
      }
    }
    if (t.halted && t.halt_reason) td.append(el("span", { class: "reason halt-reason" }, t.halt_reason));
    else if (t.state === "backoff" && t.last_error) td.append(el("span", { class: "reason" }, t.last_error));
    return td;
  }
  function render() {
    const f = $("#filter").value.trim().toLowerCase(), s = $("#state").value;
    const rows = tables.map(row).filter((r) =>
      (!f || r.name.toLowerCase().includes(f) || (r.t.url || "").toLowerCase().includes(f)) && (!s || r.state === s));
    rows.sort((a, b) => (a[sortKey] < b[sortKey] ? -1 : a[sortKey] > b[sortKey] ? 1 : 0) * sortDir || (a.name < b.name ? -1 : 1));
    const body = $("#fleet tbody");
    body.replaceChildren(...rows.map((r) => {
      const b = r.t.backlog;
      const num = (v) => el("td", { class: "num" }, v);
      return el("tr", { "data-table": r.name, "data-state": r.state },
        el("td", null, el("a", { href: "/tables/" + encodeURIComponent(r.name) }, r.name)),
        stateCell(r.t),
        el("td", null, when(r.last_run)),
        el("td", { class: "result" }, r.result || "—"),
        el("td", null, when(r.next_run)),
        num(b ? String(b.small_files) : "—"), num(b ? size(b.small_bytes) : "—"),
        num(b ? (b.deleted_rows_ratio * 100).toFixed(2) + "%" : "—"), num(b ? size(b.unclustered_bytes) : "—"),
        num(String(r.quarantined)), el("td", null, r.lease));
    }));
    $("#empty").hidden = rows.length > 0;
    document.querySelectorAll("#fleet th[data-key]").forEach((th) => {
      th.classList.toggle("sorted-asc", th.dataset.key === sortKey && sortDir > 0);
      th.classList.toggle("sorted-desc", th.dataset.key === sortKey && sortDir < 0);
    });
  }
  async function refresh() {
    try {
      const resp = await fetch("/status", { cache: "no-store" });
      const page = await resp.json();
      tables = page.tables || [];
      replica = page.replica || "";
      $("#daemon").textContent = tables.length + " tables · " + page.workers + " workers · poll " + page.poll_interval;
      const re = $("#reload-error");
      re.hidden = !page.reload_error;
      re.textContent = page.reload_error ? "policy reload failed: " + page.reload_error : "";
      $("#updated").textContent = "updated " + new Date().toLocaleTimeString();
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
  refresh();
  setInterval(refresh, REFRESH_MS);
})();
