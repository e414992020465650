// agentrio console: an ACP client in the browser (JSON-RPC over the
// gateway's WebSocket at /acp). Everything a model or tool wrote is put in
// the page as text, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

// -- the token: from ?token=, kept for this origin (every tab, bookmarks), then
// removed from the address bar; "Forget token" removes it.
const params = new URLSearchParams(location.search);
if (params.get("token")) {
  localStorage.setItem("agentrio-token", params.get("token"));
  history.replaceState(null, "", location.pathname + location.hash);
}
const token = localStorage.getItem("agentrio-token") || "";

// -- JSON-RPC over the WebSocket --------------------------------------------
class Rpc {
  constructor(onRequest, onNotification, onState) {
    this.onRequest = onRequest;
    this.onNotification = onNotification;
    this.onState = onState;
    this.nextId = 1;
    this.pending = new Map();
    this.retry = 500;
  }

  connect() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${scheme}//${location.host}/acp?token=${encodeURIComponent(token)}`);
    this.ws = ws;
    ws.onopen = () => { this.retry = 500; this.onState("online"); };
    ws.onmessage = (event) => this.receive(JSON.parse(event.data));
    ws.onclose = (event) => {
      for (const { reject } of this.pending.values()) reject(new Error("connection closed"));
      this.pending.clear();
      this.onState("offline", event);
      setTimeout(() => this.connect(), this.retry);
      this.retry = Math.min(this.retry * 2, 8000);
    };
  }

  receive(message) {
    if (message.method && message.id !== undefined) {
      Promise.resolve(this.onRequest(message.method, message.params))
        .then((result) => this.send({ jsonrpc: "2.0", id: message.id, result }))
        .catch((error) => this.send({ jsonrpc: "2.0", id: message.id, error: { code: -32603, message: String(error) } }));
    } else if (message.method) {
      this.onNotification(message.method, message.params);
    } else if (this.pending.has(message.id)) {
      const { resolve, reject } = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error) reject(Object.assign(new Error(message.error.message), { code: message.error.code }));
      else resolve(message.result);
    }
  }

  send(message) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  call(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.send({ jsonrpc: "2.0", id, method, params });
    });
  }

  notify(method, params) { this.send({ jsonrpc: "2.0", method, params }); }
}

// -- state ------------------------------------------------------------------
const state = {
  sessionId: new URLSearchParams(location.hash.slice(1)).get("session"),
  status: "idle",
  online: false,
  readOnly: false,        // the session is held by another process: its history only
  confirmDelete: null,    // the session whose × was clicked once, for a few seconds
  outbox: [],             // prompts typed while offline: [{sessionId, method, prompt, node}]
  calls: new Map(),       // toolCallId -> {card, status, started, ended, title}
  agents: new Map(),      // agent id -> {name, parent}
  lastBlock: null,        // the block streaming text goes to
  turnStarted: 0,         // when the latest turn started (the timeline shows its calls)
  groups: new Map(),      // child agent path -> container element
};

const rpc = new Rpc(onRequest, onNotification, onConnection);

function onConnection(status) {
  const pill = $("connection");
  pill.textContent = status;
  pill.className = `pill ${status}`;
  state.online = status === "online";
  updateButtons();
  if (state.online) start().catch(showError);
}

