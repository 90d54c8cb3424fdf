// Strata console: reads the HTTP API (docs/API.md) from the browser every few seconds.
// Everything the server returns is rendered with textContent, never as markup. The lag
// chart draws the history the server keeps (GET /v1/groups/{group}/lag-history), so it
// is there right after a reload.
"use strict";

const REFRESH_MS = 2000;
const TAIL_RECORDS = 20;

const state = { token: "", tail: null, open: new Set(), topics: [] };

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

function errorText(e) {
  const hint = e.status === 401 ? " — enter a token" : e.status === 403 ? " — this token may not see this" : "";
  return (e.status ? "HTTP " + e.status + ": " : "") + e.message + hint;
}

// emptyRow is the one row of an empty table: why it is empty.
function emptyRow(cols, text) {
  return el("tr", { class: "empty" }, el("td", { class: "muted", colspan: String(cols) }, text));
}

function ago(ms) {
  if (!ms) return "-";
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 90) return Math.round(s) + " s ago";
  if (s < 5400) return Math.round(s / 60) + " min ago";
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}

function seconds(s) {
  if (s === null || s === undefined) return "-";
  return s < 100 ? s.toFixed(1) + " s" : Math.round(s) + " s";
}

// newestWrite is the timestamp of a partition's last record (one small poll).
async function newestWrite(topic, p) {
  if (p.high_watermark <= p.log_start_offset) return 0;
  const res = await api("/v1/topics/" + seg(topic) + "/partitions/" + p.partition + "/records?offset=" + (p.high_watermark - 1) + "&max_records=1");
  return res.records.length ? res.records[0].timestamp_ms : 0;
}

function emptyTopicsText() {
  return state.token
    ? "No topics to show: there are none yet, or this token may read topics but not describe them (the list holds only topics it may describe)."
    : "No topics yet — create one with: strata topics create NAME";
}

async function renderTopics(lagByTopic) {
  const body = document.querySelector("#topics tbody");
  let names;
  try {
    ({ topics: names } = await api("/v1/topics"));
  } catch (e) {
    body.replaceChildren(emptyRow(8, "Cannot list topics: " + errorText(e)));
    throw e;
  }
  state.topics = names;
  const rows = [];
  for (const name of names) {
    let t;
    try {
      t = await api("/v1/topics/" + seg(name));
    } catch (e) {
      rows.push(el("tr", { "data-topic": name }, el("td", {}, name), el("td", { class: "muted", colspan: "7" }, errorText(e))));
      continue;
    }
    const parts = t.partition_info;
    const newest = await Promise.all(parts.map((p) => newestWrite(name, p).catch(() => 0)));
    const sum = (f) => parts.reduce((s, p) => s + f(p), 0);
    const open = state.open.has(name);
    const toggle = el("button", { class: "link", type: "button", "aria-expanded": String(open) }, (open ? "▾ " : "▸ ") + name);
    toggle.addEventListener("click", () => {
      if (state.open.has(name)) state.open.delete(name); else state.open.add(name);
      refresh();
    });
    const lag = lagByTopic.get(name);
    rows.push(el("tr", { class: "summary", "data-topic": name },
      el("td", {}, toggle), el("td", { class: "num" }, t.partitions),
      el("td", { class: "num" }, sum((p) => p.log_start_offset)), el("td", { class: "num" }, sum((p) => p.high_watermark)),
      el("td", { class: "num" }, sum((p) => p.high_watermark - p.log_start_offset)),
      el("td", {}, ago(Math.max(0, ...newest))),
      el("td", { class: "num" }, lag === undefined ? "no group" : lag + " records"), el("td", {})));
    if (!open) continue;
    parts.forEach((p, i) => {
      const tailBtn = el("button", { class: "link", type: "button" }, "tail");
      tailBtn.addEventListener("click", () => { state.tail = { topic: name, partition: p.partition, follow: true }; syncControls(); renderTail(); });
      rows.push(el("tr", { class: "partition", "data-topic": name, "data-partition": String(p.partition) },
        el("td", { class: "indent" }, "partition " + p.partition), el("td", {}),
        el("td", { class: "num" }, p.log_start_offset), el("td", { class: "num" }, p.high_watermark),
        el("td", { class: "num" }, p.high_watermark - p.log_start_offset), el("td", {}, ago(newest[i])),
        el("td", {}), el("td", {}, tailBtn)));
    });
  }
  if (rows.length === 0) rows.push(emptyRow(8, emptyTopicsText()));
  body.replaceChildren(...rows);
  fillTopicSelect();
}

