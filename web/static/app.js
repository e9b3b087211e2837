// The page of agentmail web. Every name, subject and body is put in the
// page with textContent, never as HTML: agents write the mail, and a body
// may hold markup meant to run here.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { person: "", agent: "", text: "", shown: 0, next: "", selected: "", busy: false, again: false };

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

async function api(path, options) {
  const r = await fetch(path, options);
  const type = r.headers.get("Content-Type") || "";
  const body = type.startsWith("application/json") ? await r.json() : await r.text();
  if (!r.ok) throw new Error(body.error || body || r.statusText);
  return body;
}

function when(t) {
  if (!t) return "";
  const d = new Date(t);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

function renderAgents(view) {
  state.person = view.person;
  $("person").textContent = view.person;
  const err = $("agents-error");
  err.hidden = !view.error;
  err.textContent = view.error || "";
  const list = $("agents");
  const to = $("compose-to"), filter = $("filter-agent");
  const keepTo = to.value, keepFilter = filter.value;
  to.replaceChildren();
  filter.replaceChildren(el("option", "", "all agents"));
  filter.firstChild.value = "";
  const items = [];
  for (const a of view.agents) {
    const li = reuse(agentItems, a.name, "agent", () => setAgent(a.name === state.agent ? "" : a.name));
    li.dataset.name = a.name;
    li.classList.toggle("selected", a.name === state.agent);
    const meta = [a.kind, a.status || "no status", "wake: " + a.wake];
    if (a.last_activity) meta.push(when(a.last_activity));
    li.replaceChildren(el("span", "name", a.name), " ");
    if (a.unread > 0) li.append(el("span", "badge unread", String(a.unread)));
    li.append(el("span", "meta", meta.join(" · ")));
    items.push(li);
    const o = el("option", "", a.name);
    o.value = a.name;
    filter.append(o);
    if (a.name !== view.person) {
      const t = el("option", "", a.name);
      t.value = a.name;
      to.append(t);
    }
  }
  // A choice the person made survives the refresh; the first agent is
  // the default.
  if (keepTo && [...to.options].some((o) => o.value === keepTo)) to.value = keepTo;
  filter.value = keepFilter;
  list.replaceChildren(...items);
  forget(agentItems, items);
}

// The list items stay the same elements from one refresh to the next, so
// that a click whose press and release straddle a refresh still lands.
const agentItems = new Map(); // name → li
const messageItems = new Map(); // id → li

// reuse returns the item kept under key, or a new one of class cls that
// calls onClick when clicked.
function reuse(items, key, cls, onClick) {
  let li = items.get(key);
  if (!li) {
    li = el("li", cls);
    li.addEventListener("click", onClick);
    items.set(key, li);
  }
  return li;
}

// forget drops the items no longer shown.
function forget(items, shown) {
  const keep = new Set(shown);
  for (const [key, li] of items) if (!keep.has(li)) items.delete(key);
}

function renderMessage(m) {
  const li = reuse(messageItems, m.id, "message", (e) => openThread(e.currentTarget.message));
  li.message = m;
  li.dataset.id = m.id;
  li.dataset.thread = m.thread_id;
  li.classList.toggle("selected", m.thread_id === state.selected);
  li.replaceChildren(
    el("span", "time", when(m.created_at)),
    el("span", "route", m.from + " → " + m.to),
    el("span", "state state-" + m.state, m.state),
    el("span", "line", m.first_line));
  return li;
}

function query(limit, cursor) {
  const q = new URLSearchParams({ limit: String(limit) });
  if (state.agent) q.set("agent", state.agent);
  if (state.text) q.set("q", state.text);
  if (cursor) q.set("cursor", cursor);
  return "/api/messages?" + q;
}

// refresh reads the agents and the newest messages again, as many as are
// shown. A refresh asked for while one runs runs once after it.
async function refresh() {
  if (state.busy) { state.again = true; return; }
  state.busy = true;
  try {
    renderAgents(await api("/api/agents"));
    const page = await api(query(Math.min(Math.max(state.shown, 50), 500)));
    const items = page.messages.map(renderMessage);
    $("messages").replaceChildren(...items);
    forget(messageItems, items);
    state.shown = page.messages.length;
    state.next = page.next || "";
    $("more").hidden = !state.next;
    $("messages-empty").hidden = state.shown > 0;
    if (current) await loadThread();
  } catch (e) {
    $("agents-error").hidden = false;
    $("agents-error").textContent = e.message;
  } finally {
    state.busy = false;
    if (state.again) { state.again = false; refresh(); }
  }
}

async function more() {
  if (!state.next) return;
  const page = await api(query(50, state.next));
  $("messages").append(...page.messages.map(renderMessage));
  state.shown += page.messages.length;
  state.next = page.next || "";
  $("more").hidden = !state.next;
}

function setAgent(name) {
  state.agent = name;
  $("filter-agent").value = name;
  state.shown = 0;
  refresh();
}

let current = null; // the message whose thread is open
async function openThread(m) {
  current = m;
  state.selected = m.thread_id;
  for (const li of $("messages").children) li.classList.toggle("selected", li.dataset.thread === m.thread_id);
  $("thread").hidden = false;
  $("thread-text").textContent = "…";
  await loadThread();
  if (m.to === state.person && m.state !== "read") {
    // The person has read it: its sender sees "read", the count drops.
    try {
      await api("/api/read", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ thread_id: m.thread_id }) });
    } catch (e) {
      $("compose-status").textContent = e.message;
    }
  }
}

