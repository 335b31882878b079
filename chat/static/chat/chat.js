// The chat page: streams answers from the answers API (Server-Sent Events over fetch) and shows citations,
// the hidden-record hint and the verification badge. Text from the server goes in through textContent;
// the only HTML inserted is the answer's `html`, which the server has already sanitised (chat.rendering).
"use strict";

(function () {
  const root = document.getElementById("chat");
  if (!root) return;
  const api = root.dataset.api;
  const page = root.dataset.page;
  let conversationId = root.dataset.conversation ? Number(root.dataset.conversation) : null;
  const messages = document.getElementById("messages");
  const form = document.getElementById("ask");
  const input = document.getElementById("question");
  const sendButton = document.getElementById("send");
  const panel = document.getElementById("evidence");

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function safeUrl(url) {
    return /^https?:\/\//i.test(url || "") ? url : null;
  }

  function showEvidence(citation) {
    document.getElementById("evidence-title").textContent = citation.label + " · " + (citation.title || "Untitled");
    document.getElementById("evidence-source").textContent =
      citation.source_name + " (" + citation.source_kind + "), characters " + citation.start + "–" + citation.end;
    const link = document.getElementById("evidence-link");
    const url = safeUrl(citation.record_url);
    if (url) { link.href = url; link.hidden = false; } else { link.removeAttribute("href"); link.hidden = true; }
    document.getElementById("evidence-fragment").textContent = citation.fragment;
    panel.hidden = false;
    panel.dataset.label = citation.label;
  }

  document.getElementById("evidence-close").addEventListener("click", function () { panel.hidden = true; });

  function wireCitations(container, sources) {
    const byLabel = {};
    (sources || []).forEach(function (c) { byLabel[c.label] = c; });
    container.querySelectorAll("a.cite").forEach(function (link) {
      link.addEventListener("click", function (event) {
        event.preventDefault();
        const citation = byLabel[link.dataset.label];
        if (citation) showEvidence(citation);
      });
    });
  }

  function badge(container, verification, messageId) {
    let node = container.querySelector(".badge");
    if (!node) { node = element("span", "badge"); container.appendChild(node); }
    if (!verification || verification.status === "not_applicable") { node.remove(); return; }
    if (verification.status === "done") {
      node.className = "badge";
      node.textContent = verification.badge;
      return;
    }
    node.className = "badge pending";
    node.textContent = "verifying…";
    if (messageId) pollVerification(container, messageId, 0);
  }

  function pollVerification(container, messageId, attempt) {
    if (attempt > 20) return;
    setTimeout(function () {
      fetch(api + "answers/" + messageId, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (data) {
          if (data && data.verification && data.verification.status === "done") badge(container, data.verification);
          else pollVerification(container, messageId, attempt + 1);
        });
    }, 500 + attempt * 250);
  }

  function hintNote(container, hint) {
    if (!hint || !hint.sources || !hint.sources.length) return;
    const parts = hint.sources.map(function (s) {
      return s.source_name + " (" + s.source_kind + ")" + (s.contact ? " — ask " + s.contact : "");
    });
    container.appendChild(element("p", "note hint",
      "Something relevant exists that you cannot open: " + parts.join("; ") + "."));
  }

  function renderFinal(container, body, final) {
    body.innerHTML = final.html;  // sanitised on the server
    wireCitations(body, final.citations);
    container.dataset.outcome = final.outcome;
    container.dataset.mode = final.mode;
    hintNote(container, final.hint);
    if (final.corpus === "empty") container.appendChild(element("p", "note", "Nothing is searchable for you yet."));
    badge(container, final.verification, final.message_id);
  }

  function addUser(text) {
    messages.appendChild(element("div", "msg user", text));
  }

  function addAssistant() {
    const container = element("div", "msg assistant");
    const body = element("div", "answer");
    container.appendChild(body);
    messages.appendChild(container);
    return { container: container, body: body };
  }

  function parseFrame(frame) {
    let name = "message";
    const data = [];
    frame.split("\n").forEach(function (line) {
      if (line.startsWith("event:")) name = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    });
    if (!data.length) return null;
    return { name: name, data: JSON.parse(data.join("\n")) };
  }

  async function ask(question) {
    addUser(question);
    const view = addAssistant();
    view.container.classList.add("streaming");
    const response = await fetch(api + "answers", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream", "X-CSRFToken": csrfToken() },
      body: JSON.stringify({ question: question, conversation_id: conversationId }),
    });
    if (!response.ok || !response.body) {
      view.body.textContent = "The question could not be answered (" + response.status + ").";
      return;
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let text = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (value) buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const event = parseFrame(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
        if (!event) continue;
        if (event.name === "token") {
          text += event.data.text;
          view.body.textContent = text;
        } else if (event.name === "sources") {
          view.container.dataset.sources = String(event.data.sources.length);
        } else if (event.name === "final") {
          view.container.classList.remove("streaming");
          renderFinal(view.container, view.body, event.data);
          if (conversationId !== event.data.conversation_id) {
            conversationId = event.data.conversation_id;
            history.replaceState(null, "", page + conversationId + "/");
            const list = document.getElementById("conversations");
            const item = element("li");
            const link = element("a", "", question);
            link.href = page + conversationId + "/";
            item.appendChild(link);
            list.insertBefore(item, list.firstChild);
          }
        }
      }
      if (done) break;
    }
  }

  async function loadConversation(id) {
    const response = await fetch(api + "conversations/" + id, { headers: { Accept: "application/json" },
                                                               credentials: "same-origin" });
    if (!response.ok) return;
    const data = await response.json();
    data.messages.forEach(function (m) {
      if (m.role === "user") { addUser(m.content); return; }
      const view = addAssistant();
      renderFinal(view.container, view.body, m);
    });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const question = input.value.trim();
    if (!question) return;
    input.value = "";
    sendButton.disabled = true;
    ask(question).finally(function () { sendButton.disabled = false; });
  });

  if (conversationId) loadConversation(conversationId);
})();
