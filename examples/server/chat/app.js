// The chat page of Parley's example server: plain JavaScript over the /v1
// API, with no build step. It keeps the caller's token in sessionStorage
// (one per tab, so two tabs can be two callers), lists the conversations
// with their unread counts, pages through messages (newest at the bottom,
// older ones on scrolling up), sends, edits, reacts, uploads and downloads,
// and follows GET /v1/events to show what others do as it happens.
"use strict";

const $ = (id) => document.getElementById(id);
const pageSize = 30;

const state = {
  token: sessionStorage.getItem("parley-token") || "",
  me: null,            // the caller's contact
  current: null,       // the open conversation's id
  messages: new Map(), // id -> Message of the open conversation
  hasMore: false,      // older messages exist beyond the oldest shown
  loadingOlder: false,
  lastEventID: "",
  stream: null,        // AbortController of the events stream
};

// api calls the /v1 API with the caller's token and returns the decoded
// body; a failure throws an Error carrying the API's error message.
async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + state.token };
  let payload = body;
  if (body !== undefined && !(body instanceof FormData)) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const res = await fetch(path, { method, headers, body: payload });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) {
    const err = new Error((data.error && data.error.message) || res.status + " " + res.statusText);
    err.status = res.status;
    throw err;
  }
  return data;
}

function showError(err) {
  $("error").textContent = err ? err.message || String(err) : "";
}

// ---- signing in ----

async function signIn(token) {
  state.token = token;
  const res = await fetch("/chat/me", { headers: { Authorization: "Bearer " + token } });
  if (!res.ok) {
    state.token = "";
    sessionStorage.removeItem("parley-token");
    throw new Error(res.status === 401 ? "That token is not known to this server." : "Sign-in failed: " + res.status);
  }
  state.me = await res.json();
  sessionStorage.setItem("parley-token", token);
  $("me").textContent = state.me.username;
  $("signin").hidden = true;
  $("app").hidden = false;
  await loadConversations();
  follow();
}

function signOut() {
  sessionStorage.removeItem("parley-token");
  if (state.stream) state.stream.abort();
  location.reload();
}

// ---- conversations ----

async function loadConversations() {
  const page = await api("GET", "/v1/conversations?limit=100");
  const ul = $("conversations");
  ul.replaceChildren();
  for (const c of page.data) {
    const li = document.createElement("li");
    li.dataset.id = c.id;
    li.classList.toggle("current", c.id === state.current);
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = c.id;
    const preview = document.createElement("span");
    preview.className = "preview";
    if (c.last_message) preview.textContent = c.last_message.contact.username + ": " + c.last_message.message;
    name.append(preview);
    li.append(name);
    if (c.unread_count > 0 && c.id !== state.current) {
      const badge = document.createElement("span");
      badge.className = "unread";
      badge.textContent = String(c.unread_count);
      li.append(badge);
    }
    li.addEventListener("click", () => open(c.id).catch(showError));
    ul.append(li);
  }
}

let refreshTimer = 0;
function refreshConversations() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => loadConversations().catch(showError), 100);
}

async function open(id) {
  showError(null);
  state.current = id;
  state.messages.clear();
  $("list").replaceChildren();
  $("title").textContent = id;
  $("send-form").hidden = false;
  const page = await api("GET", "/v1/messages?conversation_id=" + encodeURIComponent(id) + "&limit=" + pageSize);
  if (state.current !== id) return;
  state.hasMore = page.has_more;
  for (const m of page.data) upsert(m);
  scrollToBottom();
  await markRead();
  refreshConversations();
  $("text").focus();
}

// markRead moves the caller's read position to the newest message shown.
async function markRead() {
  const newest = [...state.messages.values()].sort(byAge).at(-1);
  if (!newest) return;
  await api("PUT", "/v1/conversations/" + encodeURIComponent(state.current), { read_through: newest.id });
}

async function loadOlder() {
  if (!state.hasMore || state.loadingOlder || !state.current) return;
  const oldest = [...state.messages.values()].sort(byAge)[0];
  if (!oldest) return;
  state.loadingOlder = true;
  $("older").hidden = false;
  const box = $("messages");
  const fromBottom = box.scrollHeight - box.scrollTop;
  try {
    const id = state.current;
    const page = await api("GET", "/v1/messages?conversation_id=" + encodeURIComponent(id) +
      "&limit=" + pageSize + "&starting_after=" + encodeURIComponent(oldest.id));
    if (state.current !== id) return;
    state.hasMore = page.has_more;
    for (const m of page.data) upsert(m);
    box.scrollTop = box.scrollHeight - fromBottom; // keep what the reader was looking at in place
  } finally {
    state.loadingOlder = false;
    $("older").hidden = true;
  }
}

