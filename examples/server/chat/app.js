// The chat page of Parley's example server: plain JavaScript over the /v1
// API, with no build step. It keeps the caller's token in sessionStorage
// (one per tab, so two tabs can be two callers) and the open conversation
// and thread in the URL's fragment (#general, #general/msg_…), so that a
// reload keeps them. It lists
// the conversations with their unread counts, pages through messages
// (newest at the bottom, older ones on scrolling up, grouped by sender and
// divided by day), sends (Enter; Shift+Enter adds a line), edits (with the
// earlier versions behind "(edited)"), deletes, reacts, uploads and
// downloads, searches (GET /v1/messages/search, as one types; a result
// opens its conversation at the message), and follows GET /v1/events to show what others do as it
// happens, and who is typing (POST /v1/conversations/:id/typing).
//
// Threads: a message with replies shows their count, which (as "Reply in
// thread") opens the thread in a panel beside the conversation (over it on
// a narrow screen), with its replies and a composer of its own
// (POST /v1/messages with parent_id). The sidebar lists the caller's
// threads (GET /v1/threads) with their unread replies; a thread shown is
// read (PUT /v1/threads/:id). Replies never show in the conversation
// itself, and the events keep the counts of the roots shown.
//
// Files go straight to where the server keeps them: POST /v1/uploads
// reserves, the bytes go to the upload_url it answers (the bucket's signed
// URL, or the API's own route) and POST /v1/uploads/:id/complete makes the
// attachment; a server without /v1/uploads, or a browser that cannot hash
// (crypto.subtle is for secure contexts: https or localhost), gets the one
// multipart POST /v1/attachments. Images show as previews
// (/v1/attachments/:id/thumbnail), in a box of the image's own proportions
// from image_width and image_height, so that nothing moves as they load; a
// click shows the large preview.
//
// A file sent without text: the API needs a non-empty message, so the page
// sends the file's name (as the server cleaned it) as the text, and shows a
// message whose text is the name of one of its files as that file alone.
// Other clients (and the conversation list) show the name as the text.
"use strict";

const $ = (id) => document.getElementById(id);
const pageSize = 30;
// groupGap is how close in time two messages of one sender must be to be
// shown as one group (the second without its own name and time).
const groupGap = 5 * 60;
const pickerEmoji = ["👍", "❤️", "😂", "🎉", "😮", "😢", "🙏", "👀", "🔥", "✅", "👎", "🚀"];

const state = {
  token: sessionStorage.getItem("parley-token") || "",
  me: null,            // the caller's contact
  maxChars: 4000,      // the server's MaxMessageChars, from /chat/me
  current: null,       // the open conversation's id
  messages: new Map(), // id -> Message of the open conversation
  edited: new Map(),   // id -> true when the message has earlier versions
  hasMore: false,      // older messages exist beyond the oldest shown
  loadingOlder: false,
  sending: false,
  uploaded: null,      // { file, attachment } of the file attached, once uploaded
  lastEventID: "",
  stream: null,        // AbortController of the events stream
  typing: new Map(),   // contact id -> { name, until (ms) } typing in the open conversation
  typedAt: 0,          // when the caller last said it is typing (ms)
  thread: null,        // the root id of the open thread
  replies: new Map(),  // id -> Message of the open thread's replies
  repliesHaveMore: false, // older replies exist beyond the oldest shown
  loadingOlderReplies: false,
  replying: false,
  direct: true,        // false once the server said it has no POST /v1/uploads
  previews: new Map(), // "attachment id size" -> Promise of an object URL of its preview
};

// ---- errors, in words for people ----

// api calls the /v1 API with the caller's token and returns the decoded
// body; a failure throws an Error carrying the API's status, code, param
// and message (written for people by the server).
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
    const e = data.error || {};
    const err = new Error(e.message || res.status + " " + res.statusText);
    err.status = res.status;
    err.code = e.code;
    err.param = e.param;
    if (res.status === 401) setTimeout(signOut, 0);
    throw err;
  }
  return data;
}

// offline reports whether err is the browser's word for a request that
// never reached the server ("Failed to fetch", "NetworkError when…").
function offline(err) {
  return err instanceof TypeError;
}

// human says what went wrong so that a person knows what to do.
function human(err) {
  if (offline(err)) return "Cannot reach the server. Check the connection; this message goes away when it is back.";
  if (err.code === "parameter_missing" && err.param === "message") return "A message cannot be empty.";
  switch (err.status) {
    case 401: return "Your session has ended: sign in again.";
    case 404: return "That is no longer there: it may have been deleted.";
    case 413: return "That is too large for this server. " + sentence(err.message);
    case 429: return "Too many requests: wait a moment and try again.";
    case 503: return "The server cannot reach its storage just now: try again in a moment.";
  }
  if (err.status >= 500) return "The server could not do that (error " + err.status + "): try again in a moment.";
  return sentence(err.message || String(err));
}

// sentence capitalizes s and ends it with a full stop.
function sentence(s) {
  s = String(s || "").trim();
  if (!s) return "";
  s = s[0].toUpperCase() + s.slice(1);
  return /[.!?]$/.test(s) ? s : s + ".";
}

// showError shows err in words for people, or hides the error with null.
// An error of the connection goes away by itself when the connection is
// back (see clearOffline).
function showError(err) {
  const box = $("error-box");
  if (!err) {
    box.hidden = true;
    $("error").textContent = "";
    delete box.dataset.kind;
    return;
  }
  $("error").textContent = human(err);
  box.dataset.kind = offline(err) ? "offline" : "request";
  box.hidden = false;
}

// clearOffline hides an error that said the server cannot be reached.
function clearOffline() {
  if ($("error-box").dataset.kind === "offline") showError(null);
}

// ---- signing in ----

async function signIn(token) {
  state.token = token;
  let res;
  try {
    res = await fetch("/chat/me", { headers: { Authorization: "Bearer " + token } });
  } catch (err) {
    throw new Error(human(err));
  }
  if (!res.ok) {
    state.token = "";
    sessionStorage.removeItem("parley-token");
    throw new Error(res.status === 401 ? "That token is not known to this server." : "Sign-in failed: " + res.status);
  }
  state.me = await res.json();
  if (state.me.max_message_chars > 0) state.maxChars = state.me.max_message_chars;
  sessionStorage.setItem("parley-token", token);
  $("me").textContent = state.me.username;
  $("signin").hidden = true;
  $("app").hidden = false;
  updateCount();
  follow();
  await Promise.all([loadConversations(), loadThreads()]);
  const { conv, thread } = route();
  if (conv) await open(conv, { fromURL: true });
  if (conv && thread) await openThread(thread, { fromURL: true });
}

