// The sandbox page: polls /sandbox/state and renders it like Slack; typing and clicks go to the sandbox
// server, which sends them to the real gpubot as signed Slack requests. No dependencies.
"use strict";

const POLL_MS = 400;
const page = { view: null, state: null, last: "", history: [], back: 0, read: {} };
const $ = (id) => document.getElementById(id);

// ---- mrkdwn: *bold*, _italic_, ~strike~, `code`, ```pre```, <@U…>, <#C…|name>, <url|label> -------------
function escapeHtml(text) {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function special(token) {
  const [target, label] = token.split("|");
  if (target.startsWith("@")) return `<span class="mention">@${escapeHtml(label || target.slice(1))}</span>`;
  if (target.startsWith("#")) return `<span class="mention">#${escapeHtml(label || target.slice(1))}</span>`;
  if (target.startsWith("!")) return `<span class="mention">@${escapeHtml(label || target.slice(1))}</span>`;
  if (/^(https?|mailto):/.test(target)) {
    return `<a href="${escapeHtml(target)}" target="_blank" rel="noopener">${escapeHtml(label || target)}</a>`;
  }
  return escapeHtml(`<${token}>`);
}

// Slack's three entities (&amp; &lt; &gt;), shown as the characters they stand for, in code spans too: a command
// in backticks must copy as it was written.
function unescapeSlack(text) {
  return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

function mrkdwn(text) {
  const held = [];
  const hold = (html) => `\u0000${held.push(html) - 1}\u0000`;
  let out = String(text || "")
    .replace(/```([\s\S]*?)```/g, (_, code) => hold(`<pre>${escapeHtml(unescapeSlack(code))}</pre>`))
    .replace(/`([^`\n]+)`/g, (_, code) => hold(`<code>${escapeHtml(unescapeSlack(code))}</code>`))
    .replace(/<([^<>\n]+)>/g, (_, token) => hold(special(token)));
  out = unescapeSlack(out);
  out = escapeHtml(out)
    .replace(/(^|[\s(])\*([^*\n]+)\*(?=$|[\s).,:;!?])/g, "$1<b>$2</b>")
    .replace(/(^|[\s(])_([^_\n]+)_(?=$|[\s).,:;!?])/g, "$1<i>$2</i>")
    .replace(/(^|[\s(])~([^~\n]+)~(?=$|[\s).,:;!?])/g, "$1<s>$2</s>")
    .replace(/\n/g, "<br>");
  return out.replace(/\u0000(\d+)\u0000/g, (_, i) => held[Number(i)]);
}

function textHtml(obj) {
  if (!obj) return "";
  if (typeof obj === "string") return mrkdwn(obj);
  return obj.type === "plain_text" ? escapeHtml(obj.text || "") : mrkdwn(obj.text || "");
}

// ---- Block Kit ------------------------------------------------------------------------------------------
function el(tag, cls, html) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (html !== undefined) node.innerHTML = html;
  return node;
}

function button(element, where) {
  const node = el("button", `btn ${element.style || ""}`.trim(), textHtml(element.text));
  node.type = "button";
  node.dataset.actionId = element.action_id || "";
  node.dataset.value = element.value || "";
  if (element.url) {
    node.addEventListener("click", () => window.open(element.url, "_blank", "noopener"));
    return node;
  }
  node.addEventListener("click", () => click(node, where, element));
  return node;
}

function image(url, alt) {
  const node = document.createElement("img");
  node.src = url;
  node.alt = alt || "";
  return node;
}

const RENDER = {
  section(block, where) {
    const node = el("div", "block section", textHtml(block.text));
    if (block.fields) {
      const fields = el("div", "fields");
      block.fields.forEach((f) => fields.appendChild(el("div", "field", textHtml(f))));
      node.appendChild(fields);
    }
    if (block.accessory && block.accessory.type === "button") node.appendChild(button(block.accessory, where));
    if (block.accessory && block.accessory.type === "image") node.appendChild(image(block.accessory.image_url, block.accessory.alt_text));
    return node;
  },
  header: (block) => el("div", "block header", textHtml(block.text)),
  divider: () => el("hr", "block divider"),
  context(block) {
    const node = el("div", "block context");
    (block.elements || []).forEach((e) => node.appendChild(e.type === "image" ? image(e.image_url, e.alt_text) : el("span", "", textHtml(e))));
    return node;
  },
  actions(block, where) {
    const node = el("div", "block actions");
    (block.elements || []).filter((e) => e.type === "button").forEach((e) => node.appendChild(button(e, where)));
    return node;
  },
  image(block) {
    const node = el("div", "block image");
    if (block.title) node.appendChild(el("div", "", textHtml(block.title)));
    node.appendChild(image(block.image_url, block.alt_text));
    return node;
  },
  input: (block) => el("label", "form-field", `${textHtml(block.label)} <i>(${escapeHtml((block.element || {}).type || "input")})</i>`),
};

function renderBlocks(blocks, fallback, where) {
  const box = el("div", "blocks");
  if (!blocks || !blocks.length) {
    box.appendChild(el("div", "block section", mrkdwn(fallback)));
    return box;
  }
  blocks.forEach((block) => {
    const render = RENDER[block.type];
    if (render) box.appendChild(render(block, where));
  });
  return box;
}

// ---- messages ---------------------------------------------------------------------------------------------
function messageNode(entry, user) {
  const mine = entry.kind === "user";
  const node = el("div", `message ${entry.kind}`);
  node.dataset.kind = entry.kind;
  if (entry.ts) node.dataset.ts = entry.ts;
  node.dataset.channel = entry.channel;
  node.appendChild(el("div", mine ? "avatar user" : "avatar", mine ? "Y" : "g"));
  const body = el("div", "body");
  const who = el("div", "");
  who.appendChild(el("span", "sender", mine ? escapeHtml(`you (${user})`) : "gpubot"));
  if (!mine) who.appendChild(el("span", "tag", "APP"));
  body.appendChild(who);
  if (mine) body.appendChild(el("div", "block", `<code>${escapeHtml(entry.text)}</code>`));
  else body.appendChild(renderBlocks(entry.blocks, entry.text, { channel: entry.channel, ts: entry.ts || "" }));
  (entry.files || []).forEach((f) => { const box = el("div", "file"); box.appendChild(image(f.url, f.title)); body.appendChild(box); });
  if (entry.kind === "ephemeral") body.appendChild(el("div", "note", "Only visible to you"));
  node.appendChild(body);
  return node;
}

function renderFeed(state) {
  const feed = $("feed");
  const atBottom = feed.scrollHeight - feed.scrollTop - feed.clientHeight < 40;
  feed.replaceChildren(...(state.feed[page.view] || []).map((entry) => messageNode(entry, state.user)));
  if (atBottom) feed.scrollTop = feed.scrollHeight;
}

function renderHome(state) {
  const home = $("home");
  home.replaceChildren(state.home ? renderBlocks(state.home.blocks, "", { channel: "", ts: "", home: true })
                                  : el("p", "", "Opening the Home tab…"));
}

function renderSidebar(state) {
  const link = (channel) => {
    const item = el("li");
    const a = el("a", page.view === channel.id ? "active" : "", escapeHtml(channel.name));
    a.href = `#${channel.id}`;
    a.dataset.view = channel.id;
    const count = (state.feed[channel.id] || []).length;
    if (page.view !== channel.id && count > (page.read[channel.id] || 0)) a.classList.add("unread");
    item.appendChild(a);
    return item;
  };
  const isDm = (c) => c.id === state.user || /^[UDW]/.test(c.id);
  $("channels").replaceChildren(...state.channels.filter((c) => !isDm(c)).map(link));
  $("dms").replaceChildren(...state.channels.filter(isDm).map(link));
  $("home-link").classList.toggle("active", page.view === "home");
  $("whoami").textContent = `You are ${state.user}`;
}

