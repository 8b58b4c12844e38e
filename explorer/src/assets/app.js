// The explorer page: asks /api/info which game the tablebases hold and picks
// that game's view (VIEWS below); the board, the navigation and the move list
// are shared. The state lives in the URL (?pos=TEXT&play=m1,m2 or
// ?witness=KIND), so a position can be linked and a test can open one with a
// plain URL. When a render is complete <body data-state="ready">; on an error,
// data-state="error" and #error says why.
"use strict";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const COLOURS = { A: "var(--a)", B: "var(--b)", C: "var(--c)", 1: "var(--a)", 2: "var(--b)" };
const D = 34; // distance between neighbouring cells, in SVG units

const app = {
  info: null, view: null,
  line: [],      // [{pos, move}] from the first position; move is how we got there
  at: 0,         // index of the shown position in line
  data: null,    // /api/position of the shown position
  cache: new Map(),
  selected: null,
  witnessMoves: [], // kingmaker witness: the two moves that pick the winner
};

function el(tag, attrs = {}, ...kids) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined) continue;
    if (k === "class") e.setAttribute("class", v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k.nodeType ? k : document.createTextNode(k));
  return e;
}

async function api(path) {
  let r;
  try { r = await fetch(path); } catch (e) { throw new Error(`the server did not answer (${e.message})`); }
  let body;
  try { body = await r.json(); } catch (e) { throw new Error(`${path}: HTTP ${r.status}, not JSON`); }
  if (!r.ok) throw new Error(body.error || `${path}: HTTP ${r.status}`);
  return body;
}

async function position(text) {
  const key = text || "";
  if (!app.cache.has(key)) {
    const q = text ? "?" + new URLSearchParams({ pos: text }) : "";
    app.cache.set(key, await api("/api/position" + q));
  }
  return app.cache.get(key);
}

function showError(msg) {
  const e = $("error");
  e.textContent = msg;
  e.hidden = false;
  document.body.dataset.state = "error";
}

function clearError() {
  $("error").hidden = true;
  $("error").textContent = "";
}

function swatch(p) { return el("span", { class: "swatch", style: `background:${COLOURS[p]}` }); }

// ---- the board, shared by the views: cells carry u (across) and v (down) in half-cell units

function xy(cell) { return [cell.u * D / 2, cell.v * D * Math.sqrt(3) / 2]; }

