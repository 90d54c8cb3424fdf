// Strata console: reads the HTTP API (docs/API.md) from the browser and acts on it.
// Each refresh is one request, GET /v1/summary (topics, groups, lag, members, settings,
// parked keys and lag history at once), so an idle tab costs one request per refresh
// interval; following a partition is a long poll of its own, and opening a topic
// fetches its partitions' stored bytes once (GET …/stats). Every action shows its
// plan in a confirm step before it is sent, and is offered only where the token's
// grants (in the summary) allow it; the server checks every call again. Everything the
// server returns is rendered with textContent, never as markup.
"use strict";

const PAGE_RECORDS = 20;
const FOLLOW_WAIT_MS = 20000;

const params = new URLSearchParams(location.search);
// The refresh interval in seconds (?refresh=S; at least 0.5 s, 2 s when not given).
const REFRESH_MS = Math.max(500, 1000 * (Number(params.get("refresh")) || 2));

const state = {
  token: "", summary: null, open: new Set(), topics: [], tail: null, format: "text",
  follow: 0, releases: new Map(), records: [], drawn: "", drawnAt: 0,
  // stats holds, per open topic, its partitions' stored bytes (GET …/stats), fetched
  // once when the topic is opened, never per refresh: partition → stats or {error}.
  stats: new Map(),
};

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function button(label, attrs, onClick) {
  const b = el("button", Object.assign({ type: "button" }, attrs || {}), label);
  b.addEventListener("click", onClick);
  return b;
}

function setStatus(text, isError) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = isError ? "error" : "";
}

async function api(path, method, body, signal) {
  const headers = {};
  if (state.token) headers["Authorization"] = "Bearer " + state.token;
  const opt = { method: method || "GET", headers, signal };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    opt.body = JSON.stringify(body);
  }
  const res = await fetch(path, opt);
  const data = res.status === 204 ? {} : await res.json().catch(() => ({}));
  if (!res.ok) {
    const e = new Error((data.error && data.error.message) || res.statusText);
    e.status = res.status;
    e.code = data.error && data.error.code;
    e.details = data.error;
    throw e;
  }
  return data;
}

function seg(s) { return encodeURIComponent(s); }

function bytesOf(b64) {
  const bin = atob(b64);
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

function decode(b64) {
  if (b64 === null || b64 === undefined) return null;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytesOf(b64));
  } catch {
    return "base64:" + b64;
  }
}

function toBase64(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

// show renders bytes (base64) as text, pretty JSON (text when it is not JSON) or hex.
function show(b64, format) {
  if (b64 === null || b64 === undefined) return null;
  if (format === "hex") return [...bytesOf(b64)].map((b) => b.toString(16).padStart(2, "0")).join(" ");
  const text = decode(b64);
  if (format === "json") {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; }
  }
  return text;
}

function errorText(e) {
  const hint = e.status === 401 ? " — enter a token" : e.status === 403 ? " — this token may not do this" : "";
  return (e.status ? "HTTP " + e.status + ": " : "") + e.message + hint;
}

function emptyRow(cols, text) {
  return el("tr", { class: "empty" }, el("td", { class: "muted", colspan: String(cols) }, text));
}

// sizeText says a byte count in binary units, "≥ " first when it is a lower bound:
// "812 B", "1.2 MiB", "≥ 3.4 GiB".
function sizeText(bytes, lowerBound) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let n = bytes, u = 0;
  while (n >= 1024 && u < units.length - 1) { n /= 1024; u++; }
  return (lowerBound ? "≥ " : "") + (u === 0 ? String(n) : n.toFixed(1)) + " " + units[u];
}

// statsText is a partition's bytes cell: "…" while its stats load, "-" when they failed.
function statsText(st) {
  if (st === undefined) return "…";
  if (st.error !== undefined) return "-";
  return sizeText(st.bytes, !st.complete);
}

// statsCell is a partition's bytes cell; its title says how the figure was found.
function statsCell(st) {
  const title = st === undefined ? "loading" : st.error !== undefined ? st.error
    : st.entries_scanned + " index entries scanned" + (st.complete ? "" : ", stopped early: a lower bound");
  return el("td", { class: "num size", title }, statsText(st));
}

// partitionStats is a partition's entry of an open topic's stats: a partition added
// since the topic was opened has none, and says so once the fetch is done.
function partitionStats(stats, partition) {
  if (!stats || stats.has(partition) || !stats.done) return stats && stats.get(partition);
  return { error: "added since the topic was opened: open it again" };
}

// loadStats fetches the stats of every partition of an opened topic, once, and draws
// them; a topic closed (or opened again) meanwhile keeps only its latest fetch.
async function loadStats(name, partitions) {
  const m = new Map();
  state.stats.set(name, m);
  await Promise.all(partitions.map(async (p) => {
    try {
      m.set(p, await api("/v1/topics/" + seg(name) + "/partitions/" + p + "/stats"));
    } catch (e) {
      m.set(p, { error: errorText(e) });
    }
  }));
  m.done = true;
  if (state.stats.get(name) === m && state.summary) renderTopics(state.summary);
}

