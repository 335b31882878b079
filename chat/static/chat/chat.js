// The chat page: streams answers from the answers API (Server-Sent Events over fetch) and shows citations,
// the hidden-record hint (with "Request access") and the verification badge. Text from the server goes in
// through textContent; the only HTML inserted is what the server has already sanitised: the answer's
// `html` and a source's `fragment_html` (chat.rendering).
"use strict";

(function () {
  function byId(id) {
    return document.getElementById(id);
  }

  const root = byId("chat");
  if (!root) return;
  const api = root.dataset.api;
  const page = root.dataset.page;
  let conversationId = root.dataset.conversation ? Number(root.dataset.conversation) : null;
  const messages = byId("messages");
  const form = byId("ask");
  const input = byId("question");
  const sendButton = byId("send");
  const panel = byId("evidence");
  const history = byId("history");
  const narrow = window.matchMedia("(max-width: 640px)");
  let panelOpener = null;

  // One column on a narrow screen: the conversation list starts folded away.
  if (history && narrow.matches) history.open = false;

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

  function internalUrl(url) {
    return /^\/(?!\/)/.test(url || "") ? url : null;
  }

  function shortLocation(location) {
    if (!location) return "";
    const page = /^page\s+(\S+)$/i.exec(location);
    return page ? "p. " + page[1] : location;
  }

  function showEvidence(citation, opener) {
    const where = shortLocation(citation.location);
    byId("evidence-title").textContent =
      citation.label + " · " + (citation.title || "Untitled") + (where ? " (" + where + ")" : "");
    byId("evidence-source").textContent =
      citation.source_name + " (" + citation.source_kind + ")" + (citation.location ? " · " + citation.location : "");
    const viewer = byId("evidence-viewer");
    const viewerUrl = internalUrl(citation.viewer_url);
    if (viewerUrl) { viewer.href = viewerUrl; viewer.hidden = false; } else { viewer.removeAttribute("href"); viewer.hidden = true; }
    const link = byId("evidence-link");
    const url = safeUrl(citation.record_url);
    if (url) { link.href = url; link.hidden = false; } else { link.removeAttribute("href"); link.hidden = true; }
    const fragment = byId("evidence-fragment");
    if (typeof citation.fragment_html === "string") fragment.innerHTML = citation.fragment_html;  // sanitised on the server
    else fragment.textContent = citation.fragment || "";
    markCited(fragment, citation);
    panel.hidden = false;
    panel.dataset.label = citation.label;
    panelOpener = opener || null;
    panel.focus();
  }

  // Within the fragment, mark the sentence the answer rests on (cited_start-cited_end, chat.citation_spans): its
  // first line, where it stands whole in one text node of the rendered fragment; otherwise nothing is marked.
  function markCited(container, citation) {
    if (typeof citation.cited_start !== "number" || typeof citation.start !== "number") return;
    if (citation.cited_start <= citation.start && citation.cited_end >= citation.end) return;
    const cited = (citation.fragment || "").slice(citation.cited_start - citation.start,
                                                  citation.cited_end - citation.start);
    const needle = cited.split("\n")[0].trim();
    if (!needle) return;
    const walker = document.createTreeWalker(container, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const at = node.data.indexOf(needle);
      if (at < 0) continue;
      const match = node.splitText(at);
      match.splitText(needle.length);
      const mark = element("mark", "cited");
      match.parentNode.replaceChild(mark, match);
      mark.appendChild(match);
      return;
    }
  }

  function closeEvidence() {
    if (panel.hidden) return;
    panel.hidden = true;
    if (panelOpener && document.body.contains(panelOpener)) panelOpener.focus();
    panelOpener = null;
  }

  byId("evidence-close").addEventListener("click", closeEvidence);
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && !panel.hidden) { event.preventDefault(); closeEvidence(); }
  });

  function wireCitations(container, sources) {
    const byLabel = {};
    (sources || []).forEach(function (c) { byLabel[c.label] = c; });
    container.querySelectorAll("a.cite").forEach(function (link) {
      const citation = byLabel[link.dataset.label];
      if (citation) {
        const where = shortLocation(citation.location);
        link.setAttribute("aria-label", "Source " + link.dataset.label + ": " + (citation.title || "Untitled") +
          (where ? ", " + where : ""));
      }
      link.addEventListener("click", function (event) {
        event.preventDefault();
        if (citation) showEvidence(citation, link);
      });
    });
  }

  function sourcesList(container, citations) {
    const old = container.querySelector(".sources-list");
    if (old) old.remove();
    if (!citations || !citations.length) return;
    const list = element("ol", "sources-list");
    list.setAttribute("aria-label", "Sources");
    citations.forEach(function (c) {
      const item = element("li");
      const link = element("a", "cite", c.label);
      link.href = "#cite-" + c.label;
      link.dataset.label = c.label;
      item.appendChild(link);
      const where = shortLocation(c.location);
      item.appendChild(document.createTextNode(" " + (c.title || "Untitled") + (where ? " (" + where + ")" : "")));
      list.appendChild(item);
    });
    container.appendChild(list);
    wireCitations(list, citations);
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

  function requestAccess(button, status, messageId) {
    button.disabled = true;
    status.textContent = "Sending the request…";
    fetch(api + "access-requests", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify({ answer_id: messageId }),
    }).then(function (response) {
      if (response.status === 201 || response.status === 200) {
        button.remove();
        status.textContent = "Access requested: your tenant's admins have been asked.";
        status.dataset.state = "requested";
      } else {
        button.disabled = false;
        status.textContent = "The request could not be sent (" + response.status + ").";
      }
    }).catch(function () {
      button.disabled = false;
      status.textContent = "The request could not be sent.";
    });
  }

  function hintNote(container, hint, messageId) {
    if (!hint || !hint.sources || !hint.sources.length) return;
    const parts = hint.sources.map(function (s) {
      return s.source_name + " (" + s.source_kind + ")" + (s.contact ? " — ask " + s.contact : "");
    });
    const note = element("div", "note hint");
    note.appendChild(element("p", "", "Something relevant exists that you cannot open: " + parts.join("; ") + "."));
    if (messageId) {
      const actions = element("p", "hint-actions");
      const button = element("button", "request-access", "Request access");
      button.type = "button";
      const status = element("span", "request-status");
      status.setAttribute("role", "status");
      button.addEventListener("click", function () { requestAccess(button, status, messageId); });
      actions.appendChild(button);
      actions.appendChild(document.createTextNode(" "));
      actions.appendChild(status);
      note.appendChild(actions);
    }
    container.appendChild(note);
  }

  function sendFeedback(messageId, rating, reason) {
    return fetch(api + "answers/" + messageId + "/feedback", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify({ rating: rating, reason: reason || "" }),
    }).then(function (response) {
      if (!response.ok) throw new Error(String(response.status));
      return response.json();
    });
  }

  // Thumbs up / down under an answer; "Not helpful" also opens an optional reason. Each press is sent at once
  // (a second rating replaces the first), so a reader who never types a reason still counts.
  function feedbackControls(container, messageId, current) {
    const box = element("div", "feedback");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "Was this answer helpful?");
    const up = element("button", "feedback-up", "👍 Helpful");
    const down = element("button", "feedback-down", "👎 Not helpful");
    const status = element("span", "feedback-status muted");
    status.setAttribute("role", "status");
    const reasonForm = element("form", "feedback-reason");
    reasonForm.hidden = true;
    const reasonId = "feedback-reason-" + messageId;
    const label = element("label", "visually-hidden", "What was wrong with this answer? (optional)");
    label.htmlFor = reasonId;
    const reason = element("input");
    reason.id = reasonId;
    reason.type = "text";
    reason.maxLength = 1000;
    reason.placeholder = "What was wrong? (optional)";
    const sendReason = element("button", "", "Send reason");
    sendReason.type = "submit";
    reasonForm.appendChild(label);
    reasonForm.appendChild(reason);
    reasonForm.appendChild(sendReason);
    [up, down].forEach(function (b) { b.type = "button"; });

    function pressed(rating) {
      up.setAttribute("aria-pressed", String(rating === "up"));
      down.setAttribute("aria-pressed", String(rating === "down"));
      container.dataset.feedback = rating || "";
    }

    function rate(rating, text) {
      status.textContent = "Sending…";
      return sendFeedback(messageId, rating, text).then(function (data) {
        pressed(data.rating);
        status.textContent = data.rating === "up" ? "Thanks for the feedback." :
          (data.reason ? "Thanks: your reason was sent to the workspace's admins." : "Thanks for the feedback.");
      }).catch(function (error) {
        status.textContent = "The feedback could not be sent (" + error.message + ").";
      });
    }

    up.addEventListener("click", function () { reasonForm.hidden = true; rate("up", ""); });
    down.addEventListener("click", function () {
      rate("down", "").then(function () { reasonForm.hidden = false; reason.focus(); });
    });
    reasonForm.addEventListener("submit", function (event) {
      event.preventDefault();
      rate("down", reason.value.trim());
    });
    pressed(current || null);
    box.appendChild(up);
    box.appendChild(down);
    box.appendChild(status);
    box.appendChild(reasonForm);
    container.appendChild(box);
  }

  function renderFinal(container, body, final) {
    body.innerHTML = final.html;  // sanitised on the server
    const lookup = (final.sources || []).concat(final.citations || []);
    wireCitations(body, lookup);
    sourcesList(container, final.citations);
    container.dataset.outcome = final.outcome;
    container.dataset.mode = final.mode;
    // Read back after the caller lost access to a cited record: the server sent only the notice.
    container.classList.toggle("withdrawn", final.withdrawn === true);
    if (final.withdrawn === true) container.dataset.withdrawn = "true";
    if (final.message_id) container.dataset.messageId = String(final.message_id);
    hintNote(container, final.hint, final.message_id);
    if (final.corpus === "empty") container.appendChild(element("p", "note", "Nothing is searchable for you yet."));
    // A question that referred back ("who owns it?") was searched as the question it continues: say which.
    if (final.read_as) container.appendChild(element("p", "note read-as", "Read as: " + final.read_as));
    badge(container, final.verification, final.message_id);
    if (final.message_id && final.withdrawn !== true) feedbackControls(container, final.message_id, final.feedback);
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
    view.container.setAttribute("aria-busy", "true");
    const response = await fetch(api + "answers", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream", "X-CSRFToken": csrfToken() },
      body: JSON.stringify({ question: question, conversation_id: conversationId }),
    });
    if (!response.ok || !response.body) {
      view.body.textContent = "The question could not be answered (" + response.status + ").";
      view.container.removeAttribute("aria-busy");
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
        } else if (event.name === "error") {
          // The stream ends with a refusal instead of its final event (the conversation was deleted meanwhile).
          view.container.classList.remove("streaming");
          view.container.removeAttribute("aria-busy");
          view.body.textContent = event.data.detail;
        } else if (event.name === "final") {
          view.container.classList.remove("streaming");
          view.container.removeAttribute("aria-busy");
          // The final event is authoritative: a model's labels are renumbered in first-cited order there.
          renderFinal(view.container, view.body, event.data);
          if (conversationId !== event.data.conversation_id) {
            conversationId = event.data.conversation_id;
            window.history.replaceState(null, "", page + conversationId + "/");
            const list = byId("conversations");
            const empty = list.querySelector("li.muted");
            if (empty) empty.remove();
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

  const suggestions = byId("suggestions");
  if (suggestions) {
    suggestions.querySelectorAll("button.suggestion").forEach(function (button) {
      button.addEventListener("click", function () {
        input.value = button.dataset.question;
        submit();
      });
    });
  }

  function submit() {
    const question = input.value.trim();
    if (!question || sendButton.disabled) return;
    input.value = "";
    if (suggestions) suggestions.hidden = true;
    sendButton.disabled = true;
    ask(question).finally(function () { sendButton.disabled = false; });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    submit();
  });

  // Enter sends, Shift+Enter adds a line; Enter that confirms an IME composition does neither.
  input.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) return;
    if (event.ctrlKey || event.altKey || event.metaKey) return;
    event.preventDefault();
    submit();
  });

  if (conversationId) loadConversation(conversationId);
})();