function drawBoard(data) {
  const svg = $("board");
  svg.replaceChildren();
  const cells = app.info.cells;
  const pts = cells.map(xy);
  const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
  const pad = D * 1.7; // room for the goal labels
  const [x0, y0] = [Math.min(...xs) - pad, Math.min(...ys) - pad];
  svg.setAttribute("viewBox", `${x0} ${y0} ${Math.max(...xs) - x0 + pad} ${Math.max(...ys) - y0 + pad}`);
  svg.append(el("svg:defs", {}, el("svg:marker", { id: "head", viewBox: "0 0 10 10", refX: 8, refY: 5,
    markerWidth: 3.5, markerHeight: 3.5, orient: "auto-start-reverse" }, el("svg:path", { d: "M0,0 L10,5 L0,10 z", fill: "#111" }))));
  const owner = {};
  for (const [p, list] of Object.entries(data.pieces)) for (const c of list) owner[c] = p;
  const mover = data.position.to_move;
  const movesFrom = {};
  for (const m of data.moves) if (m.from) (movesFrom[m.from] ||= []).push(m);
  const targets = new Set(app.selected ? (movesFrom[app.selected] || []).map((m) => m.to) : []);
  const at = {};
  cells.forEach((c, i) => { at[c.name] = pts[i]; });
  // Corners: tinted by their owner, darker for the goal (where the owner must go).
  cells.forEach((c, i) => {
    const [x, y] = pts[i];
    const fill = c.owner ? `color-mix(in srgb, ${COLOURS[c.owner]} ${c.zone === "goal" ? 30 : 10}%, white)` : "#fff";
    const g = el("svg:g", { "data-cell": c.name, "data-zone": c.zone, "data-owner": c.owner },
      el("svg:title", {}, c.name + (c.owner ? ` (${c.owner}'s ${c.zone})` : "")),
      el("svg:circle", { class: "cell" + (targets.has(c.name) ? " target" : ""), cx: x, cy: y, r: D * 0.4, style: `fill:${fill}` }));
    g.addEventListener("click", () => clickCell(c.name, movesFrom));
    svg.append(g);
  });
  // Goal labels just outside each goal corner, away from the board's centre.
  const mid = (a) => a.reduce((s, v) => s + v, 0) / a.length;
  const [mx, my] = [mid(xs), mid(ys)];
  for (const p of app.info.players) {
    const goal = cells.filter((c) => c.zone === "goal" && c.owner === p).map(xy);
    if (!goal.length) continue;
    const gx = mid(goal.map((g) => g[0])) - mx, gy = mid(goal.map((g) => g[1])) - my;
    const far = Math.max(...goal.map((g) => Math.hypot(g[0] - mx, g[1] - my)));
    const len = Math.hypot(gx, gy) || 1, r = far + D * 0.95;
    svg.append(el("svg:text", { class: "corner-label", x: mx + gx / len * r, y: my + gy / len * r + 4 }, `${p}'s goal`));
  }
  for (const [name, p] of Object.entries(owner)) {
    const [x, y] = at[name];
    const movable = p === mover && movesFrom[name];
    const g = el("svg:g", { "data-piece": p, "data-at": name },
      el("svg:title", {}, `${name}: ${p}`),
      el("svg:circle", { class: "piece" + (movable ? " movable" : "") + (app.selected === name ? " selected" : ""),
        cx: x, cy: y, r: D * 0.34, style: `fill:${COLOURS[p]}` }),
      el("svg:text", { class: "piece-label", x, y, "font-size": D * 0.36 }, p));
    g.addEventListener("click", () => clickCell(name, movesFrom));
    svg.append(g);
  }
  const last = app.line[app.at] && app.line[app.at].move;
  if (last && last.includes("-")) drawArrow(last, "arrow last");
  return at;
}

function drawArrow(mv, cls) {
  const [from, to] = mv.split("-");
  const cells = Object.fromEntries(app.info.cells.map((c) => [c.name, xy(c)]));
  if (!cells[from] || !cells[to]) return;
  const [x1, y1] = cells[from], [x2, y2] = cells[to];
  // From the origin's centre to the edge of the landing piece, so that even a
  // step between neighbours shows a visible shaft.
  const len = Math.hypot(x2 - x1, y2 - y1) || 1, k = D * 0.38 / len;
  $("board").append(el("svg:line", { class: cls, "data-arrow": mv, x1, y1, x2: x2 - (x2 - x1) * k, y2: y2 - (y2 - y1) * k }));
}

function clearArrows() { for (const a of $("board").querySelectorAll(".arrow:not(.last)")) a.remove(); }

function clickCell(name, movesFrom) {
  if (app.selected) {
    const m = (movesFrom[app.selected] || []).find((x) => x.to === name);
    if (m) return play(m);
  }
  app.selected = movesFrom[name] && app.selected !== name ? name : null;
  render();
}

// ---- the views: what each game says about a position and a move

const CATEGORY_WORDS = {
  terminal: "the game is over",
  solo_win: "solo win: a player can force its own win",
  spoiler_draw: "spoiler draw: nobody can force a win, and a player can force at least a draw alone",
  kingmaker: "kingmaker: nobody wins alone, but a player can hand a forced win to another",
  other: "other (none of the categories)",
};