// human says a duration in its two largest units: "7d 6h", "3h 5m", "4m 10s", "12s".
function human(seconds) {
  if (seconds === null || seconds === undefined) return "-";
  let s = Math.max(0, Math.round(seconds));
  if (s === 0) return seconds > 0 ? "<1s" : "0s";
  const units = [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]];
  const parts = [];
  for (const [u, n] of units) {
    if (s >= n && parts.length < 2) { parts.push(Math.floor(s / n) + u); s %= n; } else if (parts.length) break;
  }
  return parts.join(" ");
}

// parseDuration reads "7d", "6h", "1d12h", "90m", "30s" or "1500ms" as milliseconds;
// "-1" and "infinite" are -1 (kept for ever). Anything else is NaN.
function parseDuration(text) {
  const t = text.trim().toLowerCase().replace(/\s+/g, "");
  if (t === "-1" || t === "infinite") return -1;
  const re = /(\d+)(ms|d|h|m|s)/g;
  let total = 0, seen = "", m;
  while ((m = re.exec(t)) !== null) {
    total += Number(m[1]) * { ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000 }[m[2]];
    seen += m[0];
  }
  return seen === t && t !== "" ? total : NaN;
}

function ago(ms) {
  if (!ms) return "-";
  return human((Date.now() - ms) / 1000) + " ago";
}

// can reports whether the token may do op on resource ("topic:NAME", "group:NAME"),
// as the server decides from its grants (a trailing * is a prefix).
function can(op, resource) {
  const p = state.summary && state.summary.principal;
  if (!p) return false;
  if (p.open) return true;
  return p.grants.some((g) => g.ops.includes(op) &&
    (g.resource.endsWith("*") ? resource.startsWith(g.resource.slice(0, -1)) : g.resource === resource));
}

// --- the confirm step -------------------------------------------------------------

// confirmPlan shows what an action will do (lines of its plan) and runs apply only when
// the user confirms; typed, when given, must be typed first (deleting). apply returns
// the text of its outcome.
function confirmPlan(title, lines, apply, typed) {
  const box = document.getElementById("confirm");
  const input = document.getElementById("confirm-typed");
  const go = document.getElementById("confirm-apply");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-plan").replaceChildren(...lines.map((l) => el("li", {}, l)));
  document.getElementById("confirm-result").textContent = "";
  const label = document.getElementById("confirm-typed-label");
  label.hidden = !typed;
  input.value = "";
  if (typed) document.getElementById("confirm-typed-want").textContent = typed;
  go.disabled = !!typed;
  input.oninput = () => { go.disabled = input.value !== typed; };
  box.hidden = false;
  box.dataset.state = "plan";
  go.onclick = async () => {
    go.disabled = true;
    try {
      const outcome = await apply();
      document.getElementById("confirm-result").textContent = outcome || "done";
      box.dataset.state = "done";
    } catch (e) {
      document.getElementById("confirm-result").textContent = "Failed: " + errorText(e);
      box.dataset.state = "failed";
    }
    refresh();
  };
}

function closeConfirm() {
  const box = document.getElementById("confirm");
  box.hidden = true;
  box.dataset.state = "closed";
}

// --- topics -----------------------------------------------------------------------

function emptyTopicsText() {
  return state.token
    ? "No topics to show: there are none yet, or this token may read topics but not describe them (the list holds only topics it may describe)."
    : "No topics yet — create one above or with: strata topics create NAME";
}

function retentionText(ms) { return ms < 0 ? "for ever" : human(ms / 1000); }

function renderTopics(s) {
  const body = document.querySelector("#topics tbody");
  const lagByTopic = new Map();
  const lossByTopic = new Map();
  for (const g of s.groups) {
    for (const p of g.partitions) {
      lagByTopic.set(p.topic, (lagByTopic.get(p.topic) || 0) + (p.lag_records || 0));
      if (p.seconds_to_data_loss !== null) {
        lossByTopic.set(p.topic, Math.min(lossByTopic.has(p.topic) ? lossByTopic.get(p.topic) : Infinity, p.seconds_to_data_loss));
      }
    }
  }
  const rows = [];
  for (const t of s.topics) {
    const name = t.name;
    const parts = t.partition_info;
    const sum = (f) => parts.reduce((n, p) => n + f(p), 0);
    const open = state.open.has(name);
    const toggle = button((open ? "▾ " : "▸ ") + name, { class: "link", "aria-expanded": String(open) }, () => {
      if (state.open.has(name)) {
        state.open.delete(name);
        state.stats.delete(name);
      } else {
        state.open.add(name);
        loadStats(name, parts.map((p) => p.partition));
      }
      renderTopics(state.summary);
    });
    const actions = el("td", { class: "actions" });
    if (t.allowed.includes("alter")) actions.append(button("alter", { "data-action": "alter", "data-topic": name }, () => alterTopic(t)));
    if (t.allowed.includes("delete")) actions.append(button("delete", { "data-action": "delete", "data-topic": name }, () => deleteTopic(t)));
    const lag = lagByTopic.get(name);
    const loss = lossByTopic.get(name);
    const stats = open ? state.stats.get(name) : undefined;
    const got = stats ? parts.map((p) => partitionStats(stats, p.partition)) : [];
    const total = got.length > 0 && got.every((x) => x && x.error === undefined)
      ? sizeText(got.reduce((n, x) => n + x.bytes, 0), got.some((x) => !x.complete)) : "";
    rows.push(el("tr", { class: "summary", "data-topic": name },
      el("td", {}, toggle), el("td", { class: "num" }, t.partitions),
      el("td", { class: "num" }, sum((p) => p.log_start_offset)), el("td", { class: "num" }, sum((p) => p.high_watermark)),
      el("td", { class: "num" }, sum((p) => p.records)), el("td", { class: "num size" }, total),
      el("td", {}, retentionText(t.retention_ms) + (t.retention_pin_ms ? " + pin " + human(t.retention_pin_ms / 1000) : "")),
      el("td", { class: "num" }, lag === undefined ? "no group" : lag + " records"),
      el("td", { class: "num" }, loss === undefined ? "-" : human(loss)), actions));
    if (!open) continue;
    for (const p of parts) {
      const browse = button("browse", { class: "link", "data-action": "browse" }, () => {
        state.tail = { topic: name, partition: p.partition, follow: false, offset: p.log_start_offset };
        syncControls();
        renderTail();
      });
      rows.push(el("tr", { class: "partition", "data-topic": name, "data-partition": String(p.partition) },
        el("td", { class: "indent" }, "partition " + p.partition), el("td", {}),
        el("td", { class: "num" }, p.log_start_offset), el("td", { class: "num" }, p.high_watermark),
        el("td", { class: "num" }, p.records), statsCell(partitionStats(stats, p.partition)),
        el("td", {}), el("td", {}), el("td", {}), el("td", {}, browse)));
    }
  }
  if (rows.length === 0) rows.push(emptyRow(10, emptyTopicsText()));
  body.replaceChildren(...rows);
  fillTopicSelect();
}

