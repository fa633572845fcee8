/* Conduit Console: progressive enhancement. Everything works without this file;
   it pauses polling while the tab is hidden or rows are selected, says so in the
   live indicator (and when polls fail), keeps countdowns and ages ticking,
   keeps open <details> open across live updates, and wires small conveniences.
   Loaded from our own static files: the CSP forbids inline scripts and hx-on. */
(function () {
  "use strict";

  document.documentElement.classList.add("js");

  function pad(n) { return n < 10 ? "0" + n : "" + n; }

  function span(seconds) {
    var s = Math.floor(Math.abs(seconds));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
    if (s < 86400) return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
    return Math.floor(s / 86400) + "d " + Math.floor((s % 86400) / 3600) + "h";
  }

  /* Each ticking element remembers when it was rendered (client clock), so server
     and client clocks never need to agree: only elapsed time matters. */
  function stampBirth(root) {
    var now = Date.now();
    (root || document).querySelectorAll("[data-remaining], [data-age]").forEach(function (el) {
      if (!el.dataset.born) el.dataset.born = String(now);
    });
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll("time.countdown[data-remaining]").forEach(function (el) {
      var left = parseFloat(el.dataset.remaining) - (now - Number(el.dataset.born || now)) / 1000;
      var label = el.querySelector(".left");
      var expired = left <= 0;  // expiry is exclusive: at the instant it has expired
      if (label) label.textContent = expired ? "expired " + span(left) + " ago" : "in " + span(left);
      el.classList.toggle("expired", expired);
      var row = el.closest("tr");
      if (row) row.classList.toggle("lapsed", expired);
    });
  }

  function ages() {
    var now = Date.now();
    document.querySelectorAll("time[data-age]").forEach(function (el) {
      var age = Number(el.dataset.age) + (now - Number(el.dataset.born || now)) / 1000;
      el.textContent = Math.abs(age) < 1 ? "just now" : age > 0 ? span(age) + " ago" : "in " + span(age);
    });
  }

  /* The live indicator. Whether a request is a poll is decided when it starts (its
     element carries data-poll and is in the page) and remembered on the xhr: after an
     outerHTML swap htmx re-fires htmx:afterRequest on an ancestor, whose detail.elt
     is that ancestor, so the element seen at the end cannot say. */
  var live = { ok: Date.now(), offline: null, failure: "" };

  function clock(d) { return pad(d.getHours()) + ":" + pad(d.getMinutes()); }

  function rowsSelected() {
    return !!document.querySelector("[data-poll] input[type=checkbox][name=work]:checked");
  }

  /* A compact confirmation open under a row: a poll would swap it away. */
  function confirming() {
    return !!document.querySelector("[data-poll] [data-inline-confirm]");
  }

  function status() {
    var el = document.getElementById("live-status");
    if (!el) return;
    var polling = !!document.querySelector("[data-poll]");
    var text = "", error = false;
    if (!polling) {
      text = document.querySelector("[data-stamp]") ? "live updates off" : "";
    } else if (document.hidden) {
      text = "paused (tab hidden)";
    } else if (rowsSelected()) {
      text = "paused (rows selected)";
    } else if (confirming()) {
      text = "paused (confirming an action)";
    } else if (live.offline) {
      text = live.failure + " since " + clock(live.offline) + ", retrying";
      error = true;
    } else {
      text = "live · checked " + span((Date.now() - live.ok) / 1000) + " ago";
    }
    el.textContent = text;
    el.classList.toggle("error", error);
    el.classList.toggle("paused", polling && !error && text.indexOf("paused") === 0);
  }

  /* Polling regions carry data-poll. A poll is skipped while the tab is hidden,
     while rows are selected for a bulk action, or while a field in it has focus (a
     ticked-then-unticked checkbox keeps focus but is not being typed into). */
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var elt = evt.detail.elt;
    if (!elt || !elt.hasAttribute || !elt.hasAttribute("data-poll")) return;
    if (document.hidden || rowsSelected() || confirming() ||
        elt.contains(document.activeElement) &&
        document.activeElement.matches("input:not([type=checkbox]):not([type=radio]), select, textarea")) {
      evt.preventDefault();
      status();
      return;
    }
    if (evt.detail.xhr) evt.detail.xhr.consolePoll = true;
  });

  function isPoll(evt) { return !!(evt.detail.xhr && evt.detail.xhr.consolePoll); }

  function failed(text) {
    if (!live.offline) live.offline = new Date();
    live.failure = text;
    status();
  }

  document.addEventListener("htmx:afterRequest", function (evt) {
    // A successful answer to any request is fresh news from the server; only a
    // poll's failure (the operator did not ask) turns the indicator to offline.
    if (evt.detail.successful && evt.detail.xhr && evt.detail.xhr.status < 400) {
      live.ok = Date.now();
      live.offline = null;
      status();
    }
  });
  document.addEventListener("htmx:responseError", function (evt) {
    if (isPoll(evt)) failed("update failed (" + evt.detail.xhr.status + ")");
  });
  document.addEventListener("htmx:sendError", function (evt) {
    if (isPoll(evt)) failed("offline");
  });
  document.addEventListener("htmx:timeout", function (evt) {
    if (isPoll(evt)) failed("offline");
  });

  document.addEventListener("visibilitychange", function () {
    status();
    if (document.hidden || !window.htmx) return;
    document.querySelectorAll("[data-poll]").forEach(function (el) {
      window.htmx.trigger(el, "consolewake");
    });
  });

  /* A live update replaces a region; keep each <details> with an id as the operator
     left it (payloads opened stay open, run-tree scopes collapsed stay collapsed),
     and keep ticked rows ticked when the new region still shows them. */
  var detailsState = {};
  var ticked = [];
  document.addEventListener("htmx:beforeSwap", function () {
    detailsState = {};
    document.querySelectorAll("details[id]").forEach(function (d) { detailsState[d.id] = d.open; });
    ticked = [];
    document.querySelectorAll("input[type=checkbox][name=work]:checked").forEach(function (box) { ticked.push(box.value); });
  });
  document.addEventListener("htmx:afterSettle", function () {
    Object.keys(detailsState).forEach(function (id) {
      var d = document.getElementById(id);
      if (d) d.open = detailsState[id];
    });
    document.querySelectorAll("input[type=checkbox][name=work]").forEach(function (box) {
      if (ticked.indexOf(box.value) !== -1) box.checked = true;
    });
    stampBirth(document);
    tick();
    updateSelection();
  });

  /* Compact confirmations: one open at a time; "Keep it" closes it; a refused form
     (400: no reason) or a stale one (409: "changed since you loaded it", the
     confirmation re-read) is shown again in place, which htmx does not swap by itself. */
  document.addEventListener("click", function (evt) {
    var t = evt.target;
    if (!t.closest) return;
    var close = t.closest("[data-close-confirm]");
    if (close) {
      var row = close.closest("[data-inline-confirm]");
      if (row) row.remove();
      status();
      return;
    }
    var open = t.closest("[data-inline-open]");
    if (open) {
      var table = open.closest("table") || document;
      table.querySelectorAll("[data-inline-confirm]").forEach(function (r) { r.remove(); });
    }
  });
  function isConfirmation(html) {
    // A <template> parses a lone <tr> as written (a document body would drop it).
    var scratch = document.createElement("template");
    scratch.innerHTML = html;
    var first = scratch.content.firstElementChild;
    return !!(first && first.hasAttribute("data-inline-confirm"));
  }
  document.addEventListener("htmx:beforeSwap", function (evt) {
    var xhr = evt.detail.xhr;
    if (!xhr || (xhr.status !== 400 && xhr.status !== 409)) return;
    // Asked of the element that sent the request (the confirmation's form), not of
    // detail.elt: htmx 2 fires beforeSwap on the swap target, which for a routed
    // confirmation is its slot (.routed-confirm-slot), outside the confirmation.
    var config = evt.detail.requestConfig;
    var sender = config && config.elt;
    if (!sender || !sender.closest || !sender.closest("[data-inline-confirm]")) return;
    // Only the confirmation itself comes back in place; an error page (a storage
    // conflict) is not a fragment to put in a table row.
    if (!isConfirmation(xhr.responseText)) return;
    evt.detail.shouldSwap = true;
    evt.detail.isError = false;
  });

  /* A bulk run: while its POST runs, its progress region polls the run's progress
     record; the POST's answer (the summary) replaces the page and the region. */
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var form = evt.detail.elt;
    if (!form || !form.matches || !form.matches("form[data-bulk-run]") || !window.htmx) return;
    var region = document.querySelector("#bulk-progress[data-progress-url]");
    if (!region || region.hasAttribute("hx-get")) return;
    region.hidden = false;
    region.textContent = "Starting…";
    region.setAttribute("hx-get", region.dataset.progressUrl);
    region.setAttribute("hx-trigger", "every 1s");
    region.setAttribute("hx-swap", "innerHTML");
    window.htmx.process(region);
  });

  /* The interval picker submits itself when changed. */
  document.addEventListener("change", function (evt) {
    var t = evt.target;
    if (t.matches("form[data-autosubmit] select")) {
      t.form.requestSubmit();
    } else if (t.matches("input[data-select-all]")) {
      var form = t.form || t.closest("form");
      form.querySelectorAll("input[type=checkbox][name=work]").forEach(function (box) { box.checked = t.checked; });
      updateSelection();
    } else if (t.matches("input[type=checkbox][name=work]")) {
      updateSelection();
    }
  });

  function updateSelection() {
    document.querySelectorAll("[data-selected-count]").forEach(function (el) {
      var form = el.closest("form");
      var n = form ? form.querySelectorAll("input[type=checkbox][name=work]:checked").length : 0;
      if (!el.dataset.idle) el.dataset.idle = el.textContent;
      el.textContent = n ? n + " selected (live updates paused):" : el.dataset.idle;
    });
    status();
  }

  /* ---------------------------------------------------------------- theme */
  /* The theme button cycles system -> light -> dark. Without JS it is a form post
     (console/misc.py: theme); here the page switches at once and the choice is posted
     in the background to be stored (the server answers 204 to HX-Request). Any
     [data-theme-toggle] button may be clicked by other code (the "t" key). */
  var THEMES = ["system", "light", "dark"];
  var THEME_LABELS = { system: "System theme", light: "Light theme", dark: "Dark theme" };

  function applyTheme(choice) {
    var root = document.documentElement;
    if (choice === "system") root.removeAttribute("data-theme");
    else root.setAttribute("data-theme", choice);
    var meta = document.querySelector('meta[name="color-scheme"]');
    if (meta) meta.setAttribute("content", choice === "system" ? "light dark" : choice);
    var following = THEMES[(THEMES.indexOf(choice) + 1) % THEMES.length];
    document.querySelectorAll("[data-theme-toggle]").forEach(function (btn) {
      btn.dataset.themeCurrent = choice;
      btn.value = following;
      btn.textContent = THEME_LABELS[choice];
      btn.title = "Theme: " + choice + " (press to switch to " + following + ")";
    });
  }

  /* ---------------------------------------------------------------- scrollers (phone) */
  /* A table wider than its panel scrolls inside it (console.css); a keyboard scrolls
     a region only when it can be focused, so each scroller that overflows now gets
     tabindex=0, and loses it when it no longer does (a wider window). Those the
     page marked focusable itself are left alone. */
  function markScrollers() {
    document.querySelectorAll(".table-wrap, .results, .panel").forEach(function (el) {
      var overflow = getComputedStyle(el).overflowX;
      var scrolls = (overflow === "auto" || overflow === "scroll") && el.scrollWidth > el.clientWidth + 1;
      if (scrolls && !el.hasAttribute("tabindex")) {
        el.setAttribute("tabindex", "0");
        el.dataset.scrollFocus = "1";
      } else if (!scrolls && el.dataset.scrollFocus) {
        el.removeAttribute("tabindex");
        delete el.dataset.scrollFocus;
      }
    });
  }
  var scrollerFrame = 0;
  function markScrollersSoon() {
    if (scrollerFrame) return;
    scrollerFrame = window.requestAnimationFrame(function () { scrollerFrame = 0; markScrollers(); });
  }
  document.addEventListener("DOMContentLoaded", markScrollers);
  document.addEventListener("htmx:afterSettle", markScrollersSoon);
  document.addEventListener("toggle", markScrollersSoon, true);  // a <details> opened
  window.addEventListener("resize", markScrollersSoon);

  document.addEventListener("click", function (evt) {
    var btn = evt.target.closest && evt.target.closest("[data-theme-toggle]");
    if (!btn || !btn.form || !window.fetch) return;
    evt.preventDefault();
    var choice = btn.value;
    var body = new FormData(btn.form);
    body.set("theme", choice);
    applyTheme(choice);
    window.fetch(btn.form.action, {
      method: "POST", body: body, credentials: "same-origin", headers: { "HX-Request": "true" }
    }).catch(function () { /* the page already switched; the next page load says what was stored */ });
  });

  /* ---------------------------------------------------------------- tables: copy IDs
     One delegated listener for every {% short_id %} / {% copy_button %} (console/
     templatetags/ids.py): copies data-copy with the Clipboard API, or, where that is
     missing or refused (plain http, an old browser), through a selected scratch field
     and execCommand. "Copied" shows on the button and is said in a polite live region
     made once, so a screen reader hears it without the focus moving. */
  function copyStatus() {
    var el = document.getElementById("copy-status");
    if (!el) {
      el = document.createElement("span");
      el.id = "copy-status";
      el.className = "visually-hidden";
      el.setAttribute("role", "status");
      el.setAttribute("aria-live", "polite");
      document.body.appendChild(el);
    }
    return el;
  }

  function copyByField(text) {
    var field = document.createElement("textarea");
    field.className = "copy-buffer";
    field.value = text;
    field.setAttribute("readonly", "");
    document.body.appendChild(field);
    field.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    field.remove();
    return ok;
  }

  function copied(button, ok) {
    var said = copyStatus();
    said.textContent = ok ? "Copied" : "Could not copy; select the ID and copy it";
    button.classList.toggle("copied", ok);
    button.dataset.copiedAt = String(Date.now());
    setTimeout(function () {
      if (Date.now() - Number(button.dataset.copiedAt) < 1900) return;
      button.classList.remove("copied");
      if (said.textContent === "Copied") said.textContent = "";
    }, 2000);
  }

  document.addEventListener("click", function (evt) {
    var button = evt.target.closest && evt.target.closest("button[data-copy]");
    if (!button) return;
    evt.preventDefault();
    var text = button.getAttribute("data-copy");
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(
        function () { copied(button, true); },
        function () { copied(button, copyByField(text)); }
      );
    } else {
      copied(button, copyByField(text));
    }
  });
  document.addEventListener("DOMContentLoaded", copyStatus);
  /* ---------------------------------------------------------------- end of copy IDs */

  document.addEventListener("DOMContentLoaded", function () {
    stampBirth(document);
    tick();
    updateSelection();
  });
  setInterval(function () { tick(); status(); }, 1000);
  setInterval(ages, 5000);

  /* ---- Polling stamps and calm live lists (helper "poll") ----
     A region's stamp goes back in the X-Console-Stamp header, and a 204 ("your
     region did not change") brings the stamp as it is now: kept on the region, it
     lets the next poll take the server's cheapest path (nothing committed since). */
  document.addEventListener("htmx:configRequest", function (evt) {
    var elt = evt.detail.elt;
    if (elt && elt.hasAttribute && elt.hasAttribute("data-poll") && elt.dataset.stamp) {
      evt.detail.headers["X-Console-Stamp"] = elt.dataset.stamp;
    }
  });
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var elt = evt.detail.elt;
    if (elt && elt.hasAttribute && elt.hasAttribute("data-poll")) elt.dataset.inFlight = "1";
  });
  document.addEventListener("htmx:afterRequest", function (evt) {
    var xhr = evt.detail.xhr, elt = evt.detail.elt;
    if (!elt || !elt.hasAttribute || !elt.hasAttribute("data-poll")) return;
    delete elt.dataset.inFlight;
    if (elt.dataset.reveal === "asked" && document.body.contains(elt)) {
      // "Show" was asked while this poll was in flight (htmx drops a request made
      // meanwhile): ask now, with the stamp of what is on screen, not this answer's;
      // after this event, as htmx holds the request's lock until it has run.
      setTimeout(function () { reveal(elt); }, 0);
      return;
    }
    if (!xhr || xhr.status !== 204) return;
    var stamp = xhr.getResponseHeader("X-Console-Stamp");
    if (stamp) elt.dataset.stamp = stamp;
    if (elt.dataset.reveal) {
      // The region is as shown after all (the new rows went): nothing to show.
      delete elt.dataset.reveal;
      var button = elt.querySelector("[data-calm-reveal]");
      if (button) button.disabled = false;
    }
  });

  /* Calm live lists. A region marked data-calm (the Work list, the Events list) does
     not shift under its reader: when a poll brings rows above the first row shown
     that were not shown before, the list stays as it is and a button says "N new,
     show"; clicking it asks for the region again and lets that answer swap in. While
     the pointer is over the rows, an answer that would move them is not swapped (the
     next poll brings it again). Selected rows already pause the polls. Without this
     script nothing polls: the page is as the server rendered it. */
  function rowKey(tr) {
    if (tr.dataset.row) return tr.dataset.row;
    var link = tr.querySelector("a[href]");
    return link ? link.getAttribute("href") : "";
  }

  function rowKeys(root) {
    var keys = [];
    root.querySelectorAll("tbody > tr").forEach(function (tr) {
      if (tr.hasAttribute("data-inline-confirm")) return;
      var key = rowKey(tr);
      if (key) keys.push(key);
    });
    return keys;
  }

  /* Rows of ``fresh`` that are not in ``shown`` and come before the first row of
     ``shown`` that ``fresh`` still has (all of them when it has none). */
  function newAbove(shown, fresh) {
    var seen = {};
    shown.forEach(function (k) { seen[k] = true; });
    var n = 0;
    for (var i = 0; i < fresh.length; i++) {
      if (seen[fresh[i]]) break;
      n += 1;
    }
    return n;
  }

  function calmButton(region, n, more) {
    var bar = region.querySelector("[data-calm-bar]");
    if (!bar) {
      bar = document.createElement("div");
      bar.className = "calm-bar";
      bar.setAttribute("data-calm-bar", "");
      bar.setAttribute("role", "status");
      var button = document.createElement("button");
      button.type = "button";
      button.className = "secondary calm-new";
      button.setAttribute("data-calm-reveal", "");
      bar.appendChild(button);
      var table = region.querySelector("table");
      var anchor = table ? (table.closest(".table-wrap") || table) : region.firstElementChild;
      anchor.parentNode.insertBefore(bar, anchor);
    }
    bar.querySelector("button").textContent = n + (more ? "+" : "") + " new, show";
  }

  document.addEventListener("htmx:beforeSwap", function (evt) {
    var region = evt.detail.elt, xhr = evt.detail.xhr;
    if (!isPoll(evt) || !region || !region.hasAttribute || !region.hasAttribute("data-calm")) return;
    if (!xhr || xhr.status !== 200 || !evt.detail.shouldSwap) return;
    if (region.dataset.reveal) return;  // the operator asked for it: swap
    var doc = new DOMParser().parseFromString(xhr.responseText, "text/html");
    var incoming = doc.body.firstElementChild;
    if (!incoming) return;
    var shown = rowKeys(region), fresh = rowKeys(incoming);
    var n = shown.length ? newAbove(shown, fresh) : 0;
    if (n) {
      evt.detail.shouldSwap = false;
      // The stamp of what is on screen, for "show"; the region now knows the server's.
      if (!region.dataset.shownStamp) region.dataset.shownStamp = region.dataset.stamp || "";
      if (incoming.dataset.stamp) region.dataset.stamp = incoming.dataset.stamp;
      // No row shown is on the fresh page: at least a page of new ones, maybe more.
      calmButton(region, n, n === fresh.length && fresh.length >= shown.length);
      return;
    }
    var hovered = region.querySelector("tbody:hover");
    if (hovered && shown.join("\n") !== fresh.slice(0, shown.length).join("\n")) {
      evt.detail.shouldSwap = false;  // rows under the pointer never move
    }
  });

  /* Ask for the region again with the stamp of what is on screen, so the answer is
     the list as it is now (200) and swaps in (``data-reveal`` lets it past the
     calm check above). */
  function reveal(region) {
    if (region.dataset.shownStamp !== undefined) region.dataset.stamp = region.dataset.shownStamp;
    region.dataset.reveal = "sent";
    window.htmx.trigger(region, "consolewake");
  }

  document.addEventListener("click", function (evt) {
    var button = evt.target.closest && evt.target.closest("[data-calm-reveal]");
    if (!button || !window.htmx) return;
    var region = button.closest("[data-calm]");
    if (!region) return;
    button.disabled = true;
    if (region.dataset.inFlight) {
      region.dataset.reveal = "asked";  // sent when the poll in flight ends
      return;
    }
    reveal(region);
  });
  /* ---- end of polling stamps and calm lists ---- */
})();