function signOut() {
  sessionStorage.removeItem("parley-token");
  if (state.stream) state.stream.abort();
  location.replace(location.pathname); // forget the conversation too
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
    const b = document.createElement("button");
    b.type = "button";
    b.className = "open-conversation";
    if (c.id === state.current) b.setAttribute("aria-current", "page");
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = c.id;
    const preview = document.createElement("span");
    preview.className = "preview";
    if (c.last_message) preview.textContent = c.last_message.contact.username + ": " + summary(c.last_message);
    name.append(preview);
    b.append(name);
    if (c.unread_count > 0 && c.id !== state.current) b.append(unreadBadge(c.unread_count));
    b.addEventListener("click", () => open(c.id).catch(showError));
    li.append(b);
    ul.append(li);
  }
}

function unreadBadge(n) {
  const badge = document.createElement("span");
  badge.className = "unread";
  badge.textContent = String(n);
  badge.title = n + " unread";
  return badge;
}

// summary is a message in one line, for the conversation list.
function summary(m) {
  return fileOnly(m) ? "📎 " + m.message : m.message;
}

let refreshTimer = 0;
function refreshConversations() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => loadConversations().catch(showError), 100);
}

// route is what the URL names: a conversation (#general), and a thread of
// it (#general/msg_…), or "". (A conversation id has no "/".)
function route() {
  const [conv = "", thread = ""] = location.hash.slice(1).split("/");
  try {
    return { conv: decodeURIComponent(conv), thread: decodeURIComponent(thread) };
  } catch {
    return { conv: "", thread: "" };
  }
}

// hashID is the conversation the URL names, or "".
function hashID() {
  return route().conv;
}

// showInURL puts the open conversation, and thread, in the URL, as a new
// entry of the history (the browser's Back goes to the one before).
function showInURL() {
  let hash = "#" + encodeURIComponent(state.current);
  if (state.thread) hash += "/" + encodeURIComponent(state.thread);
  if (location.hash !== hash) history.pushState(null, "", hash);
}

// open shows the conversation id and puts it in the URL, so that a reload
// (or a link) opens it again; the browser's Back goes to the one before.
async function open(id, { fromURL = false } = {}) {
  showError(null);
  closePicker();
  closeThread();
  forgetPreviews();
  state.current = id;
  state.messages.clear();
  state.typing.clear();
  showTyping();
  if (!fromURL) showInURL();
  $("app").classList.add("has-conversation");
  $("list").replaceChildren();
  $("title").textContent = id;
  document.title = id + " · Parley";
  $("send-form").hidden = false;
  for (const li of $("conversations").children) {
    const here = li.dataset.id === id;
    li.classList.toggle("current", here);
    if (here) li.firstElementChild.setAttribute("aria-current", "page");
    else li.firstElementChild.removeAttribute("aria-current");
    if (here) li.querySelector(".unread")?.remove(); // read as it opens
  }
  const page = await api("GET", "/v1/messages?conversation_id=" + encodeURIComponent(id) + "&limit=" + pageSize);
  if (state.current !== id) return;
  state.hasMore = page.has_more;
  for (const m of placed(page.data)) upsert(m);
  scrollToBottom();
  // Focused as the messages show: a message focused while markRead runs
  // keeps the focus.
  $("text").focus();
  await markRead();
  refreshConversations();
}

// close leaves the open conversation: on a narrow screen the list shows.
function close() {
  closePicker();
  closeThread();
  state.current = null;
  state.messages.clear();
  state.typing.clear();
  showTyping();
  $("list").replaceChildren();
  $("app").classList.remove("has-conversation");
  $("title").textContent = "Choose or open a conversation";
  document.title = "Parley";
  $("send-form").hidden = true;
  if (location.hash) history.pushState(null, "", location.pathname);
  refreshConversations();
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
    for (const m of placed(page.data)) upsert(m);
    box.scrollTop = box.scrollHeight - fromBottom; // keep what the reader was looking at in place
  } finally {
    state.loadingOlder = false;
    $("older").hidden = true;
  }
}

// ---- threads ----

// loadThreads lists the caller's threads (those it started or replied to),
// most recently replied first, with the replies it has not read (but for
// the thread open, which is read as it shows).
async function loadThreads() {
  const page = await api("GET", "/v1/threads?limit=20");
  const ul = $("threads");
  ul.replaceChildren();
  for (const t of page.data) {
    const li = document.createElement("li");
    li.dataset.id = t.id;
    li.classList.toggle("current", t.id === state.thread);
    const b = document.createElement("button");
    b.type = "button";
    b.className = "open-thread";
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = t.root.deleted ? "A deleted message" : t.root.contact.username + ": " + summary(t.root);
    const where = document.createElement("span");
    where.className = "preview";
    where.textContent = t.conversation_id + " · " + (t.reply_count === 1 ? "1 reply" : t.reply_count + " replies");
    name.append(where);
    b.append(name);
    if (t.unread_count > 0 && t.id !== state.thread) b.append(unreadBadge(t.unread_count));
    b.addEventListener("click", () => openThreadIn(t.conversation_id, t.id).catch(showError));
    li.append(b);
    ul.append(li);
  }
  $("threads-box").hidden = page.data.length === 0;
}

let threadsTimer = 0;
function refreshThreads() {
  clearTimeout(threadsTimer);
  threadsTimer = setTimeout(() => loadThreads().catch(showError), 100);
}

// openThreadIn opens the conversation conv, unless it is open, and the
// thread of its message id.
async function openThreadIn(conv, id) {
  if (state.current !== conv) await open(conv);
  await openThread(id);
}

// openThread shows the thread of the root id, of the open conversation,
// in the panel: the root, its replies (newest at the bottom, older ones on
// scrolling up) and the composer of replies. Shown, it is read.
async function openThread(id, { fromURL = false } = {}) {
  if (state.thread === id) return $("reply-text").focus();
  closePicker();
  closeThread();
  state.thread = id;
  if (!fromURL) showInURL();
  $("thread").hidden = false;
  $("app").classList.add("has-thread");
  for (const li of $("threads").children) {
    const here = li.dataset.id === id;
    li.classList.toggle("current", here);
    if (here) li.querySelector(".unread")?.remove(); // read as it opens
  }
  const [root, page] = await Promise.all([
    api("GET", "/v1/messages/" + encodeURIComponent(id)),
    api("GET", "/v1/messages?parent_id=" + encodeURIComponent(id) + "&limit=" + pageSize),
  ]);
  if (state.thread !== id) return;
  showRoot(root);
  state.repliesHaveMore = page.has_more;
  for (const m of page.data) upsert(m);
  scrollToEnd($("thread-messages"));
  $("reply-text").focus();
  await markThreadRead();
  refreshThreads();
}

