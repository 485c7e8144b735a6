"""Inline CSS and JavaScript of the HTML matrix (no network, no external fonts, no framework)."""

from __future__ import annotations

CSS = r"""
:root {
  --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #ffffff; --head: #f6f8fa; --hl: #fff8c5;
  --ok-bg: #dafbe1; --ok-fg: #116329; --no-bg: #ffebe9; --no-fg: #a40e26; --un-bg: #fff1c2; --un-fg: #7d4e00;
  --focus: #0969da;
}
* { box-sizing: border-box; }
html { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
body { margin: 0; color: var(--fg); background: var(--bg); }
header { padding: 12px 20px 4px; }
h1 { font-size: 1.35rem; margin: 0 0 4px; }
h2 { font-size: 1.1rem; margin: 0 0 8px; }
h3 { font-size: 0.95rem; margin: 14px 0 6px; }
p { margin: 4px 0; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  font-size: 0.92em; }
.muted { color: var(--muted); }
.note { font-size: 0.9rem; }
details.legend { margin: 6px 0 0; }
details.legend summary { cursor: pointer; color: var(--focus); }
details.legend table { border-collapse: collapse; margin: 6px 0; }
details.legend td, details.legend th { border: 1px solid var(--line); padding: 3px 8px; text-align: left;
  vertical-align: top; }
.controls { display: flex; flex-wrap: wrap; gap: 8px 14px; align-items: flex-end; padding: 8px 20px 10px;
  border-bottom: 1px solid var(--line); background: var(--head); position: sticky; top: 0; z-index: 3; }
.controls label { display: flex; flex-direction: column; font-size: 0.8rem; color: var(--muted); gap: 2px; }
.controls label.check { flex-direction: row; align-items: center; gap: 6px; font-size: 0.85rem; color: var(--fg); }
.controls input[type=search] { width: 16rem; }
.controls input, .controls select, .controls button { font: inherit; font-size: 0.9rem; padding: 3px 6px;
  border: 1px solid var(--line); border-radius: 4px; background: #fff; color: var(--fg); }
.controls button { cursor: pointer; }
.controls select { max-width: 22rem; }
#count { font-size: 0.85rem; color: var(--muted); margin-left: auto; }
.tablewrap { margin: 0 20px 20px; overflow: auto; max-height: calc(100vh - var(--sticky, 0px) - 8px);
  max-width: calc(100vw - 40px); }
table.matrix caption { text-align: left; padding: 4px 0; }
table.matrix { border-collapse: separate; border-spacing: 0; width: 100%; margin-top: 8px; }
table.matrix th, table.matrix td { border-bottom: 1px solid var(--line); padding: 4px 7px; text-align: left;
  vertical-align: top; white-space: nowrap; }
table.matrix thead th { position: sticky; top: 0; background: var(--head); z-index: 1; padding: 0; }
table.matrix thead th button { all: unset; display: block; padding: 6px 8px; cursor: pointer; font-weight: 600;
  width: 100%; box-sizing: border-box; }
table.matrix thead th button:focus-visible { outline: 2px solid var(--focus); outline-offset: -2px; }
table.matrix thead th .arrow { color: var(--muted); font-weight: 400; margin-left: 4px; }
table.matrix tbody tr { cursor: pointer; }
table.matrix tbody tr:hover { background: #f6f8fa; }
table.matrix tbody tr:focus { outline: 2px solid var(--focus); outline-offset: -2px; }
table.matrix tbody tr.selected { background: var(--hl); }
table.matrix tbody tr.other-arch td { color: var(--muted); }
td small, .sub { color: var(--muted); font-size: 0.85em; }
.v { display: inline-block; padding: 0 6px; border-radius: 10px; font-size: 0.85rem; font-weight: 600; }
.v-supported { background: var(--ok-bg); color: var(--ok-fg); }
.v-unverifiable { background: var(--un-bg); color: var(--un-fg); }
.v-rejected { background: var(--no-bg); color: var(--no-fg); }
.v-nofit { background: #f3e8ff; color: #6e2fb3; }
figure.chart { margin: 4px 0 10px; }
figure.chart svg { max-width: 100%; height: auto; font-family: inherit; }
ul.legend-list { list-style: none; padding: 0; margin: 4px 0; font-size: 0.85rem; }
ul.legend-list li { margin: 2px 0; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }
table.matrix td.reason { white-space: normal; min-width: 12rem; max-width: 18rem; }
table.matrix td.reason small { display: block; }
table.matrix td.choice { white-space: normal; max-width: 14rem; overflow-wrap: anywhere; }
tr.other-arch .v-rejected { background: transparent; color: var(--muted); font-weight: 400; }
.chosen { font-weight: 700; }
aside#detail { position: fixed; right: 0; top: 0; bottom: 0; width: min(34rem, 100vw);
  overflow: auto; padding: 12px 16px 24px; background: #fff; border-left: 1px solid var(--line);
  box-shadow: -4px 0 16px rgba(31, 35, 40, 0.15); z-index: 4; }
aside#detail[hidden] { display: none; }
aside#detail .close { float: right; font: inherit; cursor: pointer; border: 1px solid var(--line);
  background: var(--head); border-radius: 4px; padding: 2px 8px; }
aside#detail dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 10px; margin: 8px 0; }
aside#detail dt { color: var(--muted); }
aside#detail dd { margin: 0; overflow-wrap: anywhere; }
aside#detail pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--head); padding: 6px 8px;
  border-radius: 4px; margin: 4px 0; }
ol.reasons { padding-left: 1.3rem; margin: 4px 0; }
ol.reasons li { margin: 0 0 10px; }
ol.reasons .fix { margin: 2px 0; }
ol.reasons .meta { color: var(--muted); font-size: 0.85em; overflow-wrap: anywhere; }
.empty { padding: 16px 20px; color: var(--muted); }
@media (max-width: 700px) {
  aside#detail { top: auto; left: 0; right: 0; height: 60vh; width: auto; border-left: 0;
    border-top: 1px solid var(--line); }
}
"""