// chart draws the group's total lag (records) over the server's samples.
function chart(history) {
  const w = 360, h = 60, pad = 4;
  const ns = "http://www.w3.org/2000/svg";
  const totals = new Map();
  const behind = new Map();
  for (const p of history.partitions) {
    for (const s of p.samples) {
      totals.set(s.timestamp_ms, (totals.get(s.timestamp_ms) || 0) + s.lag_records);
      behind.set(s.timestamp_ms, Math.max(behind.get(s.timestamp_ms) || 0, s.lag_seconds));
    }
  }
  const points = [...totals.entries()].sort((a, b) => a[0] - b[0]).map(([t, lag]) => ({ t, lag, secs: behind.get(t) }));
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h + 12);
  svg.setAttribute("role", "img");
  svg.setAttribute("data-samples", String(points.length));
  const label = document.createElementNS(ns, "text");
  label.setAttribute("x", pad); label.setAttribute("y", h + 10);
  const base = document.createElementNS(ns, "line");
  base.setAttribute("x1", pad); base.setAttribute("x2", w - pad);
  base.setAttribute("y1", h - pad); base.setAttribute("y2", h - pad);
  svg.append(base);
  if (points.length === 0) {
    label.textContent = "lag history: no samples yet (the server samples every few seconds)";
  } else {
    const t0 = points[0].t, t1 = points[points.length - 1].t;
    const span = Math.max(1, t1 - t0);
    const maxLag = Math.max(1, ...points.map((p) => p.lag));
    const x = (t) => pad + (w - 2 * pad) * (points.length === 1 ? 1 : (t - t0) / span);
    const y = (v) => pad + (h - 2 * pad) * (1 - v / maxLag);
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("points", points.map((p) => x(p.t).toFixed(1) + "," + y(p.lag).toFixed(1)).join(" "));
    svg.append(line);
    const mins = Math.max(1, Math.round(span / 60000));
    label.textContent = "lag, last " + mins + " min (" + points.length + " samples, max " + maxLag + " records, " +
      seconds(Math.max(...points.map((p) => p.secs))) + " behind)";
  }
  svg.append(label);
  svg.setAttribute("aria-label", label.textContent);
  return svg;
}

function emptyGroupsText() {
  return state.token
    ? "No groups to show: there are none yet, or this token may not describe them."
    : "No groups yet — a group appears when a consumer first leases or commits (strata consume TOPIC --group NAME).";
}

// members lists the group's live members (heartbeating consumers, GET …/members) with
// what each holds now (live leases, from the describe); a lease holder that does not
// heartbeat (strata consume, a function) is listed from its lease alone.
function members(g, live) {
  const by = new Map();
  for (const m of live.members || []) by.set(m.member, { parts: [], until: m.expires_at_ms });
  for (const p of g.partitions) {
    if (p.owner === null) continue;
    const m = by.get(p.owner) || { parts: [], until: 0 };
    m.parts.push(p.topic + "/" + p.partition);
    m.until = Math.max(m.until, p.lease_expires_at_ms || 0);
    by.set(p.owner, m);
  }
  if (live instanceof Error) return el("p", { class: "muted" }, "Members: " + errorText(live));
  if (by.size === 0) return el("p", { class: "muted" }, "Members: none live (no heartbeat, no live lease).");
  return el("table", { class: "members" },
    el("thead", {}, el("tr", {}, el("th", {}, "Member"), el("th", {}, "Holds"), el("th", {}, "Live until"))),
    el("tbody", {}, ...[...by.entries()].map(([id, m]) => el("tr", { "data-member": id },
      el("td", {}, id), el("td", m.parts.length ? {} : { class: "muted" }, m.parts.length ? m.parts.join(", ") : "no partitions (waiting for a share)"),
      el("td", {}, new Date(m.until).toLocaleTimeString())))));
}

function settings(s) {
  if (s instanceof Error) return el("p", { class: "muted" }, "Settings: " + errorText(s));
  return el("p", { class: "settings" }, "Settings: reset policy " + s.reset_policy + ", max attempts " + s.max_attempts +
    ", dead-letter topic " + (s.dead_letter_topic === null ? "none" : s.dead_letter_topic));
}

