// The inspector page. Agent data is untrusted: it reaches the page only through
// textContent and form values, never as markup.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token") || "";
const ROW = 24;
const LIVE_KINDS = new Set(["session", "remote"]);

function $(id) { return document.getElementById(id); }

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

async function api(path, body, raw) {
  const init = { method: body === undefined ? "GET" : "POST", headers: { "X-Inspector-Token": TOKEN } };
  if (body !== undefined) {
    init.body = raw ? body : JSON.stringify(body);
    init.headers["Content-Type"] = raw ? "text/plain" : "application/json";
  }
  const response = await fetch(path, init);
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

function clock(ms) {
  if (!Number.isFinite(ms)) return "";
  const d = new Date(ms);
  return d.toISOString().slice(11, 23);
}

function seconds(ms) { return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s"; }

function frameTime(rec) {
  const stamp = rec.f && typeof rec.f.timestamp === "string" ? Date.parse(rec.f.timestamp) : NaN;
  return Number.isNaN(stamp) ? rec.t : stamp;
}

// ---------------------------------------------------------------- virtual list

class VirtualList {
  // Renders only the rows in view, so 100,000 rows cost what 40 do.
  constructor(container, render, onPick) {
    this.container = container;
    this.render = render;
    this.onPick = onPick;
    this.count = 0;
    this.selected = -1;
    this.spacer = el("div", "spacer");
    container.appendChild(this.spacer);
    this.rows = el("div");
    container.appendChild(this.rows);
    this.pending = false;
    // While a button in a row is pressed its row is not drawn again (frames keep
    // arriving): a button replaced under the pointer never gets the click.
    this.held = false;
    container.addEventListener("pointerdown", (event) => { if (event.target.closest("button")) this.held = true; });
    const release = () => { if (this.held) { this.held = false; this.refresh(); } };
    window.addEventListener("pointerup", release);
    window.addEventListener("pointercancel", release);
    container.addEventListener("scroll", () => this.refresh());
    window.addEventListener("resize", () => this.refresh());
  }
  setCount(count, follow) {
    this.count = count;
    this.spacer.style.height = count * ROW + "px";
    if (follow) this.container.scrollTop = this.container.scrollHeight;
    this.refresh();
  }
  scrollTo(index) {
    this.selected = index;
    this.container.scrollTop = Math.max(0, index * ROW - this.container.clientHeight / 2);
    this.refresh();
  }
  refresh() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; if (!this.held) this.draw(); });
  }
  draw() {
    // A field being typed into keeps its focus and caret across redraws (frames
    // arriving, a scroll, a resize).
    const active = this.rows.contains(document.activeElement) ? document.activeElement : null;
    const focusKey = active && active.dataset.focusKey;
    const first = Math.max(0, Math.floor(this.container.scrollTop / ROW) - 2);
    const last = Math.min(this.count, first + Math.ceil(this.container.clientHeight / ROW) + 5);
    this.rows.replaceChildren();
    for (let i = first; i < last; i++) {
      const row = this.render(i);
      row.classList.add("row-item");
      if (i === this.selected) row.classList.add("selected");
      row.style.top = i * ROW + "px";
      row.addEventListener("click", (event) => {
        if (event.target.tagName === "BUTTON" || event.target.tagName === "INPUT") return;
        this.selected = i;
        this.onPick(i);
        this.refresh();
      });
      this.rows.appendChild(row);
    }
    if (focusKey) {
      const again = [...this.rows.querySelectorAll("[data-focus-key]")].find((node) => node.dataset.focusKey === focusKey);
      if (again) {
        again.focus();
        again.setSelectionRange(active.selectionStart, active.selectionEnd);
      }
    }
  }
}

// ---------------------------------------------------------------- timeline model

