// Upload page: drag-and-drop plus sending the files with fetch (the form works without this script).
// Batch page: poll the batch API every second until it is finished. No inline script (CSP).
(function () {
  "use strict";

  function csrfToken(form) {
    var field = form.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  function showChosen(list, files) {
    list.textContent = "";
    Array.prototype.forEach.call(files, function (file) {
      var li = document.createElement("li");
      li.textContent = file.name;
      list.appendChild(li);
    });
  }

  function setupUpload(form) {
    var zone = form.querySelector("[data-drop-zone]");
    var input = form.querySelector("input[type=file]");
    var chosen = form.querySelector("[data-chosen]");
    var errorBox = form.querySelector("[data-upload-error]");
    var status = form.querySelector("[data-upload-status]");
    var button = form.querySelector("[data-upload-submit]");

    input.addEventListener("change", function () { showChosen(chosen, input.files); });
    ["dragenter", "dragover"].forEach(function (name) {
      zone.addEventListener(name, function (event) { event.preventDefault(); zone.classList.add("is-dragging"); });
    });
    ["dragleave", "drop"].forEach(function (name) {
      zone.addEventListener(name, function () { zone.classList.remove("is-dragging"); });
    });
    zone.addEventListener("drop", function (event) {
      event.preventDefault();
      if (event.dataTransfer && event.dataTransfer.files.length) {
        input.files = event.dataTransfer.files;
        showChosen(chosen, input.files);
      }
    });

    form.addEventListener("submit", function (event) {
      if (!window.fetch || !window.FormData) { return; }  // plain form POST
      event.preventDefault();
      errorBox.hidden = true;
      if (!input.files.length) {
        errorBox.textContent = "Choose at least one file.";
        errorBox.hidden = false;
        return;
      }
      var sourceId = form.querySelector("select[name=source]").value;
      var url = form.dataset.apiTemplate.replace("/sources/0/", "/sources/" + encodeURIComponent(sourceId) + "/");
      var body = new FormData();
      Array.prototype.forEach.call(input.files, function (file) { body.append("files", file, file.name); });
      button.disabled = true;
      status.textContent = "Sending " + input.files.length + " file(s)…";
      fetch(url, { method: "POST", body: body, credentials: "same-origin",
                   headers: { "X-CSRFToken": csrfToken(form), "Accept": "application/json" } })
        .then(function (response) {
          return response.json().catch(function () { return {}; }).then(function (data) {
            if (response.status !== 202) {
              var detail = data.detail || (data.files && data.files.join ? data.files.join(" ") : data.files) ||
                           ("The upload failed (" + response.status + ").");
              throw new Error(Array.isArray(detail) ? detail.join(" ") : detail);
            }
            window.location.assign(form.dataset.batchTemplate.replace(/\/0\/$/, "/" + data.id + "/"));
          });
        })
        .catch(function (error) {
          errorBox.textContent = error.message || "The upload failed; try again.";
          errorBox.hidden = false;
          status.textContent = "";
          button.disabled = false;
        });
    });
  }

  var LABELS = { pending: "Waiting", processing: "Processing", added: "Added", updated: "Updated",
                 unchanged: "Unchanged", refused: "Refused", failed: "Failed" };
  var DONE = ["added", "updated", "unchanged", "refused", "failed"];

  function setupBatch(section) {
    var refresh = document.querySelector("[data-refresh-link]");
    if (section.dataset.finished === "true") { return; }
    if (refresh) { refresh.hidden = true; }
    var summary = section.querySelector("[data-batch-summary]");
    var progress = section.querySelector("[data-batch-progress]");
    var rows = section.querySelector("[data-batch-items]");

    function render(data) {
      var total = data.items.length;
      var done = data.items.filter(function (item) { return DONE.indexOf(item.status) >= 0; }).length;
      progress.max = total;
      progress.value = done;
      summary.textContent = (data.finished ? "Finished: " + done + " of " + total + " files processed."
                                           : "Processing: " + done + " of " + total + " files done.");
      data.items.forEach(function (item) {
        var row = rows.querySelector("tr[data-position='" + item.position + "']");
        if (!row) { return; }
        var cells = row.querySelectorAll("td");
        var badge = cells[1].querySelector("span");
        badge.className = "intake-status intake-status-" + item.status;
        badge.textContent = LABELS[item.status] || item.status;
        cells[2].textContent = "";
        if (!item.reason && item.document_id) {
          // The document this file made: a link to it in the viewer, as the server renders it.
          var link = document.createElement("a");
          link.href = section.dataset.documentTemplate.replace(/\/0\/$/, "/" + item.document_id + "/");
          link.setAttribute("data-document-link", "");
          link.textContent = item.title || "Open the document";
          cells[2].appendChild(link);
        } else {
          cells[2].textContent = item.reason || item.title || "";
        }
      });
    }

    function poll() {
      fetch(section.dataset.apiUrl, { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (response) { if (!response.ok) { throw new Error(String(response.status)); } return response.json(); })
        .then(function (data) {
          render(data);
          if (!data.finished) { window.setTimeout(poll, 1000); }
        })
        .catch(function () { if (refresh) { refresh.hidden = false; } });
    }
    window.setTimeout(poll, 1000);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.querySelector("[data-upload-form]");
    if (form) { setupUpload(form); }
    var batch = document.querySelector("[data-batch]");
    if (batch) { setupBatch(batch); }
  });
})();
