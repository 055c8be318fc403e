// Live logs of a job's page: follows the job's log stream (server-sent events from
// GET /jobs/ID/logs/stream), with follow (keep the newest line in view), pause (stop
// showing new output; it is kept and shown on resume), a stream and attempt picker
// (which gains a retry's attempt as it comes), and a download link that matches what
// is picked. Follow and pause show only while more output can come. The page shows the
// last few MiB: the server leaves out earlier output when the stream opens ("skipped"),
// and what the job writes after is trimmed from the front past showMax; a note above
// the output says how much is not shown, and Download has it all.
(function () {
  "use strict";
  var box = document.querySelector("[data-log-url]");
  if (!box || !window.EventSource) {
    return;
  }
  var out = document.getElementById("log-output");
  var status = document.getElementById("log-status");
  var follow = document.getElementById("log-follow");
  var pause = document.getElementById("log-pause");
  var streamSel = document.getElementById("log-stream");
  var attemptSel = document.getElementById("log-attempt");
  var download = document.getElementById("log-download");
  var live = document.getElementById("log-live");
  var source = null;
  var paused = false;
  var held = [];
  var heldBytes = 0;
  var attempt = "";
  var waiting = false;
  // The job's output was deleted for its age: an ended attempt shows none of it.
  var deleted = box.hasAttribute("data-output-deleted");
  // The output kept in view, in bytes: trimmed to showKeep once past showMax.
  var showMax = 4 << 20;
  var showKeep = 2 << 20;
  var shown = 0;
  var hidden = 0;
  var note = null;

  function query() {
    var q = [];
    if (attempt) { q.push("attempt=" + encodeURIComponent(attempt)); }
    if (streamSel.value) { q.push("stream=" + encodeURIComponent(streamSel.value)); }
    return q.length ? "?" + q.join("&") : "";
  }

  function say(text) { status.textContent = text; }

  var utf8 = new TextEncoder();
  // size is the bytes text takes as the job wrote it (UTF-8), as the server counts.
  function size(text) { return utf8.encode(text).length; }

  function mib(n) { return (n / (1 << 20)).toFixed(1) + " MiB"; }

  // leftOut says, above the output, how much earlier output is not shown.
  function leftOut(n) {
    hidden += n;
    if (!note) {
      note = document.createElement("span");
      note.className = "log-note";
      note.setAttribute("data-testid", "log-left-out");
      out.insertBefore(note, out.firstChild);
    }
    note.textContent = "[" + mib(hidden) + " of earlier output is not shown here: Download has all of it.]\n";
  }

  function show(d) {
    var span = document.createElement("span");
    span.className = "log-" + d.stream;
    if (d.stream === "stderr") { span.title = "stderr"; }
    span.textContent = d.text;
    out.appendChild(span);
    shown += size(d.text);
    if (shown > showMax) {
      var gone = 0;
      var first = note ? note.nextSibling : out.firstChild;
      while (shown > showKeep && first && first !== span) {
        var next = first.nextSibling;
        var n = size(first.textContent);
        gone += n;
        shown -= n;
        out.removeChild(first);
        first = next;
      }
      if (gone > 0) { leftOut(gone); }
    }
    if (follow.checked) { out.scrollTop = out.scrollHeight; }
  }

  // The picker lists the attempts there were when the page was drawn; it gains each
  // new one (a retry) as the page's live part or the stream learns of it, keeping the
  // one picked.
  function listAttempts(n) {
    var last = attemptSel.options.length > 1 ? Number(attemptSel.options[attemptSel.options.length - 1].value) : 0;
    for (var i = last + 1; i <= n; i++) {
      var o = document.createElement("option");
      o.value = String(i);
      o.textContent = String(i);
      attemptSel.appendChild(o);
    }
  }
  document.body.addEventListener("htmx:afterSwap", function (e) {
    if (e.target.id === "job-live") { listAttempts(Number(e.target.getAttribute("data-attempt")) || 0); }
  });

  // streaming shows follow and pause while the attempt shown may write more, and hides
  // them once it has ended, with what a pause held back shown.
  function streaming(on) {
    live.hidden = !on;
    if (!on && paused) {
      paused = false;
      pause.textContent = "Pause";
      pause.setAttribute("aria-pressed", "false");
      release();
    }
  }

  // hold keeps d back while paused, the last showMax bytes of it at most: what falls
  // out counts as left out.
  function hold(d) {
    held.push(d);
    heldBytes += size(d.text);
    var gone = 0;
    while (heldBytes > showMax && held.length > 1) {
      var n = size(held.shift().text);
      heldBytes -= n;
      gone += n;
    }
    if (gone > 0) { leftOut(gone); }
  }

  // release shows what a pause held back.
  function release() {
    held.forEach(show);
    held = [];
    heldBytes = 0;
  }

  function close() {
    if (source) { source.close(); source = null; }
  }

  // jobNow says what became of the job, as a sentence's end: "the job is succeeded"
  // read as the state's name pasted in, not as what a person writes.
  function jobNow(state) {
    switch (state) {
      case "succeeded": return "the job succeeded";
      case "failed": return "the job failed";
      case "cancelled": return "the job was cancelled";
      default: return "the job is " + state;
    }
  }

  function open() {
    close();
    out.textContent = "";
    held = [];
    heldBytes = 0;
    shown = 0;
    hidden = 0;
    note = null;
    download.href = box.getAttribute("data-log-download") + query();
    source = new EventSource(box.getAttribute("data-log-url") + query());
    say("Following the output live…");
    source.addEventListener("log", function (e) {
      var d = JSON.parse(e.data);
      if (waiting) {
        waiting = false;
        if (!paused) { say("Following the output live…"); }
      }
      if (paused) { hold(d); } else { show(d); }
    });
    source.addEventListener("skipped", function (e) {
      leftOut(JSON.parse(e.data).bytes);
    });
    source.addEventListener("following", function (e) {
      var n = JSON.parse(e.data).attempt;
      waiting = false;
      streaming(true);
      say(paused ? "Paused: attempt " + n + " runs; its new output is kept and shown when you resume." :
        "Following the output of attempt " + n + " live…");
    });
    source.addEventListener("waiting", function () {
      waiting = true;
      streaming(true);
      say("Waiting for the job to start; output appears here as soon as it does.");
    });
    source.addEventListener("end", function (e) {
      var d = JSON.parse(e.data);
      close();
      listAttempts(d.latest || 0);
      if (!attemptSel.value && d.latest > d.attempt && d.attempt > 0) {
        // A retry started: follow it, as "latest" asks.
        attempt = String(d.latest);
        open();
        return;
      }
      streaming(false);
      say(d.attempt ? "Attempt " + d.attempt + " ended; " + jobNow(d.state) +
        (deleted ? ". Its output was deleted, as said above." :
          hidden > 0 ? ". This is the end of its output; Download has all of it." : ". This is all of its output.") :
        "The job ended (" + d.state + ") without running, so there is no output.");
    });
    source.onerror = function () {
      if (source && source.readyState === EventSource.CONNECTING && !waiting) {
        say("The connection dropped; reconnecting and carrying on where it stopped…");
      }
    };
  }

  pause.addEventListener("click", function () {
    paused = !paused;
    pause.textContent = paused ? "Resume" : "Pause";
    pause.setAttribute("aria-pressed", String(paused));
    if (!paused) { release(); }
    say(paused ? "Paused: new output is kept and shown when you resume." : "Following the output live…");
  });
  follow.addEventListener("change", function () {
    if (follow.checked) { out.scrollTop = out.scrollHeight; }
  });
  streamSel.addEventListener("change", open);
  attemptSel.addEventListener("change", function () {
    attempt = attemptSel.value;
    open();
  });
  open();
})();