class Timeline {
  // Turns, blocks, tool calls, questions and host calls, built frame by frame.
  constructor() {
    this.entries = [];
    this.turns = new Map();
    this.tools = new Map();
    this.questions = new Map();
    this.blocks = new Map();
    this.turn = null;
  }
  add(kind, rec, fields) {
    const depth = (fields && fields.depth) !== undefined ? fields.depth : (this.turn ? 1 : 0);
    const entry = Object.assign({ kind, n: rec ? rec.n : -1, start: rec ? frameTime(rec) : 0, depth, records: rec ? [rec.n] : [] }, fields || {});
    entry.depth = depth;
    this.entries.push(entry);
    return entry;
  }
  block(kind, rec, text, done) {
    const p = rec.f.payload || {};
    const key = kind + ":" + (p.turn_id || "") + ":" + (p.index ?? "");
    let entry = this.blocks.get(key);
    if (!entry || entry.done) {
      entry = this.add(kind, rec, { text: "" });
      this.blocks.set(key, entry);
    } else {
      entry.records.push(rec.n);
    }
    if (done) {
      if (typeof text === "string" && text.length >= entry.text.length) entry.text = text;
      entry.done = true;
      entry.end = frameTime(rec);
    } else if (typeof text === "string") {
      entry.text += text;
    }
  }
  feed(rec) {
    const f = rec.f;
    if (!f || typeof f !== "object") { this.add("bad", rec, { text: rec.raw }); return; }
    const p = f.payload || {};
    const t = frameTime(rec);
    switch (f.type) {
      case "session.capabilities": {
        const agent = p.agent || {};
        this.add("session", rec, { text: `${p.adapter_type || "?"} · ${agent.name || "agent"} ${agent.version || ""}`, depth: 0 });
        break;
      }
      case "control.prompt.request":
        this.add("prompt", rec, { text: p.text, depth: 0 });
        break;
      case "session.turn.start":
        this.turn = this.add("turn", rec, { turnId: p.turn_id, depth: 0 });
        this.turns.set(p.turn_id, this.turn);
        break;
      case "session.turn.end": {
        const turn = this.turns.get(p.turn_id);
        if (turn) { turn.end = t; turn.stop = p.stop_reason; if (p.usage) turn.usage = p.usage; turn.records.push(rec.n); }
        else this.add("note", rec, { text: `end of unknown turn ${p.turn_id}` });
        this.turn = null;
        break;
      }
      case "session.usage": {
        const turn = this.turns.get(p.turn_id);
        if (turn) { turn.usage = p; turn.records.push(rec.n); }
        break;
      }
      case "agent.text.delta": this.block("text", rec, p.text ?? p.delta, false); break;
      case "agent.text.done": this.block("text", rec, p.text, true); break;
      case "agent.thinking.delta": this.block("thinking", rec, p.text ?? p.delta, false); break;
      case "agent.thinking.done": this.block("thinking", rec, p.text, true); break;
      case "tool.invoke.request": {
        const host = p.executor === "master";
        const entry = this.add(host ? "host" : "tool", rec, { name: p.tool_name, input: p.input, id: p.invocation_id, output: "", timeoutMs: p.timeout_ms });
        this.tools.set(p.invocation_id, entry);
        break;
      }
      case "tool.invoke.stream": {
        const chain = (f.metadata && f.metadata.delegation_chain) || null;
        const tool = this.tools.get(p.invocation_id);
        if (chain && chain.length) {
          const key = "delegated:" + chain.map((link) => link.invocation_id).join("/");
          let entry = this.blocks.get(key);
          if (!entry) {
            const parent = this.tools.get(chain[0].invocation_id) || tool;
            entry = this.add("delegated", rec, { text: "", chain, depth: (parent ? parent.depth : 1) + chain.length });
            this.blocks.set(key, entry);
          } else entry.records.push(rec.n);
          entry.text += p.output || "";
        } else if (tool) {
          tool.output += p.output || "";
          tool.records.push(rec.n);
        }
        break;
      }
      case "tool.invoke.result": {
        const tool = this.tools.get(p.invocation_id);
        if (tool) {
          tool.end = t; tool.error = !!p.is_error; tool.result = p.output; tool.records.push(rec.n);
        } else this.add("note", rec, { text: `result for unknown call ${p.invocation_id}` });
        break;
      }
      case "control.tool.result": {
        const tool = this.tools.get(p.invocation_id);
        if (tool) { tool.answered = true; tool.records.push(rec.n); }
        break;
      }
      case "agent.interaction.request": {
        const entry = this.add("question", rec, { id: p.interaction_id, qtype: p.interaction_type, title: p.title || p.message || "", tool: (p.context || {}).tool_name, timeoutMs: p.timeout_ms, options: p.options, deadline: rec.t + (p.timeout_ms || 0), payload: p });
        this.questions.set(p.interaction_id, entry);
        break;
      }
      case "control.interaction.response":
      case "control.interaction.timeout": {
        const q = this.questions.get(p.interaction_id);
        if (q) { q.answer = f.type.endsWith("timeout") ? "timeout" : (p.decision || p.value); q.records.push(rec.n); }
        break;
      }
      case "agent.interaction.resolved": {
        const q = this.questions.get(p.interaction_id);
        if (q) { q.outcome = p.outcome; q.decidedBy = p.decided_by; q.end = t; q.records.push(rec.n); }
        else this.add("note", rec, { text: `resolved unknown question ${p.interaction_id}` });
        break;
      }
      case "agent.error":
      case "session.error":
        this.add("error", rec, { text: `${p.error_code || p.code || ""} ${p.message || ""}`.trim() });
        break;
      case "session.closed":
        this.add("closed", rec, { text: p.reason || "", depth: 0 });
        break;
      default:
        if (f.type && f.type.startsWith("control.")) this.add("master", rec, { text: f.type.slice(8), payload: p });
        else this.add("other", rec, { text: f.type, payload: p });
    }
  }
}