// closeThread closes the panel (on a narrow screen, the conversation
// shows again).
function closeThread() {
  if (!state.thread) return;
  state.thread = null;
  state.replies.clear();
  $("replies").replaceChildren();
  $("thread-root").replaceChildren();
  $("thread-count").textContent = "";
  $("thread-error").textContent = "";
  $("thread").hidden = true;
  $("app").classList.remove("has-thread");
  for (const li of $("threads").children) li.classList.remove("current");
}

// showRoot shows the open thread's root at the top of the panel, with its
// day, and how many replies it has.
function showRoot(m) {
  const li = render(m);
  const day = li.querySelector(".day");
  day.hidden = !m.created_at;
  if (m.created_at) day.textContent = dayLabel(m.created_at);
  $("thread-root").replaceChildren(li);
  $("thread-count").textContent = m.reply_count === 1 ? "1 reply" : (m.reply_count || "No") + " replies";
}

// markThreadRead moves the caller's read position in the open thread to
// the newest reply shown.
async function markThreadRead() {
  const newest = [...state.replies.values()].sort(byAge).at(-1);
  if (!newest || !state.thread) return;
  await api("PUT", "/v1/threads/" + encodeURIComponent(state.thread), { read_through: newest.id });
}

async function loadOlderReplies() {
  if (!state.repliesHaveMore || state.loadingOlderReplies || !state.thread) return;
  const oldest = [...state.replies.values()].sort(byAge)[0];
  if (!oldest) return;
  state.loadingOlderReplies = true;
  $("older-replies").hidden = false;
  const box = $("thread-messages");
  const fromBottom = box.scrollHeight - box.scrollTop;
  try {
    const id = state.thread;
    const page = await api("GET", "/v1/messages?parent_id=" + encodeURIComponent(id) +
      "&limit=" + pageSize + "&starting_after=" + encodeURIComponent(oldest.id));
    if (state.thread !== id) return;
    state.repliesHaveMore = page.has_more;
    for (const m of page.data) upsert(m);
    box.scrollTop = box.scrollHeight - fromBottom;
  } finally {
    state.loadingOlderReplies = false;
    $("older-replies").hidden = true;
  }
}

// refreshRoot asks the server again, soon and once for many events, for
// the root id if it shows: its reply count and last reply moved.
const rootsToRefresh = new Set();
let rootsTimer = 0;
function refreshRoot(id) {
  if (!state.messages.has(id) && state.thread !== id) return;
  rootsToRefresh.add(id);
  clearTimeout(rootsTimer);
  rootsTimer = setTimeout(() => {
    for (const root of rootsToRefresh) {
      api("GET", "/v1/messages/" + encodeURIComponent(root)).then(upsert).catch(() => {}); // gone: its delete event says so
    }
    rootsToRefresh.clear();
  }, 100);
}

// onReply follows an event about a reply: shown in its open thread (and
// read there, when the page is seen), and counted under its root and in
// the threads list.
function onReply(type, m) {
  if (m.parent_id === state.thread) {
    const box = $("thread-messages");
    const atBottom = isAtBottom(box);
    upsert(m);
    if (atBottom) scrollToEnd(box);
    if (type === "message.created" && !mine(m) && !document.hidden) markThreadRead().catch(showError);
  }
  if (type === "message.created") {
    refreshRoot(m.parent_id);
    refreshThreads();
  }
}

async function sendReply(e) {
  e.preventDefault();
  const root = state.thread;
  const text = $("reply-text").value.trim();
  if (!text || !root || state.replying) return;
  state.replying = true;
  $("reply-send").disabled = true;
  try {
    upsert(await api("POST", "/v1/messages", { conversation_id: state.current, parent_id: root, message: text }));
    refreshRoot(root);
    refreshThreads();
    $("thread-error").textContent = "";
    $("reply-text").value = "";
    countInto($("reply-count"), "");
    grow($("reply-text"));
    scrollToEnd($("thread-messages"));
  } catch (err) {
    $("thread-error").textContent = human(err); // the text stays, to be fixed and sent again
  } finally {
    state.replying = false;
    $("reply-send").disabled = false;
  }
}

// ---- messages ----

// placed gives the deleted roots of a page (newest first), which have no
// time, the time of the message before them, so that they keep their place.
function placed(page) {
  for (let i = 0; i < page.length; i++) {
    const m = page[i];
    if (m.deleted && m.created_at === undefined) {
      m.created_at = page[i + 1]?.created_at ?? page[i - 1]?.created_at ?? 0;
    }
  }
  return page;
}