// loadThread shows the open thread's text, as text.
async function loadThread() {
  try {
    $("thread-text").textContent = await api("/api/thread?id=" + encodeURIComponent(current.thread_id));
  } catch (e) {
    $("thread-text").textContent = e.message;
  }
}

function reply() {
  if (!current) return;
  const to = current.from === state.person ? current.to : current.from;
  $("compose-to").value = to;
  $("compose-reply-to").textContent = current.id;
  $("compose-reply").hidden = false;
  $("compose-body").focus();
}

function clearReply() {
  $("compose-reply-to").textContent = "";
  $("compose-reply").hidden = true;
}

async function send(ev) {
  ev.preventDefault();
  const body = { to: [$("compose-to").value], message: $("compose-body").value };
  const replyTo = $("compose-reply-to").textContent;
  if (replyTo) body.reply_to = replyTo;
  const status = $("compose-status");
  $("compose-submit").disabled = true;
  try {
    const res = await api("/api/send", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    status.textContent = res.text;
    $("compose-body").value = "";
    clearReply();
  } catch (e) {
    status.textContent = e.message;
  } finally {
    $("compose-submit").disabled = false;
  }
}

function live() {
  const es = new EventSource("/api/events");
  const mark = (on) => { $("live").textContent = on ? "live" : "offline"; $("live").className = "live " + (on ? "on" : "off"); };
  es.addEventListener("ready", () => { mark(true); refresh(); });
  es.addEventListener("change", refresh);
  es.onerror = () => mark(false);
}

let typing = 0;
document.addEventListener("DOMContentLoaded", () => {
  $("filter-agent").addEventListener("change", (e) => setAgent(e.target.value));
  $("filter-text").addEventListener("input", (e) => {
    clearTimeout(typing);
    typing = setTimeout(() => { state.text = e.target.value; state.shown = 0; refresh(); }, 200);
  });
  $("filters").addEventListener("submit", (e) => e.preventDefault());
  $("inbox-button").addEventListener("click", () => setAgent(state.person));
  $("more").addEventListener("click", more);
  $("thread-close").addEventListener("click", () => { $("thread").hidden = true; current = null; state.selected = ""; });
  $("thread-reply").addEventListener("click", reply);
  $("compose-reply-clear").addEventListener("click", clearReply);
  $("compose").addEventListener("submit", send);
  refresh();
  live();
});