// ---------------------------------------------------------------- the open feed

const state = {
  feed: null, // summary from the server
  records: [],
  marks: [],
  marksByN: new Map(),
  timeline: new Timeline(),
  types: new Set(),
  rawIndex: [], // record numbers shown in the raw view after search and filter
  lineIndex: [], // timeline entries shown
  indexedEntries: 0, // how many entries lineIndex has looked at
  source: null,
  view: "timeline",
  openedAt: 0,
};

const rawList = new VirtualList($("raw"), renderRaw, (i) => showRecord(state.rawIndex[i]));
const timeList = new VirtualList($("timeline"), renderEntry, (i) => showEntry(state.timeline.entries[state.lineIndex[i]]));

const filters = { type: "", query: "" }; // as typed, read once per change

function matches(rec) {
  if (filters.type && rec.type !== filters.type) return false;
  const query = filters.query;
  if (!query) return true;
  if (rec.lower === undefined) rec.lower = rec.raw.toLowerCase();
  return rec.lower.includes(query);
}

function entryText(entry) {
  return [entry.kind, entry.text, entry.name, entry.title, entry.tool].filter(Boolean).join(" ").toLowerCase();
}

function entryMatches(entry) {
  return !filters.query || entryText(entry).includes(filters.query);
}

function rebuildIndexes() {
  filters.type = $("type-filter").value;
  filters.query = $("search").value.toLowerCase();
  state.rawIndex = [];
  for (const rec of state.records) if (matches(rec)) state.rawIndex.push(rec.n);
  state.lineIndex = [];
  state.timeline.entries.forEach((entry, i) => { if (entryMatches(entry)) state.lineIndex.push(i); });
  state.indexedEntries = state.timeline.entries.length;
  redraw();
}

function redraw() {
  const follow = $("follow").checked;
  rawList.setCount(state.rawIndex.length, follow);
  timeList.setCount(state.lineIndex.length, follow);
  $("violation-count").textContent = String(state.marks.length);
}