function render(state) {
  page.state = state;
  if (!page.view) page.view = state.channel;
  const home = page.view === "home";
  const name = home ? "gpubot — Home" : (state.channels.find((c) => c.id === page.view) || { name: page.view }).name;
  $("title").textContent = name;
  $("feed").hidden = home;
  $("home").hidden = !home;
  $("composer-form").hidden = home;
  if (!home) page.read[page.view] = (state.feed[page.view] || []).length;
  renderSidebar(state);
  if (home) renderHome(state); else renderFeed(state);
  renderModal(state);  // modal.js: the form the bot opened, over the page
}

// ---- talking to the sandbox server -------------------------------------------------------------------------
async function post(path, data) {
  const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(data || {}) });
  return response.json();
}

async function poll() {
  try {
    const response = await fetch("/sandbox/state", { cache: "no-store" });
    const text = await response.text();
    if (text !== page.last) {
      page.last = text;
      render(JSON.parse(text));
    }
  } catch (err) {
    $("composer-error").textContent = "The sandbox server is not answering; is `gpubot demo --web` still running?";
  }
}

async function click(node, where, element) {
  node.disabled = true;
  try {
    await post("/sandbox/click", { channel: where.channel, ts: where.ts, action_id: element.action_id, value: element.value || "", home: !!where.home });
    await poll();
  } finally {
    node.disabled = false;
  }
}

async function send(event) {
  event.preventDefault();
  const input = $("composer");
  const text = input.value.trim();
  if (!text) return;
  $("composer-error").textContent = "";
  const channel = page.view === "home" ? page.state.channel : page.view;
  const answer = await post("/sandbox/command", { text, channel });
  if (answer.error) {
    $("composer-error").textContent = answer.error;
    return;
  }
  page.history.push(text);
  page.back = 0;
  input.value = "";
  await poll();
}

function recall(event) {
  if (event.key !== "ArrowUp" && event.key !== "ArrowDown") return;
  page.back = Math.max(0, Math.min(page.history.length, page.back + (event.key === "ArrowUp" ? 1 : -1)));
  event.target.value = page.back ? page.history[page.history.length - page.back] : "";
  event.preventDefault();
}

function navigate(event) {
  const target = event.target.closest("a[data-view]");
  if (!target) return;
  event.preventDefault();
  page.view = target.dataset.view;
  if (page.view === "home") post("/sandbox/home").then(poll);
  if (page.state) render(page.state);
}

$("composer-form").addEventListener("submit", send);
$("composer").addEventListener("keydown", recall);
$("sidebar").addEventListener("click", navigate);
poll();
setInterval(poll, POLL_MS);
