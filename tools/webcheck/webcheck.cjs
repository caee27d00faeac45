// webcheck drives headless Chromium (Debian's, through playwright-core)
// over compactord's web view and prints what it saw as JSON on stdout; the
// Go test (cmd/compactord/browser_test.go) judges it. It records every
// request the pages make.
//
// env: PLAYWRIGHT_CORE (the playwright-core package directory),
//      CHROMIUM (executable), BASE (http://127.0.0.1:PORT), OUT (screenshot
//      directory), TABLE (the table whose page is checked and run),
//      HALTED (a halted table), FLEET_PNG (optional: a second copy of the
//      fleet page's screenshot, e.g. /tmp/fleet.png).
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require(process.env.PLAYWRIGHT_CORE);

const base = process.env.BASE, out = process.env.OUT;
const table = process.env.TABLE, halted = process.env.HALTED;

async function main() {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "compactord-chromium-"));
  const ctx = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const requests = [];
  ctx.on("request", (r) => requests.push(r.url()));
  const result = { requests, consoleErrors: [] };
  try {
    const page = ctx.pages()[0] || (await ctx.newPage());
    page.on("console", (m) => { if (m.type() === "error") result.consoleErrors.push(m.text()); });
    page.on("pageerror", (e) => result.consoleErrors.push(String(e)));

    // Fleet page.
    await page.goto(base + "/");
    await page.waitForSelector("body[data-loaded='1'] #fleet tbody tr");
    const rows = () => page.$$eval("#fleet tbody tr", (trs) => trs.map((tr) => ({
      table: tr.dataset.table, state: tr.dataset.state,
      reason: (tr.querySelector(".attn-halted") || { textContent: "" }).textContent,
      attention: Array.from(tr.querySelectorAll("td.attention .attn")).map((s) => ({ kind: s.dataset.kind, text: s.textContent })),
      result: tr.querySelector(".result").textContent,
      nextRun: (tr.querySelector(".next-run") || { textContent: "" }).textContent,
    })));
    result.fleet = await rows();
    await page.screenshot({ path: path.join(out, "fleet.png"), fullPage: true });
    if (process.env.FLEET_PNG) fs.copyFileSync(path.join(out, "fleet.png"), process.env.FLEET_PNG);
    // Sorting by name twice reverses the order; the state filter narrows.
    await page.click("#fleet th[data-key='name']");
    result.sortedAsc = (await rows()).map((r) => r.table);
    await page.click("#fleet th[data-key='name']");
    result.sortedDesc = (await rows()).map((r) => r.table);
    await page.selectOption("#state", "halted");
    result.filteredHalted = (await rows()).map((r) => r.table);
    await page.selectOption("#state", "");
    await page.fill("#filter", table);
    result.filteredByName = (await rows()).map((r) => r.table);

    // The halted table's page.
    await page.goto(base + "/tables/" + encodeURIComponent(halted));
    result.haltedPage = {
      reason: await page.textContent("#halt-reason"),
      runDisabled: await page.isDisabled("#run-now"),
      version: await page.textContent("#table-version").catch(() => ""),
      text: await page.textContent("body"),
    };

    // The table's page: histogram, then "Run now".
    await page.goto(base + "/tables/" + encodeURIComponent(table));
    result.histogram = await page.$$eval("#size-histogram g.bar", (gs) => gs.map((g) => ({
      label: g.dataset.label, files: Number(g.dataset.value) })));
    result.skewBars = await page.$$eval("#partition-skew g.bar", (gs) => gs.length);
    const runRows = () => page.$$eval("#runs tr.run", (trs) => trs.map((tr) => ({
      reason: tr.children[1].textContent, result: tr.children[2].textContent,
      filesIn: Number(tr.children[4].textContent), filesOut: Number(tr.children[5].textContent) })));
    result.runsBefore = (await page.$("#runs")) ? await runRows() : [];
    await Promise.all([page.waitForNavigation({ timeout: 120000 }), page.click("#run-now")]);
    await page.waitForSelector("#runs tr.run");
    result.runsAfter = await runRows();
    result.lastRun = await page.textContent("#last-run");
    await page.screenshot({ path: path.join(out, "table.png"), fullPage: true });
  } finally {
    await ctx.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
  process.stdout.write(JSON.stringify(result, null, 2) + "\n");
}

main().catch((e) => { console.error(e && e.stack || String(e)); process.exit(1); });
