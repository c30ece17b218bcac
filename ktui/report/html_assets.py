"""The HTML report's stylesheet and script, inlined into every report (no network at view time).

The script never parses HTML: every string from the data (trace text) reaches the page through
``textContent`` or ``createTextNode``; elements are made with ``createElement``. Together with
the page's Content-Security-Policy (scripts only with the page's nonce, no connections), a
``<script>`` or an ``onerror=`` inside a trace cannot run. ``test_report`` checks this source
for the HTML-parsing sinks.
"""

CSS = r"""
:root { color-scheme: dark; --bg:#16181d; --panel:#1f232b; --line:#323844; --fg:#e6e6e6; --muted:#9aa3b2;
  --ok:#3fb950; --bad:#f85149; --warn:#d29922; --acc:#58a6ff; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--fg); font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
header.top { padding:14px 22px; background:var(--panel); border-bottom:1px solid var(--line); }
header.top h1 { margin:0; font-size:20px; }
header.top .sub { color:var(--muted); }
main { padding:10px 22px 40px; }
section { margin:18px 0; }
h2 { font-size:16px; margin:8px 0; }
.muted { color:var(--muted); }
.charts { display:grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 900px), 1fr)); gap:14px; }
.card { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:10px 12px; overflow-x:auto; }
svg.chart { display:block; max-width:100%; height:auto; }
svg.chart text { fill:var(--fg); font-size:12px; }
svg.chart .tl { fill:var(--muted); font-size:11px; }
svg.chart .al, svg.chart .ct { fill:var(--muted); font-size:12px; }
svg.chart .ct { fill:var(--fg); font-weight:600; }
svg.chart .grid { stroke:#2a2f39; }
svg.chart .axis, svg.chart .tick { stroke:#596273; }
svg.chart .one { stroke:#6b7385; stroke-dasharray:3 3; }
svg.chart .gm { stroke:#ffd33d; stroke-width:3; }
svg.chart .empty { fill:#20242c; }
svg.chart .cell { cursor:pointer; }
svg.chart .cell text { fill:#fff; font-weight:600; font-size:11px; }
svg.chart .cell:hover rect, svg.chart .cell:focus rect { stroke:#fff; stroke-width:2; }
table { border-collapse:collapse; width:100%; }
th, td { padding:3px 8px; border-bottom:1px solid var(--line); text-align:left; white-space:nowrap; }
td.num, th.num { text-align:right; font-variant-numeric: tabular-nums; }
/* a run's metrics: label, value, recorded, note side by side (at 100% the value stood a page away) */
table.metrics { width:auto; margin:8px 0; } table.metrics th { cursor:default; }
th { position:sticky; top:0; background:var(--panel); cursor:pointer; user-select:none; }
th.sorted-asc::after { content:" ▲"; } th.sorted-desc::after { content:" ▼"; }
#runs tbody tr { cursor:pointer; } #runs tbody tr:hover { background:#262b35; } #runs tbody tr.sel { background:#2d3646; }
/* the runs table never scrolls sideways: fixed layout at the width it has, long cells cut with an
   ellipsis (the whole text in their tooltip), the least important columns hidden on a narrow
   window (ktui.report.runs.PRIORITY: format, persona, then wall, tokens, turns, then problem, model) */
#runs { table-layout:fixed; width:100%; }
#runs td { overflow:hidden; text-overflow:ellipsis; }
#runs .c-path { width:20%; } #runs .c-model { width:11%; } #runs .c-outcome { width:7%; }
#runs .c-speedup { width:6%; } #runs .c-hacks { width:12%; } #runs .c-flags { width:12%; }
#runs .c-problem { width:12%; } #runs .c-turns { width:5%; } #runs .c-tokens { width:6%; }
#runs .c-wall { width:6%; } #runs .c-persona { width:6%; } #runs .c-format { width:7%; }
#runs .c-labels { width:8%; }
.narrow-note { display:none; }
@media (max-width: 1600px) { #runs .c-format, #runs .c-persona { display:none; } .narrow-note.n1 { display:block; } }
@media (max-width: 1100px) { #runs .c-wall, #runs .c-tokens, #runs .c-turns { display:none; }
  .narrow-note.n1 { display:none; } .narrow-note.n2 { display:block; } }
@media (max-width: 800px) { #runs .c-problem, #runs .c-model { display:none; }
  .narrow-note.n2 { display:none; } .narrow-note.n3 { display:block; } }
.o-passed { color:var(--ok); font-weight:600; } .o-failed { color:var(--bad); font-weight:600; } .o-incomplete { color:var(--warn); }
.flags { color:var(--warn); }
.controls { display:flex; gap:10px; align-items:center; flex-wrap:wrap; margin:8px 0; }
.controls select { max-width:100%; text-overflow:ellipsis; }
.controls input, .controls select, button { background:#0f1115; color:var(--fg); border:1px solid var(--line); border-radius:6px; padding:5px 8px; font:inherit; }
button { cursor:pointer; }
.chip { background:#2d3646; border-radius:12px; padding:2px 10px; }
.tablewrap { max-height:70vh; overflow:auto; border:1px solid var(--line); border-radius:8px; }
#detail { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:12px 16px; }
#detail[hidden] { display:none; }
.facts { display:grid; grid-template-columns: max-content 1fr max-content 1fr; gap:2px 14px; }
.facts .k { color:var(--muted); }
.tabs { display:flex; gap:6px; margin:10px 0; }
.tabs button.on { background:var(--acc); color:#000; }
.turn { border-top:1px solid var(--line); padding:6px 0; }
pre { margin:4px 0; padding:6px 8px; background:#0f1115; border-radius:6px; overflow-x:auto; white-space:pre; font:12.5px/1.4 ui-monospace, "SFMono-Regular", Menlo, monospace; }
.prose { white-space:pre-wrap; margin:4px 0; }
.b-heading { font-weight:700; margin-top:8px; border-bottom:1px solid var(--line); }
.ln { color:#5c6370; user-select:none; display:inline-block; min-width:3.5em; }
.d-added { background:#12361f; color:#aff5b4; } .d-removed { background:#3c1618; color:#ffdcd7; }
.d-hunk { color:#79c0ff; } .d-context { color:#c9d1d9; }
.fold { color:var(--muted); font-style:italic; cursor:pointer; }
.r-title, .r-heading, .r-strong { font-weight:700; } .r-label, .r-muted, .r-note { color:var(--muted); }
.r-faint, .r-fold { color:#6e7681; } .r-actor { color:#39c5cf; } .r-model { color:#39c5cf; font-weight:700; }
.r-kernel, .r-final { color:#d2a8ff; font-weight:700; } .r-warn { color:var(--warn); } .r-error, .r-output-error { color:var(--bad); font-weight:600; }
.r-good { color:var(--ok); font-weight:700; } .r-reasoning { font-style:italic; } .r-call { color:#39c5cf; font-weight:700; }
.r-status-ok { color:var(--ok); } .r-status-failed { color:var(--bad); } .r-status-error { color:var(--bad); font-weight:700; }
.r-status-missing { color:var(--warn); } .r-outcome-passed { color:var(--ok); font-weight:700; }
.r-outcome-failed { color:var(--bad); font-weight:700; } .r-outcome-incomplete { color:var(--warn); }
.r-severity-error { color:var(--bad); font-weight:700; } .r-severity-warning { color:var(--warn); } .r-severity-info { color:var(--muted); }
.sev-error { color:var(--bad); } .sev-warning { color:var(--warn); } .sev-info { color:var(--muted); }
"""

