// The modal the bot opens (views.open / views.update) as an HTML form over the page, the way Slack shows it:
// its input blocks as selects and text/number fields, Submit sent as a signed view_submission through the real
// app, the app's `response_action: errors` shown on their fields, closed when the app accepts. A pick in an input
// with `dispatch_action` is a block_actions on the view (the bot's live quote). Uses app.js's helpers.
"use strict";

const modal = { key: "", id: "" };

function formValues() {
  const values = {};
  document.querySelectorAll("#modal-layer [data-action-id]").forEach((control) => {
    const block = (values[control.dataset.blockId] = values[control.dataset.blockId] || {});
    block[control.dataset.actionId] = control.value === "" ? null : control.value;
  });
  return values;
}

function optionNode(option, chosen) {
  const node = el("option", "", escapeHtml((option.text || {}).text || option.value));
  node.value = option.value;
  node.selected = option.value === chosen;
  return node;
}

function selectNode(element, chosen) {
  const node = document.createElement("select");
  const initial = chosen !== undefined ? chosen : (element.initial_option || {}).value;
  if (initial === undefined || initial === null) {
    const none = el("option", "", escapeHtml((element.placeholder || {}).text || "Select an item"));
    none.value = "";
    node.appendChild(none);
  }
  (element.options || []).forEach((o) => node.appendChild(optionNode(o, initial)));
  (element.option_groups || []).forEach((group) => {
    const box = document.createElement("optgroup");
    box.label = (group.label || {}).text || "";
    (group.options || []).forEach((o) => box.appendChild(optionNode(o, initial)));
    node.appendChild(box);
  });
  return node;
}

const INPUT_TYPES = { plain_text_input: "text", number_input: "number", email_text_input: "email", url_text_input: "url" };

function controlOf(element, kept) {
  if (element.type === "static_select") return selectNode(element, kept);
  if (!INPUT_TYPES[element.type]) return null;
  const multiline = element.type === "plain_text_input" && element.multiline;
  const node = document.createElement(multiline ? "textarea" : "input");
  if (!multiline) node.type = INPUT_TYPES[element.type];
  node.value = kept !== undefined ? (kept === null ? "" : kept) : (element.initial_value || "");
  if (element.placeholder) node.placeholder = element.placeholder.text || "";
  if (element.max_length) node.maxLength = element.max_length;
  if (element.min_length) node.minLength = element.min_length;
  if (element.type === "number_input") {
    node.step = element.is_decimal_allowed ? "any" : "1";
    if (element.min_value !== undefined) node.min = element.min_value;
    if (element.max_value !== undefined) node.max = element.max_value;
  }
  return node;
}

function fieldNode(block, error, kept, viewId) {
  const element = block.element || {};
  const box = el("div", error ? "modal-field invalid" : "modal-field");
  box.dataset.blockId = block.block_id;
  const id = `field-${block.block_id}`;
  const label = el("label", "", textHtml(block.label) + (block.optional ? ' <span class="optional">(optional)</span>' : ""));
  label.htmlFor = id;
  box.appendChild(label);
  const value = kept && kept[block.block_id] ? kept[block.block_id][element.action_id] : undefined;
  const control = controlOf(element, value);
  if (!control) {
    box.appendChild(el("div", "note", `(${escapeHtml(element.type || "input")}: not shown in the sandbox)`));
    return box;
  }
  control.id = id;
  control.dataset.blockId = block.block_id;
  control.dataset.actionId = element.action_id || "";
  control.required = !block.optional;  // Slack refuses an empty required field itself, before the app hears of it
  if (block.dispatch_action && element.type === "static_select") {
    control.addEventListener("change", () => post("/sandbox/view/action", {
      view_id: viewId, block_id: block.block_id, action_id: element.action_id, values: formValues() }));
  }
  box.appendChild(control);
  if (block.hint) box.appendChild(el("div", "hint", textHtml(block.hint)));
  if (error) {
    control.setAttribute("aria-invalid", "true");
    const message = el("p", "field-error", escapeHtml(error));
    message.setAttribute("role", "alert");
    box.appendChild(message);
  }
  return box;
}

function modalNode(open, kept) {
  const view = open.view;
  const form = el("form", "modal");
  form.setAttribute("role", "dialog");
  form.setAttribute("aria-modal", "true");
  form.setAttribute("aria-labelledby", "modal-title");
  form.dataset.viewId = open.id;
  form.noValidate = false;
  const head = el("header", "modal-head");
  head.appendChild(el("h2", "", escapeHtml((view.title || {}).text || "")));
  head.firstChild.id = "modal-title";
  const x = el("button", "modal-x", "×");
  x.type = "button";
  x.setAttribute("aria-label", "Close");
  x.addEventListener("click", () => closeModal(open.id));
  head.appendChild(x);
  form.appendChild(head);
  const body = el("div", "modal-body");
  (view.blocks || []).forEach((block) => {
    body.appendChild(block.type === "input" ? fieldNode(block, (open.errors || {})[block.block_id], kept, open.id)
                                            : renderBlocks([block], "", { channel: "", ts: "" }));
  });
  form.appendChild(body);
  const foot = el("footer", "modal-foot");
  const cancel = el("button", "btn", escapeHtml((view.close || {}).text || "Cancel"));
  cancel.type = "button";
  cancel.addEventListener("click", () => closeModal(open.id));
  foot.appendChild(cancel);
  if (view.submit) {
    const submit = el("button", "btn primary", escapeHtml(view.submit.text || "Submit"));
    submit.type = "submit";
    foot.appendChild(submit);
  }
  form.appendChild(foot);
  form.addEventListener("submit", (event) => submitModal(event, form, open.id));
  return form;
}

function renderModal(state) {
  const layer = $("modal-layer");
  const open = state.modal;
  const key = open ? JSON.stringify([open.id, open.hash, open.errors]) : "";
  if (key === modal.key) return;
  const kept = open && open.id === modal.id ? formValues() : null;  // what the person chose stays when it updates
  const focused = document.activeElement && layer.contains(document.activeElement) ? document.activeElement.id : "";
  modal.key = key;
  modal.id = open ? open.id : "";
  if (!open) {
    layer.hidden = true;
    layer.replaceChildren();
    return;
  }
  layer.replaceChildren(modalNode(open, kept));
  layer.hidden = false;
  const again = focused && document.getElementById(focused);
  const invalid = layer.querySelector('[aria-invalid="true"]');
  (again || invalid || layer.querySelector("[data-action-id]")).focus();
}

async function submitModal(event, form, viewId) {
  event.preventDefault();
  if (!form.reportValidity()) return;
  const button = form.querySelector('button[type="submit"]');
  if (button) button.disabled = true;
  try {
    const answer = await post("/sandbox/view/submit", { view_id: viewId, values: formValues() });
    if (answer.closed) $("modal-layer").hidden = true;
    await poll();
  } finally {
    if (button) button.disabled = false;
  }
}

async function closeModal(viewId) {
  $("modal-layer").hidden = true;
  await post("/sandbox/view/close", { view_id: viewId });
  await poll();
}

document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && modal.id && !$("modal-layer").hidden) closeModal(modal.id);
});