async function start() {
  await rpc.call("initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "agentrio-console", version: "1" } });
  await refreshSessions();
  if (state.sessionId) await openSession(state.sessionId);
  flushOutbox();
}

// Prompts typed offline wait here, shown as queued, and go once online again.
function flushOutbox() {
  while (state.online && state.outbox.length) {
    const { sessionId, method, prompt, node } = state.outbox.shift();
    node.classList.remove("queued");
    node.removeAttribute("title");
    if (sessionId === state.sessionId) $("transcript").append(node);  // after the replay it follows
    send(sessionId, method, prompt);
  }
  saveOutbox();
}

function saveOutbox() {
  const kept = state.outbox.map(({ sessionId, method, prompt }) => ({ sessionId, method, prompt }));
  localStorage.setItem("agentrio-outbox", JSON.stringify(kept));
}

async function refreshSessions() {
  const { sessions } = await rpc.call("session/list", {});
  const list = $("sessions");
  list.replaceChildren();
  for (const s of sessions) {
    const meta = (s._meta && s._meta.agentrio) || {};
    const item = el("li", { "data-session": s.sessionId, onclick: () => { closeDrawer(); openSession(s.sessionId).catch(showError); } },
      el("div", {},
        el("div", { class: "sid", text: s.title || s.sessionId, title: s.sessionId }),
        el("div", { class: "when", text: `${new Date(s.updatedAt).toLocaleString()} · ${meta.messages ?? 0} msgs` })),
      el("span", { class: `pill ${meta.status === "running" ? "running" : ""}`, text: meta.status || "" }),
      el("button", { type: "button", class: "rename", title: "Rename this session", text: "✎",
                     onclick: (event) => { event.stopPropagation(); startRename(item, s); } }),
      el("button", { type: "button", class: "delete", title: "Delete this session (click twice)", text: "×",
                     onclick: (event) => { event.stopPropagation(); deleteSession(s.sessionId, event.target); } }));
    showDeleteButton(item.querySelector(".delete"), s.sessionId);
    if (s.sessionId === state.sessionId) {
      item.classList.add("current");
      $("session-title").textContent = s.title || "Session";
      item.querySelector(".pill").textContent = state.status;  // one status: the session's own updates
      item.querySelector(".pill").className = `pill ${state.status}`;
    }
    list.append(item);
  }
}

// Renaming edits the title in place: Enter (or leaving the field) keeps it, Escape does not.
function startRename(item, s) {
  const shown = item.querySelector(".sid");
  const input = el("input", { class: "rename-title", value: s.title || "", maxlength: "200", "aria-label": "New title" });
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    const title = input.value.trim();
    input.replaceWith(shown);
    if (!save || !title || title === s.title) return;
    try {
      await rpc.call("_agentrio/session/rename", { sessionId: s.sessionId, title });
    } catch (error) {
      showError(error);
    }
    await refreshSessions();
  };
  input.addEventListener("click", (event) => event.stopPropagation());
  input.addEventListener("keydown", (event) => {
    event.stopPropagation();
    if (event.key === "Enter") finish(true);
    else if (event.key === "Escape") finish(false);
  });
  input.addEventListener("blur", () => finish(true));
  shown.replaceWith(input);
  input.focus();
  input.select();
}

// The first click asks (for 4 s, across redraws of the list), the second deletes: no dialog to miss.
async function deleteSession(sessionId, button) {
  if (state.confirmDelete !== sessionId) {
    state.confirmDelete = sessionId;
    showDeleteButton(button, sessionId);
    setTimeout(() => {
      if (state.confirmDelete !== sessionId) return;
      state.confirmDelete = null;
      const shown = document.querySelector(`#sessions li[data-session="${CSS.escape(sessionId)}"] .delete`);
      if (shown) showDeleteButton(shown, sessionId);
    }, 4000);
    return;
  }
  state.confirmDelete = null;
  try {
    await rpc.call("_agentrio/session/delete", { sessionId });
    if (sessionId === state.sessionId) {
      state.sessionId = null;
      history.replaceState(null, "", location.pathname);
      resetTranscript();
      showSession();
    }
  } catch (error) { showError(error); }
  await refreshSessions();
}

function showDeleteButton(button, sessionId) {
  const asking = state.confirmDelete === sessionId;
  button.classList.toggle("confirm", asking);
  button.textContent = asking ? "delete?" : "×";
}

function resetTranscript() {
  $("transcript").replaceChildren();
  $("timeline").replaceChildren();
  $("timeline").textContent = "No tool calls yet.";
  showPlan(null);
  state.calls.clear();
  state.groups.clear();
  state.agents.clear();
  state.lastBlock = null;
  state.turnStarted = 0;
  renderAgents();
}

