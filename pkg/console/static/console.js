// Strata console: reads the HTTP API (docs/API.md) from the browser every few seconds.
// Everything the server returns is rendered with textContent, never as markup.
"use strict";

const REFRESH_MS = 2000;
const HISTORY_MS = 10 * 60 * 1000; // lag kept for the chart
const TAIL_RECORDS = 20;

const state = { token: "", lag: new Map(), tail: null };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function setStatus(text, isError) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = isError ? "error" : "";
}

async function api(path) {
  const headers = {};
  if (state.token) headers["Authorization"] = "Bearer " + state.token;
  const res = await fetch(path, { headers });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    const e = new Error((body.error && body.error.message) || res.statusText);
    e.status = res.status;
    e.code = body.error && body.error.code;
    throw e;
  }
  return body;
}

function seg(s) { return encodeURIComponent(s); }

function decode(b64) {
  if (b64 === null || b64 === undefined) return null;
  const bin = atob(b64);
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return "base64:" + b64;
  }
}

async function renderTopics() {
  const { topics } = await api("/v1/topics");
  const body = document.querySelector("#topics tbody");
  const rows = [];
  for (const name of topics) {
    const t = await api("/v1/topics/" + seg(name));
    for (const p of t.partition_info) {
      const tailBtn = el("button", { class: "link", type: "button" }, "tail");
      tailBtn.addEventListener("click", () => { state.tail = { topic: name, partition: p.partition }; renderTail(); });
      rows.push(el("tr", { "data-topic": name },
        el("td", {}, name), el("td", { class: "num" }, p.partition),
        el("td", { class: "num" }, p.log_start_offset), el("td", { class: "num" }, p.high_watermark),
        el("td", { class: "num" }, p.high_watermark - p.log_start_offset), el("td", {}, tailBtn)));
    }
  }
  if (rows.length === 0) rows.push(el("tr", {}, el("td", { class: "muted", colspan: "6" }, "no topics")));
  body.replaceChildren(...rows);
}

function chart(points) {
  const w = 320, h = 60, pad = 4;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h + 12);
  svg.setAttribute("role", "img");
  const now = Date.now();
  const maxLag = Math.max(1, ...points.map((p) => p.lag));
  const x = (t) => pad + (w - 2 * pad) * (1 - (now - t) / HISTORY_MS);
  const y = (v) => pad + (h - 2 * pad) * (1 - v / maxLag);
  const base = document.createElementNS(ns, "line");
  base.setAttribute("x1", pad); base.setAttribute("x2", w - pad);
  base.setAttribute("y1", h - pad); base.setAttribute("y2", h - pad);
  svg.append(base);
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", points.map((p) => x(p.t).toFixed(1) + "," + y(p.lag).toFixed(1)).join(" "));
  svg.append(line);
  const label = document.createElementNS(ns, "text");
  label.setAttribute("x", pad); label.setAttribute("y", h + 10);
  label.textContent = "lag, last 10 minutes (max " + maxLag + " records)";
  svg.append(label);
  svg.setAttribute("aria-label", label.textContent);
  return svg;
}

async function renderGroups() {
  let names;
  try {
    ({ groups: names } = await api("/v1/groups"));
  } catch (e) {
    if (e.status === 404) names = []; else throw e;
  }
  const now = Date.now();
  const blocks = [];
  for (const name of names) {
    const g = await api("/v1/groups/" + seg(name));
    const rows = g.partitions.map((p) => el("tr", {},
      el("td", {}, p.topic), el("td", { class: "num" }, p.partition),
      el("td", { class: "num" }, p.committed_offset === null ? "-" : p.committed_offset),
      el("td", { class: "num" }, p.high_watermark), el("td", { class: "num" }, p.lag_records),
      el("td", {}, p.owner === null ? "-" : p.owner), el("td", { class: "num" }, p.generation)));
    const total = g.partitions.reduce((s, p) => s + p.lag_records, 0);
    const hist = (state.lag.get(name) || []).filter((p) => now - p.t <= HISTORY_MS);
    hist.push({ t: now, lag: total });
    state.lag.set(name, hist);
    blocks.push(el("div", { class: "group", "data-group": name },
      el("h3", {}, name + " — lag " + total),
      chart(hist),
      el("table", {}, el("thead", {}, el("tr", {}, ...["Topic", "Partition", "Committed", "High watermark", "Lag", "Owner", "Generation"].map((h) => el("th", {}, h)))),
        el("tbody", {}, ...rows))));
  }
  if (blocks.length === 0) blocks.push(el("p", { class: "muted" }, "no groups"));
  document.getElementById("groups").replaceChildren(...blocks);
}

async function renderTail() {
  const title = document.getElementById("tail-title");
  const body = document.querySelector("#tail tbody");
  if (!state.tail) { title.textContent = "(pick a partition)"; return; }
  const { topic, partition } = state.tail;
  title.textContent = topic + " / " + partition;
  const t = await api("/v1/topics/" + seg(topic));
  const info = t.partition_info.find((p) => p.partition === partition);
  const from = Math.max(info.log_start_offset, info.high_watermark - TAIL_RECORDS);
  const res = await api("/v1/topics/" + seg(topic) + "/partitions/" + partition + "/records?offset=" + from + "&max_records=" + TAIL_RECORDS);
  const rows = res.records.map((r) => {
    const key = decode(r.key);
    return el("tr", {}, el("td", { class: "num" }, r.offset), el("td", {}, new Date(r.timestamp_ms).toISOString()),
      el("td", key === null ? { class: "muted" } : {}, key === null ? "(no key)" : key), el("td", {}, decode(r.value)));
  });
  if (rows.length === 0) rows.push(el("tr", {}, el("td", { class: "muted", colspan: "4" }, "empty")));
  body.replaceChildren(...rows);
}

async function refresh() {
  try {
    await renderTopics();
    await renderGroups();
    await renderTail();
    setStatus("updated " + new Date().toLocaleTimeString(), false);
    document.body.dataset.ready = "1";
  } catch (e) {
    const hint = e.status === 401 ? " — enter a token" : e.status === 403 ? " — this token may not see everything" : "";
    setStatus((e.status ? "HTTP " + e.status + ": " : "") + e.message + hint, true);
    document.body.dataset.ready = "error";
  }
}

function start() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  state.token = m ? decodeURIComponent(m[1]) : sessionStorage.getItem("strata-token") || "";
  if (m) history.replaceState(null, "", location.pathname + location.search);
  document.getElementById("auth").addEventListener("submit", (ev) => {
    ev.preventDefault();
    state.token = document.getElementById("token").value.trim();
    sessionStorage.setItem("strata-token", state.token);
    refresh();
  });
  const params = new URLSearchParams(location.search);
  if (params.has("topic")) state.tail = { topic: params.get("topic"), partition: Number(params.get("partition") || 0) };
  refresh();
  setInterval(refresh, REFRESH_MS);
}

start();