JS = r"""
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("matrix-data").textContent);
  var body = document.body;
  var table = document.getElementById("matrix");
  var tbody = table.tBodies[0];
  var panel = document.getElementById("detail");
  var count = document.getElementById("count");
  var q = document.getElementById("q");
  var hideArch = document.getElementById("hide-arch");
  var selects = Array.prototype.slice.call(document.querySelectorAll("select[data-filter]"));
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var VERDICT = {s: "supported", u: "unverifiable", r: "rejected", m: "no fit"};
  var CLASS = {s: "supported", u: "unverifiable", r: "rejected", m: "nofit"};
  var MARK = {s: "\u2713", u: "?", r: "\u2717", m: "\u2298"};
  var STAR = "\u2605";

  function pad(n) { return ("00000" + n).slice(-6); }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") { node.textContent = attrs[k]; } else { node.setAttribute(k, attrs[k]); }
    });
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined && c !== "") {
        node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
      }
    });
    return node;
  }

  function shown(verdict, ids) {
    var want = verdict === "r" ? "fail" : verdict === "u" ? "unknown" : null;
    return want ? ids.filter(function (id) { return D.reasons[id][1] === want; }) : [];
  }

  function chip(verdict, chosen, long) {
    var text = chosen ? STAR + " " + (long ? VERDICT[verdict] + ", the oracle's choice" : "chosen")
      : MARK[verdict] + " " + VERDICT[verdict];
    var attrs = {"class": "v v-" + CLASS[verdict] + (chosen ? " chosen" : ""), text: text};
    if (chosen && !long) { attrs.title = VERDICT[verdict] + ", the oracle's choice"; }
    return el("span", attrs);
  }

  var COLORS = ["#0969da", "#bf3989", "#1a7f37", "#9a6700", "#8250df", "#cf222e"];

  function svg(tag, attrs, text) {
    var node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  // Expected microseconds per MoE layer call against tokens per rank (both axes log scale), one line per
  // eligible path, with each curve's basis in the legend below (inline SVG: no network, no library).
  function costChart(curves) {
    var W = 480, H = 260, L = 56, R = 12, T = 10, B = 34;
    var ts = curves[0].t, all = [];
    curves.forEach(function (c) { all = all.concat(c.us); });
    var lo = Math.log10(Math.max(Math.min.apply(null, all), 0.1)), hi = Math.log10(Math.max.apply(null, all));
    if (hi - lo < 0.5) { hi = lo + 0.5; }
    lo = Math.floor(lo * 2) / 2; hi = Math.ceil(hi * 2) / 2;
    var x = function (t) { return L + (W - L - R) * Math.log2(t) / Math.max(Math.log2(ts[ts.length - 1]), 1); };
    var y = function (us) { return T + (H - T - B) * (1 - (Math.log10(us) - lo) / (hi - lo)); };
    var root = svg("svg", {viewBox: "0 0 " + W + " " + H, width: "100%", role: "img",
      "aria-label": "expected cost in microseconds against tokens per rank", "class": "chart"});
    ts.forEach(function (t) {
      root.appendChild(svg("line", {x1: x(t), x2: x(t), y1: T, y2: H - B, stroke: "#eaeef2"}));
      root.appendChild(svg("text", {x: x(t), y: H - B + 14, "text-anchor": "middle", "font-size": "10"},
        t >= 1024 ? (t / 1024) + "K" : String(t)));
    });
    for (var e = Math.ceil(lo); e <= Math.floor(hi); e++) {
      var ye = y(Math.pow(10, e));
      root.appendChild(svg("line", {x1: L, x2: W - R, y1: ye, y2: ye, stroke: "#d1d9e0"}));
      root.appendChild(svg("text", {x: L - 4, y: y(Math.pow(10, e)) + 3, "text-anchor": "end", "font-size": "10"},
        String(Math.pow(10, e))));
    }
    root.appendChild(svg("text", {x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle", "font-size": "11"},
      "tokens per rank"));
    root.appendChild(svg("text", {x: 12, y: (T + H - B) / 2, "font-size": "11", "text-anchor": "middle",
      transform: "rotate(-90 12 " + (T + H - B) / 2 + ")"}, "us per layer call"));
    curves.forEach(function (c, i) {
      var d = c.t.map(function (t, k) { return (k ? "L" : "M") + x(t).toFixed(1) + " " + y(c.us[k]).toFixed(1); });
      root.appendChild(svg("path", {d: d.join(" "), fill: "none", stroke: COLORS[i % COLORS.length],
        "stroke-width": c.chosen ? "2.5" : "1.5", "stroke-dasharray": c.kind === "measured" ? "" : "5 3"}));
    });
    var wrap = el("figure", {"class": "chart"});
    wrap.appendChild(root);
    var legend = el("ul", {"class": "legend-list"});
    curves.forEach(function (c, i) {
      var swatch = el("span", {"class": "swatch", style: "background:" + COLORS[i % COLORS.length]});
      legend.appendChild(el("li", {}, [swatch,
        el("code", {text: c.path}), c.chosen ? " (chosen)" : "", " ", el("small", {text: c.basis})]));
    });
    wrap.appendChild(legend);
    wrap.appendChild(el("figcaption", {"class": "muted note", text: "Solid: measured basis; dashed: published or " +
      "roofline. The figures select ranks by (cost model), not a benchmark of this deployment."}));
    return wrap;
  }

  function same(a, b) {
    return a.length === b.length && a.every(function (x, i) { return x === b[i]; });
  }

  function firstOf(list, key) {
    var seen = {};
    list.forEach(function (x) { var k = key(x); if (!(k in seen)) { seen[k] = Object.keys(seen).length; } });
    return seen;
  }
  var order = {
    device: firstOf(D.scenarios, function (s) { return s.device; }),
    model: firstOf(D.scenarios, function (s) { return s.model; }),
    topology: firstOf(D.scenarios, function (s) { return s.topology; })
  };
  var VORDER = {s: "1", m: "2", u: "3", r: "4"};

  var rows = D.cells.map(function (c, n) {
    var sc = D.scenarios[c[0]], v = D.variants[c[1]], verdict = c[2], chosen = c[3] === 1;
    var why = shown(verdict, c[5]);
    var first = verdict === "m" ? "DEPLOYMENT_MEMORY_EXCEEDED" : why.length ? D.reasons[why[0]][0] : "";
    var otherArch = verdict === "r" && why.some(function (id) { return D.reasons[id][0] === "ARCH_UNSUPPORTED"; });
    var title;
    if (verdict === "m") {
      title = v.key + ": eligible, but the deployment does not fit in memory: " + sc.memory_need + " GiB";
    } else if (verdict === "s") {
      var cost = c[4] === null ? "" : "; expected " + c[4] + " us per layer call";
      title = v.key + ": supported" + (chosen ? ", the oracle's choice" : "") + cost +
        (chosen ? "" : "; the oracle chose " + (sc.scenario_choice || "none"));
    } else {
      title = [v.key + ": " + VERDICT[verdict]].concat(why.map(function (id) {
        return D.reasons[id][0] + ": " + D.reasons[id][2];
      })).join("\n");
    }
    var choice = sc.scenario_choice ? el("code", {text: sc.scenario_choice.split(":").slice(1).join(":")})
      : el("span", {"class": "muted", text: "none (non-fused)"});
    var tds = [
      el("td", {}, [sc.device + " ", el("small", {text: sc.arch})]),
      el("td", {text: sc.model}),
      el("td", {text: sc.weight_format}),
      el("td", {text: sc.topology})
    ];
    D.extra.forEach(function (k) { tds.push(el("td", {text: sc[k]})); });
    tds.push(el("td", {}, [el("code", {text: v.variant}), " ", el("small", {text: v.label})]));
    tds.push(el("td", {}, [chip(verdict, chosen)]));
    tds.push(el("td", {"class": "reason"}, verdict === "m"
      ? [el("code", {text: first}), el("small", {text: " " + sc.memory_need})]
      : first ? [el("code", {text: first}), why.length > 1 ? el("small", {text: " +" + (why.length - 1)}) : null]
      : []));
    tds.push(el("td", {"class": "choice"}, [choice]));
    var tr = el("tr", {"data-i": String(n), tabindex: "0", title: title}, tds);
    if (otherArch) { tr.className = "other-arch"; }
    var keys = {
      order: pad(n), device: pad(order.device[sc.device]), model: pad(order.model[sc.model]),
      weights: sc.weight_format, topology: pad(order.topology[sc.topology]), engine: sc.engine,
      software: sc.software, variant: pad(c[1]), verdict: chosen ? "0" : VORDER[verdict], reason: first,
      choice: sc.scenario_choice || "~"
    };
    var fields = {
      device: sc.device, model: sc.model, topology: sc.topology, engine: sc.engine, software: sc.software,
      variant: v.key, verdict: VERDICT[verdict], chosen: chosen
    };
    return {el: tr, i: n, keys: keys, fields: fields, otherArch: otherArch,
            text: (tr.textContent + " " + title + " " + v.key).toLowerCase()};
  });
  var frag0 = document.createDocumentFragment();
  rows.forEach(function (r) { frag0.appendChild(r.el); });
  tbody.appendChild(frag0);
  var byCell = rows.slice();
  var sortKey = null, sortDir = 1, current = null;

  function params() {
    try { return new URLSearchParams(location.hash.replace(/^#/, "")); } catch (e) { return new URLSearchParams(""); }
  }

  function saveState() {
    var p = new URLSearchParams();
    if (q.value) { p.set("q", q.value); }
    selects.forEach(function (s) { if (s.value) { p.set(s.dataset.filter, s.value); } });
    if (!hideArch.checked) { p.set("arch", "all"); }
    if (sortKey && sortKey !== "order") { p.set("sort", sortKey); p.set("dir", sortDir > 0 ? "asc" : "desc"); }
    if (current !== null) { p.set("cell", String(current)); }
    var hash = p.toString();
    try {
      history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
    } catch (e) { /* some browsers refuse replaceState on file: URLs; the page works without it */ }
  }

  function applyFilters() {
    var needle = q.value.trim().toLowerCase();
    var terms = needle ? needle.split(/\s+/) : [];
    var wanted = selects.filter(function (s) { return s.value; });
    var visible = 0;
    rows.forEach(function (r) {
      var ok = !(hideArch.checked && r.otherArch);
      for (var i = 0; ok && i < wanted.length; i++) {
        var key = wanted[i].dataset.filter, val = wanted[i].value;
        ok = key === "verdict" && val === "chosen" ? r.fields.chosen : r.fields[key] === val;
      }
      for (var j = 0; ok && j < terms.length; j++) { ok = r.text.indexOf(terms[j]) !== -1; }
      r.el.hidden = !ok;
      if (ok) { visible++; }
    });
    count.textContent = "Showing " + visible + " of " + rows.length + " cells";
    document.getElementById("empty").hidden = visible !== 0;
    body.dataset.visible = String(visible);
  }

  function sortBy(key, dir) {
    sortKey = key; sortDir = dir;
    rows.sort(function (a, b) {
      var x = a.keys[key] || "", y = b.keys[key] || "";
      return (x < y ? -1 : x > y ? 1 : 0) * dir || a.i - b.i;
    });
    var frag = document.createDocumentFragment();
    rows.forEach(function (r) { frag.appendChild(r.el); });
    tbody.appendChild(frag);
    headers.forEach(function (th) {
      var on = th.dataset.k === key;
      th.setAttribute("aria-sort", on ? (dir > 0 ? "ascending" : "descending") : "none");
      var arrow = th.querySelector(".arrow");
      if (arrow) { arrow.textContent = on ? (dir > 0 ? " \u25B2" : " \u25BC") : ""; }
    });
    body.dataset.sorted = key + ":" + (dir > 0 ? "asc" : "desc");
  }

  function reasonList(ids) {
    if (!ids.length) { return el("p", {"class": "muted", text: "No rule fails and none is unverifiable."}); }
    return el("ol", {"class": "reasons"}, ids.map(function (id) {
      var r = D.reasons[id];
      var meta = "Rule: " + (r[4] || "-") + (r[5].length ? ". Sources: " + r[5].join("; ") : "");
      return el("li", {}, [
        el("div", {}, [el("code", {text: r[0]}), r[1] !== "fail" ? " (" + r[1] + ")" : "", " ", r[2]]),
        el("div", {"class": "fix", text: "Fix: " + (r[3] || "-")}),
        el("div", {"class": "meta", text: meta})
      ]);
    }));
  }

  function openDetail(n, focus) {
    var c = D.cells[n];
    if (!c) { return; }
    var sc = D.scenarios[c[0]], v = D.variants[c[1]];
    if (current !== null) { byCell[current].el.classList.remove("selected"); }
    current = n;
    byCell[n].el.classList.add("selected");
    panel.textContent = "";
    var close = el("button", {"class": "close", type: "button", "aria-label": "Close details", text: "Close"});
    close.addEventListener("click", function () { closeDetail(); });
    var heading = el("h2", {tabindex: "-1", id: "detail-title"}, [el("code", {text: v.key})]);
    panel.appendChild(close);
    panel.appendChild(heading);
    panel.appendChild(el("p", {}, [chip(c[2], c[3] === 1, true)]));
    panel.appendChild(el("p", {"class": "muted", text: v.summary}));
    var dl = el("dl");
    [["model", sc.model + " (" + sc.architecture + ")"], ["main group", sc.groups[0][0] + ": " + sc.weights],
     ["device", sc.device + " (" + sc.arch + ")"],
     ["topology", sc.topology + ": " + sc.nodes + " node(s) x " + sc.gpus_per_node + " GPUs, domain " +
      sc.domain_size + "; tp " + sc.tp + ", dp " + sc.dp + ", ep " + sc.ep],
     ["engine", sc.engine], ["software", sc.software],
     ["memory fit", sc.memory_fit + (sc.memory_need ? " (" + sc.memory_need + " GiB)" : "")],
     ["oracle's choice", sc.scenario_choice || ("none: " + (sc.fallback || "non-fused path"))],
     ["expected cost", c[4] === null ? "" : c[4] + " us per layer call (ranking estimate)"]].forEach(function (kv) {
      if (!kv[1]) { return; }
      dl.appendChild(el("dt", {text: kv[0]}));
      dl.appendChild(el("dd", {text: kv[1]}));
    });
    panel.appendChild(dl);
    if (sc.curves && sc.curves.length) {
      panel.appendChild(el("h3", {text: "Expected cost against tokens per rank (main layer group)"}));
      panel.appendChild(costChart(sc.curves));
    }
    panel.appendChild(el("h3", {text: "Reasons on the main layer group"}));
    panel.appendChild(reasonList(c[5]));
    if (c[6].length) {
      panel.appendChild(el("h3", {text: "Other layer groups"}));
      var ul = el("ul");
      c[6].forEach(function (g, k) {
        var grp = sc.groups[k + 1];
        var li = el("li", {}, [el("code", {text: grp[0]}), " (layers " + grp[1] + ", " + grp[2] + "): ",
          chip(g[0], g[1] === 1, true)]);
        if (g[2].length && same(g[2], c[5])) {
          li.appendChild(el("div", {"class": "muted", text: "the same reasons as the main layer group"}));
        } else if (g[2].length) {
          li.appendChild(reasonList(g[2]));
        }
        ul.appendChild(li);
      });
      panel.appendChild(ul);
    }
    panel.appendChild(el("h3", {text: "Reproduce"}));
    panel.appendChild(el("pre", {}, [el("code", {text: sc.select_command + " --all-reasons"})]));
    panel.hidden = false;
    body.classList.add("has-detail");
    body.dataset.detail = String(n);
    if (focus) { heading.focus(); }
    saveState();
  }

  function closeDetail() {
    if (current === null) { return; }
    var back = byCell[current].el;
    back.classList.remove("selected");
    current = null;
    panel.hidden = true;
    body.classList.remove("has-detail");
    delete body.dataset.detail;
    back.focus();
    saveState();
  }

  headers.forEach(function (th) {
    var btn = th.querySelector("button");
    if (!btn) { return; }
    btn.addEventListener("click", function () {
      var key = th.dataset.k;
      sortBy(key, sortKey === key ? -sortDir : 1);
      saveState();
    });
  });
  tbody.addEventListener("click", function (e) {
    var tr = e.target.closest("tr");
    if (tr) { openDetail(+tr.dataset.i, false); }
  });
  tbody.addEventListener("keydown", function (e) {
    var tr = e.target.closest("tr");
    if (tr && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); openDetail(+tr.dataset.i, true); }
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape" && current !== null) { closeDetail(); }
  });
  q.addEventListener("input", function () { applyFilters(); saveState(); });
  hideArch.addEventListener("change", function () { applyFilters(); saveState(); });
  selects.forEach(function (s) { s.addEventListener("change", function () { applyFilters(); saveState(); }); });
  document.getElementById("reset").addEventListener("click", function () {
    q.value = "";
    hideArch.checked = true;
    selects.forEach(function (s) { s.value = ""; });
    if (current !== null) { closeDetail(); }
    applyFilters();
    sortBy("order", 1);
    saveState();
  });

  var controls = document.querySelector(".controls");
  function stickyOffset() {
    document.documentElement.style.setProperty("--sticky", controls.offsetHeight + "px");
  }
  window.addEventListener("resize", stickyOffset);
  stickyOffset();

  var p = params();
  if (p.get("q")) { q.value = p.get("q"); }
  selects.forEach(function (s) {
    var val = p.get(s.dataset.filter);
    if (val && Array.prototype.some.call(s.options, function (o) { return o.value === val; })) { s.value = val; }
  });
  if (p.get("arch") === "all") { hideArch.checked = false; }
  var key = p.get("sort");
  var valid = headers.some(function (th) { return th.dataset.k === key; });
  sortBy(valid ? key : "order", p.get("dir") === "desc" ? -1 : 1);
  applyFilters();
  var cell = p.get("cell");
  if (cell !== null && /^[0-9]+$/.test(cell) && D.cells[+cell]) { openDetail(+cell, false); }
  body.dataset.ready = "1";
})();
"""