// ---- messages ----

// byAge orders messages oldest first, as the API's lists do in reverse.
function byAge(a, b) {
  return a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

// upsert shows m in its place, replacing the element of an earlier version.
function upsert(m) {
  if (m.conversation_id !== state.current) return;
  state.messages.set(m.id, m);
  const el = render(m);
  const old = $("list").querySelector(`li[data-id="${CSS.escape(m.id)}"]`);
  if (old) {
    old.replaceWith(el);
    return;
  }
  const after = [...state.messages.values()].filter((o) => byAge(o, m) > 0).sort(byAge)[0];
  const next = after && $("list").querySelector(`li[data-id="${CSS.escape(after.id)}"]`);
  $("list").insertBefore(el, next || null);
}

function remove(id) {
  state.messages.delete(id);
  const el = $("list").querySelector(`li[data-id="${CSS.escape(id)}"]`);
  if (el) el.remove();
}

function render(m) {
  const li = $("message-template").content.firstElementChild.cloneNode(true);
  const mine = m.contact.id === state.me.id;
  li.dataset.id = m.id;
  li.classList.toggle("mine", mine);
  li.querySelector(".author").textContent = m.contact.username;
  const time = li.querySelector("time");
  time.dateTime = new Date(m.created_at * 1000).toISOString();
  time.textContent = new Date(m.created_at * 1000).toLocaleTimeString();
  li.querySelector(".text").textContent = m.message;

  for (const a of m.attachments || []) {
    const item = document.createElement("li");
    const b = document.createElement("button");
    b.type = "button";
    b.className = "download";
    b.dataset.id = a.id;
    b.textContent = "⬇ " + a.filename + " (" + size(a.file_size) + ")";
    b.addEventListener("click", () => download(a).catch(showError));
    item.append(b);
    li.querySelector(".attachments").append(item);
  }

  const counts = m.reaction_counts || {};
  for (const r of m.reactions || []) {
    const [name, reactors] = Object.entries(r)[0];
    const b = document.createElement("button");
    b.type = "button";
    b.className = "reaction";
    b.dataset.name = name;
    const reacted = reactors.includes(state.me.username);
    b.classList.toggle("mine", reacted);
    b.title = reactors.join(", ");
    b.textContent = name + " " + (counts[name] ?? reactors.length);
    b.addEventListener("click", () => react(m.id, name, !reacted).catch(showError));
    li.querySelector(".reactions").append(b);
  }
  for (const b of li.querySelectorAll(".actions .react")) {
    b.addEventListener("click", () => react(m.id, b.dataset.name, true).catch(showError));
  }
  const edit = li.querySelector(".edit");
  edit.hidden = !mine;
  edit.addEventListener("click", () => startEdit(li, m));
  return li;
}

function size(n) {
  if (n < 1024) return n + " B";
  if (n < 1 << 20) return (n / 1024).toFixed(1) + " KiB";
  return (n / (1 << 20)).toFixed(1) + " MiB";
}

async function react(id, name, on) {
  const m = on
    ? await api("PUT", "/v1/messages/" + id, { reactions: { [name]: [state.me.username] } })
    : await api("DELETE", "/v1/messages/" + id + "/reactions/" + encodeURIComponent(name));
  upsert(m);
}

function startEdit(li, m) {
  const text = li.querySelector(".text");
  const form = document.createElement("form");
  form.className = "edit-form";
  const input = document.createElement("input");
  input.value = m.message;
  input.maxLength = 4000;
  const save = document.createElement("button");
  save.type = "submit";
  save.textContent = "save";
  form.append(input, save);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      upsert(await api("PUT", "/v1/messages/" + m.id, { message: input.value }));
    } catch (err) {
      showError(err);
    }
  });
  text.replaceChildren(form);
  input.focus();
}