function createTopic(ev) {
  ev.preventDefault();
  const name = document.getElementById("new-topic").value.trim();
  const partitions = document.getElementById("new-partitions").value.trim();
  const retention = document.getElementById("new-retention").value.trim();
  const pin = document.getElementById("new-pin").value.trim();
  const body = { name };
  const plan = ["create topic " + name];
  if (partitions) { body.partitions = Number(partitions); plan.push("partitions: " + body.partitions); } else plan.push("partitions: the node's default");
  if (retention) {
    body.retention_ms = parseDuration(retention);
    if (Number.isNaN(body.retention_ms)) return setStatus("retention: say it as 7d, 6h, 30m, 1d12h", true);
    plan.push("retention: " + retentionText(body.retention_ms));
  } else plan.push("retention: the node's default");
  if (pin) {
    body.retention_pin_ms = parseDuration(pin);
    if (Number.isNaN(body.retention_pin_ms)) return setStatus("pin: say it as 7d, 6h, 30m", true);
    plan.push("retention pin for lagging groups: " + human(body.retention_pin_ms / 1000));
  }
  confirmPlan("Create topic", plan, async () => {
    const t = await api("/v1/topics", "POST", body);
    return "created " + t.name + " with " + t.partitions + " partitions";
  });
}

function alterTopic(t) {
  const box = el("div", { class: "alter" },
    el("label", {}, "Partitions (more only) ", el("input", { id: "alter-partitions", type: "number", min: String(t.partitions + 1), placeholder: String(t.partitions) })),
    el("label", {}, "Retention ", el("input", { id: "alter-retention", placeholder: retentionText(t.retention_ms) })),
    el("label", {}, "Pin ", el("input", { id: "alter-pin", placeholder: t.retention_pin_ms ? human(t.retention_pin_ms / 1000) : "none" })),
    button("Plan", { id: "alter-plan" }, () => {
      const changes = [];
      const plan = [];
      const parts = document.getElementById("alter-partitions").value.trim();
      const ret = document.getElementById("alter-retention").value.trim();
      const pin = document.getElementById("alter-pin").value.trim();
      if (parts) {
        changes.push({ partitions: Number(parts) });
        plan.push("partitions " + t.partitions + " → " + parts + " (keys hash over " + parts + " from now on; existing records stay)");
      }
      if (ret) {
        const ms = parseDuration(ret);
        if (Number.isNaN(ms)) return setStatus("retention: say it as 7d, 6h, 30m, 1d12h", true);
        changes.push({ retention_ms: ms });
        plan.push("retention " + retentionText(t.retention_ms) + " → " + retentionText(ms) + (ms >= 0 && ms < t.retention_ms ? " (older records go at the next retention pass)" : ""));
      }
      if (pin) {
        const ms = pin === "none" || pin === "0" ? 0 : parseDuration(pin);
        if (Number.isNaN(ms)) return setStatus("pin: say it as 7d, 6h, 30m, or none", true);
        changes.push({ retention_pin_ms: ms });
        plan.push("retention pin " + (t.retention_pin_ms ? human(t.retention_pin_ms / 1000) : "none") + " → " + (ms ? human(ms / 1000) : "none"));
      }
      if (changes.length === 0) return setStatus("nothing to change", true);
      confirmPlan("Alter topic " + t.name, plan, async () => {
        for (const c of changes) await api("/v1/topics/" + seg(t.name), "PATCH", c);
        return "altered " + t.name + ": " + changes.length + " change(s) applied";
      });
    }));
  document.getElementById("topic-form").replaceChildren(el("h3", {}, "Alter " + t.name), box);
}