function resetFeed(summary) {
  if (state.source) state.source.close();
  Object.assign(state, { feed: summary, records: [], marks: [], marksByN: new Map(), timeline: new Timeline(), types: new Set(), rawIndex: [], lineIndex: [], indexedEntries: 0 });
  const filter = $("type-filter");
  filter.replaceChildren(el("option", "", "all types"));
  filter.firstChild.value = "";
  $("violations").replaceChildren();
  $("detail").textContent = "";
  rawList.selected = -1;
  timeList.selected = -1;
  redraw();
  showFeedState();
}

function listFeed(summary) {
  const select = $("feed-select");
  if ([...select.options].some((option) => option.value === summary.feed_id)) return;
  select.appendChild(el("option", "", `${summary.feed_id} · ${summary.kind} · ${summary.title}`)).value = summary.feed_id;
}

function openFeed(summary) {
  resetFeed(summary);
  listFeed(summary);
  $("feed-select").value = summary.feed_id;
  $("save-recording").href = `/api/feeds/${encodeURIComponent(summary.feed_id)}/recording.jsonl?token=${encodeURIComponent(TOKEN)}`;
  $("replay-controls").hidden = summary.kind !== "replay";
  const source = new EventSource(`/api/feeds/${encodeURIComponent(summary.feed_id)}/events?token=${encodeURIComponent(TOKEN)}`);
  source.addEventListener("batch", (event) => receive(source, event.data.split("\n")));
  state.source = source;
}

function receive(source, lines) {
  // The first line says what the batch holds; each other line is a frame as it came.
  if (source !== state.source) return;
  const batch = JSON.parse(lines[0]);
  const filter = $("type-filter");
  for (let i = 1; i < lines.length; i++) {
    const n = batch.n0 + i - 1;
    const raw = lines[i];
    const direction = batch.dirs[i - 1] === "m" ? "master" : "agent";
    const t = batch.times[i - 1];
    let f = null;
    try { f = JSON.parse(raw); } catch (error) { f = null; }
    const type = f && typeof f.type === "string" ? f.type : "(not JSON)";
    const rec = { n, dir: direction, t, raw, f, type };
    state.records[n] = rec;
    state.timeline.feed(rec);
    if (!state.types.has(type)) {
      state.types.add(type);
      filter.appendChild(el("option", "", type)).value = type;
    }
    if (matches(rec)) state.rawIndex.push(n);
  }
  batch.marks.forEach(([n, rule, detail], i) => {
    const index = batch.m0 + i;
    if (state.marks[index]) return;
    const mark = { n, rule, detail };
    state.marks[index] = mark;
    const list = state.marksByN.get(n) || [];
    list.push(mark);
    state.marksByN.set(n, list);
    state.timeline.add("violation", null, { n, text: detail, rule, depth: 0, records: [n] });
    const item = el("li", "", `[${rule}] at ${where(n)}: ${detail}`);
    item.dataset.rule = rule;
    item.addEventListener("click", () => jumpToRecord(n));
    $("violations").appendChild(item);
  });
  // Entries only grow, but an entry already listed may change; a new one is appended.
  const entries = state.timeline.entries;
  for (let i = state.indexedEntries; i < entries.length; i++) if (entryMatches(entries[i])) state.lineIndex.push(i);
  state.indexedEntries = entries.length;
  state.feed = batch.feed;
  redraw();
  showFeedState();
  const complete = state.records.length === batch.feed.frames;
  if (state.openedAt && complete && batch.feed.state !== "live") {
    // A recording: every frame is in. Timed once the views' rows are drawn (the draw
    // asked for above comes first in the next frame); the rules' verdict may still be
    // coming.
    const openedAt = state.openedAt;
    state.openedAt = 0;
    requestAnimationFrame(() => {
      const ms = Math.round(performance.now() - openedAt);
      $("open-timing").textContent = `opened ${batch.feed.frames} frames in ${ms} ms`;
      $("open-timing").dataset.ms = String(ms);
    });
  }
  if (batch.feed.state === "ended" && complete) source.close();
}