const cc3 = {
  summary(data) {
    const p = data.position;
    return [
      el("div", { class: "position" }, p.position),
      el("div", { id: "category", class: "category", "data-category": p.category }, CATEGORY_WORDS[p.category] || p.category),
      el("div", { id: "outcome", "data-outcome": p.outcome }, p.outcome === "ongoing" ? "the game is on" : p.outcome),
    ];
  },
  answers(data) {
    const p = data.position;
    const rows = app.info.players.map((x) => {
      const v = p.solo[x];
      const others = app.info.players.filter((y) => y !== x).join(" and ");
      const words = { win: `${x} forces its own win`, loss: `${others} can keep ${x} from winning`,
        draw: `${x} cannot win but can force a draw (spoiler)`, illegal: "illegal" }[v];
      return el("tr", { id: `solo-${x}`, "data-value": v, title: words },
        el("th", {}, swatch(x), x),
        el("td", { class: v }, v),
        el("td", { class: p.pairout[x] ? "yes" : "no", "data-pairout": p.pairout[x] ? "yes" : "no" }, p.pairout[x] ? "yes" : "no"),
        el("td", { class: v === "draw" ? "draw" : "no" }, v === "draw" ? "yes" : "no"),
        el("td", { class: "words" }, words));
    });
    const enable = Object.entries(p.enable).map(([pair, forced]) => {
      const [x, y] = pair.split(">");
      // data-pair spells X>Y as X-Y: a ">" in an attribute is escaped differently by different serialisers.
      return el("li", { class: "enable", "data-pair": `${x}-${y}`, "data-value": forced ? "yes" : "no" },
        el("span", { class: forced ? "yes" : "no" }, `enable(${pair}) ${forced ? "forced" : "not forced"}`),
        forced ? `: ${x} can hand a forced win to ${y} (${x} and ${y} together force it)` : `: ${x} and ${y} together cannot force ${y}'s win`);
    });
    return [
      el("h2", {}, "The 12 answers"),
      el("table", { class: "answers" },
        el("tr", {}, el("th", {}, "player X"), el("th", {}, "solo(X)"), el("th", {}, "pairout(X)"), el("th", {}, "spoiler draw"), el("th", {}, "")),
        rows),
      el("ul", { id: "enable", class: "enable" }, enable),
    ];
  },
  depth(data) {
    if (!data.depth.length) return [];
    return [el("h2", {}, "Plies to the end"), el("ul", {}, data.depth.map((d) =>
      el("li", { "data-question": d.question, "data-plies": d.plies ?? "" },
        `${d.question} ${d.value}: `, d.plies !== null && d.plies !== undefined
          ? `${d.forcer} end${d.forcer.includes(" and ") ? "" : "s"} the game in ${d.plies} pl${d.plies === 1 ? "y" : "ies"} (the others delaying)`
          : `unknown (${d.note})`)))];
  },
  moveLabel(m) {
    const c = m.child;
    const tags = m.forced_win.map((p) => el("span", { class: "tag", style: `background:${COLOURS[p]}` }, `forced win for ${p}`));
    const draws = Object.entries(c.solo).filter(([, v]) => v === "draw").map(([p]) => `${p} can draw`);
    return [el("span", { class: "category-word" }, ` ${c.category.replace("_", " ")}`), draws.length ? ` (${draws.join(", ")})` : "", ...tags];
  },
  moveAttrs(m) { return { "data-forced-win": m.forced_win.join(" "), "data-category": m.child.category }; },
};

const cc2 = {
  summary(data) {
    const p = data.position;
    return [
      el("div", { class: "position" }, p.position),
      el("div", { id: "category", class: "category " + p.for_mover, "data-value": p.value, "data-for-mover": p.for_mover },
        p.outcome !== "ongoing" ? p.outcome : `player ${p.to_move} to move: ${p.for_mover}`),
      el("div", {}, `value for player 1: ${p.value}`),
    ];
  },
  answers() { return []; },
  depth(data) {
    if (data.plies === null || data.plies === undefined) return data.depth_note ? [el("p", {}, `plies to the end: unknown (${data.depth_note})`)] : [];
    return [el("p", { id: "plies", "data-plies": data.plies }, `the winner ends the game in ${data.plies} plies (the loser delaying)`)];
  },
  moveLabel(m) {
    const c = m.child;
    const mover = c.to_move === "1" ? "2" : "1"; // who just moved
    const forMover = { win: "loss", loss: "win", draw: "draw" }[c.for_mover] || c.for_mover;
    return [el("span", { class: forMover }, ` ${forMover} for ${mover}`)];
  },
  moveAttrs(m) { return { "data-value": m.child.value }; },
};