function deleteTopic(t) {
  const records = t.partition_info.reduce((n, p) => n + p.records, 0);
  confirmPlan("Delete topic " + t.name, [
    "delete topic " + t.name + " (" + t.partitions + " partitions, " + records + " records)",
    "every group's positions on it go with it; a topic created again under the name starts at offset 0",
  ], async () => {
    await api("/v1/topics/" + seg(t.name), "DELETE");
    state.open.delete(t.name);
    return "deleted " + t.name;
  }, t.name);
}

// --- groups -----------------------------------------------------------------------

function chart(samples) {
  const w = 360, h = 60, pad = 4;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h + 12);
  svg.setAttribute("role", "img");
  svg.setAttribute("data-samples", String(samples.length));
  const label = document.createElementNS(ns, "text");
  label.setAttribute("x", pad); label.setAttribute("y", h + 10);
  const base = document.createElementNS(ns, "line");
  base.setAttribute("x1", pad); base.setAttribute("x2", w - pad);
  base.setAttribute("y1", h - pad); base.setAttribute("y2", h - pad);
  svg.append(base);
  if (samples.length === 0) {
    label.textContent = "lag history: no samples yet (the server samples every few seconds)";
  } else {
    const t0 = samples[0].timestamp_ms, t1 = samples[samples.length - 1].timestamp_ms;
    const span = Math.max(1, t1 - t0);
    const maxLag = Math.max(1, ...samples.map((p) => p.lag_records));
    const x = (t) => pad + (w - 2 * pad) * (samples.length === 1 ? 1 : (t - t0) / span);
    const y = (v) => pad + (h - 2 * pad) * (1 - v / maxLag);
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("points", samples.map((p) => x(p.timestamp_ms).toFixed(1) + "," + y(p.lag_records).toFixed(1)).join(" "));
    svg.append(line);
    label.textContent = "lag, last " + human(span / 1000) + " (" + samples.length + " samples, max " + maxLag + " records, " +
      human(Math.max(...samples.map((p) => p.lag_seconds))) + " behind)";
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

function members(g) {
  if (g.members.length === 0) return el("p", { class: "muted" }, "Members: none live (no heartbeat, no live lease).");
  return el("table", { class: "members" },
    el("thead", {}, el("tr", {}, el("th", {}, "Member"), el("th", {}, "Holds"), el("th", {}, "Live until"))),
    el("tbody", {}, ...g.members.map((m) => el("tr", { "data-member": m.member },
      el("td", {}, m.member),
      el("td", m.holds.length ? {} : { class: "muted" }, m.holds.length ? m.holds.map((h) => h.topic + "/" + h.partition).join(", ") : "no partitions (waiting for a share)"),
      el("td", {}, new Date(m.expires_at_ms).toLocaleTimeString())))));
}

function settings(g) {
  const s = g.settings;
  if (!s) return el("p", { class: "muted" }, "Settings: the defaults (none stored)");
  return el("p", { class: "settings" }, "Settings: reset policy " + s.reset_policy + ", max attempts " + s.max_attempts +
    ", on failure " + s.on_failure + ", dead-letter topic " + (s.dead_letter_topic === null ? "none" : s.dead_letter_topic));
}

// releaseOutcome is what became of a release asked for from this page: waiting for the
// partition's owner, replayed (the key is no longer parked), or parked again.
function releaseOutcome(g, row) {
  const r = state.releases.get(g + "\n" + row.topic + "\n" + row.partition + "\n" + row.key);
  if (!r) return row.release_requested_at_ms ? "release requested " + ago(row.release_requested_at_ms) : "";
  if (row.release_requested_at_ms) return "release requested: waiting for the owner of partition " + row.partition + " to replay";
  return "replayed, but it failed again: " + row.error;
}

function parkedTable(g) {
  const rows = g.parked.map((row) => {
    const cells = [el("td", {}, row.topic), el("td", { class: "num" }, row.partition), el("td", {}, decode(row.key)),
      el("td", { class: "num" }, row.first_offset), el("td", { class: "num" }, row.records), el("td", { class: "error-text" }, row.error),
      el("td", {}, ago(row.parked_at_ms) + (row.expired ? " (EXPIRED)" : "")),
      el("td", { class: "outcome" }, releaseOutcome(g.group, row))];
    const acts = el("td", { class: "actions" }, button("records", { "data-action": "parked-records" }, () => {
      state.tail = { topic: row.topic, partition: row.partition, follow: false, offset: row.first_offset, key: decode(row.key) };
      syncControls();
      renderTail();
    }));
    if (g.allowed.includes("reset") && can("read", "topic:" + row.topic)) {
      acts.append(button("release", { "data-action": "release" }, () => release(g.group, row)));
    }
    cells.push(acts);
    return el("tr", { class: "parked-key", "data-key": decode(row.key) }, ...cells);
  });
  // Releases whose key is no longer parked were replayed.
  for (const [id, r] of state.releases) {
    if (r.group !== g.group || g.parked.some((row) => r.group + "\n" + row.topic + "\n" + row.partition + "\n" + row.key === id)) continue;
    rows.push(el("tr", { class: "released", "data-key": decode(r.key) }, el("td", {}, r.topic), el("td", { class: "num" }, r.partition),
      el("td", {}, decode(r.key)), el("td", { colspan: "5", class: "outcome" }, "replayed: the key is no longer parked"), el("td", {})));
  }
  if (rows.length === 0) return el("p", { class: "muted" }, "Parked keys: none.");
  return el("table", { class: "parked" },
    el("thead", {}, el("tr", {}, ...["Topic", "Partition", "Key", "First offset", "Records", "Error", "Parked", "Release", ""].map((x) => el("th", {}, x)))),
    el("tbody", {}, ...rows));
}

function release(group, row) {
  confirmPlan("Release a parked key", [
    "release key " + decode(row.key) + " of " + row.topic + "/" + row.partition + " in group " + group,
    "its owner replays the " + row.records + " parked record(s) in order, before any newer record of the key",
  ], async () => {
    const res = await api("/v1/groups/" + seg(group) + "/parked/release", "POST", { topic: row.topic, key: row.key });
    for (const r of res.parked) state.releases.set(group + "\n" + r.topic + "\n" + r.partition + "\n" + r.key, { group, topic: r.topic, partition: r.partition, key: r.key });
    state.drawn = "";
    return "release requested on " + res.parked.length + " partition(s)";
  });
}

function renderGroups(s) {
  const blocks = [];
  for (const g of s.groups) {
    const rows = g.partitions.map((p) => el("tr", {},
      el("td", {}, p.topic), el("td", { class: "num" }, p.partition),
      el("td", { class: "num" }, p.committed_offset === null ? "-" : p.committed_offset),
      el("td", { class: "num" }, p.high_watermark), el("td", { class: "num" }, p.lag_records),
      el("td", { class: "num" }, human(p.lag_seconds)),
      el("td", { class: "num" }, human(p.seconds_to_data_loss)),
      el("td", { class: p.parked_keys > 0 ? "num parked" : "num", "data-parked": p.parked_keys || 0 }, p.parked_keys || 0),
      el("td", {}, p.owner === null ? "-" : p.owner), el("td", { class: "num" }, p.generation)));
    if (rows.length === 0) rows.push(emptyRow(10, "No partitions: the group has not leased or committed any (or none on topics this token may describe)."));
    const total = g.partitions.reduce((n, p) => n + p.lag_records, 0);
    const behind = Math.max(0, ...g.partitions.map((p) => p.lag_seconds || 0));
    const parked = g.partitions.reduce((n, p) => n + (p.parked_keys || 0), 0);
    const acts = el("div", { class: "actions" });
    if (g.allowed.includes("reset")) {
      acts.append(button("reset offsets", { "data-action": "reset", "data-group": g.group }, () => resetForm(g)));
      acts.append(button("settings", { "data-action": "settings", "data-group": g.group }, () => settingsForm(g)));
    }
    if (g.allowed.includes("delete")) acts.append(button("delete group", { "data-action": "delete-group", "data-group": g.group }, () => deleteGroup(g)));
    blocks.push(el("div", { class: "group", "data-group": g.group, "data-state": g.state },
      el("h3", {}, g.group + " — " + g.state + ", lag " + total + " records, " + human(behind) + " behind" +
        (parked > 0 ? ", " + parked + (parked === 1 ? " key" : " keys") + " parked" : "")),
      acts, settings(g), members(g), chart(g.lag_history),
      el("table", {}, el("thead", {}, el("tr", {}, ...["Topic", "Partition", "Committed", "High watermark", "Lag (records)", "Lag (time)", "To data loss", "Parked keys", "Owner", "Generation"].map((x) => el("th", {}, x)))),
        el("tbody", {}, ...rows)),
      parkedTable(g)));
  }
  if (blocks.length === 0) blocks.push(el("p", { class: "muted empty" }, emptyGroupsText()));
  document.getElementById("groups").replaceChildren(...blocks);
}

function resetForm(g) {
  const topics = [...new Set(g.partitions.map((p) => p.topic))];
  const mode = el("select", { id: "reset-mode" }, ...["earliest", "latest", "time", "offset", "shift-by"].map((m) => el("option", { value: m }, m)));
  const form = el("div", { class: "reset" },
    el("label", {}, "Topic ", el("select", { id: "reset-topic" }, ...topics.map((t) => el("option", { value: t }, t)))),
    el("label", {}, "To ", mode),
    el("label", {}, "Value ", el("input", { id: "reset-value", placeholder: "offset, shift (-5), or time (ISO or ms)" })),
    button("Plan", { id: "reset-plan" }, () => planReset(g).catch((e) => setStatus(errorText(e), true))));
  document.getElementById("group-form").replaceChildren(el("h3", {}, "Reset " + g.group), form);
}

// planReset computes each partition's new committed offset, shows the plan (current →
// new per partition) and applies it as per-partition resets to exactly those offsets.
// The plan reads the group's positions and the topic's offsets afresh: the last summary
// may predate a commit, and a plan must show what it changes.
async function planReset(g) {
  const topic = document.getElementById("reset-topic").value;
  const mode = document.getElementById("reset-mode").value;
  const value = document.getElementById("reset-value").value.trim();
  if (!state.summary.topics.some((x) => x.name === topic)) throw new Error("topic " + topic + " is not visible to this token");
  const [t, fresh] = await Promise.all([api("/v1/topics/" + seg(topic)), api("/v1/groups/" + seg(g.group))]);
  const committed = new Map(fresh.partitions.filter((p) => p.topic === topic).map((p) => [p.partition, p.committed_offset]));
  let byTime = null;
  if (mode === "time") {
    const ms = /^\d+$/.test(value) ? Number(value) : new Date(value).getTime();
    if (Number.isNaN(ms)) throw new Error("time: give an ISO time or milliseconds since the epoch");
    byTime = new Map((await api("/v1/topics/" + seg(topic) + "/offsets?timestamp_ms=" + ms)).partitions.map((p) => [p.partition, p.offset]));
  }
  if ((mode === "offset" || mode === "shift-by") && !/^-?\d+$/.test(value)) throw new Error(mode + ": give a whole number");
  const plan = [];
  const lines = [];
  for (const p of t.partition_info) {
    const cur = committed.has(p.partition) ? committed.get(p.partition) : null;
    let to;
    switch (mode) {
      case "earliest": to = p.log_start_offset; break;
      case "latest": to = p.high_watermark; break;
      case "time": to = byTime.get(p.partition); break;
      case "offset": to = Number(value); break;
      case "shift-by": to = Math.min(p.high_watermark, Math.max(p.log_start_offset, (cur === null ? p.log_start_offset : cur) + Number(value))); break;
    }
    plan.push({ partition: p.partition, to });
    const out = to < p.log_start_offset || to > p.high_watermark ? " (outside " + p.log_start_offset + "–" + p.high_watermark + ": refused)" : "";
    lines.push("partition " + p.partition + ": " + (cur === null ? "none" : cur) + " → " + to + " (lag " + (p.high_watermark - to) + " records)" + out);
  }
  confirmPlan("Reset " + g.group + " on " + topic + " (" + mode + (value ? " " + value : "") + ")", lines, async () => {
    for (const x of plan) {
      await api("/v1/groups/" + seg(g.group) + "/topics/" + seg(topic) + "/reset", "POST", { to: { offset: x.to }, partitions: [x.partition] });
    }
    return "reset " + plan.length + " partition(s)";
  });
}

// settingsForm edits the group's settings; the plan lists each change.
function settingsForm(g) {
  const cur = g.settings || { reset_policy: "earliest", max_attempts: 5, on_failure: "dead_letter", dead_letter_topic: null };
  const select = (id, values, value) => {
    const s = el("select", { id }, ...values.map((v) => el("option", { value: v }, v)));
    s.value = value;
    return s;
  };
  const form = el("div", { class: "reset" },
    el("label", {}, "Reset policy ", select("settings-reset-policy", ["earliest", "latest", "fail"], cur.reset_policy)),
    el("label", {}, "Max attempts ", el("input", { id: "settings-max-attempts", type: "number", min: "1", max: "100", value: String(cur.max_attempts) })),
    el("label", {}, "On failure ", select("settings-on-failure", ["dead_letter", "park"], cur.on_failure)),
    el("label", {}, "Dead-letter topic ", el("input", { id: "settings-dlq", placeholder: "none", value: cur.dead_letter_topic || "" })),
    button("Plan", { id: "settings-plan" }, () => {
      const next = {
        reset_policy: document.getElementById("settings-reset-policy").value,
        max_attempts: Number(document.getElementById("settings-max-attempts").value),
        on_failure: document.getElementById("settings-on-failure").value,
      };
      const dlq = document.getElementById("settings-dlq").value.trim();
      if (dlq) next.dead_letter_topic = dlq;
      const lines = [];
      for (const k of ["reset_policy", "max_attempts", "on_failure", "dead_letter_topic"]) {
        const was = cur[k] === null || cur[k] === undefined ? "none" : String(cur[k]);
        const now = next[k] === undefined ? "none" : String(next[k]);
        lines.push(k + ": " + (was === now ? now + " (unchanged)" : was + " → " + now));
      }
      confirmPlan("Settings of " + g.group, lines, async () => {
        await api("/v1/groups/" + seg(g.group) + "/settings", "PUT", next);
        return "settings of " + g.group + " saved";
      });
    }));
  document.getElementById("group-form").replaceChildren(el("h3", {}, "Settings of " + g.group), form);
}

function deleteGroup(g) {
  confirmPlan("Delete group " + g.group, [
    "delete group " + g.group + ": its settings, members, committed positions and parked keys",
    "refused while a member holds a lease or heartbeats",
  ], async () => {
    await api("/v1/groups/" + seg(g.group), "DELETE");
    return "deleted " + g.group;
  }, g.group);
}

// --- messages ---------------------------------------------------------------------

function fillTopicSelect() {
  const sel = document.getElementById("tail-topic");
  const names = state.summary ? state.summary.topics.map((t) => t.name) : [];
  const want = state.tail ? state.tail.topic : sel.value;
  const all = names.includes(want) || !want ? names : [want, ...names];
  if ([...sel.options].map((o) => o.value).join("\n") !== all.join("\n")) {
    sel.replaceChildren(...all.map((n) => el("option", { value: n }, n)));
  }
  if (want) sel.value = want;
}

function syncControls() {
  if (!state.tail) return;
  fillTopicSelect();
  document.getElementById("tail-partition").value = state.tail.partition;
  document.getElementById("tail-follow").checked = !!state.tail.follow;
  document.getElementById("tail-offset").value = state.tail.follow || state.tail.offset === undefined ? "" : state.tail.offset;
  document.getElementById("tail-key").value = state.tail.key || "";
}

async function poll(topic, partition, offset, max, wait, signal) {
  return api("/v1/topics/" + seg(topic) + "/partitions/" + partition + "/records?offset=" + offset + "&max_records=" + max +
    (wait ? "&wait_ms=" + wait : ""), "GET", undefined, signal);
}

function headersText(r) {
  const list = r.header_list || Object.keys(r.headers || {}).sort().map((k) => ({ key: k, value: r.headers[k] }));
  if (list.length === 0) return null;
  return list.map((h) => h.key + "=" + (h.value === null ? "(null)" : decode(h.value))).join(", ");
}

function recordRow(r) {
  const key = show(r.key, state.format);
  const value = show(r.value, state.format);
  const hdrs = headersText(r);
  const copy = button("copy", { class: "link", "data-action": "copy" }, async (ev) => {
    const text = JSON.stringify({ offset: r.offset, timestamp: new Date(r.timestamp_ms).toISOString(), key: decode(r.key), value: decode(r.value), headers: hdrs });
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      const area = el("textarea", {}, text);
      document.body.append(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    ev.target.textContent = "copied";
    ev.target.dataset.copied = text;
  });
  return el("tr", { "data-offset": String(r.offset) }, el("td", { class: "num" }, r.offset), el("td", {}, new Date(r.timestamp_ms).toISOString()),
    el("td", key === null ? { class: "muted" } : { class: "bytes" }, key === null ? "(no key)" : key),
    el("td", value === null ? { class: "muted" } : { class: "bytes" }, value === null ? "(null)" : value),
    el("td", hdrs === null ? { class: "muted" } : { class: "headers" }, hdrs === null ? "(none)" : hdrs), el("td", {}, copy));
}

function renderRecords() {
  const body = document.querySelector("#tail tbody");
  const rows = state.records.map(recordRow);
  if (rows.length === 0) rows.push(emptyRow(6, state.emptyText || "No records."));
  body.replaceChildren(...rows);
}

// bounds is a partition's log start and high watermark now: the topic's describe, or,
// for a topic this token may read but not describe, what a poll of offset 0 says.
async function bounds(topic, partition) {
  if (state.summary && state.summary.topics.some((x) => x.name === topic)) {
    const t = await api("/v1/topics/" + seg(topic));
    const p = t.partition_info.find((x) => x.partition === partition);
    if (!p) throw new Error("topic " + topic + " has no partition " + partition + " (it has " + t.partitions + ")");
    return p;
  }
  try {
    return await poll(topic, partition, 0, 1);
  } catch (e) {
    if (e.status === 416 && e.details) return e.details;
    throw e;
  }
}

// renderTail shows the chosen page of the partition: from an offset, from a time (the
// server's offsets-by-time), the records of a key (the server's bounded search), or
// the newest, which a follow then extends by long polls.
async function renderTail() {
  try {
    await showTail();
  } finally {
    document.getElementById("tail").dataset.rendered = String(state.follow);
  }
}

async function showTail() {
  const title = document.getElementById("tail-title");
  const run = ++state.follow;
  if (state.abort) state.abort.abort();
  if (!state.tail) {
    title.textContent = "";
    state.records = [];
    state.emptyText = "Pick a partition: a topic's ▸, then browse; or choose above.";
    renderRecords();
    return;
  }
  const tail = state.tail;
  const { topic, partition } = tail;
  try {
    const info = await bounds(topic, partition);
    const range = " (log start " + info.log_start_offset + ", high watermark " + info.high_watermark + ")";
    if (tail.key) {
      const res = await api("/v1/topics/" + seg(topic) + "/partitions/" + partition + "/search?key=" + seg(toBase64(tail.key)) +
        "&offset=" + (tail.offset || 0) + "&max_records=" + PAGE_RECORDS);
      state.records = res.records;
      tail.next = res.next_offset;
      state.emptyText = "No record with key " + tail.key + " in offsets " + (tail.offset || 0) + "–" + res.next_offset + ".";
      title.textContent = topic + " / " + partition + " — key " + tail.key + " from offset " + (tail.offset || 0) + ": " + res.records.length +
        " found in " + res.scanned + " offsets scanned" + (res.complete ? ", to the high watermark" : ", more after " + res.next_offset) + range;
      renderRecords();
      return;
    }
    let from;
    if (tail.follow) {
      from = Math.max(info.log_start_offset, info.high_watermark - PAGE_RECORDS);
    } else if (tail.timeMs !== undefined) {
      const o = await api("/v1/topics/" + seg(topic) + "/offsets?timestamp_ms=" + tail.timeMs);
      from = o.partitions[partition].offset;
      tail.offset = from;
      delete tail.timeMs;
    } else {
      from = Math.min(Math.max(info.log_start_offset, tail.offset || 0), info.high_watermark);
    }
    tail.offset = from;
    const res = await poll(topic, partition, from, PAGE_RECORDS);
    state.records = res.records;
    tail.next = res.next_offset;
    state.emptyText = res.high_watermark === res.log_start_offset
      ? "The partition is empty: nothing appended yet (or retention removed it all)."
      : "No records from offset " + from + ": it is at the high watermark " + res.high_watermark + ".";
    title.textContent = topic + " / " + partition + (tail.follow ? " — following the newest" : " — from offset " + from) + range;
    renderRecords();
    if (tail.follow) followLoop(run, tail);
  } catch (e) {
    title.textContent = topic + " / " + partition;
    state.records = [];
    state.emptyText = "Cannot read: " + errorText(e);
    renderRecords();
    throw e;
  }
}

// followLoop long-polls the partition from the newest offset shown, appending what
// arrives, until another view is chosen.
async function followLoop(run, tail) {
  const ctl = new AbortController();
  state.abort = ctl;
  let next = tail.next;
  const follow = document.getElementById("tail-follow-state");
  while (run === state.follow) {
    follow.textContent = "following: waiting for records after " + next;
    follow.dataset.next = String(next);
    try {
      const res = await poll(tail.topic, tail.partition, next, PAGE_RECORDS, FOLLOW_WAIT_MS, ctl.signal);
      if (run !== state.follow) return;
      if (res.records.length) {
        state.records = state.records.concat(res.records).slice(-5 * PAGE_RECORDS);
        renderRecords();
      }
      next = res.next_offset;
    } catch (e) {
      if (run !== state.follow) return;
      follow.textContent = "follow stopped: " + errorText(e);
      return;
    }
  }
}

function page(dir) {
  if (!state.tail) return;
  const t = state.tail;
  t.follow = false;
  if (dir > 0) t.offset = t.next;
  else t.offset = Math.max(0, (t.offset || 0) - PAGE_RECORDS);
  syncControls();
  renderTail().catch((e) => setStatus(errorText(e), true));
}

// --- refresh ----------------------------------------------------------------------

let running = false;

async function refresh() {
  if (running) return;
  running = true;
  try {
    const s = await api("/v1/summary");
    state.summary = s;
    // An unchanged summary is drawn again only every 10 s (for its "ago" times): an idle
    // tab costs the browser as little as the server.
    const text = JSON.stringify(s);
    if (text !== state.drawn || Date.now() - state.drawnAt > 10000) {
      document.getElementById("create-topic").hidden = !s.principal.open && !s.principal.grants.some((g) => g.ops.includes("create"));
      renderGroups(s);
      renderTopics(s);
      state.drawn = text;
      state.drawnAt = Date.now();
    }
    setStatus("updated " + new Date().toLocaleTimeString() + (s.principal.open ? "" : " as " + s.principal.name), false);
    document.body.dataset.ready = "1";
  } catch (e) {
    state.summary = null;
    document.querySelector("#topics tbody").replaceChildren(emptyRow(10, "Cannot list topics: " + errorText(e)));
    document.getElementById("groups").replaceChildren(el("p", { class: "muted empty" }, "Cannot list groups: " + errorText(e)));
    setStatus(errorText(e), true);
    document.body.dataset.ready = "error";
  } finally {
    running = false;
    document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes || 0) + 1);
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
  document.getElementById("create-topic").addEventListener("submit", createTopic);
  document.getElementById("confirm-cancel").addEventListener("click", closeConfirm);
  document.getElementById("tail-older").addEventListener("click", () => page(-1));
  document.getElementById("tail-newer").addEventListener("click", () => page(1));
  document.getElementById("tail-format").addEventListener("change", (ev) => { state.format = ev.target.value; renderRecords(); });
  document.getElementById("tail-controls").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const topic = document.getElementById("tail-topic").value;
    if (!topic) return;
    const partition = Number(document.getElementById("tail-partition").value || 0);
    const off = document.getElementById("tail-offset").value;
    const tm = document.getElementById("tail-time").value;
    const key = document.getElementById("tail-key").value;
    const follow = document.getElementById("tail-follow").checked && off === "" && tm === "" && key === "";
    state.tail = { topic, partition, follow };
    if (key !== "") state.tail.key = key;
    if (!follow && tm !== "") state.tail.timeMs = new Date(tm).getTime();
    else if (!follow) state.tail.offset = Number(off || 0);
    document.getElementById("tail-follow").checked = follow;
    document.getElementById("tail-time").value = "";
    renderTail().catch((e) => setStatus(errorText(e), true));
  });
  if (params.has("topic")) {
    const topic = params.get("topic");
    state.tail = { topic, partition: Number(params.get("partition") || 0), follow: !params.has("offset") && !params.has("time") };
    state.open.add(topic);
    if (params.has("offset")) state.tail.offset = Number(params.get("offset"));
    if (params.has("time")) state.tail.timeMs = Number(params.get("time")) || new Date(params.get("time")).getTime();
  }
  document.getElementById("refresh-every").textContent = "refresh every " + human(REFRESH_MS / 1000);
  syncControls();
  refresh().then(() => renderTail().catch((e) => setStatus(errorText(e), true)));
  setInterval(refresh, REFRESH_MS);
}

start();
