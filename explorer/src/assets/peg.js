// The peg solitaire view (VIEWS.peg in app.js; loaded before it and using its
// helpers el, api, $, showError and clearError). A board where jumps are
// played by clicking a peg and then a highlighted hole; for the position
// shown, whether a lone peg can still end on each hole its class allows
// (/api/peg/position searches them); the ledger as a table and a log-scale
// chart (/api/peg/ledger) and the problem table (/api/peg/problems) when the
// served directory holds them. State in the URL:
// ?board=european&pos=PICTURE&play=d2-d4,f3-d3&finish=d4.
"use strict";

const pegView = (() => {
  const R = 30; // distance between neighbouring holes, in SVG units
  const pg = {
    info: null,
    board: null,   // "english" or "european"
    finish: null,  // the hole the page asks about
    line: [],      // [{pos, move}]; pos a one-line picture
    at: 0,
    data: null,    // /api/peg/position of the shown position
    cache: new Map(),
    selected: null,
  };

  const boardInfo = () => pg.info.boards.find((b) => b.name === pg.board);
  const defaultFinish = (board) => (pg.info.ledger && pg.info.ledger.board === board ? pg.info.ledger.vacancy : "d4");
  const group = (x) => String(x).replace(/\B(?=(\d{3})+(?!\d))/g, ",");

  // A position (search=false: without the finishing holes' searches).
  async function fetchPosition(pos, search = true) {
    const key = `${pg.board}|${pos}|${search}`;
    if (!search && pg.cache.has(`${pg.board}|${pos}|true`)) return pg.cache.get(`${pg.board}|${pos}|true`);
    if (!pg.cache.has(key)) {
      const q = new URLSearchParams({ board: pg.board });
      if (pos) q.set("pos", pos);
      if (!search) q.set("search", "0");
      $("note").textContent = search ? "searching the finishing holes..." : "";
      try { pg.cache.set(key, await api("/api/peg/position?" + q)); } finally { $("note").textContent = ""; }
    }
    return pg.cache.get(key);
  }

  // ---- jumps on pictures, so a line of jumps needs no request per step

  function marks(pos) { return pos.replace(/[\s/]/g, "").split(""); }

  function picture(cells, m) {
    let out = "";
    cells.forEach((c, i) => {
      if (i > 0 && c.row !== cells[i - 1].row) out += "/";
      out += m[i] === "." || m[i] === "_" ? "." : "o";
    });
    return out;
  }

  // The position after jump "from-to", or an error saying why it is not legal.
  function applyJump(pos, jump) {
    const cells = boardInfo().cells;
    const m = marks(pos);
    const index = Object.fromEntries(cells.map((c, i) => [c.name, i]));
    const [from, to] = jump.split("-");
    const bad = () => new Error(`jump ${jump} is not legal in ${pos}`);
    if (!(from in index) || !(to in index)) throw bad();
    const [f, t] = [cells[index[from]], cells[index[to]]];
    const straight = (f.row === t.row && Math.abs(f.col - t.col) === 2) || (f.col === t.col && Math.abs(f.row - t.row) === 2);
    if (!straight) throw bad();
    const over = cells.findIndex((c) => c.row === (f.row + t.row) / 2 && c.col === (f.col + t.col) / 2);
    const peg = (i) => m[i] === "o" || m[i] === "O" || m[i] === "x" || m[i] === "X";
    if (over < 0 || !peg(index[from]) || !peg(over) || peg(index[to])) throw bad();
    m[index[from]] = "."; m[over] = "."; m[index[to]] = "o";
    return picture(cells, m);
  }

  // ---- the board

  function drawBoard(data) {
    const svg = $("board");
    svg.replaceChildren();
    svg.setAttribute("viewBox", `${-R} ${-R} ${8 * R} ${8 * R}`);
    const xy = (h) => [(h.col - 1) * R, (7 - h.row) * R];
    const from = {};
    for (const j of data.jumps) (from[j.from] ||= []).push(j);
    const targets = new Map(pg.selected ? (from[pg.selected] || []).map((j) => [j.to, j]) : []);
    const finishes = new Map((data.finishes || []).map((f) => [f.hole, f]));
    const feasible = new Set(data.feasible_holes);
    for (const h of data.holes) {
      const [x, y] = xy(h);
      const f = finishes.get(h.name);
      const title = `${h.name}` + (feasible.has(h.name) ? `: a lone peg here is ${f ? f.status : "allowed by the class"}` : "");
      const g = el("svg:g", { "data-cell": h.name, "data-peg": h.peg ? "yes" : "no", "data-finish-status": f ? f.status : null },
        el("svg:title", {}, title),
        el("svg:circle", { class: "hole" + (targets.has(h.name) ? " target" : "") + (feasible.has(h.name) ? " feasible" : ""),
          cx: x, cy: y, r: R * 0.36 }));
      if (h.name === pg.finish) g.append(el("svg:circle", { class: "finish-ring", cx: x, cy: y, r: R * 0.46 }));
      if (h.peg) {
        g.append(el("svg:circle", { class: "peg" + (from[h.name] ? " movable" : "") + (pg.selected === h.name ? " selected" : ""),
          cx: x, cy: y, r: R * 0.3 }));
      }
      g.addEventListener("click", () => {
        const j = targets.get(h.name);
        if (j) return play(j.jump);
        pg.selected = from[h.name] && pg.selected !== h.name ? h.name : null;
        render();
      });
      svg.append(g);
    }
    // Column letters below the board, row numbers to its left.
    for (let i = 1; i <= 7; i++) {
      svg.append(el("svg:text", { class: "corner-label", x: (i - 1) * R, y: 6 * R + R * 0.85 }, "abcdefg"[i - 1]),
        el("svg:text", { class: "corner-label", x: -R * 0.75, y: (7 - i) * R + 3 }, String(i)));
    }
    const last = pg.line[pg.at] && pg.line[pg.at].move;
    if (last) {
      const [a, b] = last.split("-").map((n) => data.holes.find((h) => h.name === n));
      if (a && b) {
        const [[x1, y1], [x2, y2]] = [xy(a), xy(b)];
        const k = R * 0.32 / Math.hypot(x2 - x1, y2 - y1);
        svg.append(el("svg:line", { class: "arrow last", "data-arrow": last, x1, y1, x2: x2 - (x2 - x1) * k, y2: y2 - (y2 - y1) * k }));
      }
    }
  }

  // ---- the verdict for the chosen hole and the table of feasible holes

  function verdict(data) {
    const f = (data.finishes || []).find((x) => x.hole === pg.finish);
    let status, words;
    if (f) {
      status = f.status;
      const via = f.same_as ? ` (as ${f.same_as}, by a symmetry of the position)` : "";
      words = {
        solvable: `a lone peg can still end on ${pg.finish}${via}`,
        impossible: `no jump sequence leaves a lone peg on ${pg.finish}: every reachable position was searched${via}`,
        unknown: `unknown: the search for ${pg.finish} gave up after ${group(data.budget)} positions`,
      }[f.status] || f.status;
    } else {
      status = "infeasible";
      words = data.feasible_holes.length
        ? `a lone peg cannot end on ${pg.finish}: the position class allows only ${data.feasible_holes.join(", ")}`
        : `a lone peg cannot end anywhere: no single hole has this position's class`;
    }
    return el("div", { id: "verdict", class: "category " + status, "data-finish": pg.finish, "data-status": status }, words);
  }

  function finishTable(data) {
    if (!data.finishes || !data.finishes.length) return [];
    const rows = data.finishes.map((f) => {
      const tr = el("tr", { "data-hole": f.hole, "data-status": f.status, class: f.hole === pg.finish ? "chosen" : "" },
        el("th", {}, f.hole),
        el("td", { class: f.status }, f.status),
        el("td", { class: "num" }, f.same_as ? `as ${f.same_as}` : group(f.positions)),
        el("td", { class: "solution" }, f.solution === undefined ? "" : f.solution === "" ? "(done)" : f.solution));
      tr.addEventListener("click", () => { pg.finish = f.hole; writeUrl(); render(); });
      if (f.solution) {
        tr.lastChild.append(" ", el("button", { type: "button", "data-play": f.hole,
          onclick: (ev) => { ev.stopPropagation(); playSolution(f.solution); } }, "play it"));
      }
      return tr;
    });
    return [el("table", { class: "answers", id: "finishes" },
      el("tr", {}, el("th", {}, "hole"), el("th", {}, "lone peg there"), el("th", {}, "positions searched"), el("th", {}, "solution")),
      rows)];
  }

  // ---- the ledger and the problem table (fetched once)

  const SERIES = [
    ["positions", "positions", "var(--b)"],
    ["up_to_symmetry", "up to symmetry", "var(--c)"],
    ["winnable", "still winnable", "var(--a)"],
  ];

  function chart(levels) {
    const [W, H, L, B, T] = [520, 260, 48, 30, 12];
    const max = Math.max(1, ...levels.map((r) => r.positions));
    const top = Math.ceil(Math.log10(max));
    const n = Math.max(1, levels[levels.length - 1].jumps);
    const X = (j) => L + (W - L - 10) * j / n;
    const Y = (v) => T + (H - T - B) * (1 - Math.log10(v) / top);
    const svg = el("svg:svg", { id: "ledger-chart", viewBox: `0 0 ${W} ${H}`, role: "img",
      "aria-label": "positions per jump count, log scale" });
    for (let e = 0; e <= top; e++) {
      svg.append(el("svg:line", { class: "grid", x1: L, x2: W - 10, y1: Y(10 ** e), y2: Y(10 ** e) }),
        el("svg:text", { class: "tick", x: L - 4, y: Y(10 ** e) + 3, "text-anchor": "end" }, e === 0 ? "1" : `1e${e}`));
    }
    for (let j = 0; j <= n; j += 5) svg.append(el("svg:text", { class: "tick", x: X(j), y: H - B + 14, "text-anchor": "middle" }, String(j)));
    svg.append(el("svg:text", { class: "tick", x: (L + W) / 2, y: H - 3, "text-anchor": "middle" }, "jumps made"));
    SERIES.forEach(([key, label, colour], i) => {
      // A zero has no place on a log scale: the line breaks there.
      let d = "", pen = "M", points = 0;
      for (const r of levels) {
        if (r[key] > 0) { d += `${pen}${X(r.jumps).toFixed(1)},${Y(r[key]).toFixed(1)} `; pen = "L"; points++; } else pen = "M";
      }
      svg.append(el("svg:path", { class: "series", "data-series": key, "data-points": points, d, style: `stroke:${colour}` }));
      svg.append(el("svg:rect", { x: L + 10 + i * 130, y: T, width: 10, height: 10, style: `fill:${colour}` }),
        el("svg:text", { class: "tick", x: L + 24 + i * 130, y: T + 9 }, label));
    });
    return svg;
  }

  function ledgerSection(l) {
    const cols = [["jumps", "jumps"], ["pegs", "pegs"], ["positions", "positions"], ["up_to_symmetry", "up to symmetry"],
      ["sequences", "jump sequences"], ["dead_ends", "dead ends"], ["winnable", "still winnable"],
      ["winnable_up_to_symmetry", "winnable up to symmetry"]];
    const head = el("tr", {}, cols.map(([, t]) => el("th", {}, t)));
    const rows = l.levels.map((r) => el("tr", { "data-jumps": r.jumps }, cols.map(([k]) => el("td", { class: "num" }, group(r[k])))));
    const t = l.totals;
    const oeis = l.oeis.length
      ? el("p", { id: "oeis" }, "OEIS: ", l.oeis.map((c) => el("span", { class: c.mismatches ? "no" : "yes", "data-oeis": c.id },
        `${c.id} (${c.what}) ${c.mismatches ? `${c.mismatches} terms differ` : "agrees"}; `)))
      : null;
    return el("section", { id: "ledger" },
      el("h2", {}, `Ledger: ${l.board} board, ${l.vacancy} vacant`),
      chart(l.levels),
      el("p", {}, `${group(t.positions)} positions (${group(t.up_to_symmetry)} up to symmetry), ${group(t.dead_ends)} dead ends, `,
        `${group(t.winnable)} still winnable; ${group(t.solutions)} solutions, ending on `,
        l.solutions_by_hole.map((h) => `${h.hole} ${group(h.solutions)}`).join(", "), "."),
      oeis,
      el("details", {}, el("summary", {}, "the table"),
        el("div", { class: "scroll" }, el("table", { class: "answers", id: "ledger-table" }, head, rows))));
  }

  function problemsSection(p) {
    const boards = p.boards.map((b) => {
      const rows = b.rows.map((r) => {
        const tr = el("tr", { "data-start": r.start, "data-finish": r.finish, "data-status": r.status, title: "open this problem" },
          el("td", {}, r.start), el("td", {}, r.finish), el("td", { class: r.status === "solvable" ? "win" : r.status === "impossible" ? "loss" : "draw" }, r.status),
          el("td", { class: "num" }, group(r.positions)), el("td", { class: "solution" }, r.solution || ""));
        tr.addEventListener("click", () => openProblem(b.board, r.start, r.finish));
        return tr;
      });
      return el("details", { "data-board": b.board, open: b.board === pg.board ? "" : null },
        el("summary", {}, `${b.board}: ${b.problems} problems, ${b.class_feasible} allowed by the class: `,
          `${b.solvable} solvable, ${b.impossible} impossible, ${b.undecided} undecided`),
        el("div", { class: "scroll" }, el("table", { class: "answers problems" },
          el("tr", {}, ["start (vacant)", "finish", "status", "positions searched", "solution"].map((t) => el("th", {}, t))), rows)));
    });
    return el("section", { id: "problems" }, el("h2", {}, "Single-vacancy problems"),
      el("p", { class: "hint" }, "Click a row to play it from its start."), boards);
  }

  async function tables() {
    const parts = [];
    if (pg.info.ledger) parts.push(ledgerSection(await api("/api/peg/ledger")));
    if (pg.info.problems) parts.push(problemsSection(await api("/api/peg/problems")));
    $("answers").replaceChildren(...parts);
  }

  // ---- rendering and navigation

  function render() {
    const data = pg.data;
    drawBoard(data);
    $("turn").replaceChildren(`${data.pegs} peg${data.pegs === 1 ? "" : "s"}: ${data.status}`);
    $("turn").dataset.status = data.status;
    $("summary").replaceChildren(
      el("div", { class: "position" }, data.position),
      verdict(data),
      el("div", { id: "class", "data-a": data.class.a, "data-b": data.class.b },
        `position class (${data.class.a}, ${data.class.b}); a lone peg can end only on `,
        data.feasible_holes.length ? data.feasible_holes.join(", ") : "no hole"),
      ...finishTable(data));
    $("pos-input").value = data.position;
    $("finish-select").value = pg.finish;
    for (const b of document.querySelectorAll("[data-board-button]")) b.classList.toggle("current", b.dataset.boardButton === pg.board);
    $("moves").replaceChildren(...data.jumps.map((j) => {
      const li = el("li", { class: "move", "data-move": j.jump, title: j.child },
        el("span", { class: "mv" }, j.jump), ` over ${j.over}`);
      li.addEventListener("click", () => play(j.jump));
      return li;
    }));
    if (!data.jumps.length) $("moves").append(el("li", { class: "none" }, "no jumps: the game is over"));
    $("line").replaceChildren(...pg.line.map((s, i) => {
      const li = el("li", { class: i === pg.at ? "current" : "", value: i }, `${s.move || "(first)"}  ${s.pos}`);
      li.addEventListener("click", () => goTo(i));
      return li;
    }));
    $("back").disabled = pg.at === 0;
    $("forward").disabled = pg.at >= pg.line.length - 1;
    document.body.dataset.state = "ready";
    document.body.dataset.position = data.position;
    document.body.dataset.board = pg.board;
  }

  function writeUrl() {
    const q = new URLSearchParams();
    if (pg.board !== pg.info.board) q.set("board", pg.board);
    if (pg.line.length && pg.line[0].pos !== boardInfo().start) q.set("pos", pg.line[0].pos);
    const moves = pg.line.slice(1, pg.at + 1).map((s) => s.move);
    if (moves.length) q.set("play", moves.join(","));
    if (pg.finish !== defaultFinish(pg.board)) q.set("finish", pg.finish);
    const s = q.toString();
    history.replaceState(null, "", s ? "?" + s : location.pathname);
  }

  async function show(index) {
    const data = await fetchPosition(pg.line[index].pos);
    pg.at = index;
    pg.selected = null;
    pg.data = data;
    render();
  }

  async function run(step) {
    clearError();
    try { await step(); writeUrl(); } catch (e) { showError(e.message); }
  }

  function goTo(index) {
    if (index < 0 || index >= pg.line.length) return;
    return run(() => show(index));
  }

  function play(jump) {
    return run(async () => {
      const next = applyJump(pg.line[pg.at].pos, jump);
      pg.line = pg.line.slice(0, pg.at + 1);
      pg.line.push({ pos: next, move: jump });
      await show(pg.line.length - 1);
    });
  }

  function playSolution(solution) {
    return run(async () => {
      let pos = pg.line[pg.at].pos;
      pg.line = pg.line.slice(0, pg.at + 1);
      for (const jump of solution.split(" ")) {
        pos = applyJump(pos, jump);
        pg.line.push({ pos, move: jump });
      }
      await show(pg.at + 1);
    });
  }

  // A board, a position on it (its start when null) and jumps played from it.
  async function loadLine(board, pos, moves) {
    pg.board = board;
    if (!boardInfo()) throw new Error(`unknown peg board ${board}: english or european`);
    const first = await fetchPosition(pos || boardInfo().start, moves.length === 0);
    pg.line = [{ pos: first.position, move: null }];
    for (const mv of moves) pg.line.push({ pos: applyJump(pg.line[pg.line.length - 1].pos, mv), move: mv });
    await show(pg.line.length - 1);
  }

  function openProblem(board, start, finish) {
    return run(async () => {
      const cells = pg.info.boards.find((b) => b.name === board).cells;
      pg.finish = finish;
      await loadLine(board, picture(cells, cells.map((c) => (c.name === start ? "." : "o"))), []);
      window.scrollTo(0, 0);
    });
  }

  function setupControls() {
    $("back").addEventListener("click", () => goTo(pg.at - 1));
    $("forward").addEventListener("click", () => goTo(pg.at + 1));
    $("to-start").addEventListener("click", () => run(() => loadLine(pg.board, null, [])));
    $("enter").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const text = $("pos-input").value.trim();
      run(() => loadLine(pg.board, text || null, []));
    });
    document.addEventListener("keydown", (ev) => {
      if (ev.target.tagName === "INPUT" || ev.target.tagName === "SELECT") return;
      if (ev.key === "ArrowLeft") goTo(pg.at - 1);
      if (ev.key === "ArrowRight") goTo(pg.at + 1);
    });
    const select = el("select", { id: "finish-select", title: "the hole a lone peg should end on" });
    const fill = () => select.replaceChildren(...boardInfo().cells.map((c) => el("option", { value: c.name }, c.name)));
    select.addEventListener("change", () => { pg.finish = select.value; writeUrl(); render(); });
    const boards = pg.info.boards.map((b) => el("button", { type: "button", "data-board-button": b.name,
      onclick: () => run(async () => { pg.finish = defaultFinish(b.name); await loadLine(b.name, null, []); fill(); }) }, b.name));
    $("witnesses").replaceChildren(el("span", {}, "board:"), ...boards, el("label", { for: "finish-select" }, "finish on"), select);
    return fill;
  }

  async function main(info) {
    pg.info = info;
    $("pos-input").placeholder = "o peg, . hole, rows 7 to 1 split by /";
    const params = new URLSearchParams(location.search);
    pg.board = params.get("board") || info.board;
    if (!boardInfo()) {
      showError(`unknown peg board ${pg.board}: english or european`);
      pg.board = info.board;
    }
    pg.finish = params.get("finish") || defaultFinish(pg.board);
    const fill = setupControls();
    fill();
    const tablesDone = tables().catch((e) => showError(e.message));
    try {
      await loadLine(pg.board, params.get("pos"), (params.get("play") || "").split(",").filter(Boolean));
      if (!boardInfo().cells.some((c) => c.name === pg.finish)) throw new Error(`${pg.finish} is not a hole of the ${pg.board} board`);
    } catch (e) {
      // Show the start beside the message, so the page stays usable.
      try { if (!pg.data) await loadLine(pg.board, null, []); } catch (_) { /* the first message says enough */ }
      await tablesDone;
      return showError(e.message);
    }
    await tablesDone;
    if (!$("error").hidden) document.body.dataset.state = "error";
  }

  return { main };
})();