/* ---------------------------------------------------------------- keyboard (views)
   One keydown listener: "/" focuses the search box, j/k move a row focus through the
   page's list rows, x ticks the focused row's checkbox, Enter opens its first link,
   r refreshes the live region now (its poll, or a reload when polling is off), t
   clicks the theme button, ? opens the help (a modal <dialog>: Esc closes it and
   focus returns where it was). Keys are ignored while typing in a field or with
   Ctrl, Alt or Meta held, so browser and screen-reader shortcuts keep working. The
   focused row is remembered by its first link, so a live update that replaces the
   rows gives the focus back to the same row. Built from DOM calls: no inline script. */
(function () {
  "use strict";

  var HELP = [
    ["/", "Focus the search box"],
    ["j", "Move to the next row"],
    ["k", "Move to the previous row"],
    ["x", "Select or unselect the focused row"],
    ["Enter", "Open the focused row"],
    ["r", "Refresh the list now (or show the new rows a calm list is holding back)"],
    ["t", "Switch the theme"],
    ["?", "Show these keys"],
    ["Esc", "Close this help"]
  ];
  var focusedKey = "";

  function typing(el) {
    if (!el || !el.matches) return false;
    if (el.isContentEditable || el.matches("textarea, select")) return true;
    return el.matches("input") &&
      !/^(checkbox|radio|button|submit|reset|range|color|file|image)$/.test(el.type);
  }

  function rows() {
    var all = document.querySelectorAll("main table.grid > tbody > tr");
    return Array.prototype.filter.call(all, function (tr) {
      // Not a confirmation: the Work list's (a row of its own) nor the Workflows
      // list's (the row after each workflow, shown while it holds one).
      return !tr.hasAttribute("data-inline-confirm") && !tr.classList.contains("routed-confirm-row") &&
        tr.getClientRects().length > 0;
    });
  }

  function keyOf(tr) {
    var link = tr.querySelector("a[href]");
    var box = tr.querySelector("input[type=checkbox]");
    return link ? link.getAttribute("href") : box ? box.value : "";
  }

  function current() {
    return document.querySelector("main tr.kbd-focus");
  }

  function focusRow(tr) {
    var old = current();
    if (old && old !== tr) old.classList.remove("kbd-focus");
    tr.classList.add("kbd-focus");
    tr.setAttribute("tabindex", "-1");
    tr.focus({ preventScroll: true });
    tr.scrollIntoView({ block: "nearest" });
    focusedKey = keyOf(tr);
  }

  function move(step) {
    var list = rows();
    if (!list.length) return;
    var at = list.indexOf(current());
    var next = at === -1 ? 0 : Math.min(Math.max(at + step, 0), list.length - 1);
    focusRow(list[next]);
  }

  function refresh() {
    var regions = document.querySelectorAll("[data-poll]");
    if (!regions.length || !window.htmx) {
      window.location.reload();
      return;
    }
    regions.forEach(function (el) {
      // An explicit refresh on a calm list that is holding new rows back shows them:
      // the operator asked for the current list, not for another "N new".
      var reveal = el.querySelector("[data-calm-reveal]");
      if (reveal && !reveal.disabled) reveal.click();
      else window.htmx.trigger(el, "consolewake");
    });
  }

  function helpDialog() {
    var dialog = document.getElementById("kbd-help");
    if (dialog) return dialog;
    dialog = document.createElement("dialog");
    dialog.id = "kbd-help";
    dialog.className = "kbd-help";
    dialog.setAttribute("aria-labelledby", "kbd-help-title");
    var title = document.createElement("h2");
    title.id = "kbd-help-title";
    title.textContent = "Keyboard shortcuts";
    var list = document.createElement("dl");
    HELP.forEach(function (entry) {
      var dt = document.createElement("dt");
      var kbd = document.createElement("kbd");
      kbd.textContent = entry[0];
      dt.appendChild(kbd);
      var dd = document.createElement("dd");
      dd.textContent = entry[1];
      list.appendChild(dt);
      list.appendChild(dd);
    });
    var note = document.createElement("p");
    note.className = "muted small";
    note.textContent = "Keys do nothing while you type in a field, or with Ctrl, Alt or \u2318 held.";
    var form = document.createElement("form");
    form.method = "dialog";
    var close = document.createElement("button");
    close.type = "submit";
    close.textContent = "Close";
    form.appendChild(close);
    dialog.appendChild(title);
    dialog.appendChild(list);
    dialog.appendChild(note);
    dialog.appendChild(form);
    document.body.appendChild(dialog);
    return dialog;
  }

  var actions = {
    "/": function () {
      var box = document.querySelector("main input[type=search], main input[name=q]");
      if (!box) return false;
      // On a phone the filters start folded away in a <details>: unfold it, or the
      // box cannot take the focus.
      var folded = box.closest("details:not([open])");
      if (folded) folded.open = true;
      box.focus();
      box.select();
    },
    "j": function () { move(1); },
    "k": function () { move(-1); },
    "x": function () {
      var tr = current();
      var box = tr && tr.querySelector("input[type=checkbox]");
      if (!box) return false;
      box.click();  // a real click: the selection count and the poll pause follow it
    },
    "Enter": function () {
      var tr = current();
      var link = tr && document.activeElement === tr && tr.querySelector("a[href]");
      if (!link) return false;
      link.click();
    },
    "r": refresh,
    "t": function () {
      var toggle = document.querySelector("[data-theme-toggle]");
      if (!toggle) return false;
      toggle.click();
    },
    "?": function () {
      var dialog = helpDialog();
      if (!dialog.open) dialog.showModal();
    }
  };

  document.addEventListener("keydown", function (evt) {
    if (evt.defaultPrevented || evt.isComposing || evt.ctrlKey || evt.altKey || evt.metaKey) return;
    if (typing(evt.target)) return;
    var help = document.getElementById("kbd-help");
    if (help && help.open) return;  // Esc (the dialog's own) closes it; nothing else acts
    var action = Object.prototype.hasOwnProperty.call(actions, evt.key) && actions[evt.key];
    if (!action) return;
    if (action() === false) return;  // nothing to act on: leave the key to the browser
    evt.preventDefault();
  });

  document.addEventListener("click", function (evt) {
    if (evt.target.closest && evt.target.closest("[data-kbd-help]")) actions["?"]();
  });

  /* A live update replaced the rows: put the focus back on the same row, unless the
     reader has moved on to something else meanwhile. */
  document.addEventListener("htmx:afterSettle", function () {
    if (!focusedKey || current()) return;
    var again = rows().filter(function (tr) { return keyOf(tr) === focusedKey; })[0];
    if (!again) return;
    again.classList.add("kbd-focus");
    again.setAttribute("tabindex", "-1");
    if (document.activeElement === document.body || !document.activeElement) {
      again.focus({ preventScroll: true });
    }
  });
})();