function showFeedState() {
  const feed = state.feed;
  const status = $("feed-status");
  if (!feed) { status.textContent = "no feed open"; return; }
  status.textContent = `${feed.kind} · ${feed.state} · ${state.records.length} frames · ${state.marks.length} rules broken` + (feed.checked ? "" : " · not checked (joined mid-stream)") + (feed.problem ? ` · ${feed.problem}` : "");
  status.dataset.state = feed.state;
}

function where(n) {
  // A frame by its seq, as the raw view shows it; by position when it has none.
  const rec = state.records[n];
  return rec && rec.f && rec.f.seq !== undefined ? `#${rec.f.seq}` : `frame ${n + 1} of the feed`;
}

function jumpToRecord(n) {
  setView("raw");
  $("follow").checked = false;
  $("search").value = "";
  $("type-filter").value = "";
  rebuildIndexes();
  rawList.scrollTo(state.rawIndex.indexOf(n));
  showRecord(n);
}

// ---------------------------------------------------------------- rendering rows

function renderRaw(i) {
  const rec = state.records[state.rawIndex[i]];
  const row = el("div", "mono raw-row");
  row.dataset.n = String(rec.n);
  row.dataset.type = rec.type;
  const seq = rec.f && rec.f.seq !== undefined ? rec.f.seq : "?";
  row.appendChild(el("span", "seq", `#${seq}`));
  row.appendChild(el("span", "time", clock(frameTime(rec))));
  row.appendChild(el("span", rec.dir === "master" ? "badge master" : "badge", rec.dir === "master" ? "→ agent" : "← agent"));
  row.appendChild(el("span", "type", rec.type));
  const marks = state.marksByN.get(rec.n);
  if (marks) {
    row.classList.add("violation");
    row.dataset.violation = marks.map((m) => m.rule).join(" ");
    for (const mark of marks) row.appendChild(el("span", "badge bad", mark.rule));
  }
  row.appendChild(el("span", "", brief(rec.f && rec.f.payload !== undefined ? rec.f.payload : rec.raw)));
  return row;
}

function tail(text, size) {
  text = String(text ?? "");
  return text.length > size ? "…" + text.slice(-size) : text;
}

function brief(value) {
  if (value === undefined || value === null) return "";
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > 160 ? text.slice(0, 160) + "…" : text;
}

function renderEntry(i) {
  const entry = state.timeline.entries[state.lineIndex[i]];
  const row = el("div", entry.kind);
  row.dataset.kind = entry.kind;
  row.style.paddingLeft = 8 + entry.depth * 18 + "px";
  const badge = (text, cls) => row.appendChild(el("span", "badge " + (cls || ""), text));
  const text = (value) => row.appendChild(el("span", "", value));
  const live = state.feed && LIVE_KINDS.has(state.feed.kind) && state.feed.state === "live";
  const hasMark = entry.records.some((n) => state.marksByN.has(n));
  if (hasMark || entry.kind === "violation") { row.classList.add("violation"); row.dataset.violation = "1"; }
  switch (entry.kind) {
    case "session": badge("session"); text(entry.text); break;
    case "prompt": badge("prompt", "master"); text(entry.text); break;
    case "turn": {
      badge("turn");
      const usage = entry.usage ? ` · in ${entry.usage.input_tokens ?? "?"} / out ${entry.usage.output_tokens ?? "?"} tokens` : "";
      if (entry.end !== undefined) {
        badge(entry.stop, entry.stop === "end_turn" ? "ok" : entry.stop === "error" ? "bad" : "wait");
        text(`${seconds(entry.end - entry.start)}${usage}`);
      } else text(`running…${usage}`);
      row.dataset.stop = entry.stop || "";
      break;
    }
    case "text": badge("text"); text(tail(entry.text, 240)); break;
    case "thinking": badge("thinking"); text(tail(entry.text, 240)); break;
    case "tool":
    case "host": {
      badge(entry.kind === "host" ? "host call" : "tool", entry.kind === "host" ? "master" : "");
      text(`${entry.name} `);
      if (entry.end !== undefined) {
        badge(entry.error ? "error" : "ok", entry.error ? "bad" : "ok");
        text(`${seconds(entry.end - entry.start)} · `);
      } else badge("running", "wait");
      text(`${brief(entry.input)} → ${brief(entry.result)}`);
      break;
    }
    case "delegated": badge("delegated ×" + entry.chain.length, "master"); text(tail(entry.text, 200)); break;
    case "question": renderQuestion(row, entry, live, badge, text); break;
    case "error": badge("error", "bad"); text(entry.text); break;
    case "violation": badge(entry.rule, "bad"); text(`at ${where(entry.n)}: ${entry.text}`); break;
    case "master": badge("→ " + entry.text, "master"); text(brief(entry.payload)); break;
    case "closed": badge("session closed"); text(entry.text); break;
    default: badge(entry.text || entry.kind); text(brief(entry.payload));
  }
  return row;
}