// The ranked three-player game (docs/RANKED.md): top2 for each player, the
// race for second after a finish, and the moves that keep the mover's value.
const TOP2_WORDS = {
  win: (x) => `${x} can force a finish in the first two`,
  loss: (x) => `the other two can force ${x} last`,
  draw: (x) => `neither: ${x} can keep from being forced last but cannot force a top-two finish`,
  illegal: () => "illegal",
};

const ranked = {
  summary(data) {
    const p = data.position;
    const race = p.race
      ? el("div", { id: "race", "data-value": p.race.value },
        `${p.race.first} finished first; the race for second, ${p.race.racers[0]} against ${p.race.racers[1]}: `,
        el("span", { class: p.race.value }, p.race.value), ` for ${p.race.racers[0]}`)
      : "";
    return [
      el("div", { class: "position" }, p.position),
      el("div", { id: "outcome", "data-outcome": p.outcome }, p.outcome === "ongoing" ? "the game is on" : p.outcome),
      race,
    ];
  },
  answers(data) {
    const p = data.position;
    const rows = app.info.players.map((x) => el("tr", { id: `top2-${x}`, "data-value": p.top2[x] },
      el("th", {}, swatch(x), x),
      el("td", { class: p.top2[x] }, p.top2[x]),
      el("td", { class: "words" }, TOP2_WORDS[p.top2[x]](x))));
    return [
      el("h2", {}, "Top two (1st or 2nd place)"),
      el("table", { class: "answers", id: "top2" },
        el("tr", {}, el("th", {}, "player X"), el("th", {}, "top2(X)"), el("th", {}, "")), rows),
    ];
  },
  depth() { return []; },
  moveLabel(m) {
    const c = m.child;
    const values = app.info.players.map((x) => el("span", { class: c.top2[x] }, ` ${x} ${c.top2[x]}`));
    const keeps = m.keeps ? [el("span", { class: "tag keeps" }, "keeps the mover's value")] : [];
    return [...values, c.outcome !== "ongoing" ? ` (${c.outcome})` : "", ...keeps];
  },
  moveAttrs(m) { return { "data-keeps": m.keeps ? "yes" : "no" }; },
};

// pegView (peg.js) and sylverView (sylver.js) draw their own boards and
// tables: each has a main() and takes over.
const VIEWS = { cc3, cc2, ranked, peg: pegView, sylver: sylverView };

// ---- rendering and navigation

function render() {
  const data = app.data;
  const view = app.view;
  drawBoard(data);
  const p = data.position;
  const who = app.info.kind === "cc2" ? `player ${p.to_move}` : p.to_move;
  $("turn").replaceChildren(...(p.outcome === "ongoing" ? [swatch(p.to_move), `${who} to move`] : [p.outcome]));
  $("turn").dataset.turn = p.to_move;
  $("summary").replaceChildren(...view.summary(data));
  $("answers").replaceChildren(...view.answers(data));
  $("depth").replaceChildren(...view.depth(data));
  $("pos-input").value = p.position;
  $("moves").replaceChildren(...data.moves.map((m) => {
    const li = el("li", { class: "move" + (app.witnessMoves.includes(m.move) ? " witness" : ""), "data-move": m.move,
      ...view.moveAttrs(m), title: m.child.position },
      el("span", { class: "mv" }, m.move), "\u2192", ...view.moveLabel(m));
    li.addEventListener("click", () => play(m));
    li.addEventListener("mouseenter", () => { clearArrows(); drawArrow(m.move, "arrow"); });
    li.addEventListener("mouseleave", clearArrows);
    return li;
  }));
  if (!data.moves.length) $("moves").append(el("li", { class: "none" }, "no moves: the game is over"));
  $("line").replaceChildren(...app.line.map((s, i) => {
    const li = el("li", { class: i === app.at ? "current" : "", value: i }, `${s.move || "(first)"}  ${s.pos}`);
    li.addEventListener("click", () => goTo(i));
    return li;
  }));
  $("back").disabled = app.at === 0;
  $("forward").disabled = app.at >= app.line.length - 1;
  document.body.dataset.state = "ready";
  document.body.dataset.position = p.position;
}