async function newSession() {
  const { sessionId } = await rpc.call("session/new", { cwd: "", mcpServers: [] });
  state.sessionId = sessionId;
  state.readOnly = false;
  setStatus("idle");
  resetTranscript();
  showSession();
  await refreshSessions();
  $("prompt").focus();
}

async function openSession(sessionId) {
  state.sessionId = sessionId;
  state.readOnly = false;
  resetTranscript();
  showSession();
  try {
    await rpc.call("session/load", { sessionId, cwd: "", mcpServers: [] });
  } catch (error) {
    if (error.code !== -32010) throw error;
    // Held by another process: its history came before the error, to read only.
    state.readOnly = true;
    notice(`read-only: ${error.message}`, true);
    updateButtons();
  }
  await refreshSessions();
}

// A rename, from this console or another client: the header and the list say it.
function showTitle(title) {
  $("session-title").textContent = title;
  const item = document.querySelector(`#sessions li[data-session="${CSS.escape(state.sessionId)}"] .sid`);
  if (item) item.textContent = title;
}

function showSession() {
  $("session-title").textContent = state.sessionId ? "Session" : "No session";
  $("session-meta").textContent = state.sessionId || "";
  if (state.sessionId) history.replaceState(null, "", `#session=${encodeURIComponent(state.sessionId)}`);
  for (const item of document.querySelectorAll("#sessions li")) {
    item.classList.toggle("current", item.dataset.session === state.sessionId);
  }
  updateButtons();
}

function setStatus(status) {
  if (status === "running" && state.status !== "running") state.turnStarted = performance.now();
  state.status = status;
  for (const pill of [$("status"), document.querySelector("#sessions li.current .pill")]) {
    if (!pill) continue;
    pill.textContent = status;
    pill.className = `pill ${status}`;
  }
  for (const block of document.querySelectorAll(".streaming")) {
    if (status !== "running") block.classList.remove("streaming");
  }
  updateButtons();
}

function updateButtons() {
  const open = Boolean(state.sessionId) && !state.readOnly;
  const running = state.status === "running";
  const live = state.online;
  $("send").disabled = !open;
  $("send").textContent = live ? "Send" : "Offline: queue";
  $("send").title = live ? "Send as a prompt (queued as a follow-up while a turn runs)"
    : "Offline: the prompt is kept and sent when the connection is back";
  $("steer").disabled = !open || !running || !live;
  $("followup").disabled = !open;
  $("cancel").disabled = !open || !running || !live;
}

function showUsage(usage) {
  if (!usage) return;
  const count = (n) => n >= 10000 ? `${(n / 1000).toFixed(1)}k` : String(n);
  const cost = usage.cost == null ? "" : ` · $${usage.cost.toFixed(4)}`;  // none when the model has no price
  $("usage").textContent = `${count(usage.inputTokens)} in · ${count(usage.outputTokens)} out tokens${cost}`;
}

// -- transcript -------------------------------------------------------------
function containerFor(meta) {
  const info = meta && meta.agentrio;
  if (!info || !info.path) return $("transcript");
  const key = info.path.join("/");
  if (!state.groups.has(key)) {
    const names = info.names || info.path;
    const group = el("div", { class: "child" }, el("div", { class: "child-label", text: `↳ ${names.join(" › ")}` }));
    $("transcript").append(group);
    state.groups.set(key, group);
    info.path.forEach((id, i) => {
      if (!state.agents.has(id)) state.agents.set(id, { name: names[i] || id, parent: i ? info.path[i - 1] : null });
    });
    renderAgents();
  }
  return state.groups.get(key);
}

function scrollDown() {
  const t = $("transcript");
  if (t.scrollHeight - t.scrollTop - t.clientHeight < 200) t.scrollTop = t.scrollHeight;
}