// byAge orders messages oldest first, as the API's lists do in reverse.
function byAge(a, b) {
  return a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

// viewOf is where m shows: the open thread's replies for a reply, the
// conversation's messages otherwise.
function viewOf(m) {
  return m.parent_id ? { list: $("replies"), messages: state.replies } : { list: $("list"), messages: state.messages };
}

function itemIn(list, id) {
  return list.querySelector(`:scope > li[data-id="${CSS.escape(id)}"]`);
}

// itemOf is the list item of the message id, in the conversation or in
// the open thread.
function itemOf(id) {
  return itemIn($("list"), id) || itemIn($("replies"), id);
}

// upsert shows m in its place, replacing the element of an earlier version
// (unless it is being edited: then only what is around the text changes).
// A reply shows only in its open thread; the root of the open thread shows
// at the top of the panel too.
function upsert(m) {
  if (m.conversation_id !== state.current) return;
  if (m.parent_id && m.parent_id !== state.thread) return;
  if (m.id === state.thread) showRoot(m);
  const { list, messages } = viewOf(m);
  const before = messages.get(m.id);
  if (before && before.message !== m.message) state.edited.set(m.id, true);
  messages.set(m.id, m);
  const el = render(m);
  const old = itemIn(list, m.id);
  if (old) {
    // What the reader is doing in the message stays: an edit under way,
    // the earlier versions shown, a question asked, the focus.
    const editing = old.querySelector(".edit-form");
    if (editing) el.querySelector(".body").replaceWith(editing);
    const revisions = old.querySelector(".revisions");
    if (!revisions.hidden) {
      el.querySelector(".revisions").replaceWith(revisions);
      el.querySelector(".edited").setAttribute("aria-expanded", "true");
    }
    const confirm = old.querySelector(".confirm");
    if (!confirm.hidden) {
      el.querySelector(".confirm").replaceWith(confirm);
      el.classList.add("confirming");
    }
    const active = old.contains(document.activeElement) ? document.activeElement : null;
    const focused = active && active !== old ? focusKey(active) : "";
    old.replaceWith(el);
    if (active === old) el.focus();
    else if (focused) el.querySelector(focused)?.focus();
  } else {
    const after = [...messages.values()].filter((o) => byAge(o, m) > 0).sort(byAge)[0];
    const next = after && itemIn(list, after.id);
    list.insertBefore(el, next || null);
  }
  checkEdited(m);
  layout(list, messages);
}

// focusKey is a selector that finds el's counterpart in a new rendering
// of its message.
function focusKey(el) {
  if (el.dataset.name) return "." + el.classList[0] + `[data-name="${CSS.escape(el.dataset.name)}"]`;
  if (el.dataset.id) return "." + el.classList[0] + `[data-id="${CSS.escape(el.dataset.id)}"]`;
  return el.classList[0] ? "." + el.classList[0] : "";
}

// gone shows that the message id was deleted. A root with replies keeps
// its place as a deleted message, for its thread, until its last reply
// goes: the server tells which (its GET answers the deleted root, else
// 404), since the page hears of a delete both from its own request and
// from the events.
function gone(id) {
  if (!(state.messages.get(id)?.reply_count > 0)) return remove(id);
  api("GET", "/v1/messages/" + encodeURIComponent(id))
    .then((m) => {
      const before = state.messages.get(id);
      if (!before) return; // gone meanwhile
      m.created_at ??= before.created_at; // a deleted root has no time of its own
      upsert(m);
    })
    .catch((err) => (err.status === 404 ? remove(id) : showError(err)));
}

function remove(id) {
  state.messages.delete(id);
  state.replies.delete(id);
  itemOf(id)?.remove();
  layout($("list"), state.messages);
  layout($("replies"), state.replies);
  if (id === state.thread) {
    closeThread();
    history.replaceState(null, "", "#" + encodeURIComponent(state.current));
  }
}

// layout marks the first message of each day of list with the day, and
// the messages that continue their sender's group (same sender, same day,
// within groupGap of the one before) as such.
function layout(list, messages) {
  let prev = null;
  for (const li of list.children) {
    const m = messages.get(li.dataset.id);
    if (!m) continue;
    const day = dayKey(m.created_at);
    const newDay = !prev || dayKey(prev.created_at) !== day;
    const dayEl = li.querySelector(".day");
    dayEl.hidden = !newDay;
    dayEl.textContent = newDay ? dayLabel(m.created_at) : "";
    li.classList.toggle("cont", !newDay && !!m.contact && prev.contact?.id === m.contact.id && m.created_at - prev.created_at < groupGap);
    prev = m;
  }
}

function dayKey(unix) {
  const d = new Date(unix * 1000);
  return d.getFullYear() + "-" + d.getMonth() + "-" + d.getDate();
}

// dayLabel names the day of a time: Today, Yesterday, or its date.
function dayLabel(unix) {
  const d = new Date(unix * 1000);
  const today = new Date();
  const yesterday = new Date(today.getFullYear(), today.getMonth(), today.getDate() - 1);
  if (dayKey(unix) === dayKey(today.getTime() / 1000)) return "Today";
  if (dayKey(unix) === dayKey(yesterday.getTime() / 1000)) return "Yesterday";
  const opts = { weekday: "long", day: "numeric", month: "long" };
  if (d.getFullYear() !== today.getFullYear()) opts.year = "numeric";
  return d.toLocaleDateString(undefined, opts);
}

// fileOnly reports whether m was sent as a file without text: its text is
// the name of one of its files (see the top of this file).
function fileOnly(m) {
  return (m.attachments || []).some((a) => a.filename === m.message);
}

function mine(m) {
  return m.contact?.id === state.me.id; // a deleted root has no contact
}

function render(m) {
  const li = $("message-template").content.firstElementChild.cloneNode(true);
  li.dataset.id = m.id;
  renderReplies(li, m);
  if (m.deleted) {
    // A deleted root that keeps its place for its thread: no text, no actions.
    li.classList.add("deleted");
    li.querySelector(".meta").hidden = true;
    li.querySelector(".text").textContent = "This message was deleted.";
    li.querySelector(".actions").remove();
    return li;
  }
  li.classList.toggle("mine", mine(m));
  li.querySelector(".author").textContent = m.contact.username;
  const when = new Date(m.created_at * 1000);
  const time = li.querySelector("time");
  time.dateTime = when.toISOString();
  time.textContent = when.toLocaleTimeString(undefined, { hour: "numeric", minute: "2-digit" });
  time.title = when.toLocaleString(undefined, { dateStyle: "full", timeStyle: "short" });
  const text = li.querySelector(".text");
  const onlyFile = fileOnly(m);
  li.classList.toggle("file-only", onlyFile);
  if (!onlyFile) text.textContent = m.message;

  const edited = li.querySelector(".edited");
  edited.hidden = !state.edited.get(m.id);
  edited.addEventListener("click", () => toggleRevisions(li, m).catch(showError));

  for (const a of m.attachments || []) li.querySelector(".attachments").append(renderAttachment(li, m, a));
  renderReactions(li, m);

  const open = li.querySelector(".react-open");
  open.addEventListener("click", () => openPicker(open, m.id));
  const reply = li.querySelector(".reply");
  reply.hidden = !!m.parent_id; // threads are one level deep
  reply.addEventListener("click", () => openThread(m.id).catch(showError));
  const edit = li.querySelector(".edit");
  edit.hidden = !mine(m) || onlyFile;
  edit.addEventListener("click", () => startEdit(li, m));
  const del = li.querySelector(".delete");
  del.hidden = !mine(m);
  del.addEventListener("click", () =>
    confirmDelete(li, onlyFile ? "Delete this file?" : "Delete this message" + (m.attachments?.length ? " and its files?" : "?"),
      () => api("DELETE", "/v1/messages/" + encodeURIComponent(m.id)).then(() => gone(m.id))));
  return li;
}

// renderReplies shows, under a message with replies, how many there are
// and when the last came; a click opens the thread.
function renderReplies(li, m) {
  const b = li.querySelector(".replies");
  b.hidden = !(m.reply_count > 0);
  if (b.hidden) return;
  b.textContent = m.reply_count === 1 ? "1 reply" : m.reply_count + " replies";
  if (m.last_reply_at) {
    const last = document.createElement("span");
    last.className = "last-reply";
    last.textContent = " · last " + new Date(m.last_reply_at * 1000).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
    b.append(last);
  }
  b.setAttribute("aria-label", b.textContent + ": open the thread");
  b.addEventListener("click", () => openThread(m.id).catch(showError));
}

function renderAttachment(li, m, a) {
  const item = document.createElement("li");
  if (a.image_width && a.image_height) {
    const row = document.createElement("div");
    row.className = "preview-row";
    row.append(renderPreview(a));
    item.classList.add("image");
    item.append(row);
  }
  const b = document.createElement("button");
  b.type = "button";
  b.className = "download";
  b.dataset.id = a.id;
  b.title = "Download " + a.filename;
  const icon = document.createElement("span");
  icon.setAttribute("aria-hidden", "true");
  icon.textContent = "⬇ ";
  b.append(icon, a.filename + " (" + size(a.file_size) + ")");
  b.addEventListener("click", () => download(a).catch(showError));
  item.append(b);
  if (mine(m)) {
    const del = document.createElement("button");
    del.type = "button";
    del.className = "delete-file link";
    del.textContent = "×";
    del.setAttribute("aria-label", "Delete " + a.filename);
    del.title = "Delete " + a.filename;
    // The last file of a message sent without text takes the message
    // with it: nothing else would be left of it.
    const last = fileOnly(m) && m.attachments.length === 1;
    del.addEventListener("click", () =>
      confirmDelete(li, "Delete " + a.filename + "?", () => last
        ? api("DELETE", "/v1/messages/" + encodeURIComponent(m.id)).then(() => gone(m.id))
        : api("DELETE", "/v1/attachments/" + encodeURIComponent(a.id))));
    item.append(del);
  }
  return item;
}

// previewBox is the largest a preview shows in the conversation, in CSS
// pixels (the small thumbnail fits within 256).
const previewBox = 240;

// renderPreview is the preview of an image attachment: a button, sized
// from image_width and image_height before the thumbnail comes (nothing
// moves as it loads), that shows the large preview.
function renderPreview(a) {
  const scale = Math.min(1, previewBox / Math.max(a.image_width, a.image_height));
  const b = document.createElement("button");
  b.type = "button";
  b.className = "image-preview";
  b.title = "Show " + a.filename;
  const img = document.createElement("img");
  img.alt = a.filename;
  img.width = Math.max(1, Math.round(a.image_width * scale));
  img.height = Math.max(1, Math.round(a.image_height * scale));
  img.style.aspectRatio = a.image_width + " / " + a.image_height;
  img.dataset.src = thumbnailURL(a, "small");
  preview(a, "small").then((src) => (img.src = src)).catch(() => b.classList.add("failed"));
  b.append(img);
  b.addEventListener("click", () => showImage(a).catch(showError));
  return b;
}

function thumbnailURL(a, size) {
  return "/v1/attachments/" + encodeURIComponent(a.id) + "/thumbnail?size=" + size;
}

// preview is an object URL of the attachment's thumbnail of this size,
// fetched once with the token (an <img> cannot send it) and kept while the
// conversation is open, so that a message drawn anew does not fetch it again.
function preview(a, size) {
  const key = a.id + " " + size;
  let p = state.previews.get(key);
  if (!p) {
    p = fetch(thumbnailURL(a, size), { headers: { Authorization: "Bearer " + state.token } }).then(async (res) => {
      if (!res.ok) {
        const err = new Error("the preview failed (" + res.status + ")");
        err.status = res.status;
        throw err;
      }
      return URL.createObjectURL(await res.blob());
    });
    p.catch(() => state.previews.delete(key)); // to be asked again
    state.previews.set(key, p);
  }
  return p;
}

// forgetPreviews lets the previews of the conversation left go.
function forgetPreviews() {
  for (const p of state.previews.values()) p.then(URL.revokeObjectURL, () => {});
  state.previews.clear();
}

// showImage shows the large preview of an image attachment over the page,
// with its name and a download button.
async function showImage(a) {
  const viewer = $("viewer");
  const img = $("viewer-img");
  img.removeAttribute("src");
  img.alt = a.filename;
  img.width = a.image_width;
  img.height = a.image_height;
  img.style.aspectRatio = a.image_width + " / " + a.image_height;
  $("viewer-name").textContent = a.filename;
  $("viewer-download").onclick = () => download(a).catch(showError);
  viewer.showModal();
  img.src = await preview(a, "large");
}

// renderReactions shows each reaction with its count and who reacted, in
// words, without hovering: "👍 2 alice, bob". A click adds the caller's or
// takes it back.
function renderReactions(li, m) {
  const counts = m.reaction_counts || {};
  const box = li.querySelector(".reactions");
  for (const r of m.reactions || []) {
    const [name, reactors] = Object.entries(r)[0];
    const total = counts[name] ?? reactors.length;
    const reacted = reactors.includes(state.me.username);
    const b = document.createElement("button");
    b.type = "button";
    b.className = "reaction";
    b.dataset.name = name;
    b.classList.toggle("mine", reacted);
    b.setAttribute("aria-pressed", String(reacted));
    const emoji = document.createElement("span");
    emoji.className = "emoji";
    emoji.textContent = name;
    const count = document.createElement("span");
    count.className = "count";
    count.textContent = String(total);
    const who = document.createElement("span");
    who.className = "who";
    who.textContent = names(reactors, total);
    b.append(emoji, " ", count, " ", who);
    b.title = (reacted ? "Take your " : "Add your ") + name + " (" + names(reactors, total) + ")";
    b.addEventListener("click", () => react(m.id, name, !reacted).catch(showError));
    box.append(b);
  }
}

// names lists the reactors shown: "alice, bob", "you, alice and 3 more".
function names(reactors, total) {
  const shown = reactors.map((u) => (u === state.me.username ? "you" : u));
  const head = shown.slice(0, 3).join(", ");
  const more = total - Math.min(3, shown.length);
  return more > 0 ? head + " and " + more + " more" : head;
}

function size(n) {
  if (n < 1024) return n + " B";
  if (n < 1 << 20) return (n / 1024).toFixed(1) + " KiB";
  return (n / (1 << 20)).toFixed(1) + " MiB";
}

async function react(id, name, on) {
  const m = on
    ? await api("PUT", "/v1/messages/" + encodeURIComponent(id), { reactions: { [name]: [state.me.username] } })
    : await api("DELETE", "/v1/messages/" + encodeURIComponent(id) + "/reactions/" + encodeURIComponent(name));
  upsert(m);
}

// ---- the reaction picker ----

let pickerFor = null; // { button, id } while the picker is open

function openPicker(button, id) {
  if (pickerFor && pickerFor.button === button) return closePicker(true);
  closePicker();
  const picker = $("picker");
  picker.replaceChildren();
  for (const e of pickerEmoji) {
    const b = document.createElement("button");
    b.type = "button";
    b.setAttribute("role", "menuitem");
    b.dataset.name = e;
    b.textContent = e;
    b.title = "React with " + e;
    b.addEventListener("click", () => {
      closePicker(true);
      react(id, e, true).catch(showError);
    });
    picker.append(b);
  }
  picker.hidden = false;
  const r = button.getBoundingClientRect();
  const w = picker.offsetWidth, h = picker.offsetHeight;
  const left = Math.max(8, Math.min(r.right - w, innerWidth - w - 8));
  const top = r.top - h - 6 >= 8 ? r.top - h - 6 : r.bottom + 6;
  picker.style.left = left + "px";
  picker.style.top = top + "px";
  button.setAttribute("aria-expanded", "true");
  pickerFor = { button, id };
  picker.firstElementChild.focus();
}

function closePicker(refocus) {
  if (!pickerFor) return;
  $("picker").hidden = true;
  pickerFor.button.setAttribute("aria-expanded", "false");
  if (refocus && pickerFor.button.isConnected) pickerFor.button.focus();
  pickerFor = null;
}

// ---- editing, revisions, deleting ----

// startEdit turns the text into a form: Enter or Save keeps the new text,
// Escape or Cancel leaves it as it was; an empty text is refused here.
function startEdit(li, m) {
  if (li.querySelector(".edit-form")) return;
  const body = li.querySelector(".body");
  const form = document.createElement("form");
  form.className = "edit-form";
  const label = document.createElement("label");
  label.className = "visually-hidden";
  label.textContent = "Edit the message";
  const input = document.createElement("textarea");
  input.className = "edit-text";
  input.value = m.message;
  input.id = "edit-" + m.id;
  label.htmlFor = input.id;
  const count = document.createElement("span");
  count.className = "count";
  const problem = document.createElement("p");
  problem.className = "error edit-error";
  problem.setAttribute("role", "alert");
  const save = document.createElement("button");
  save.type = "submit";
  save.className = "save primary";
  save.textContent = "Save";
  const cancel = document.createElement("button");
  cancel.type = "button";
  cancel.className = "cancel";
  cancel.textContent = "Cancel";
  const hint = document.createElement("span");
  hint.className = "hint";
  hint.textContent = "Enter saves · Escape cancels";
  const foot = document.createElement("div");
  foot.className = "edit-foot";
  foot.append(save, cancel, hint, count);
  form.append(label, input, foot, problem);
  const original = body;
  // stop shows the message as it is now (it may have changed meanwhile).
  const stop = () => {
    form.replaceWith(original);
    const now = viewOf(m).messages.get(m.id);
    if (now) upsert(now);
    itemOf(m.id)?.querySelector(".edit")?.focus();
  };
  const counted = () => countInto(count, input.value);
  input.addEventListener("input", () => {
    counted();
    grow(input);
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      stop();
    } else if (enterSends(e)) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  cancel.addEventListener("click", stop);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) {
      problem.textContent = "A message cannot be empty: write something, or cancel and delete the message.";
      input.focus();
      return;
    }
    if (text === viewOf(m).messages.get(m.id)?.message) return stop();
    save.disabled = true;
    try {
      const updated = await api("PUT", "/v1/messages/" + encodeURIComponent(m.id), { message: text });
      state.edited.set(m.id, true);
      form.replaceWith(original);
      upsert(updated);
      itemOf(m.id)?.querySelector(".edit")?.focus();
    } catch (err) {
      problem.textContent = human(err);
      save.disabled = false;
    }
  });
  body.replaceWith(form);
  counted();
  grow(input);
  input.focus();
  input.setSelectionRange(input.value.length, input.value.length);
}