// loadGroups fetches every visible group with its settings and lag history.
async function loadGroups() {
  let names;
  try {
    ({ groups: names } = await api("/v1/groups"));
  } catch (e) {
    if (e.status === 404) names = []; else throw e;
  }
  const out = [];
  for (const name of names) {
    const [g, s, h, m] = await Promise.all([
      api("/v1/groups/" + seg(name)),
      api("/v1/groups/" + seg(name) + "/settings").catch((e) => e),
      api("/v1/groups/" + seg(name) + "/lag-history").catch(() => ({ partitions: [] })),
      api("/v1/groups/" + seg(name) + "/members").catch((e) => e),
    ]);
    out.push({ name, g, s, h, m });
  }
  return out;
}

function renderGroups(groups) {
  const blocks = [];
  for (const { name, g, s, h, m } of groups) {
    const rows = g.partitions.map((p) => el("tr", {},
      el("td", {}, p.topic), el("td", { class: "num" }, p.partition),
      el("td", { class: "num" }, p.committed_offset === null ? "-" : p.committed_offset),
      el("td", { class: "num" }, p.high_watermark), el("td", { class: "num" }, p.lag_records),
      el("td", { class: "num" }, seconds(p.lag_seconds)),
      el("td", { class: "num" }, seconds(p.seconds_to_data_loss)),
      el("td", { class: p.parked_keys > 0 ? "num parked" : "num", "data-parked": p.parked_keys || 0 }, p.parked_keys || 0),
      el("td", {}, p.owner === null ? "-" : p.owner), el("td", { class: "num" }, p.generation)));
    if (rows.length === 0) rows.push(emptyRow(10, "No partitions: the group has not leased or committed any (or none on topics this token may describe)."));
    const total = g.partitions.reduce((sum, p) => sum + p.lag_records, 0);
    const behind = Math.max(0, ...g.partitions.map((p) => p.lag_seconds || 0));
    const parked = g.partitions.reduce((sum, p) => sum + (p.parked_keys || 0), 0);
    blocks.push(el("div", { class: "group", "data-group": name },
      el("h3", {}, name + " — lag " + total + " records, " + seconds(behind) + " behind" +
        (parked > 0 ? ", " + parked + (parked === 1 ? " key" : " keys") + " parked" : "")),
      settings(s), members(g, m), chart(h),
      el("table", {}, el("thead", {}, el("tr", {}, ...["Topic", "Partition", "Committed", "High watermark", "Lag (records)", "Lag (time)", "To data loss", "Parked keys", "Owner", "Generation"].map((x) => el("th", {}, x)))),
        el("tbody", {}, ...rows))));
  }
  if (blocks.length === 0) blocks.push(el("p", { class: "muted empty" }, emptyGroupsText()));
  document.getElementById("groups").replaceChildren(...blocks);
}

function fillTopicSelect() {
  const sel = document.getElementById("tail-topic");
  const want = state.tail ? state.tail.topic : sel.value;
  const names = state.topics.includes(want) || !want ? state.topics : [want, ...state.topics];
  if ([...sel.options].map((o) => o.value).join("\n") !== names.join("\n")) {
    sel.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
  }
  if (want) sel.value = want;
}

function syncControls() {
  if (!state.tail) return;
  fillTopicSelect();
  document.getElementById("tail-partition").value = state.tail.partition;
  document.getElementById("tail-follow").checked = !!state.tail.follow;
  if (state.tail.follow) document.getElementById("tail-offset").value = "";
}

async function poll(topic, partition, offset, max) {
  return api("/v1/topics/" + seg(topic) + "/partitions/" + partition + "/records?offset=" + offset + "&max_records=" + max);
}

// offsetForTime finds the first offset whose record is at or after ms, by binary search
// over the partition's offsets (record times grow with offsets as appends arrive).
async function offsetForTime(topic, partition, info, ms) {
  let lo = info.log_start_offset, hi = info.high_watermark;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const res = await poll(topic, partition, mid, 1);
    if (res.records.length === 0) { lo = mid + 1; continue; }
    if (res.records[0].timestamp_ms < ms) lo = res.records[0].offset + 1; else hi = mid;
  }
  return lo;
}

function headersText(h) {
  const keys = Object.keys(h || {}).sort();
  if (keys.length === 0) return null;
  return keys.map((k) => k + "=" + decode(h[k])).join(", ");
}