JS = r"""
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("ktui-data").textContent);
  const COLS = DATA.columns, ROWS = DATA.rows, CELLS = DATA.cells;
  const state = { sort: null, desc: false, text: "", outcome: "", model: "", cell: null, shown: [] };
  const $ = (id) => document.getElementById(id);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  // a count and its noun agreeing ("1 run", "2 runs"), as ktui.trace.words.count says it in the text
  function count(n, noun) { return n + " " + (n === 1 ? noun : noun + "s"); }
  function roleClass(role) { return role ? "r-" + String(role).replace(/[^A-Za-z0-9_-]/g, "-") : ""; }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  // ---- the runs table -------------------------------------------------------------------------
  const hay = ROWS.map((r) => r.c.join(" ").toLowerCase());
  function matches(i) {
    const r = ROWS[i];
    if (state.outcome && r.o !== state.outcome) return false;
    if (state.model && r.m !== state.model) return false;
    if (state.cell !== null && CELLS[state.cell][2].indexOf(i) < 0) return false;
    if (state.text) {
      for (const w of state.text.toLowerCase().split(/\s+/)) { if (w && hay[i].indexOf(w) < 0) return false; }
    }
    return true;
  }
  function cmp(a, b) {
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a).localeCompare(String(b), undefined, { numeric: true, sensitivity: "base" });  // problem2 before problem10
  }
  function render() {
    let idx = [];
    for (let i = 0; i < ROWS.length; i++) if (matches(i)) idx.push(i);
    if (state.sort !== null) {
      const k = state.sort, sgn = state.desc ? -1 : 1;
      idx.sort((a, b) => {  // a run with no value (n/a, —) comes last in either order
        const x = ROWS[a].s[k], y = ROWS[b].s[k];
        if (x === null || y === null) return (x === null) - (y === null) || a - b;
        return sgn * cmp(x, y) || a - b;
      });
    }
    state.shown = idx;
    const body = $("runs-body");
    clear(body);
    const frag = document.createDocumentFragment();
    for (const i of idx) {
      const r = ROWS[i], tr = el("tr");
      tr.dataset.run = String(i);
      COLS.forEach((c, k) => {
        const td = el("td", c.cls, r.c[k]);
        if (c.key === "outcome") td.classList.add("o-" + r.o);
        if (r.c[k]) td.title = r.c[k];  // a cell cut with an ellipsis shows it whole on hover
        tr.appendChild(td);
      });
      tr.addEventListener("click", () => openRun(i));
      frag.appendChild(tr);
    }
    body.appendChild(frag);
    cutTraces();
    $("shown").textContent = idx.length === ROWS.length ? count(ROWS.length, "run") : "showing " + idx.length + " of " + count(ROWS.length, "run");
    document.querySelectorAll("#runs thead th").forEach((th, k) => {
      th.classList.toggle("sorted-asc", state.sort === k && !state.desc);
      th.classList.toggle("sorted-desc", state.sort === k && state.desc);
    });
    const chip = $("cell-chip");
    if (state.cell === null) { chip.hidden = true; } else {
      chip.hidden = false;
      $("cell-label").textContent = CELLS[state.cell][0] + " × " + CELLS[state.cell][1];
    }
  }
  // a trace path longer than its cell is cut in the middle (its folder start and its file name
  // stay, as in the terminal); the whole path is the cell's tooltip. Reads first, then writes.
  function cutTraces() {
    const tds = Array.from(document.querySelectorAll("#runs tbody td.c-path"));
    for (const td of tds) if (td.title && td.textContent !== td.title) td.textContent = td.title;
    const fits = tds.map((td) => [td, td.textContent, td.clientWidth, td.scrollWidth]);
    for (const [td, full, cw, sw] of fits) {
      if (!(sw > cw && cw > 0)) continue;
      const n = Math.max(8, Math.floor(full.length * cw / sw) - 2), head = Math.floor((n - 1) / 3);
      td.textContent = full.slice(0, head) + "…" + full.slice(full.length - (n - 1 - head));
    }
  }
  let cutTimer = null;
  window.addEventListener("resize", () => { clearTimeout(cutTimer); cutTimer = setTimeout(cutTraces, 150); });
  function setup() {
    const head = $("runs-head");
    COLS.forEach((c, k) => {
      const th = el("th", c.cls, c.header);
      th.dataset.col = c.key;
      th.addEventListener("click", () => {
        if (state.sort === k) state.desc = !state.desc; else { state.sort = k; state.desc = false; }
        render();
      });
      head.appendChild(th);
    });
    const models = Array.from(new Set(ROWS.map((r) => r.m))).sort();
    for (const m of models) { const o = el("option", "", m); o.value = m; $("f-model").appendChild(o); }
    $("f-text").addEventListener("input", (e) => { state.text = e.target.value.trim(); render(); });
    $("f-outcome").addEventListener("change", (e) => { state.outcome = e.target.value; render(); });
    $("f-model").addEventListener("change", (e) => { state.model = e.target.value; render(); });
    $("cell-clear").addEventListener("click", () => { state.cell = null; render(); });
    document.querySelectorAll("svg.grid .cell").forEach((g) => {
      const go = () => { state.cell = Number(g.dataset.cell); render(); $("runs-section").scrollIntoView(); };
      g.addEventListener("click", go);
      g.addEventListener("keydown", (e) => { if (e.key === "Enter") go(); });
    });
    render();
    const m = /^#run-(\d+)$/.exec(location.hash);
    if (m) openRun(Number(m[1]));
  }

  // ---- one run's detail (decoded on demand) ----------------------------------------------------
  async function loadDetail(i) {
    const node = document.getElementById("d" + i);
    if (!node) return { error: "no detail for this run" };
    const bin = atob(node.textContent.trim());
    const bytes = new Uint8Array(bin.length);
    for (let k = 0; k < bin.length; k++) bytes[k] = bin.charCodeAt(k);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  function spans(parent, line) {
    for (const sp of line) parent.appendChild(el("span", roleClass(sp[1]), sp[0]));
  }
  function block(b) {
    const [kind, role, indent, lang, numbers, fold, payload, errs] = b;
    const errSet = new Set(errs || []);
    let node;
    const lines = payload;
    const limit = fold > 0 && fold < lines.length ? fold : lines.length;
    const draw = (container, upto) => {
      clear(container);
      for (let k = 0; k < upto; k++) {
        if (kind === "heading" || kind === "lines") {
          const d = el("div"); spans(d, lines[k]); container.appendChild(d);
        } else {
          const d = el("div", errSet.has(k) ? "r-output-error" : "");
          if (numbers) d.appendChild(el("span", "ln", String(k + 1)));
          d.appendChild(document.createTextNode(lines[k]));
          container.appendChild(d);
        }
      }
    };
    if (kind === "code" || kind === "output") node = el("pre", roleClass(role));
    else if (kind === "prose") node = el("div", "prose " + roleClass(role));
    else node = el("div", kind === "heading" ? "b-heading" : "");
    if (indent) node.style.marginLeft = (indent * 0.6) + "em";
    const body = el("div");
    node.appendChild(body);
    draw(body, limit);
    if (limit < lines.length) {
      const more = el("div", "fold", "… " + count(lines.length - limit, "more line") + " (show)");
      more.addEventListener("click", () => { draw(body, lines.length); more.remove(); });
      node.appendChild(more);
    }
    return node;
  }
  function transcript(d) {
    const box = el("div");
    for (const b of d.pre) box.appendChild(block(b));
    for (const t of d.turns) {
      const sec = el("div", "turn");
      sec.dataset.turn = String(t.i);
      for (const b of t.blocks) sec.appendChild(block(b));
      box.appendChild(sec);
    }
    for (const x of d.terminal) box.appendChild(el("div", "r-note", "ended: " + x[0] + ": " + x[1] + " (line " + x[2] + ")"));
    return box;
  }
  function diffs(d) {
    const box = el("div");
    if (!d.kernels.length) { box.appendChild(el("p", "muted", "no kernel versions")); return box; }
    const t = el("table");
    for (const k of d.kernels) {
      const tr = el("tr");
      tr.appendChild(el("td", "r-kernel", k[0]));
      tr.appendChild(el("td", "num", count(k[1], "line")));
      tr.appendChild(el("td", "", k[2] === null ? "" : "first at turn " + k[2]));
      tr.appendChild(el("td", "", k[3] ? "final" : ""));
      tr.appendChild(el("td", "", k[4] ? "+" + k[4][0] + " −" + k[4][1] : ""));
      t.appendChild(tr);
    }
    box.appendChild(t);
    for (const df of d.diffs) {
      box.appendChild(el("h3", "r-kernel", df.a + " → " + df.b));
      const pre = el("pre", "diff");
      pre.dataset.diff = df.a + "-" + df.b;
      if (!df.lines.length) pre.appendChild(el("div", "muted", "(identical)"));
      for (const ln of df.lines) {
        const row = el("div", "d-" + ln[0]);
        const pfx = { added: "+", removed: "-", context: " " }[ln[0]] || "";
        row.appendChild(document.createTextNode(pfx + ln[1]));
        pre.appendChild(row);
      }
      box.appendChild(pre);
    }
    return box;
  }
  // a result document of the view (html_results.doc_data): paragraphs and tables of spans
  function docParts(parts) {
    const box = el("div", "doc");
    for (const p of parts) {
      if (p[0] === "p") {
        const e = el("p", [roleClass(p[1]), p[2] ? "nowrap" : ""].filter(Boolean).join(" "));
        spans(e, p[3]);
        box.appendChild(e);
      } else if (p[0] === "t") {
        const [, key, title, headRole, cols, rows] = p;
        const wrap = el("div", "tablewrap"), t = el("table", "doc-" + String(key).replace(/[^A-Za-z0-9_-]/g, "-"));
        if (title) t.appendChild(el("caption", "", title));
        const hr = el("tr", roleClass(headRole));
        for (const c of cols) hr.appendChild(el("th", c[1] ? "num" : "", c[0]));
        const thead = el("thead"); thead.appendChild(hr); t.appendChild(thead);
        const tb = el("tbody");
        for (const row of rows) {
          const tr = el("tr");
          row.forEach((c, k) => {
            const td = el("td", [roleClass(cols[k][2]), roleClass(c[1]), cols[k][1] ? "num" : "",
                                 cols[k][3] ? "nw" : ""].filter(Boolean).join(" "));
            spans(td, c[0]);
            tr.appendChild(td);
          });
          tb.appendChild(tr);
        }
        t.appendChild(tb); wrap.appendChild(t); box.appendChild(wrap);
      }
    }
    return box;
  }
  function results(d) {
    const r = d.results;
    const box = el("div", "results");
    box.id = "run-results";
    if (!r) return box;
    if (!r.kernel) { box.appendChild(el("p", "muted", r.note || "no final kernel to reproduce")); return box; }
    const sec = (title, doc, missing, id) => {
      const s = el("div", "card");
      s.id = id;
      s.appendChild(el("h3", "", title + " of " + r.kernel + " (the final kernel)"));
      if (doc) s.appendChild(docParts(doc)); else s.appendChild(el("p", "muted", missing));
      box.appendChild(s);
    };
    sec("Reproduction", r.repro, r.missing[0], "run-repro");
    sec("Profile", r.profile, r.missing[1], "run-profile");
    if (r.note) box.appendChild(el("p", "r-error", r.note));
    return box;
  }
  async function openRun(i) {
    const panel = $("detail");
    panel.hidden = false;
    panel.dataset.run = String(i);
    panel.dataset.state = "loading";
    clear(panel);
    panel.appendChild(el("p", "muted", "loading…"));
    document.querySelectorAll("#runs tbody tr.sel").forEach((tr) => tr.classList.remove("sel"));
    const row = document.querySelector('#runs tbody tr[data-run="' + i + '"]');
    if (row) row.classList.add("sel");
    let d;
    try { d = await loadDetail(i); } catch (e) { d = { error: String(e) }; }
    clear(panel);
    const close = el("button", "", "close");
    close.style.float = "right";
    close.addEventListener("click", () => { panel.hidden = true; });
    panel.appendChild(close);
    panel.appendChild(el("h2", "", ROWS[i].c[0]));
    if (d.error) { panel.appendChild(el("p", "r-error", d.error)); panel.dataset.state = "error"; return; }
    const facts = el("div", "facts");
    for (const f of d.facts) { facts.appendChild(el("div", "k", f[0])); facts.appendChild(el("div", roleClass(f[2]), f[1])); }
    panel.appendChild(facts);
    const fl = el("div", "flaglist");
    for (const f of d.flags) {
      const p = el("div", "sev-" + f[0]);
      p.appendChild(el("b", "", "⚑ " + f[1] + ": "));
      p.appendChild(document.createTextNode(f[2] + (f[3] ? " (" + f[3] + ")" : "")));
      fl.appendChild(p);
    }
    for (const pr of d.problems) fl.appendChild(el("div", "sev-warning", "problem: " + pr));
    panel.appendChild(fl);
    if (d.metrics) {
      const mt = el("table", "metrics");
      for (const g of d.metrics.groups) {
        const h = el("tr"), th = el("th", "", g[0]); th.colSpan = 4; h.appendChild(th); mt.appendChild(h);
        for (const r of g[1]) {
          const tr = el("tr");
          tr.appendChild(el("td", "r-label", r[0])); tr.appendChild(el("td", "num", r[1]));
          tr.appendChild(el("td", "muted", r[2] ? "recorded " + r[2] : "")); tr.appendChild(el("td", "muted", r[3]));
          mt.appendChild(tr);
        }
      }
      panel.appendChild(mt);
    }
    panel.appendChild(results(d));
    const tabs = el("div", "tabs"), body = el("div", "tabbody");
    const views = { transcript: () => transcript(d), diffs: () => diffs(d) };
    for (const name of ["transcript", "diffs"]) {
      const b = el("button", "", name === "transcript" ? "Transcript (" + count(d.turns.length, "turn") + ")" : "Kernel diffs (" + count(d.kernels.length, "version") + ")");
      b.dataset.tab = name;
      b.addEventListener("click", () => {
        tabs.querySelectorAll("button").forEach((x) => x.classList.toggle("on", x === b));
        clear(body); body.appendChild(views[name]()); panel.dataset.tab = name;
      });
      tabs.appendChild(b);
    }
    panel.appendChild(tabs);
    panel.appendChild(body);
    tabs.firstChild.click();
    panel.dataset.state = "ready";
    panel.scrollIntoView();
  }
  setup();
  document.body.dataset.ready = "1";
})();
"""