function writeUrl() {
  const q = new URLSearchParams();
  if (app.line[0].pos !== app.info.start) q.set("pos", app.line[0].pos);
  const moves = app.line.slice(1, app.at + 1).map((s) => s.move);
  if (moves.length) q.set("play", moves.join(","));
  const s = q.toString();
  history.replaceState(null, "", s ? "?" + s : location.pathname);
}

async function show(index) {
  app.at = index;
  app.selected = null;
  app.data = await position(app.line[index].pos);
  render();
}

async function goTo(index) {
  if (index < 0 || index >= app.line.length) return;
  try { clearError(); await show(index); writeUrl(); } catch (e) { showError(e.message); }
}

async function play(m) {
  app.line = app.line.slice(0, app.at + 1);
  app.line.push({ pos: m.child.position, move: m.move });
  app.witnessMoves = [];
  $("note").textContent = "";
  await goTo(app.line.length - 1);
}

// A position, then moves played from it by name (the URL's pos and play).
async function loadLine(pos, moves) {
  let data = await position(pos);
  app.line = [{ pos: data.position.position, move: null }];
  for (const mv of moves) {
    const m = data.moves.find((x) => x.move === mv);
    if (!m) {
      const legal = data.moves.map((x) => x.move).join(", ") || "none";
      throw new Error(`move ${mv} is not legal in ${data.position.position} (legal: ${legal})`);
    }
    app.line.push({ pos: m.child.position, move: m.move });
    data = await position(m.child.position);
  }
  await show(app.line.length - 1);
}

const WITNESS_WORDS = {
  "solo-win": (w) => `first solo win from the start: ${w.player} forces its own win`,
  "spoiler-draw": (w) => `first spoiler draw from the start: ${w.player} can force a draw`,
  kingmaker: (w) => `kingmaker: ${w.player} to move cannot win and picks the winner (the highlighted moves)`,
  "draw-cycle": (w) => `draw cycle: ${w.player} keeps the draw by repetition; the line goes round the cycle`,
};

async function loadWitness(kind) {
  $("note").textContent = `searching for a ${kind} witness...`;
  const w = await api("/api/witness?" + new URLSearchParams({ kind }));
  if (w.none) {
    $("note").textContent = `no ${kind} witness: ${w.none}`;
    if (!app.data) await loadLine(null, []);
    return;
  }
  app.line = w.line.map((s) => ({ pos: s.position.position, move: s.move }));
  const at = app.line.length - 1;
  for (const s of w.cycle || []) app.line.push({ pos: s.position.position, move: s.move });
  app.witnessMoves = (w.moves || []).map((m) => m.move);
  await show(at);
  $("note").textContent = `${WITNESS_WORDS[kind] ? WITNESS_WORDS[kind](w) : kind}; ${w.depth} plies from the start.`;
  document.body.dataset.witness = kind;
  writeUrl();
}

function setupControls() {
  $("back").addEventListener("click", () => goTo(app.at - 1));
  $("forward").addEventListener("click", () => goTo(app.at + 1));
  $("to-start").addEventListener("click", () => run(() => { app.witnessMoves = []; $("note").textContent = ""; return loadLine(null, []); }));
  $("enter").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = $("pos-input").value.trim();
    run(async () => { app.witnessMoves = []; $("note").textContent = ""; await loadLine(text || null, []); });
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "INPUT") return;
    if (ev.key === "ArrowLeft") goTo(app.at - 1);
    if (ev.key === "ArrowRight") goTo(app.at + 1);
  });
  $("witnesses").replaceChildren(...(app.info.witnesses.length ? [el("span", {}, "witnesses:")] : []),
    ...app.info.witnesses.map((k) => el("button", { type: "button", "data-witness": k, onclick: () => run(() => loadWitness(k)) }, k)));
}