// checkEdited asks the server, once per message, whether a message that
// changed after it was sent has earlier versions (a reaction changes
// updated_at too), and shows "(edited)" if so.
const editedAsked = new Set();
const editedQueue = [];
let editedRunning = 0;
function checkEdited(m) {
  if (state.edited.has(m.id) || editedAsked.has(m.id) || !m.updated_at) return;
  editedAsked.add(m.id);
  editedQueue.push(m.id);
  pumpEdited();
}

function pumpEdited() {
  while (editedRunning < 3 && editedQueue.length) {
    const id = editedQueue.shift();
    editedRunning++;
    api("GET", "/v1/messages/" + encodeURIComponent(id) + "/revisions?limit=1")
      .then((page) => {
        state.edited.set(id, page.data.length > 0);
        const el = itemOf(id);
        if (el) el.querySelector(".edited").hidden = !page.data.length;
      })
      .catch(() => editedAsked.delete(id))
      .finally(() => {
        editedRunning--;
        pumpEdited();
      });
  }
}

// toggleRevisions shows (or hides) the earlier versions of a message,
// newest first, each with the time it was replaced.
async function toggleRevisions(li, m) {
  const list = li.querySelector(".revisions");
  const button = li.querySelector(".edited");
  if (!list.hidden) {
    list.hidden = true;
    button.setAttribute("aria-expanded", "false");
    return;
  }
  const page = await api("GET", "/v1/messages/" + encodeURIComponent(m.id) + "/revisions?limit=100");
  list.replaceChildren();
  for (const r of page.data) {
    const item = document.createElement("li");
    const when = document.createElement("time");
    const d = new Date(r.created_at * 1000);
    when.dateTime = d.toISOString();
    when.textContent = "replaced " + d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
    const text = document.createElement("span");
    text.className = "revision-text";
    text.textContent = r.message;
    item.append(text, " ", when);
    list.append(item);
  }
  list.hidden = false;
  button.setAttribute("aria-expanded", "true");
}