function countdownText(deadline) {
  return `${Math.ceil(Math.max(0, deadline - Date.now()) / 1000)} s left `;
}

function tickCountdowns() {
  // In place: drawing the rows again twice a second would break an answer being typed.
  for (const node of $("timeline").querySelectorAll(".countdown")) node.textContent = countdownText(Number(node.dataset.deadline));
}

function renderQuestion(row, entry, live, badge, text) {
  // Outcome or buttons first: a long title must not push them out of the row.
  badge(entry.qtype === "PERMISSION" ? "permission" : (entry.qtype || "question").toLowerCase(), "wait");
  const title = `${entry.tool ? entry.tool + " · " : ""}${entry.title}`;
  if (entry.outcome) {
    badge(entry.outcome, entry.outcome === "allowed" ? "ok" : "bad");
    text(`by ${entry.decidedBy || "?"} after ${seconds(entry.end - entry.start)} · `);
    row.dataset.outcome = entry.outcome;
    text(title);
    return;
  }
  if (!live) { text(`unanswered · ${title}`); return; }
  const countdown = row.appendChild(el("span", "countdown", countdownText(entry.deadline)));
  countdown.dataset.deadline = String(entry.deadline);
  const answer = (body) => sendControl(body);
  if (entry.qtype === "PERMISSION" || entry.qtype === "CONFIRM") {
    for (const [label, op] of [["Allow", "allow"], ["Deny", "deny"]]) {
      const button = el("button", "answer", label);
      button.dataset.answer = op;
      button.addEventListener("click", () => answer({ op, interaction_id: entry.id }));
      row.appendChild(button);
    }
  } else if (entry.options && entry.options.length) {
    for (const option of entry.options) {
      const button = el("button", "answer", option);
      button.addEventListener("click", () => answer({ op: "answer", interaction_id: entry.id, value: option }));
      row.appendChild(button);
    }
  } else {
    const input = el("input");
    input.placeholder = "answer";
    input.dataset.focusKey = "answer:" + entry.id;
    input.value = entry.draft || ""; // what was typed before this redraw
    input.addEventListener("input", () => { entry.draft = input.value; });
    const button = el("button", "answer", "Answer");
    const send = () => answer({ op: "answer", interaction_id: entry.id, value: input.value });
    button.addEventListener("click", send);
    input.addEventListener("keydown", (event) => { if (event.key === "Enter") send(); });
    row.append(input, button);
  }
  const expire = el("button", "answer", "Time out now");
  expire.dataset.answer = "timeout";
  expire.title = "or do nothing and let the deadline pass";
  expire.addEventListener("click", () => answer({ op: "timeout", interaction_id: entry.id }));
  row.appendChild(expire);
  text(` ${title}`);
}

function showRecord(n) {
  const rec = state.records[n];
  if (!rec) return;
  const marks = state.marksByN.get(n) || [];
  const head = marks.map((m) => `✖ [${m.rule}] ${m.detail}\n`).join("");
  const pretty = rec.f ? `\n\n${JSON.stringify(rec.f, null, 2)}` : "";
  $("detail").textContent = `${head}${where(n)} · frame ${n + 1} of the feed · ${rec.dir}${rec.t ? " · received " + clock(rec.t) : ""}\n\n${rec.raw}${pretty}`;
}

