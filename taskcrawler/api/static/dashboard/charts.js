// Charts drawn as inline SVG.

import { $, svg } from "./common.js";

// ------------------------------------------------------------------ charts (inline SVG)

function niceMax(value) {
  if (value <= 4) return 4;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) {
    if (step * magnitude >= value) return step * magnitude;
  }
  return 10 * magnitude;
}

export function emptyChart(message, label) {
  return svg(
    "svg",
    { viewBox: "0 0 600 150", role: "img", "aria-label": label || message },
    svg("text", { x: 300, y: 80, "text-anchor": "middle", class: "empty", text: message }),
  );
}

/** Jobs finished per minute over the last `minutes`, stacked completed / failed. */
export function throughputChart(jobs, minutes = 30) {
  const now = Date.now();
  const bucketMs = 60000;
  const end = Math.ceil(now / bucketMs) * bucketMs;
  const start = end - minutes * bucketMs;
  const ok = new Array(minutes).fill(0);
  const failed = new Array(minutes).fill(0);
  for (const job of jobs) {
    if (!job.finished_at || job.status === "CANCELLED") continue;
    const t = Date.parse(job.finished_at);
    if (t < start || t >= end) continue;
    const i = Math.floor((t - start) / bucketMs);
    if (job.status === "FAILED") failed[i] += 1;
    else ok[i] += 1;
  }
  const totalOk = ok.reduce((a, b) => a + b, 0);
  const totalFailed = failed.reduce((a, b) => a + b, 0);
  const lastMinute = ok[minutes - 1] + failed[minutes - 1];
  const label =
    `${totalOk + totalFailed} jobs finished in the last ${minutes} minutes ` +
    `(${totalFailed} failed); ${lastMinute} in the current minute.`;
  if (totalOk + totalFailed === 0) return emptyChart(`No job finished in the last ${minutes} minutes`, label);

  const W = 600, H = 170, left = 34, right = 8, top = 8, bottom = 22;
  const plotW = W - left - right, plotH = H - top - bottom;
  const max = niceMax(Math.max(...ok.map((v, i) => v + failed[i])));
  const y = (v) => top + plotH - (v / max) * plotH;
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label });
  root.append(svg("title", { text: label }));
  for (const v of [0, max / 2, max]) {
    root.append(svg("line", { x1: left, x2: W - right, y1: y(v), y2: y(v), class: "gridline" }));
    root.append(svg("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end", text: Math.round(v) }));
  }
  const slot = plotW / minutes;
  for (let i = 0; i < minutes; i += 1) {
    const x = left + i * slot + 1;
    const w = Math.max(1, slot - 2);
    const at = new Date(start + i * bucketMs).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    const group = svg("g", {}, svg("title", { text: `${at}: ${ok[i]} completed, ${failed[i]} failed` }));
    if (ok[i]) group.append(svg("rect", { x, y: y(ok[i]), width: w, height: y(0) - y(ok[i]), class: "bar-ok" }));
    if (failed[i]) {
      const base = y(ok[i]);
      group.append(svg("rect", { x, y: base - (y(0) - y(failed[i])), width: w, height: y(0) - y(failed[i]), class: "bar-failed" }));
    }
    root.append(group);
  }
  for (const [i, text] of [[0, `-${minutes} min`], [minutes / 2, `-${minutes / 2} min`], [minutes, "now"]]) {
    const anchor = i === 0 ? "start" : i === minutes ? "end" : "middle";
    root.append(svg("text", { x: left + i * slot, y: H - 6, "text-anchor": anchor, text }));
  }
  return root;
}

/** Failed jobs by error code, largest first. */
export function failureChart(jobs) {
  const counts = new Map();
  for (const job of jobs) {
    if (job.status !== "FAILED") continue;
    const code = job.error_code || "unknown";
    counts.set(code, (counts.get(code) || 0) + 1);
  }
  const rows = [...counts.entries()].sort((a, b) => b[1] - a[1]);
  const total = rows.reduce((sum, [, n]) => sum + n, 0);
  if (!total) return emptyChart("No failed jobs", "No failed jobs among those shown.");
  const shown = rows.slice(0, 7);
  if (rows.length > shown.length) {
    shown.push(["other", rows.slice(7).reduce((sum, [, n]) => sum + n, 0)]);
  }
  const label = `${total} failed jobs: ` + shown.map(([code, n]) => `${code} ${n}`).join(", ") + ".";
  const W = 600, rowH = 22, top = 6, left = 190, right = 40;
  const H = Math.max(150, top * 2 + shown.length * rowH);
  const max = shown[0][1];
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label });
  root.append(svg("title", { text: label }));
  shown.forEach(([code, n], i) => {
    const yTop = top + i * rowH;
    const width = Math.max(2, ((W - left - right) * n) / max);
    root.append(
      svg(
        "g",
        {},
        svg("title", { text: `${code}: ${n}` }),
        svg("text", { x: left - 8, y: yTop + 15, "text-anchor": "end", text: code }),
        svg("rect", { x: left, y: yTop + 3, width, height: rowH - 7, rx: 2, class: "bar-failed" }),
        svg("text", { x: left + width + 6, y: yTop + 15, text: n }),
      ),
    );
  });
  return root;
}