async function send(e) {
  e.preventDefault();
  showError(null);
  const conv = state.current;
  const file = $("file").files[0];
  let text = $("text").value.trim();
  if (!text && !file) return;
  try {
    const body = { conversation_id: conv, message: text || (file && file.name) };
    if (file) {
      const form = new FormData();
      form.append("conversation_id", conv);
      form.append("file", file);
      const a = await api("POST", "/v1/attachments", form);
      body.attachments = [a.id];
    }
    upsert(await api("POST", "/v1/messages", body));
    $("text").value = "";
    $("file").value = "";
    $("file-name").textContent = "";
    scrollToBottom();
  } catch (err) {
    showError(err);
  }
}

// download saves an attachment's bytes under its name. A file_url on this
// server needs the token, so it is fetched with it. A signed URL of a bucket
// (-signed-urls) is on another origin, which the page's policy
// (connect-src 'self') and the bucket's CORS rules keep fetch from: it is
// opened as a link instead, without the token (the bucket would refuse two
// kinds of authentication); the bucket names the file in its
// Content-Disposition.
async function download(a) {
  const url = new URL(a.file_url, location.href);
  const link = document.createElement("a");
  if (url.origin === location.origin) {
    const res = await fetch(url, { headers: { Authorization: "Bearer " + state.token } });
    if (!res.ok) throw new Error("download failed: " + res.status);
    link.href = URL.createObjectURL(await res.blob());
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  } else {
    link.href = url.href;
    link.target = "_blank";
    link.rel = "noopener noreferrer";
  }
  link.download = a.filename;
  document.body.append(link);
  link.click();
  link.remove();
}

function scrollToBottom() {
  const box = $("messages");
  box.scrollTop = box.scrollHeight;
}

// ---- live events ----

// follow reads GET /v1/events as Server-Sent Events (with fetch, since
// EventSource cannot send the Authorization header), resuming after the
// last event seen whenever the stream breaks.
async function follow() {
  let delay = 500;
  for (;;) {
    state.stream = new AbortController();
    const headers = { Authorization: "Bearer " + state.token, Accept: "text/event-stream" };
    if (state.lastEventID) headers["Last-Event-ID"] = state.lastEventID;
    try {
      const res = await fetch("/v1/events", { headers, signal: state.stream.signal });
      if (res.status === 401) return signOut();
      if (!res.ok) throw new Error("events: " + res.status);
      $("live").dataset.state = "open";
      $("live").textContent = "live";
      delay = 500;
      await readStream(res.body);
    } catch (err) {
      if (state.stream.signal.aborted) return;
    }
    $("live").dataset.state = "reconnecting";
    $("live").textContent = "reconnecting…";
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 10000);
  }
}

async function readStream(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let id = "", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("id:")) id = line.slice(3).trim();
        else if (line.startsWith("data:")) data += line.slice(5).trim();
      }
      if (!data) continue; // a heartbeat
      if (id) state.lastEventID = id;
      onEvent(JSON.parse(data));
    }
  }
}

function onEvent(e) {
  const obj = e.data && e.data.object;
  switch (e.type) {
    case "events.lost":
      if (state.current) open(state.current).catch(showError);
      break;
    case "message.created":
    case "message.updated":
      if (obj.conversation_id === state.current) {
        const atBottom = isAtBottom();
        upsert(obj);
        if (atBottom) scrollToBottom();
        // Read only when seen: a hidden page marks it when shown again.
        if (e.type === "message.created" && obj.contact.id !== state.me.id && !document.hidden) markRead().catch(showError);
      }
      break;
    case "message.deleted":
      remove(obj.id);
      break;
  }
  refreshConversations();
}

function isAtBottom() {
  const box = $("messages");
  return box.scrollHeight - box.scrollTop - box.clientHeight < 40;
}

// ---- wiring ----

document.addEventListener("DOMContentLoaded", () => {
  $("signin-form").addEventListener("submit", (e) => {
    e.preventDefault();
    $("signin-error").textContent = "";
    signIn($("token").value.trim()).catch((err) => ($("signin-error").textContent = err.message));
  });
  $("signout").addEventListener("click", signOut);
  $("open-form").addEventListener("submit", (e) => {
    e.preventDefault();
    open($("open-id").value.trim()).catch(showError);
    $("open-id").value = "";
  });
  $("send-form").addEventListener("submit", send);
  $("file").addEventListener("change", () => ($("file-name").textContent = $("file").files[0]?.name || ""));
  $("messages").addEventListener("scroll", () => {
    if ($("messages").scrollTop < 40) loadOlder().catch(showError);
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && state.current) markRead().then(refreshConversations).catch(showError);
  });
  if (state.token) signIn(state.token).catch(() => {});
});