function showEntry(entry) {
  if (!entry) return;
  const parts = [`${entry.kind} (frames ${entry.records.map(where).join(", ")})`];
  for (const key of ["text", "name", "title", "tool", "outcome", "decidedBy", "stop"]) {
    if (entry[key] !== undefined && entry[key] !== "") parts.push(`${key}: ${entry[key]}`);
  }
  for (const key of ["input", "output", "result", "usage", "payload", "chain"]) {
    if (entry[key] !== undefined && entry[key] !== "") parts.push(`${key}: ${typeof entry[key] === "string" ? entry[key] : JSON.stringify(entry[key], null, 2)}`);
  }
  $("detail").textContent = parts.join("\n\n");
}

// ---------------------------------------------------------------- actions

function setView(view) {
  state.view = view;
  $("timeline").hidden = view !== "timeline";
  $("raw").hidden = view !== "raw";
  for (const tab of document.querySelectorAll(".tab")) tab.classList.toggle("active", tab.dataset.view === view);
  redraw();
}

async function sendControl(body) {
  $("control-error").textContent = "";
  if (!state.feed) { $("control-error").textContent = "no session open"; return; }
  try {
    await api(`/api/feeds/${encodeURIComponent(state.feed.feed_id)}/control`, body);
  } catch (error) {
    $("control-error").textContent = error.message;
  }
}

function controlBody(op) {
  const text = $("prompt-text").value;
  switch (op) {
    case "prompt": case "steer": case "follow_up": return { op, text };
    case "set_model": return { op, model: $("model").value, thinking_level: $("thinking-level").value };
    case "mode": return { op, mode: $("mode").value };
    case "plan": {
      let steps = [];
      try { steps = JSON.parse($("plan").value || "[]"); } catch (error) { steps = $("plan").value.split(",").map((s) => s.trim()).filter(Boolean); }
      return { op, entries: steps.map((step) => (typeof step === "string" ? { content: step } : step)) };
    }
    default: return { op };
  }
}

function settingsFields(form) {
  const box = $("settings-fields");
  box.replaceChildren();
  const schema = form && form.schema;
  if (!schema || !schema.properties) {
    const label = el("label", "", "Settings (JSON)");
    const area = el("textarea");
    area.dataset.json = "all";
    label.appendChild(area);
    box.appendChild(label);
    return;
  }
  for (const [name, prop] of Object.entries(schema.properties)) {
    const type = (prop.anyOf || [prop]).find((option) => option.type !== "null") || prop;
    const label = el("label", "", prop.title || name);
    let input;
    if (type.enum || type.type === "boolean") {
      input = el("select");
      input.appendChild(el("option", "", "(default)")).value = "";
      for (const value of type.enum || [true, false]) input.appendChild(el("option", "", String(value))).value = JSON.stringify(value);
      input.dataset.kind = "json";
    } else if (type.type === "integer" || type.type === "number") {
      input = el("input");
      input.type = "number";
      input.dataset.kind = "json";
    } else if (type.type === "string") {
      input = el("input");
      input.dataset.kind = "string";
    } else {
      input = el("textarea");
      input.rows = 2;
      input.dataset.kind = "json";
    }
    input.name = name;
    input.dataset.setting = name;
    if (prop.default !== undefined && prop.default !== null) input.placeholder = typeof prop.default === "string" ? prop.default : JSON.stringify(prop.default);
    label.appendChild(input);
    if (prop.description) label.appendChild(el("span", "field-help", prop.description));
    box.appendChild(label);
  }
}

function readSettings() {
  const settings = {};
  for (const input of $("settings-fields").querySelectorAll("input, select, textarea")) {
    const value = input.value.trim();
    if (!value) continue;
    if (input.dataset.json === "all") return JSON.parse(value);
    settings[input.dataset.setting] = input.dataset.kind === "string" ? value : JSON.parse(value);
  }
  return settings;
}