function appendText(kind, text, meta) {
  const parent = containerFor(meta);
  let block = state.lastBlock;
  if (!block || block.dataset.kind !== kind || block.parentElement !== parent) {
    if (kind === "thought") {
      block = el("details", { class: "thinking", open: "" }, el("summary", { text: "Thinking" }), el("span"));
    } else {
      block = el("div", { class: `message ${kind === "user" ? "user" : "assistant"}` });
    }
    block.dataset.kind = kind;
    parent.append(block);
  }
  if (kind === "agent") {
    block.raw = (block.raw || "") + text;
    block.classList.add("streaming");
    scheduleRender(block);
  } else {
    (kind === "thought" ? block.querySelector("span") : block).textContent += text;
  }
  state.lastBlock = kind === "user" ? null : block;
  scrollDown();
}

// A prompt's image, in the user message it came with: only the raster types
// agentrio accepts, from base64 data, so the data: URL can hold nothing else.
const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
function appendImage(content, meta) {
  if (!IMAGE_TYPES.has(content.mimeType) || !/^[A-Za-z0-9+/]*={0,2}$/.test(content.data || "")) return;
  const parent = containerFor(meta);
  let block = parent.lastElementChild;
  if (!block || block.dataset.kind !== "user") {
    block = el("div", { class: "message user" });
    block.dataset.kind = "user";
    parent.append(block);
  }
  block.append(el("img", { class: "prompt-image", alt: "image", src: `data:${content.mimeType};base64,${content.data}` }));
  state.lastBlock = null;
  scrollDown();
}

// Answers are drawn from a small, safe subset of Markdown (fenced code,
// `code`, **bold**), as DOM nodes, at most once a frame while they stream.
const dirty = new Set();
function scheduleRender(block) {
  if (!dirty.size) requestAnimationFrame(() => { for (const b of dirty) renderMarkdown(b, b.raw); dirty.clear(); scrollDown(); });
  dirty.add(block);
}