// confirmDelete asks in the message itself before deleting (Escape or
// Cancel keeps it), then runs del.
function confirmDelete(li, question, del) {
  const box = li.querySelector(".confirm");
  box.querySelector(".confirm-text").textContent = question;
  box.hidden = false;
  li.classList.add("confirming");
  const yes = box.querySelector(".confirm-yes");
  const no = box.querySelector(".confirm-no");
  // The message may be drawn anew meanwhile, with this box moved into it.
  const done = () => {
    box.hidden = true;
    box.closest("li.message")?.classList.remove("confirming");
    yes.onclick = no.onclick = box.onkeydown = null;
  };
  yes.onclick = async () => {
    yes.disabled = true;
    try {
      await del();
      done();
    } catch (err) {
      done();
      showError(err);
    } finally {
      yes.disabled = false;
    }
  };
  no.onclick = () => {
    const item = box.closest("li.message");
    done();
    item?.querySelector(".delete")?.focus();
  };
  box.onkeydown = (e) => {
    if (e.key === "Escape") {
      e.preventDefault();
      no.onclick();
    }
  };
  no.focus();
}

// ---- the composer ----

// enterSends reports a key press that sends: Enter without Shift (which
// adds a line), outside of an input method's composition.
function enterSends(e) {
  return e.key === "Enter" && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey && !e.isComposing;
}

