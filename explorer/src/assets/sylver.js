// The Sylver coinage view (VIEWS.sylver in app.js; loaded before it and using
// its helpers el, api, $, showError and clearError). Type a position (the
// named numbers, any order, spaces or commas); the page shows t, the nameable
// numbers as chips coloured winning or losing (/api/sylver/position solves
// the position), the ender flags, what theory says about an infinite one, and
// the row of a Sylver table in the served directory for a two-number
// position. Click a chip to name that number; back and forward walk the line.
// Reachable over any directory as /?game=sylver. State in the URL:
// ?game=sylver&numbers=5+14&play=18,7.
"use strict";

const sylverView = (() => {
  const sv = {
    line: [],      // [{numbers, move}]: numbers the named list as text
    at: 0,
    data: null,    // /api/sylver/position of the shown position
    cache: new Map(),
  };

  async function fetchPosition(numbers) {
    if (!sv.cache.has(numbers)) {
      $("note").textContent = "solving...";
      try {
        sv.cache.set(numbers, await api("/api/sylver/position?" + new URLSearchParams({ numbers })));
      } finally { $("note").textContent = ""; }
    }
    return sv.cache.get(numbers);
  }

  const VALUE_WORDS = {
    P: "P: the player to move loses",
    N: "N: the player to move wins",
    unknown: "unknown",
    open: "open",
    over: "the game is over",
  };

  function fact(name, value, attrs = {}) {
    return el("tr", attrs, el("th", {}, name), el("td", {}, value));
  }

  function render() {
    const d = sv.data;
    $("turn").replaceChildren(el("span", { id: "sylver-value", "data-value": d.value }, VALUE_WORDS[d.value] || d.value));
    const chips = $("chips");
    if (d.nameable) {
      chips.replaceChildren(...d.nameable.map((c) => el("button", {
        type: "button", class: `chip ${c.status}`, "data-n": c.n, "data-status": c.status,
        title: c.n === 1 ? "naming 1 loses" : `name ${c.n} (${c.status})`,
        onclick: () => name(c.n),
      }, String(c.n))));
      if (!d.nameable.length) chips.append(el("span", { class: "hint" }, "nothing left to name"));
    } else {
      chips.replaceChildren(el("span", { class: "hint" },
        `gcd ${d.gcd}: infinitely many numbers remain nameable; type one to name it`));
    }
    const ender = d.ender ? (d.quiet_ender ? "yes (quiet)" : "yes (unquiet)") : "no";
    $("summary").replaceChildren(el("table", { id: "sylver-facts" },
      fact("named", d.numbers.join(" ")),
      fact("position", d.position),
      fact("gcd", String(d.gcd)),
      fact("t", d.t === null ? "none (infinite)" : String(d.t), { "data-t": d.t === null ? "" : d.t }),
      fact("nameable", d.genus === null ? "infinitely many" : String(d.genus)),
      fact("ender", ender, { "data-ender": d.ender ? (d.quiet_ender ? "quiet" : "unquiet") : "no" }),
      fact("value", d.value),
      fact("winning moves", d.winning ? (d.winning.join(" ") || "none") : "not known"),
      fact("why", d.reason),
      ...(d.positions !== null ? [fact("solver positions", `${d.positions} (budget ${d.budget})`)] : [])));
    const tableKids = [];
    if (d.table) {
      const r = d.table.row;
      tableKids.push(el("h2", {}, `table row (${d.table.job})`),
        el("table", { id: "sylver-row", "data-m": r.m, "data-n": r.n, "data-status": r.status },
          ...["m", "n", "t", "winning", "positions", "seconds", "status", "reference"]
            .filter((k) => r[k] !== undefined)
            .map((k) => fact(k, Array.isArray(r[k]) ? r[k].join(" ") || "none" : String(r[k])))));
    } else if (d.tables.length) {
      tableKids.push(el("p", { class: "hint" }, `no row for this position in ${d.tables.join(", ")}`));
    } else {
      tableKids.push(el("p", { class: "hint" }, "no Sylver table summary in the served directory"));
    }
    $("answers").replaceChildren(...tableKids);
    $("depth").replaceChildren();
    $("pos-input").value = sv.line[sv.at].numbers;
    $("moves").replaceChildren(...(d.winning || []).map((n) => {
      const li = el("li", { class: "move", "data-move": n }, el("span", { class: "mv" }, String(n)), " wins");
      li.addEventListener("click", () => name(n));
      return li;
    }));
    if (!d.winning) $("moves").append(el("li", { class: "none" }, "not known"));
    else if (!d.winning.length) $("moves").append(el("li", { class: "none" }, "none: every move loses"));
    $("line").replaceChildren(...sv.line.map((s, i) => {
      const li = el("li", { class: i === sv.at ? "current" : "", value: i }, `${s.move || "(first)"}  {${s.numbers}}`);
      li.addEventListener("click", () => goTo(i));
      return li;
    }));
    $("back").disabled = sv.at === 0;
    $("forward").disabled = sv.at >= sv.line.length - 1;
    document.body.dataset.state = "ready";
    document.body.dataset.position = d.numbers.join(" ");
  }

  function writeUrl() {
    const q = new URLSearchParams({ game: "sylver", numbers: sv.line[0].numbers });
    const moves = sv.line.slice(1, sv.at + 1).map((s) => s.move);
    if (moves.length) q.set("play", moves.join(","));
    history.replaceState(null, "", "?" + q);
  }

  async function show(index) {
    sv.at = index;
    sv.data = await fetchPosition(sv.line[index].numbers);
    render();
  }

  async function run(step) {
    clearError();
    try { await step(); writeUrl(); } catch (e) { showError(e.message); }
  }

  function goTo(index) {
    if (index < 0 || index >= sv.line.length) return;
    return run(() => show(index));
  }

  function name(n) {
    return run(async () => {
      const numbers = `${sv.line[sv.at].numbers} ${n}`;
      await fetchPosition(numbers); // an error leaves the line as it was
      sv.line = sv.line.slice(0, sv.at + 1);
      sv.line.push({ numbers, move: String(n) });
      await show(sv.line.length - 1);
    });
  }

  // A position and numbers named from it (the URL's numbers and play).
  async function loadLine(numbers, moves) {
    const first = await fetchPosition(numbers);
    sv.line = [{ numbers: first.numbers.join(" "), move: null }];
    for (const mv of moves) {
      const next = `${sv.line[sv.line.length - 1].numbers} ${mv}`;
      await fetchPosition(next);
      sv.line.push({ numbers: next, move: mv });
    }
    await show(sv.line.length - 1);
  }

  function setupControls(start) {
    $("back").addEventListener("click", () => goTo(sv.at - 1));
    $("forward").addEventListener("click", () => goTo(sv.at + 1));
    $("to-start").addEventListener("click", () => run(() => loadLine(start, [])));
    $("enter").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const text = $("pos-input").value.trim();
      run(() => loadLine(text, []));
    });
    document.addEventListener("keydown", (ev) => {
      if (ev.target.tagName === "INPUT") return;
      if (ev.key === "ArrowLeft") goTo(sv.at - 1);
      if (ev.key === "ArrowRight") goTo(sv.at + 1);
    });
  }

  async function main() {
    document.body.dataset.kind = "sylver";
    $("title").textContent = "Sylver coinage";
    $("board").style.display = "none";
    $("board").after(el("div", { id: "chips", "aria-label": "the nameable numbers" }));
    $("pos-input").placeholder = "named numbers, e.g. 5 14";
    $("moves-pane").querySelector("h2").textContent = "Winning moves";
    $("moves-pane").querySelector(".hint").textContent =
      "Click a number (above or here) to name it. Green: naming it wins; red: it loses.";
    const params = new URLSearchParams(location.search);
    const start = params.get("numbers") || "5 14";
    setupControls(start);
    try {
      await loadLine(start, (params.get("play") || "").split(",").filter(Boolean));
    } catch (e) {
      // Show {5, 14} beside the message, so the page stays usable.
      try { if (!sv.data) await loadLine("5 14", []); } catch (_) { /* the first message says enough */ }
      showError(e.message);
    }
  }

  return { main };
})();