// Each layer's positions decided per round (from /api/stats), as a bar
// chart: the wavefront's shape, round 0 the terminal positions; each bar
// split into the round's WIN (below) and LOSS positions where the summary
// keeps them apart.
async function loadStats() {
  let s;
  try { s = await api("/api/stats"); } catch (_) { return; }
  if (!s.layers.length) return;
  const chart = (l) => {
    const svg = document.createElementNS(SVG, "svg");
    const n = l.decided_per_round.length, top = Math.max(1, ...l.decided_per_round);
    svg.setAttribute("viewBox", `0 0 ${n} 40`);
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("class", "rounds");
    svg.setAttribute("data-layer", l.question);
    const won = l.won_per_round || [];
    const bar = (attrs, text) => {
      const r = document.createElementNS(SVG, "rect"), t = document.createElementNS(SVG, "title");
      for (const [k, v] of Object.entries(attrs)) r.setAttribute(k, v);
      t.textContent = text;
      r.append(t);
      svg.append(r);
    };
    l.decided_per_round.forEach((d, i) => {
      const h = (40 * d) / top;
      if (won.length !== n) {
        bar({ x: i + 0.1, y: 40 - h, width: 0.8, height: h, "data-round": i }, `round ${i}: ${d.toLocaleString("en")} decided`);
        return;
      }
      const w = won[i], hw = (40 * w) / top, text = `round ${i}: ${w.toLocaleString("en")} win, ` +
        `${(d - w).toLocaleString("en")} loss`;
      bar({ x: i + 0.1, y: 40 - hw, width: 0.8, height: hw, class: "win", "data-round": i, "data-won": w }, text);
      bar({ x: i + 0.1, y: 40 - h, width: 0.8, height: h - hw, class: "loss", "data-round-loss": i, "data-lost": d - w }, text);
    });
    return svg;
  };
  $("stats").replaceChildren(el("details", {},
    el("summary", {}, `Layers (${s.layers.length}): positions decided per round`),
    ...s.layers.map((l) => el("div", { class: "layer-stats" },
      el("div", {}, `${l.question}: ${l.rounds} rounds, ${l.seconds.toFixed(1)} s, ` +
        `${l.decided_per_round.reduce((a, b) => a + b, 0).toLocaleString("en")} decided`),
      chart(l)))));
}

// The job's tablebase files with their recorded sizes and sha256 (from
// /api/files), as download links. A directory without a summary has none,
// and the page says nothing about it.
async function loadDownloads() {
  let m;
  try { m = await api("/api/files"); } catch (_) { return; }
  if (!m.files.length) return;
  $("downloads").replaceChildren(el("details", {},
    el("summary", {}, `Tablebase files (${m.files.length})`),
    el("ul", {}, ...m.files.map((f) => el("li", { "data-file": f.file },
      el("a", { href: f.url, download: f.file }, f.file),
      ` ${f.question || ""}${f.file.endsWith(".depth") ? " (plies to the end)" : ""}, ` +
        `${f.bytes.toLocaleString("en")} bytes, sha256 `,
      el("code", {}, f.sha256)))),
    el("a", { href: m.manifest_url, download: "summary.json", id: "manifest-link" }, "summary.json (the manifest)")));
}

// Runs a navigation step, showing its error on the page (the last good
// position stays on the board).
async function run(step) {
  clearError();
  try { await step(); writeUrl(); } catch (e) { showError(e.message); }
}

async function main() {
  // Sylver coinage needs no tablebase: /?game=sylver works over any directory.
  if (new URLSearchParams(location.search).get("game") === "sylver") return sylverView.main(null);
  try {
    app.info = await api("/api/info");
  } catch (e) {
    return showError(e.message);
  }
  document.body.dataset.kind = app.info.kind;
  $("title").textContent = app.info.title;
  app.view = VIEWS[app.info.objective === "ranked" ? "ranked" : app.info.kind];
  if (!app.view) return showError(`this page has no view for game kind ${app.info.kind} yet`);
  if (app.view.main) return app.view.main(app.info);
  setupControls();
  await loadStats();
  await loadDownloads();
  const params = new URLSearchParams(location.search);
  try {
    if (params.get("witness")) await loadWitness(params.get("witness"));
    else await loadLine(params.get("pos"), (params.get("play") || "").split(",").filter(Boolean));
  } catch (e) {
    // Show the start beside the message, so the page stays usable.
    try { if (!app.data) await loadLine(null, []); } catch (_) { /* the first message says enough */ }
    showError(e.message);
  }
}

main();