function renderMarkdown(node, text) {
  const nodes = [];
  text.split(/^```[^\n]*\n?/m).forEach((part, i) => {
    if (i % 2 === 1) { nodes.push(el("pre", { class: "code", text: part.replace(/\n$/, "") })); return; }
    for (const piece of part.split(/(`[^`\n]+`|\*\*[^*\n]+\*\*)/)) {
      if (/^`[^`]+`$/.test(piece)) nodes.push(el("code", { text: piece.slice(1, -1) }));
      else if (/^\*\*[^*]+\*\*$/.test(piece)) nodes.push(el("strong", { text: piece.slice(2, -2) }));
      else if (piece) nodes.push(document.createTextNode(piece));
    }
  });
  node.replaceChildren(...nodes);
}

function diffView(diff) {
  const view = el("div", { class: "diff" }, el("div", { class: "path", text: diff.path }));
  for (const [sign, line] of lineDiff(diff.oldText || "", diff.newText || "")) {
    const kind = sign === "+" ? "add" : sign === "-" ? "del" : sign === "…" ? "skip" : "";
    view.append(el("div", { class: `line ${kind}`, text: sign === "…" ? line : `${sign} ${line}` }));
  }
  return view;
}

// Unchanged lines shown around a change; the others are counted (diffs carry whole files).
const CONTEXT_LINES = 3;

// A line diff: the lines both texts share at their start and end are left
// out but for CONTEXT_LINES of them beside the change.
function lineDiff(oldText, newText) {
  const a = oldText ? oldText.split("\n") : [];
  const b = newText.split("\n");
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let end = 0;
  while (end < a.length - start && end < b.length - start && a[a.length - 1 - end] === b[b.length - 1 - end]) end++;
  const skipped = (n) => ["…", `… ${n} unchanged line${n === 1 ? "" : "s"}`];
  const out = [];
  const from = Math.max(0, start - CONTEXT_LINES);
  if (from > 0) out.push(skipped(from));
  for (let k = from; k < start; k++) out.push([" ", a[k]]);
  out.push(...middleDiff(a.slice(start, a.length - end), b.slice(start, b.length - end)));
  const shown = Math.min(end, CONTEXT_LINES);
  for (let k = 0; k < shown; k++) out.push([" ", a[a.length - end + k]]);
  if (end > shown) out.push(skipped(end - shown));
  return out;
}

// The changed middle, by longest common subsequence (small inputs), else old then new.
function middleDiff(a, b) {
  if (a.length * b.length > 250000) return [...a.map((l) => ["-", l]), ...b.map((l) => ["+", l])];
  const lcs = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) { out.push([" ", a[i]]); i++; j++; }
    else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push(["-", a[i++]]);
    else out.push(["+", b[j++]]);
  }
  while (i < a.length) out.push(["-", a[i++]]);
  while (j < b.length) out.push(["+", b[j++]]);
  return out;
}

// A tool's output: open while the call runs, folded (one click away) once it is done.
function renderContent(body, content, finished) {
  body.querySelectorAll(".result").forEach((n) => n.remove());
  for (const item of content || []) {
    if (item.type === "diff") body.append(el("div", { class: "result" }, diffView(item)));
    else if (item.type === "content" && item.content && item.content.type === "text") {
      const text = item.content.text;
      const lines = text.split("\n").length;
      const output = el("details", { class: "result output" },
        el("summary", { class: "label", text: `output · ${lines} line${lines === 1 ? "" : "s"}` }), el("pre", { text }));
      if (!finished) output.open = true;
      body.append(output);
    }
  }
}

function toolCall(update) {
  const id = update.toolCallId;
  let call = state.calls.get(id);
  if (!call) {
    const pill = el("span", { class: "pill pending", text: "pending" });
    const body = el("div", { class: "body" });
    const card = el("div", { class: "tool", "data-call": id },
      el("header", { onclick: () => card.classList.toggle("collapsed") },
        el("span", { class: "kind", text: update.kind || "other" }),
        el("span", { class: "title", text: update.title || id }),
        pill),
      body);
    containerFor(update._meta).append(card);
    call = { card, pill, body, status: "pending", started: null, ended: null, title: update.title || id };
    state.calls.set(id, call);
    state.lastBlock = null;
  }
  if (update.title) { call.title = update.title; call.card.querySelector(".title").textContent = update.title; }
  if (update.rawInput !== undefined && !call.body.querySelector(".args")) {
    call.body.prepend(el("div", { class: "args" }, el("div", { class: "label", text: "arguments" }),
      el("pre", { text: JSON.stringify(update.rawInput, null, 2) })));
  }
  if (update.content) {
    const finished = ["completed", "failed"].includes(update.status || call.status);
    renderContent(call.body, update.content, finished);
  }
  if (update.status && update.status !== call.status) {
    call.status = update.status;
    call.pill.textContent = update.status.replace("_", " ");
    call.pill.className = `pill ${update.status}`;
    call.card.dataset.status = update.status;
    const now = performance.now();
    if (update.status === "in_progress") call.started = now;
    if (update.status === "completed" || update.status === "failed") {
      // Results arrive in the model's order; the call's own duration says when it really ended.
      const duration = update._meta && update._meta.agentrio && update._meta.agentrio.duration;
      if (call.started == null) call.started = now;
      call.ended = duration ? Math.min(now, call.started + duration * 1000) : now;
      call.body.querySelectorAll(".args").forEach((n) => n.classList.add("folded"));
    }
    if (update.status !== "pending") closeApproval(id);
    renderTimeline();
  }
  scrollDown();
}

function renderTimeline() {
  const timeline = $("timeline");
  // The calls of the latest turn, on one time axis: parallel calls overlap.
  const calls = [...state.calls.values()].filter((c) => c.started != null && c.started >= state.turnStarted).slice(-16);
  if (!calls.length) return;
  const now = performance.now();
  const t0 = Math.min(...calls.map((c) => c.started));
  const t1 = Math.max(...calls.map((c) => c.ended || now));
  const span = Math.max(t1 - t0, 1);
  timeline.classList.remove("muted");
  timeline.replaceChildren(...calls.map((c) => {
    const left = ((c.started - t0) / span) * 100;
    const width = (((c.ended || now) - c.started) / span) * 100;
    const took = ((c.ended || now) - c.started) / 1000;
    const bar = el("div", { class: `bar ${c.status}` });
    bar.style.left = `${left}%`;  // CSSOM, which the page's CSP allows (style attributes it does not)
    bar.style.width = `${Math.max(width, 1)}%`;
    return el("div", { class: "lane", title: `${c.title} · ${took.toFixed(2)}s · ${c.status}` },
      el("span", { class: "name", text: c.title }),
      el("div", { class: "track" }, bar));
  }));
}
setInterval(() => { if ([...state.calls.values()].some((c) => c.status === "in_progress")) renderTimeline(); }, 250);

// The agent's plan (each "plan" update holds all of it): a checklist, one mark a status.
const PLAN_MARKS = { completed: "✔", in_progress: "▶", pending: "○" };
function showPlan(entries) {
  const plan = $("plan");
  plan.classList.toggle("muted", !entries);
  if (!entries) { plan.replaceChildren(el("li", { text: "No plan yet." })); return; }
  if (!entries.length) { plan.replaceChildren(el("li", { text: "The plan is empty." })); return; }
  plan.replaceChildren(...entries.map((entry) => el("li", { class: `entry ${entry.status} ${entry.priority}`, "data-status": entry.status },
    el("span", { class: "mark", text: PLAN_MARKS[entry.status] || "○" }),
    el("span", { class: "content", text: entry.content }))));
}

function renderAgents() {
  const root = $("agents");
  const rootItem = el("li", {}, el("span", { class: "agent-name", text: "● main" }));
  const nodes = new Map();
  const childrenOf = (parent) => [...state.agents.entries()].filter(([, a]) => a.parent === parent);
  const build = (parentId, into) => {
    const kids = childrenOf(parentId);
    if (!kids.length) return;
    const ul = el("ul");
    for (const [id, agent] of kids) {
      const li = el("li", {}, el("span", { class: "agent-name", text: agent.name }), el("span", { class: "muted", text: ` ${id.slice(0, 14)}` }));
      nodes.set(id, li);
      build(id, li);
      ul.append(li);
    }
    into.append(ul);
  };
  build(null, rootItem);
  root.replaceChildren(rootItem);
}

function notice(text, error = false) {
  $("transcript").append(el("div", { class: `notice${error ? " error" : ""}`, text }));
  state.lastBlock = null;
  scrollDown();
}

function showError(error) { notice(String(error.message || error), true); }

// -- from the gateway -------------------------------------------------------
function onNotification(method, params) {
  if (method !== "session/update" || params.sessionId !== state.sessionId) return;
  const update = params.update;
  switch (update.sessionUpdate) {
    case "user_message_chunk":
      if (update.content.type === "image") appendImage(update.content, update._meta);
      else appendText("user", update.content.text || "", update._meta);
      break;
    case "agent_message_chunk": appendText("agent", update.content.text || "", update._meta); break;
    case "agent_thought_chunk": appendText("thought", update.content.text || "", update._meta); break;
    case "tool_call":
    case "tool_call_update": toolCall(update); break;
    case "plan": showPlan(update.entries || []); break;
    case "session_info_update": {
      if (update.title) showTitle(update.title);
      const info = update._meta && update._meta.agentrio;
      if (info && info.status) setStatus(info.status);
      if (info) showUsage(info.usage);
      break;
    }
  }
}

const approvals = new Map(); // toolCallId -> resolve

function onRequest(method, params) {
  if (method !== "session/request_permission") throw new Error(`unsupported: ${method}`);
  return new Promise((resolve) => {
    const call = params.toolCall;
    approvals.set(call.toolCallId, resolve);
    const dialog = $("approval");
    $("approval-title").textContent = call.title || call.toolCallId;
    const body = $("approval-body");
    body.replaceChildren();
    const content = call.content || [];
    const diffs = content.filter((item) => item.type === "diff");
    // A diff says it best; the text summary only when there is none.
    for (const item of diffs.length ? diffs : content) {
      if (item.type === "diff") body.append(diffView(item));
      else if (item.type === "content" && item.content.type === "text") body.append(el("pre", { text: item.content.text }));
    }
    if (!(call.content || []).length && call.rawInput !== undefined) body.append(el("pre", { text: JSON.stringify(call.rawInput, null, 2) }));
    const options = $("approval-options");
    options.replaceChildren(...params.options.map((option) => el("button", {
      type: "button",
      class: option.kind === "allow_once" ? "primary" : option.kind.startsWith("reject") ? "danger" : "",
      "data-option": option.optionId,
      text: option.name,
      onclick: () => answer(call.toolCallId, { outcome: "selected", optionId: option.optionId }),
    })));
    dialog.dataset.call = call.toolCallId;
    if (!dialog.open) dialog.showModal();
  });
}

function answer(callId, outcome) {
  const resolve = approvals.get(callId);
  approvals.delete(callId);
  if (resolve) resolve({ outcome });
  closeApproval(callId);
}

function closeApproval(callId) {
  const dialog = $("approval");
  if (approvals.has(callId)) { approvals.get(callId)({ outcome: { outcome: "cancelled" } }); approvals.delete(callId); }
  if (dialog.open && dialog.dataset.call === callId) dialog.close();
}

$("approval").addEventListener("cancel", (event) => event.preventDefault()); // Esc must not answer

// -- to the gateway ---------------------------------------------------------
function takePrompt() {
  const text = $("prompt").value.trim();
  if (!text || !state.sessionId || state.readOnly) return null;
  $("prompt").value = "";
  appendText("user", text, null);
  return [{ type: "text", text }];
}

// Sent now, or kept (shown queued) until the connection is back: never lost.
function submit(method, prompt) {
  if (state.online) { send(state.sessionId, method, prompt); return; }
  const node = [...document.querySelectorAll(".message.user")].pop();
  node.classList.add("queued");
  node.title = "queued: sent when the connection is back";
  state.outbox.push({ sessionId: state.sessionId, method, prompt, node });
  saveOutbox();
}

function send(sessionId, method, prompt) {
  const call = rpc.call(method, { sessionId, prompt });
  if (method === "session/prompt") {
    call.then(({ stopReason }) => { if (stopReason !== "end_turn") notice(`turn ended: ${stopReason}`); refreshSessions(); });
  }
  call.catch(showError);
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const prompt = takePrompt();
  if (prompt) submit("session/prompt", prompt);
});
$("prompt").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); $("composer").requestSubmit(); }
});
$("steer").addEventListener("click", () => {
  const prompt = takePrompt();
  if (prompt) send(state.sessionId, "_agentrio/steer", prompt);
});
$("followup").addEventListener("click", () => {
  const prompt = takePrompt();
  if (prompt) submit("_agentrio/followup", prompt);
});
$("cancel").addEventListener("click", () => rpc.notify("session/cancel", { sessionId: state.sessionId }));
$("new-session").addEventListener("click", () => { closeDrawer(); newSession().catch(showError); });
$("forget-token").addEventListener("click", () => {
  localStorage.removeItem("agentrio-token");
  location.replace(location.pathname);
});
$("menu").addEventListener("click", () => document.body.classList.toggle("drawer-open"));
function closeDrawer() { document.body.classList.remove("drawer-open"); }

// Prompts kept from an earlier page (typed offline, then the page closed).
for (const kept of JSON.parse(localStorage.getItem("agentrio-outbox") || "[]")) {
  const node = el("div", { class: "message user queued", text: kept.prompt.map((b) => b.text).join("\n"),
                           title: "queued: sent when the connection is back" });
  state.outbox.push({ ...kept, node });
}

updateButtons();
if (!token) notice("No token: open the address agentrio serve printed (…/?token=…).", true);
rpc.connect();