// chars counts characters as the server does (Unicode code points: an
// emoji such as 😀 is one, a flag is two).
function chars(s) {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

// countInto shows how many characters text holds against the server's
// limit, and how many too many.
function countInto(el, text) {
  const n = chars(text.trim());
  const over = n - state.maxChars;
  el.textContent = n === 0 ? "" : over > 0 ? n + " / " + state.maxChars + " (" + over + " too many)" : n + " / " + state.maxChars;
  el.classList.toggle("over", over > 0);
  el.classList.toggle("near", over <= 0 && n > state.maxChars * 0.9);
}

function updateCount() {
  countInto($("count"), $("text").value);
}

// grow makes a textarea as tall as its text, up to its CSS max-height.
function grow(ta) {
  ta.style.height = "auto";
  ta.style.height = ta.scrollHeight + 2 + "px";
}

async function send(e) {
  e.preventDefault();
  if (state.sending) return;
  const conv = state.current;
  const file = $("file").files[0];
  const text = $("text").value.trim();
  if (!text && !file) return;
  state.sending = true;
  $("send").disabled = true;
  try {
    const body = { conversation_id: conv, message: text };
    if (file) {
      // A file uploaded by a send that failed after (its text too long)
      // is not uploaded again.
      if (state.uploaded?.file !== file) state.uploaded = { file, attachment: await upload(file, conv) };
      const a = state.uploaded.attachment;
      body.attachments = [a.id];
      if (!text) body.message = a.filename; // a file alone: see the top of this file
    }
    upsert(await api("POST", "/v1/messages", body));
    showError(null);
    $("text").value = "";
    clearFile();
    updateCount();
    grow($("text"));
    scrollToBottom();
  } catch (err) {
    showError(err); // the text and the file stay, to be fixed and sent again
  } finally {
    state.sending = false;
    $("send").disabled = false;
  }
}

// upload stores file as an attachment of the conversation conv and returns
// it: straight to the bucket where the server offers it (reserve, send the
// bytes where the reservation says, complete), else in one multipart
// request through the server.
async function upload(file, conv) {
  if (state.direct && crypto.subtle) {
    let reserved;
    try {
      const body = { conversation_id: conv, filename: file.name, file_size: file.size, sha256: await sha256(file) };
      if (file.type) body.file_type = file.type;
      reserved = await api("POST", "/v1/uploads", body);
    } catch (err) {
      // A server without direct uploads: 404 (no such route), 405 or 501.
      if (![404, 405, 501].includes(err.status)) throw err;
      state.direct = false;
    }
    if (reserved) {
      await putBytes(reserved, file);
      return api("POST", "/v1/uploads/" + encodeURIComponent(reserved.id) + "/complete");
    }
  }
  const form = new FormData();
  form.append("conversation_id", conv);
  form.append("file", file);
  return api("POST", "/v1/attachments", form);
}

// sha256 is the hex SHA-256 of file, which a reservation names and the
// server (or the bucket) checks. (The browser hashes a whole buffer, not a
// stream: the file is in memory once, within the server's upload limit.)
async function sha256(file) {
  const sum = new Uint8Array(await crypto.subtle.digest("SHA-256", await file.arrayBuffer()));
  return Array.from(sum, (b) => b.toString(16).padStart(2, "0")).join("");
}

// putBytes sends file's bytes as the reservation r says: its method, its
// headers as given. The API's own route (a bucket that cannot sign) takes
// the caller's token; a signed URL of the bucket carries its own
// authorization and would refuse a second one.
async function putBytes(r, file) {
  const url = new URL(r.upload_url, location.href);
  const headers = { ...r.upload_headers };
  const here = url.origin === location.origin;
  if (here) headers.Authorization = "Bearer " + state.token;
  let res;
  try {
    res = await fetch(url, { method: r.upload_method || "PUT", headers, body: file });
  } catch (err) {
    if (here) throw err; // the server cannot be reached
    // The browser keeps the answer of a bucket whose CORS rules do not
    // name this page's origin from the page, as it does a failed connection.
    throw new Error("the file could not be sent to " + url.host + ": it cannot be reached, or its CORS rules do not let this page send files (see the README)");
  }
  if (!res.ok) {
    const data = await res.json().catch(() => ({}));
    const err = new Error(data.error?.message || "the upload failed (" + res.status + ")");
    err.status = res.status;
    throw err;
  }
}

function clearFile() {
  $("file").value = "";
  $("file-name").textContent = "";
  $("attached").hidden = true;
  state.uploaded = null;
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
    if (!res.ok) {
      const err = new Error("the download failed (" + res.status + ")");
      err.status = res.status;
      throw err;
    }
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
  scrollToEnd($("messages"));
}

function scrollToEnd(box) {
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
      live("open", "live");
      clearOffline();
      delay = 500;
      await readStream(res.body);
    } catch (err) {
      if (state.stream.signal.aborted) return;
    }
    live("reconnecting", "reconnecting…");
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 5000);
  }
}

function live(s, text) {
  $("live").dataset.state = s;
  $("live").textContent = text;
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
    case "conversation.typing":
      if (obj.conversation_id === state.current && obj.contact.id !== state.me.id) {
        state.typing.set(obj.contact.id, { name: obj.contact.username, until: obj.expires_at * 1000 });
        showTyping();
      }
      return; // no list to refresh
    case "events.lost": {
      const thread = state.thread;
      if (state.current) open(state.current, { fromURL: true }).then(() => thread && openThread(thread, { fromURL: true })).catch(showError);
      refreshThreads();
      break;
    }
    case "thread.read": // in another tab of the caller's
      refreshThreads();
      return;
    case "message.created":
    case "message.updated":
      if (e.type === "message.created" && state.typing.delete(obj.contact.id)) showTyping();
      if (obj.parent_id) return onReply(e.type, obj); // the conversation is as it was
      if (obj.conversation_id === state.current) {
        const atBottom = isAtBottom();
        upsert(obj);
        if (atBottom) scrollToBottom();
        // Read only when seen: a hidden page marks it when shown again.
        if (e.type === "message.created" && !mine(obj) && !document.hidden) markRead().catch(showError);
      }
      break;
    case "message.deleted": {
      gone(obj.id);
      refreshThreads(); // the message may be a thread's reply, or its root
      if (obj.parent_id) {
        refreshRoot(obj.parent_id);
        return;
      }
      break;
    }
  }
  refreshConversations();
}

