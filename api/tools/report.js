// The fxla report's behaviour (see report.py): panes with a tab per stage, the graph grouped by module, links
// between graph nodes and IR lines, search.  Reads its data from <script id="report-data">; loads nothing.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("report-data").textContent);
  const $ = (sel, root) => (root || document).querySelector(sel);
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const ENTITIES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };
  const esc = (t) => String(t).replace(/[&<>"]/g, (c) => ENTITIES[c]);

  // ---- syntax highlighting: one regular expression per kind, each alternative a token class ----------------
  const STR = String.raw`"(?:[^"\\]|\\.)*"`;
  const NUM = String.raw`0x[0-9A-Fa-f]+|-?\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b`;
  const WORD = String.raw`[A-Za-z_]\w*`;
  const RULES = {
    mlir: [["c", String.raw`\/\/.*`], ["s", STR], ["v", String.raw`%[\w.$#-]+(?::\d+)?|\^[\w.$-]+`],
           ["sym", String.raw`@[\w.$-]+`],
           ["t", String.raw`\b(?:tensor|vector|memref|complex|tuple)<(?:[^<>]|<(?:[^<>]|<[^<>]*>)*>)*>` +
                 String.raw`|![\w.]+|\b(?:[fiu]\d+|bf16|index)\b`],
           ["op", String.raw`\b[a-z_]\w*(?:\.[a-z_]\w*)+\b`],
           ["k", String.raw`\b(?:module|return|dense|attributes|applies|across|dimensions|contracting_dims` +
                 String.raw`|batching_dims|dims|init|true|false|unit)\b`],
           ["n", NUM], ["a", String.raw`\b[A-Za-z_]\w*(?=\s*=)`], ["w", WORD]],
    hlo: [["c", String.raw`\/\*.*?\*\/|\/\/.*`], ["s", STR], ["v", String.raw`%[\w.-]+`],
          ["t", String.raw`\b(?:pred|[fsu]\d+|bf16|c64|c128|token|f8e\w+)\[[\d,?<=]*\](?:\{[^}]*\})?`],
          ["k", String.raw`\b(?:ROOT|ENTRY|HloModule)\b`], ["op", String.raw`\b[a-z][\w-]*(?=\()`],
          ["a", String.raw`\b[a-z_]\w*(?==)`], ["n", NUM], ["w", WORD]],
    graph: [["s", STR + "|'(?:[^'\\\\]|\\\\.)*'"], ["v", String.raw`%\w+`],
            ["k", String.raw`\b(?:placeholder|call_module|call_function|call_method|get_attr|output|return|graph)\b`],
            ["a", String.raw`\b(?:target|args|kwargs|num_users)\b`], ["n", NUM], ["w", WORD]],
    python: [["c", "#.*"], ["s", STR + "|'(?:[^'\\\\]|\\\\.)*'"],
             ["k", String.raw`\b(?:def|return|self|None|True|False|and|or|not|in|is|if|else|for|lambda)\b`],
             ["n", NUM], ["w", WORD]],
  };
  RULES.fxgraph = [["c", String.raw`\/\/.*`]].concat(RULES.graph);
  const LEXERS = {};
  for (const kind in RULES) {
    LEXERS[kind] = { re: new RegExp(RULES[kind].map((r) => "(" + r[1] + ")").join("|"), "g"),
                     classes: RULES[kind].map((r) => r[0]) };
  }
  const OP_STRING = /^"[a-z_]\w*(?:\.[\w.]+)+"$/;      // "fxla.linear": the generic form's op name

  function highlight(kind, line) {
    const lex = LEXERS[kind];
    let out = "", last = 0, m;
    lex.re.lastIndex = 0;
    while ((m = lex.re.exec(line)) !== null) {
      if (m[0] === "") { lex.re.lastIndex++; continue; }
      let cls = lex.classes[m.slice(1).findIndex((g) => g !== undefined)];
      if (cls === "s" && OP_STRING.test(m[0])) cls = "op";
      out += esc(line.slice(last, m.index));
      out += cls === "w" ? esc(m[0]) : `<span class="${cls}">${esc(m[0])}</span>`;
      last = m.index + m[0].length;
    }
    return out + esc(line.slice(last));
  }

  // ---- the data, indexed ---------------------------------------------------------------------------------------
  const stages = D.stages;
  const stageIndex = {};
  stages.forEach((st, s) => {
    stageIndex[st.id] = s;
    st.byNode = new Map();            // node index -> its line indices
    st.links.forEach((n, i) => {
      if (n < 0) return;
      if (!st.byNode.has(n)) st.byNode.set(n, []);
      st.byNode.get(n).push(i);
    });
    // what search looks in: the line (a graph node's with its module type)
    const typeOf = (i) => (st.kind === "graph" && D.nodes[i].type ? " " + D.nodes[i].type : "");
    st.low = st.lines.map((l, i) => (l + typeOf(i)).toLowerCase());
    st.hits = [];
  });
  const graphStage = stageIndex.graph;
  function groupCount(items) {
    let n = 0;
    for (const it of items) n += typeof it === "number" ? 1 : (it.count = groupCount(it.items));
    return n;
  }
  groupCount(D.tree);
  function nodesUnder(path) {
    const pre = path + ".";
    const out = [];
    D.nodes.forEach((n, i) => { if (i < (graphStage === undefined ? D.nodes.length : stages[graphStage].lines.length)
                                    && (n.path === path || n.path.startsWith(pre))) out.push(i); });
    return out;
  }

  // ---- panes: one view per (pane, stage), made when first shown ------------------------------------------------
  const panesEl = $("#panes");
  const panes = [];
  let activePane = 0;
  let selected = [];                  // node indices
  let selectedEls = [];
  let query = "";

  function renderTree(items) {
    let out = "";
    for (const it of items) {
      if (typeof it === "number") {
        const n = D.nodes[it];
        // a call_module node shows its module's type after the target: call_module[target=fc1] Linear (...)
        const cut = n.type ? n.text.indexOf("](") + 1 : 0;
        const text = cut > 0 ? highlight("graph", n.text.slice(0, cut)) + `<span class="badge">${esc(n.type)}</span>` +
                                highlight("graph", n.text.slice(cut)) : highlight("graph", n.text);
        out += `<div class="ln lk gn" data-i="${it}" data-node="${esc(n.name)}">${text}</div>`;
      } else {
        out += `<details class="mod" data-path="${esc(it.path)}"${it.open ? " open" : ""}><summary>` +
               `<span class="mname">${esc(it.name)}</span> <span class="mtype">${esc(it.type)}</span> ` +
               `<span class="count">${it.count} nodes</span>` +
               `<button type="button" class="selmod" data-path="${esc(it.path)}">select</button></summary>` +
               renderTree(it.items) + "</details>";
      }
    }
    return out;
  }

  function renderStage(pane, s) {
    const st = stages[s];
    const box = document.createElement("div");
    box.className = "code";
    box.dataset.stage = st.id;
    if (st.kind === "graph") {
      box.innerHTML = renderTree(D.tree);
    } else {
      const parts = new Array(st.lines.length);
      for (let i = 0; i < st.lines.length; i++) {
        const n = st.links[i];
        parts[i] = `<div class="ln${n >= 0 ? " lk" : ""}" data-i="${i}"` +
                   (n >= 0 ? ` data-node="${esc(D.nodes[n].name)}"` : "") +
                   `><span class="no">${i + 1}</span>${highlight(st.kind, st.lines[i])}</div>`;
      }
      box.innerHTML = parts.join("");
    }
    const rows = new Array(st.lines.length);
    box.querySelectorAll(".ln").forEach((el) => { rows[+el.dataset.i] = el; });
    const view = { box, rows, hitPos: -1 };
    pane.views[s] = view;
    pane.viewEl.appendChild(box);
    applySearch(view, s);
    for (const n of selected) for (const i of st.byNode.get(n) || []) mark(view, i);
    return view;
  }

  function showStage(p, s) {
    const pane = panes[p];
    pane.stage = s;
    pane.tabs.forEach((t, i) => t.classList.toggle("active", i === s));
    pane.views.forEach((v) => { if (v) v.box.style.display = "none"; });
    const view = pane.views[s] || renderStage(pane, s);
    view.box.style.display = "";
    return view;
  }

  function makePane(p, s) {
    const el = document.createElement("div");
    el.className = "pane";
    el.dataset.pane = String(p);
    const tabsEl = document.createElement("div");
    tabsEl.className = "tabs";
    const viewEl = document.createElement("div");
    viewEl.className = "view";
    el.append(tabsEl, viewEl);
    panesEl.appendChild(el);
    const pane = { el, viewEl, tabs: [], views: [], stage: -1 };
    stages.forEach((st, i) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "tab";
      b.dataset.stage = st.id;
      b.innerHTML = `${esc(st.title)}<span class="n"></span>`;
      b.addEventListener("click", () => { activePane = p; showStage(p, i); scrollToSelection(pane); });
      tabsEl.appendChild(b);
      pane.tabs.push(b);
    });
    el.addEventListener("mousedown", () => { activePane = p; });
    viewEl.addEventListener("click", (e) => onClick(e, p));
    panes.push(pane);
    showStage(p, s);
  }

  // ---- selection: a node (or a module's nodes) in every stage --------------------------------------------------
  function mark(view, i) {
    const el = view.rows[i];
    if (!el) return;
    el.classList.add("sel");
    selectedEls.push(el);
    for (let d = el.parentElement.closest("details"); d; d = d.parentElement.closest("details")) d.open = true;
  }

  function select(nodes, what) {
    selectedEls.forEach((el) => el.classList.remove("sel"));
    selectedEls = [];
    selected = nodes;
    for (const pane of panes) {
      pane.views.forEach((view, s) => {
        if (!view) return;
        for (const n of nodes) for (const i of stages[s].byNode.get(n) || []) mark(view, i);
      });
      scrollToSelection(pane);
    }
    showInfo(nodes, what);
  }

  // scroll a pane vertically only (a row is as wide as its longest line: scrollIntoView would scroll sideways)
  function reveal(row) {
    const viewEl = row.closest(".view");
    const top = row.getBoundingClientRect().top - viewEl.getBoundingClientRect().top + viewEl.scrollTop;
    viewEl.scrollTop = Math.max(0, top - viewEl.clientHeight / 2);
  }

  function scrollToSelection(pane) {
    const view = pane.views[pane.stage];
    const first = view && view.box.querySelector(".sel");
    if (first) reveal(first);
  }

  function onClick(e, p) {
    const button = e.target.closest(".selmod");
    if (button) {
      e.preventDefault();
      const path = button.dataset.path;
      select(nodesUnder(path), { module: path });
      return;
    }
    const row = e.target.closest(".ln");
    if (!row) return;
    const st = stages[panes[p].stage];
    const n = st.links[+row.dataset.i];
    if (n >= 0) select([n], null);
  }

  function counts(nodes) {
    return stages.map((st, s) => {
      let c = 0;
      for (const n of nodes) c += (st.byNode.get(n) || []).length;
      return `<li><a data-goto="${s}">${esc(st.title)}</a> <span class="count">${plural(c, "line")}</span></li>`;
    }).join("");
  }

  function sourceHtml(src) {
    if (src < 0) return `<p class="where">no source location</p>`;
    const s = D.sources[src];
    const rows = s.context.length ? s.context : [[s.line, s.text]];
    const body = rows.map(([no, text]) =>
      `<span class="sl${no === s.line ? " curline" : ""}">${String(no).padStart(5)}  ${esc(text)}</span>`).join("");
    return `<div class="where">${esc(s.file)}:${s.line}${s.col ? ":" + s.col : ""}</div><pre class="src">${body}</pre>`;
  }

  function showInfo(nodes, what) {
    const info = $("#info");
    let head;
    if (what && what.module !== undefined) {
      const type = D.tree && findGroup(D.tree, what.module);
      head = `<div class="what">module <b>${esc(what.module)}</b> ` +
             `<span class="mtype">${esc(type ? type.type : "")}</span>` +
             ` · ${nodes.length} nodes</div>`;
    } else {
      const n = D.nodes[nodes[0]];
      head = `<div class="what"><b class="v">%${esc(n.name)}</b> ${esc(n.op)}` +
             (n.type ? ` <span class="badge">${esc(n.type)}</span>` : "") +
             (n.path ? `<br>in module <b>${esc(n.path)}</b>` : "") + `</div>` + sourceHtml(n.src);
    }
    info.innerHTML = `<h2>Selection</h2>${head}<ul class="counts">${counts(nodes)}</ul>`;
  }

  function findGroup(items, path) {
    for (const it of items) {
      if (typeof it === "number") continue;
      if (it.path === path) return it;
      const inner = findGroup(it.items, path);
      if (inner) return inner;
    }
    return null;
  }

  // "fxla: 3 lines" in the selection: step through them in the pane that is not showing the graph
  $("#info").addEventListener("click", (e) => {
    const a = e.target.closest("a[data-goto]");
    if (!a) return;
    const s = +a.dataset.goto;
    const p = panes.findIndex((pane) => pane.stage === s);
    const target = p >= 0 ? p : (panes.length > 1 && !panesEl.classList.contains("single") ? 1 : 0);
    const view = showStage(target, s);
    const sel = Array.from(view.box.querySelectorAll(".sel"));
    if (!sel.length) return;
    view.selPos = ((view.selPos === undefined ? -1 : view.selPos) + 1) % sel.length;
    reveal(sel[view.selPos]);
  });

  // ---- search --------------------------------------------------------------------------------------------------
  const searchEl = $("#search"), filterEl = $("#filter"), hitsEl = $("#hits");

  function applySearch(view, s) {
    const st = stages[s];
    const hits = new Set(st.hits);
    const filter = filterEl.checked && query !== "";
    view.rows.forEach((el, i) => {
      if (!el) return;
      const hit = hits.has(i);
      el.classList.toggle("hit", hit);
      el.classList.toggle("hide", filter && !hit);
    });
    view.hitPos = -1;
    if (st.kind !== "graph") return;
    view.box.querySelectorAll("details.mod").forEach((d) => {
      const any = query !== "" && d.querySelector(".hit") !== null;
      if (any) d.open = true;
      d.classList.toggle("hide", filter && !any);
    });
  }

  function runSearch() {
    query = searchEl.value.trim().toLowerCase();
    let total = 0;
    stages.forEach((st, s) => {
      st.hits = [];
      if (query) st.low.forEach((l, i) => { if (l.includes(query)) st.hits.push(i); });
      total += st.hits.length;
      for (const pane of panes) {
        pane.tabs[s].querySelector(".n").textContent = query ? String(st.hits.length) : "";
        if (pane.views[s]) applySearch(pane.views[s], s);
      }
      const toc = document.querySelector(`#toc-stages [data-stage="${st.id}"] .hitcount`);
      if (toc) toc.textContent = query ? ` · ${st.hits.length} hits` : "";
    });
    hitsEl.textContent = query ? `${total} hit${total === 1 ? "" : "s"}` : "";
  }

  function nextHit() {
    const pane = panes[activePane];
    const view = pane.views[pane.stage];
    const hits = stages[pane.stage].hits;
    if (!hits.length) return;
    if (view.cur) view.cur.classList.remove("cur");
    view.hitPos = (view.hitPos + 1) % hits.length;
    view.cur = view.rows[hits[view.hitPos]];
    for (let d = view.cur.parentElement.closest("details"); d; d = d.parentElement.closest("details")) d.open = true;
    view.cur.classList.add("cur");
    reveal(view.cur);
  }

  let timer = 0;
  searchEl.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(runSearch, 120); });
  searchEl.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { clearTimeout(timer); runSearch(); nextHit(); }
  });
  filterEl.addEventListener("change", runSearch);
  document.addEventListener("keydown", (e) => {
    if (e.key === "/" && document.activeElement !== searchEl) { e.preventDefault(); searchEl.focus(); }
    if (e.key === "Escape") select([], null);
  });

  // ---- table of contents, layout --------------------------------------------------------------------------------
  const tocStages = $("#toc-stages");
  stages.forEach((st, s) => {
    const li = document.createElement("li");
    li.dataset.stage = st.id;
    li.innerHTML = `<a>${esc(st.title)}</a> ` +
                   `<span class="count">${plural(st.lines.length, "line")}<span class="hitcount"></span></span>`;
    li.querySelector("a").addEventListener("click", () => {
      showStage(activePane, s);
      scrollToSelection(panes[activePane]);
    });
    tocStages.appendChild(li);
  });
  function tocModules(items, depth) {
    let out = "";
    for (const it of items) {
      if (typeof it === "number") continue;
      const inner = depth < 2 ? tocModules(it.items, depth + 1) : "";
      out += `<li><a data-path="${esc(it.path)}">${esc(it.name)}</a> <span class="mtype">${esc(it.type)}</span>` +
             (inner ? `<ul>${inner}</ul>` : "") + "</li>";
    }
    return out;
  }
  $("#toc-modules").innerHTML = tocModules(D.tree, 0) || `<li class="count">(none)</li>`;
  $("#toc-modules").addEventListener("click", (e) => {
    const a = e.target.closest("a[data-path]");
    if (!a || graphStage === undefined) return;
    const p = panes.findIndex((pane) => pane.stage === graphStage);
    const view = showStage(p >= 0 ? p : 0, graphStage);
    const d = view.box.querySelector(`details.mod[data-path="${CSS.escape(a.dataset.path)}"]`);
    for (let g = d; g; g = g.parentElement.closest("details")) g.open = true;
    reveal(d);
  });

  const splitEl = $("#split");
  splitEl.addEventListener("click", () => {
    const single = panesEl.classList.toggle("single");
    splitEl.textContent = single ? "two panes" : "one pane";
    if (single) activePane = 0;
  });

  const first = graphStage !== undefined ? graphStage : 0;
  makePane(0, first);
  if (stages.length > 1) {
    const fx = stageIndex.fxla;
    makePane(1, fx !== undefined && fx !== first ? fx : (first === 0 ? 1 : 0));
  } else {
    splitEl.style.display = "none";
  }
})();