async function renderTail() {
  const title = document.getElementById("tail-title");
  const body = document.querySelector("#tail tbody");
  if (!state.tail) {
    title.textContent = "";
    body.replaceChildren(emptyRow(5, "Pick a partition: a topic's ▸, then tail; or choose above."));
    return;
  }
  const { topic, partition } = state.tail;
  let res, from;
  try {
    const t = await api("/v1/topics/" + seg(topic));
    const info = t.partition_info.find((p) => p.partition === partition);
    if (!info) throw new Error("topic " + topic + " has no partition " + partition + " (it has " + t.partitions + ")");
    if (state.tail.follow) {
      from = Math.max(info.log_start_offset, info.high_watermark - TAIL_RECORDS);
    } else if (state.tail.timeMs !== undefined) {
      from = await offsetForTime(topic, partition, info, state.tail.timeMs);
      state.tail.offset = from;
      delete state.tail.timeMs;
    } else {
      from = Math.max(info.log_start_offset, state.tail.offset || 0);
    }
    res = await poll(topic, partition, from, TAIL_RECORDS);
    title.textContent = topic + " / " + partition + (state.tail.follow ? " — following the newest" : " — from offset " + from) +
      " (log start " + info.log_start_offset + ", high watermark " + info.high_watermark + ")";
  } catch (e) {
    title.textContent = topic + " / " + partition;
    body.replaceChildren(emptyRow(5, "Cannot read: " + errorText(e)));
    throw e;
  }
  const rows = res.records.map((r) => {
    const key = decode(r.key);
    const hdrs = headersText(r.headers);
    return el("tr", { "data-offset": String(r.offset) }, el("td", { class: "num" }, r.offset), el("td", {}, new Date(r.timestamp_ms).toISOString()),
      el("td", key === null ? { class: "muted" } : {}, key === null ? "(no key)" : key), el("td", {}, decode(r.value)),
      el("td", hdrs === null ? { class: "muted" } : { class: "headers" }, hdrs === null ? "(none)" : hdrs));
  });
  if (rows.length === 0) {
    rows.push(emptyRow(5, res.high_watermark === res.log_start_offset
      ? "The partition is empty: nothing appended yet (or retention removed it all)."
      : "No records from offset " + from + ": it is at the high watermark " + res.high_watermark + "."));
  }
  body.replaceChildren(...rows);
}

let running = false;

async function refresh() {
  if (running) return;
  running = true;
  const errors = [];
  try {
    let groups = [];
    try {
      groups = await loadGroups();
      renderGroups(groups);
    } catch (e) {
      document.getElementById("groups").replaceChildren(el("p", { class: "muted empty" }, "Cannot list groups: " + errorText(e)));
      errors.push(e);
    }
    const lagByTopic = new Map();
    for (const { g } of groups) {
      for (const p of g.partitions) lagByTopic.set(p.topic, (lagByTopic.get(p.topic) || 0) + p.lag_records);
    }
    await renderTopics(lagByTopic).catch((e) => errors.push(e));
    await renderTail().catch((e) => errors.push(e));
  } finally {
    running = false;
  }
  if (errors.length) {
    setStatus(errorText(errors[0]), true);
    document.body.dataset.ready = "error";
  } else {
    setStatus("updated " + new Date().toLocaleTimeString(), false);
    document.body.dataset.ready = "1";
  }
}

function start() {
  // The token is pasted in the Token field and kept in this tab's sessionStorage,
  // never taken from the URL (it would stay in the history, a Referer or a log). A
  // fragment an old link still carries is dropped unread.
  state.token = sessionStorage.getItem("strata-token") || "";
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  document.getElementById("auth").addEventListener("submit", (ev) => {
    ev.preventDefault();
    state.token = document.getElementById("token").value.trim();
    sessionStorage.setItem("strata-token", state.token);
    refresh();
  });
  document.getElementById("tail-controls").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const topic = document.getElementById("tail-topic").value;
    if (!topic) return;
    const partition = Number(document.getElementById("tail-partition").value || 0);
    const off = document.getElementById("tail-offset").value;
    const tm = document.getElementById("tail-time").value;
    const follow = document.getElementById("tail-follow").checked && off === "" && tm === "";
    state.tail = { topic, partition, follow };
    if (!follow && tm !== "") state.tail.timeMs = new Date(tm).getTime();
    else if (!follow) state.tail.offset = Number(off || 0);
    document.getElementById("tail-follow").checked = follow;
    document.getElementById("tail-time").value = "";
    refresh();
  });
  const params = new URLSearchParams(location.search);
  if (params.has("topic")) {
    const topic = params.get("topic");
    state.tail = { topic, partition: Number(params.get("partition") || 0), follow: !params.has("offset") && !params.has("time") };
    state.open.add(topic);
    if (params.has("offset")) state.tail.offset = Number(params.get("offset"));
    if (params.has("time")) state.tail.timeMs = Number(params.get("time")) || new Date(params.get("time")).getTime();
  }
  syncControls();
  refresh();
  setInterval(refresh, REFRESH_MS);
}

start();
