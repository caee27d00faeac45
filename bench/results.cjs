// What the benchmark scripts share when they summarise the JSON lines that
// `timed` (bench/lib.sh) printed: reading them, the median, and the line
// that says how loaded the machine was while they ran.
"use strict";
const fs = require("fs");

// read returns the JSON lines of the file at path.
exports.read = (path) => fs.readFileSync(path, "utf8").trim().split("\n").map(JSON.parse);

// med is the median of xs.
exports.med = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// loadLine says the 1-minute load average at the runs and the CPU the rest
// of the machine used during a run.
exports.loadLine = (lines) => {
  const loads = lines.map((r) => r.load1);
  return `load average (1 min) at the runs: ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}, median ${exports.med(loads).toFixed(1)}; other work on the machine during a run: median ${exports.med(lines.map((r) => r.otherCpuSeconds)).toFixed(2)} CPU s`;
};

// summary reads the results at path, prints the load line, and returns
// the runs with m(label, k): the median of field k over the runs labelled
// label.
exports.summary = (path) => {
  const lines = exports.read(path);
  console.log(exports.loadLine(lines));
  const m = (label, k) => exports.med(lines.filter((r) => r.label === label).map((r) => r[k]));
  return { lines, m };
};
