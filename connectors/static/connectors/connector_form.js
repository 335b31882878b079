// The connector form shows only the settings of the kind chosen (each field names its kinds in data-kinds);
// without this script every field shows and the server still reads only the chosen kind's.
(function () {
  "use strict";
  function update(form) {
    var kind = form.querySelector(".connector-kind").value;
    form.querySelectorAll("[data-kinds]").forEach(function (field) {
      field.hidden = field.getAttribute("data-kinds").split(" ").indexOf(kind) === -1;
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form.connector-form").forEach(function (form) {
      update(form);
      form.querySelector(".connector-kind").addEventListener("change", function () { update(form); });
    });
  });
})();