// showTyping writes who is typing in the open conversation, and looks
// again when the first of them expires.
function showTyping() {
  const now = Date.now();
  let next = Infinity;
  const names = [];
  for (const [id, t] of state.typing) {
    if (t.until <= now) state.typing.delete(id);
    else {
      names.push(t.name);
      next = Math.min(next, t.until);
    }
  }
  $("typing").textContent =
    names.length === 0 ? "" :
    names.length === 1 ? names[0] + " is typing…" :
    names.slice(0, -1).join(", ") + " and " + names.at(-1) + " are typing…";
  clearTimeout(state.typingTimer);
  if (next < Infinity) state.typingTimer = setTimeout(showTyping, next - now + 50);
}

// sayTyping tells the others that the caller is typing, at most every 3
// seconds (an indicator lasts 5); a failure is of no consequence.
function sayTyping() {
  const now = Date.now();
  if (!state.current || !$("text").value.trim() || now - state.typedAt < 3000) return;
  state.typedAt = now;
  api("POST", "/v1/conversations/" + encodeURIComponent(state.current) + "/typing").catch(() => {});
}

function isAtBottom(box = $("messages")) {
  return box.scrollHeight - box.scrollTop - box.clientHeight < 40;
}

// ---- search ----

let searchTimer = 0;
let searchSeq = 0;

// search shows the messages, of every conversation the caller may see,
// that hold every word of q (the last one also as the start of a word, so
// that results follow the typing); a q of no word clears them. An answer
// that comes after a newer search began is dropped.
async function search(q) {
  const seq = ++searchSeq;
  const ul = $("search-results");
  if (!/[\p{L}\p{N}]/u.test(q)) {
    ul.replaceChildren();
    ul.hidden = true;
    return;
  }
  const page = await api("GET", "/v1/messages/search?limit=20&query=" + encodeURIComponent(q));
  if (seq !== searchSeq) return;
  ul.replaceChildren();
  if (page.data.length === 0) {
    const li = document.createElement("li");
    li.className = "none";
    li.textContent = "No messages found";
    ul.append(li);
  }
  for (const m of page.data) {
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.type = "button";
    b.className = "found-message";
    b.dataset.id = m.id;
    const where = document.createElement("span");
    where.className = "where";
    where.textContent = m.conversation_id + " · " + m.contact.username + " · " + new Date(m.created_at * 1000).toLocaleString();
    const snippet = document.createElement("span");
    snippet.className = "snippet";
    snippet.textContent = summary(m);
    b.append(where, snippet);
    b.addEventListener("click", () => openMessage(m.conversation_id, m.id).catch(showError));
    li.append(b);
    ul.append(li);
  }
  ul.hidden = false;
}

// openMessage opens the conversation conv at the message id: older pages
// are read until it shows (at most 50), and it is marked and focused.
async function openMessage(conv, id) {
  if (state.current !== conv) await open(conv);
  for (let i = 0; i < 50 && !itemOf(id) && state.hasMore && state.current === conv; i++) await loadOlder();
  const li = itemOf(id);
  if (!li) throw new Error("That message is no longer there.");
  for (const el of $("list").querySelectorAll(".found")) el.classList.remove("found");
  li.classList.add("found");
  li.scrollIntoView({ block: "center" });
  li.focus();
}

// ---- wiring ----

document.addEventListener("DOMContentLoaded", () => {
  $("signin-form").addEventListener("submit", (e) => {
    e.preventDefault();
    $("signin-error").textContent = "";
    signIn($("token").value.trim()).catch((err) => ($("signin-error").textContent = err.message));
  });
  $("signout").addEventListener("click", signOut);
  $("back").addEventListener("click", close);
  $("error-close").addEventListener("click", () => showError(null));
  $("open-form").addEventListener("submit", (e) => {
    e.preventDefault();
    open($("open-id").value.trim()).catch(showError);
    $("open-id").value = "";
  });
  $("search-form").addEventListener("submit", (e) => {
    e.preventDefault();
    clearTimeout(searchTimer);
    search($("search-q").value).catch(showError);
  });
  $("search-q").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => search($("search-q").value).catch(showError), 200);
  });
  $("send-form").addEventListener("submit", send);
  $("reply-form").addEventListener("submit", sendReply);
  $("reply-text").addEventListener("keydown", (e) => {
    if (enterSends(e)) {
      e.preventDefault();
      $("reply-form").requestSubmit();
    }
  });
  $("reply-text").addEventListener("input", () => {
    countInto($("reply-count"), $("reply-text").value);
    grow($("reply-text"));
  });
  const leaveThread = () => {
    const root = state.thread;
    closeThread();
    showInURL();
    (itemOf(root)?.querySelector(".replies:not([hidden])") || $("text")).focus();
  };
  $("thread-back").addEventListener("click", leaveThread);
  $("thread-close").addEventListener("click", leaveThread);
  $("thread-messages").addEventListener("scroll", () => {
    if ($("thread-messages").scrollTop < 40) loadOlderReplies().catch(showError);
  });
  $("text").addEventListener("keydown", (e) => {
    if (enterSends(e)) {
      e.preventDefault();
      $("send-form").requestSubmit();
    }
  });
  $("text").addEventListener("input", () => {
    updateCount();
    grow($("text"));
    sayTyping();
  });
  $("file").addEventListener("change", () => {
    const f = $("file").files[0];
    state.uploaded = null;
    $("file-name").textContent = f ? f.name : "";
    $("attached").hidden = !f;
  });
  $("file-clear").addEventListener("click", clearFile);
  $("viewer-close").addEventListener("click", () => $("viewer").close());
  $("viewer").addEventListener("click", (e) => {
    if (e.target === $("viewer")) $("viewer").close(); // a click beside the image
  });
  $("messages").addEventListener("scroll", () => {
    if ($("messages").scrollTop < 40) loadOlder().catch(showError);
  });
  // The picker closes on Escape, and on a click anywhere else.
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && pickerFor) {
      e.preventDefault();
      closePicker(true);
    }
  });
  document.addEventListener("click", (e) => {
    if (pickerFor && !$("picker").contains(e.target) && !pickerFor.button.contains(e.target)) closePicker();
  });
  addEventListener("resize", () => closePicker());
  // Back and Forward move between the conversations and threads opened.
  addEventListener("popstate", () => {
    if (!state.me) return;
    const { conv, thread } = route();
    if (!conv) return close();
    (conv === state.current ? Promise.resolve() : open(conv, { fromURL: true }))
      .then(() => (thread ? openThread(thread, { fromURL: true }) : closeThread()))
      .catch(showError);
  });
  addEventListener("online", clearOffline);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && state.current) markRead().then(refreshConversations).catch(showError);
    if (!document.hidden && state.thread) markThreadRead().then(refreshThreads).catch(showError);
  });
  if (state.token) signIn(state.token).catch(() => {});
});