async function loadAdapters() {
  const { adapters, workspace } = await api("/api/adapters");
  const select = $("adapter-select");
  adapters.forEach((form, i) => {
    const name = form.protocol ? `${form.adapter_type}.${form.protocol}` : form.adapter_type;
    select.appendChild(el("option", "", name)).value = String(i);
  });
  const pick = () => settingsFields(adapters[Number(select.value)]);
  select.addEventListener("change", pick);
  const sdk = adapters.findIndex((form) => form.adapter_type === "sdk" && !form.protocol);
  if (sdk >= 0) select.value = String(sdk);
  pick();
  $("workspace").value = workspace;
  $("start-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("start-error").textContent = "";
    const form = adapters[Number(select.value)];
    try {
      const deadline = $("deadline").value;
      const summary = await api("/api/sessions", {
        adapter_type: form.adapter_type,
        protocol: form.protocol,
        settings: readSettings(),
        workspace: $("workspace").value,
        interaction_timeout_ms: deadline ? Number(deadline) : null,
      });
      openFeed(summary);
    } catch (error) {
      $("start-error").textContent = error.message;
    }
  });
  $("start-button").disabled = false;
}

async function loadFeeds() {
  const feeds = await api("/api/feeds");
  for (const summary of feeds) listFeed(summary);
  // The newest feed, unless the page has opened one meanwhile.
  if (feeds.length && !state.feed) openFeed(feeds[feeds.length - 1]);
  $("feed-select").addEventListener("change", async () => {
    const all = await api("/api/feeds");
    const summary = all.find((feed) => feed.feed_id === $("feed-select").value);
    if (summary) openFeed(summary);
  });
}

function wire() {
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => setView(tab.dataset.view));
  $("search").addEventListener("input", rebuildIndexes);
  $("type-filter").addEventListener("change", rebuildIndexes);
  $("controls").addEventListener("submit", (event) => { event.preventDefault(); sendControl(controlBody("prompt")); });
  for (const button of document.querySelectorAll("#controls button[data-op]")) {
    button.addEventListener("click", () => sendControl(controlBody(button.dataset.op)));
  }
  $("attach-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("attach-error").textContent = "";
    try {
      openFeed(await api("/api/remote", { nats_url: $("nats-url").value, session_id: $("remote-session").value, from_seq: Number($("from-seq").value || 0), prefix: $("nats-prefix").value }));
    } catch (error) {
      $("attach-error").textContent = error.message;
    }
  });
  $("open-file").addEventListener("change", async () => {
    const file = $("open-file").files[0];
    if (!file) return;
    state.openedAt = performance.now();
    $("open-timing").textContent = "opening…";
    delete $("open-timing").dataset.ms;
    const summary = await api(`/api/recordings?name=${encodeURIComponent(file.name)}`, file, true);
    openFeed(summary);
    $("open-file").value = "";
  });
  $("replay-button").addEventListener("click", async () => {
    if (!state.feed) return;
    openFeed(await api(`/api/feeds/${encodeURIComponent(state.feed.feed_id)}/replay`, {}));
  });
  const play = (body) => api(`/api/feeds/${encodeURIComponent(state.feed.feed_id)}/play`, body);
  $("replay-step").addEventListener("click", () => play({ action: "step" }));
  $("replay-pause").addEventListener("click", () => play({ action: "pause" }));
  for (const button of document.querySelectorAll("#replay-controls [data-speed]")) {
    const speed = button.dataset.speed === "max" ? "max" : Number(button.dataset.speed);
    button.addEventListener("click", () => play({ action: "play", speed }));
  }
  // Countdowns of open questions tick while a live session runs.
  setInterval(() => { if (state.feed && state.feed.state === "live" && state.timeline.questions.size) tickCountdowns(); }, 500);
  setView("timeline");
}

wire();
loadAdapters();
loadFeeds();
