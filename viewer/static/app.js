// verifleet viewer: one page, hash routes, no dependencies. In "server" mode the data
// comes from the JSON API; in "static" mode (a report file) it is embedded in #boot
// and the table is filtered and paged here. Text is always inserted as text nodes.
"use strict";
(function () {
  const BOOT = JSON.parse(document.getElementById("boot").textContent);
  const STATIC = BOOT.mode === "static";
  const SVG = "http://www.w3.org/2000/svg";
  const main = document.getElementById("main");
  let runs = [];
  let liveTimer = null;
  let renders = 0;

  // --- DOM helpers -----------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined) continue;
      node.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  // replaceChildren turns null into the text "null": optional sections are left out.
  function setMain(...nodes) {
    main.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined && n !== false));
  }
  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const c of children) {
      node.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%");
  const num = (x, d) => (x === null || x === undefined ? "–" : Number(x).toFixed(d));
  const int = (x) => (x === null || x === undefined ? "–" : Number(x).toLocaleString("en-US"));
  const badge = (v) => el("span", { class: "badge " + v, "data-verdict": v }, v);
  const short = (s, n) => (s && s.length > n ? s.slice(0, n - 1) + "…" : s || "");
  const show = (x) => (x === null || x === undefined ? "–" : typeof x === "object" ? JSON.stringify(x) : String(x));

  // --- data access -------------------------------------------------------------------
  async function api(path, params) {
    if (STATIC) return local(path, params || {});
    const qs = new URLSearchParams(params || {}).toString();
    const res = await fetch("api/" + path + (qs ? "?" + qs : ""), { credentials: "same-origin" });
    const body = await res.json();
    if (!res.ok) throw new Error(body.message || body.detail || res.statusText);
    return body;
  }

  // The report's stand-in for the API: the same answers, from the embedded data.
  function local(path, p) {
    const parts = path.split("/");
    if (path === "runs") return BOOT.runs.map((r, i) => ({ id: i, name: r.name, live: false, count: r.count, info: r.info }));
    if (path === "matrix") {
      const m = BOOT.matrix[p.by || "answering"];
      if (!m) throw new Error("no matrix by " + p.by);
      const rows = p.differ === "yes" ? m.rows.filter((r) => r.disagree) : m.rows;
      const offset = Number(p.offset || 0), limit = Number(p.limit || 200);
      return Object.assign({}, m, { total: rows.length, offset: offset, rows: rows.slice(offset, offset + limit) });
    }
    const run = BOOT.runs[Number(parts[1])];
    if (!run) throw new Error("no such run");
    if (parts[2] === "overview") return run.overview;
    if (parts[2] === "facets") return run.facets;
    if (parts[2] === "scenarios") return run.scenarios || [];
    if (parts[2] === "results" && parts.length === 3) return localPage(run, p);
    if (parts[2] === "results" && parts.length === 4) return localDetail(run, Number(parts[3]));
    throw new Error("no such page in this report: " + path);
  }

  // Every result's page is embedded gzip-compressed; inflated once, on the first one shown.
  async function localDetail(run, row) {
    if (!run.detailCache) {
      const bytes = Uint8Array.from(atob(run.details || ""), (c) => c.charCodeAt(0));
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      run.detailCache = await new Response(stream).json();
    }
    const found = run.detailCache[row];
    if (!found) throw new Error("this report has no result " + row);
    return found;
  }

  function localPage(run, p) {
    const cols = run.table.columns;
    const at = Object.fromEntries(cols.map((c, i) => [c, i]));
    const sep = "\u001f";
    const q = (p.search || "").toLowerCase();
    let rows = run.table.rows.filter((r) =>
      (!p.answering || r[at.answering] === p.answering) &&
      (!p.parsing || r[at.parsing] === p.parsing) &&
      (!p.verdict || r[at.verdict] === p.verdict) &&
      (!p.keyword || r[at.keywords].includes(sep + p.keyword + sep)) &&
      (!p.error || (p.error === "yes") === !r[at.completed]) &&
      (!q || r[at.question_text].toLowerCase().includes(q) ||
        r[at.question_id].toLowerCase().includes(q) || r[at.error].toLowerCase().includes(q) ||
        (r[at.answer] || "").toLowerCase().includes(q)));
    const sort = p.sort || "row";
    const key = sort.replace(/^-/, "");
    if (key !== "row" || sort.startsWith("-")) {
      const dir = sort.startsWith("-") ? -1 : 1;
      rows = rows.slice().sort((a, b) => {
        const x = a[at[key]], y = b[at[key]];
        if (x === y) return a[at.row] - b[at.row];
        if (x === null) return 1;
        if (y === null) return -1;
        return (x < y ? -1 : 1) * dir;
      });
    }
    const offset = Number(p.offset || 0), limit = Number(p.limit || 50);
    const page = rows.slice(offset, offset + limit).map((r) => Object.fromEntries(cols.map((c, i) => [c, r[i]])));
    return { total: rows.length, offset: offset, rows: page };
  }

  // --- routing -------------------------------------------------------------------------
  function route() {
    const hash = location.hash.replace(/^#\/?/, "");
    const [path, query] = hash.split("?");
    const parts = path.split("/").filter(Boolean);
    return { parts: parts, params: Object.fromEntries(new URLSearchParams(query || "")) };
  }
  function go(path, params) {
    const clean = Object.fromEntries(Object.entries(params || {}).filter(([, v]) => v !== "" && v !== undefined && v !== null));
    const qs = new URLSearchParams(clean).toString();
    location.hash = "#/" + path + (qs ? "?" + qs : "");
  }

  // One page render at a time, each for the hash as it is when it starts: a
  // render still fetching when the hash changes must not write its page over
  // the newer one's (it finishes first, then the newer hash is rendered).
  let rendering = Promise.resolve();
  function render() {
    rendering = rendering.then(renderNow, renderNow);
    return rendering;
  }

  async function renderNow() {
    const { parts, params } = route();
    const run = parts[0] === "run" ? Number(parts[1] || 0) : Number(params.a || 0);
    setNav(run, parts);
    startLive(run);
    try {
      if (parts[0] === "compare") await judging.renderCompare(params);
      else if (parts[0] === "matrix") await renderMatrix(params);
      else if (parts[2] === "result") await renderResult(run, Number(parts[3]));
      else if (parts[2] === "table") await renderTable(run, params);
      else if (parts[2] === "scenarios") await renderScenarios(run);
      else await renderOverview(run);
    } catch (err) {
      setMain(el("p", { class: "error-text", id: "page-error" }, String(err.message || err)));
    }
    // Tests (and anyone scripting the page) wait for this counter to move.
    document.body.setAttribute("data-rendered", String(++renders));
  }

  function setNav(run, parts) {
    const select = document.getElementById("run-select");
    select.replaceChildren(...runs.map((r) => el("option", { value: r.id, selected: r.id === run }, r.name + " (" + int(r.count) + ")")));
    select.hidden = runs.length < 2;
    document.getElementById("nav-overview").href = "#/run/" + run;
    document.getElementById("nav-table").href = "#/run/" + run + "/table";
    document.getElementById("nav-scenarios").href = "#/run/" + run + "/scenarios";
    document.getElementById("nav-compare").hidden = runs.length < 2 || STATIC;
    const page = parts[0] === "compare" || parts[0] === "matrix" ? parts[0] : parts[2] === "table" || parts[2] === "result" ? "table" : parts[2] === "scenarios" ? "scenarios" : "overview";
    for (const name of ["overview", "table", "scenarios", "matrix", "compare"]) {
      document.getElementById("nav-" + name).classList.toggle("active", name === page);
    }
  }

  // --- live jobs -------------------------------------------------------------------------
  function startLive(run) {
    if (liveTimer) clearTimeout(liveTimer);
    liveTimer = null;
    const banner = document.getElementById("live");
    if (!runs[run] || !runs[run].live) { banner.hidden = true; return; }
    const tick = async () => {
      let state;
      try { state = await api("runs/" + run + "/live"); } catch (err) { banner.textContent = "live update failed: " + err.message; return; }
      const p = state.progress;
      const share = p.total_units ? p.done_units / p.total_units : 0;
      banner.hidden = false;
      banner.replaceChildren(
        el("b", {}, p.finished ? "Job " + p.status : "Job running"), " · ",
        el("span", { class: "progress" }, el("div", { style: "width:" + (100 * share).toFixed(1) + "%" })), " ",
        el("span", { id: "live-units" }, p.done_units + " / " + p.total_units + " units"), " · ",
        el("span", { id: "live-results" }, int(state.count) + " results"), " · ",
        el("span", { id: "live-rate" }, num(p.rate, 1) + " results/s"), " · ",
        p.failed_units + " units with errors · " + p.in_flight + " in flight");
      runs[run].count = state.count;
      if (state.added > 0) {
        const { parts } = route();
        // Refresh what is on screen; a result page does not change.
        if (parts[2] !== "result" && parts[0] !== "compare") await (parts[2] === "table" ? renderTable(run, route().params) : renderOverview(run));
      }
      if (!(p.finished && state.added === 0)) liveTimer = setTimeout(tick, 2000);
    };
    tick();
  }

  // --- overview ------------------------------------------------------------------------
  const SUMMARY = [
    ["num_results", "results verified"], ["num_passed", "passed"], ["num_failed", "failed"],
    ["pass_rate", "pass rate"], ["num_questions", "questions"], ["num_with_embedding", "with embedding check"],
    ["num_with_regex", "with regex checks"], ["num_with_abstention", "with abstention check"],
  ];

  // What the run is: source, dates, models, version, config (the header of every page).
  function runInfo(run) {
    const info = (runs[run] && runs[run].info) || null;
    if (!info) return null;
    const list = (xs) => (xs && xs.length ? xs.join(", ") : "–");
    const config = info.config ? Object.entries(info.config).map(([k, v]) => k + "=" + (typeof v === "object" ? JSON.stringify(v) : String(v))).join(" · ") : null;
    const rows = [
      ["source", (info.source === "job" ? "fleet job " : info.source === "file" ? "file " : "") + info.location, "source"],
      info.source === "file" ? ["file written", info.modified + " (" + info.format + ", " + int(info.size_bytes) + " bytes)", "modified"] : null,
      info.source === "job" ? ["job", [info.job_name, info.status, "created " + info.created].filter(Boolean).join(" · "), "job"] : null,
      ["results", int(info.results) + (info.first_result ? " · produced " + info.first_result + (info.last_result && info.last_result !== info.first_result ? " to " + info.last_result : "") : ""), "results"],
      ["answering models", list(info.answering), "answering"],
      ["parsing models", list(info.parsing), "parsing"],
      info.run_names && info.run_names.length ? ["run name", list(info.run_names), "run-name"] : null,
      config ? ["config", config, "config"] : null,
      ["verifleet", info.viewer_version + (info.report_written ? " (report written " + info.report_written + ")" : ""), "version"],
    ].filter(Boolean);
    return el("details", { id: "run-info", open: true }, el("summary", {}, "About this run"),
      el("dl", { class: "run-info" }, rows.flatMap(([k, v, key]) => [el("dt", {}, k), el("dd", { "data-info": key }, v)])));
  }

  async function renderOverview(run) {
    const o = await api("runs/" + run + "/overview");
    const t = o.totals;
    setMain(
      runInfo(run),
      el("h2", {}, "Template verification"),
      el("div", { class: "cards", id: "summary" }, SUMMARY.map(([k, label]) =>
        el("div", { class: "card", "data-summary": k }, el("b", {}, k === "pass_rate" ? pct(o.summary[k]) : int(o.summary[k])), el("span", {}, label),
          k === "pass_rate" ? overallInterval(o.pass_rate_interval) : null))),
      el("div", { class: "cards", id: "totals", style: "margin-top:.7em" },
        el("div", { class: "card", "data-total": "num_results" }, el("b", {}, int(t.num_results)), el("span", {}, "results in all")),
        el("div", { class: "card", "data-total": "num_errors" }, el("b", {}, int(t.num_errors)), el("span", {}, "with errors")),
        el("div", { class: "card", "data-total": "num_with_rubric" }, el("b", {}, int(t.num_with_rubric)), el("span", {}, "with rubric")),
        el("div", { class: "card", "data-total": "total_tokens" }, el("b", {}, int(t.total_tokens)), el("span", {}, "tokens")),
        el("div", { class: "card", "data-total": "execution_time" }, el("b", {}, num(t.execution_time, 1) + " s"), el("span", {}, "execution time"))),
      el("h2", {}, "Pass rate per answering × parsing model (95 % interval, questions as clusters)"),
      el("p", { class: "muted explain" }, "Replicates (and judges) of one question are not independent, so the interval treats questions as the sampled units; " +
        "with one verdict per question it is Wilson's. Hover a bar for the Wilson interval that treats every verdict as independent (too narrow with replicates). " + DOCS),
      passRateChart(run, o.pass_rates),
      replicateSection(run, o.replicates),
      el("h2", {}, "Granular score distribution"),
      granularCharts(o.granular),
      el("h2", {}, "Rubric trait scores per answering model (mean, 95 % interval with questions as clusters)"),
      el("p", { class: "muted explain" }, "Each cell: the trait's mean score over the model's results and its clustered interval (replicates and judges of one question count once as a cluster); " +
        "booleans count as 0/1. The interval is a normal one: with few questions it is too narrow and near a scale's end it may pass it. " + DOCS),
      rubricHeatmap(o.rubric),
      el("h2", {}, "Errors and check overrides"),
      countsTable(run, o.counts),
      o.top_errors.length ? el("h3", {}, "Most frequent errors") : null,
      o.top_errors.length ? el("table", { id: "top-errors" }, el("tr", {}, el("th", {}, "error"), el("th", { class: "num" }, "results")),
        o.top_errors.map((e) => el("tr", {}, el("td", {}, e.error), el("td", { class: "num" }, int(e.count))))) : null);
  }

  // Interval text and the replicate section live in figures.js, loaded first.
  const figures = window.verifleetFigures({ el, pct, int });
  const { DOCS, ci, overallInterval, replicateSection } = figures;

  function passRateChart(run, rates) {
    if (!rates.length) return el("p", { class: "muted" }, "No template verification ran.");
    const rowH = 26, labelW = 360, barW = 420, h = rates.length * rowH + 24;
    const chart = svg("svg", { width: labelW + barW + 250, height: h, id: "pass-rate-chart", role: "img" });
    for (let i = 0; i <= 4; i++) {
      const x = labelW + (barW * i) / 4;
      chart.appendChild(svg("line", { x1: x, x2: x, y1: 0, y2: h - 16, stroke: "#e0e0e0" }));
      chart.appendChild(svg("text", { x: x - 8, y: h - 4 }, i * 25 + "%"));
    }
    rates.forEach((r, i) => {
      const y = i * rowH + 4;
      const g = svg("g", { class: "pair", "data-answering": r.answering, "data-parsing": r.parsing, "data-rate": r.pass_rate, "data-low": r.low, "data-high": r.high,
        "data-method": r.method || "", "data-wilson-low": r.wilson_low, "data-wilson-high": r.wilson_high, style: "cursor:pointer" });
      g.addEventListener("click", () => go("run/" + run + "/table", { answering: r.answering, parsing: r.parsing }));
      g.appendChild(svg("text", { x: 0, y: y + 14 }, short(r.answering + "  |  " + r.parsing, 58)));
      g.appendChild(svg("rect", { x: labelW, y: y + 2, width: Math.max(1, barW * r.pass_rate), height: rowH - 10, fill: "#66bb6a" }));
      const lo = labelW + barW * r.low, hi = labelW + barW * r.high, mid = y + rowH / 2 - 2;
      g.appendChild(svg("line", { x1: lo, x2: hi, y1: mid, y2: mid, stroke: "#1b5e20", "stroke-width": 2 }));
      g.appendChild(svg("line", { x1: lo, x2: lo, y1: mid - 5, y2: mid + 5, stroke: "#1b5e20", "stroke-width": 2 }));
      g.appendChild(svg("line", { x1: hi, x2: hi, y1: mid - 5, y2: mid + 5, stroke: "#1b5e20", "stroke-width": 2 }));
      g.appendChild(svg("text", { x: labelW + barW + 8, y: y + 14, class: "rate-text" }, pct(r.pass_rate) + " " + ci(r.low, r.high) + " n=" + r.total + ", " + r.questions + " q"));
      g.appendChild(svg("title", {}, r.passed + " of " + r.total + " passed over " + r.questions + " questions; 95 % interval " + ci(r.low, r.high) +
        (r.method === "clustered" ? " (clustered); Wilson, verdicts as independent: " + ci(r.wilson_low, r.wilson_high) : " (Wilson: one verdict per question)")));
      chart.appendChild(g);
    });
    return el("div", { class: "chart" }, chart);
  }

  function granularCharts(g) {
    if (!g.series.length) return el("p", { class: "muted" }, "No granular scores.");
    const w = 260, h = 120, bins = g.edges.length - 1;
    return el("div", { class: "hist-grid", id: "granular" }, g.series.map((s) => {
      const max = Math.max(1, ...s.counts);
      const chart = svg("svg", { width: w, height: h + 36, class: "histogram", "data-answering": s.answering });
      s.counts.forEach((c, i) => {
        const bh = (h * c) / max;
        const bar = svg("rect", { x: (i * w) / bins + 1, y: h - bh, width: w / bins - 2, height: bh, fill: "#42a5f5", "data-count": c });
        bar.appendChild(svg("title", {}, num(g.edges[i], 2) + "–" + num(g.edges[i + 1], 2) + ": " + c));
        chart.appendChild(bar);
      });
      chart.appendChild(svg("text", { x: 0, y: h + 14 }, num(g.edges[0], 2)));
      chart.appendChild(svg("text", { x: w - 24, y: h + 14 }, num(g.edges[bins], 2)));
      chart.appendChild(svg("text", { x: 0, y: h + 30 }, short(s.answering, 30) + " · mean " + num(s.mean, 3) + " · n=" + s.n));
      return el("div", { class: "chart" }, chart);
    }));
  }

  function rubricHeatmap(r) {
    if (!r.traits.length) return el("p", { class: "muted" }, "No rubric scores.");
    // Colour per trait column: its lowest model mean is light, its highest dark.
    const ranges = r.traits.map((_, j) => {
      const vals = r.means.map((row) => row[j]).filter((v) => v !== null);
      return [Math.min(...vals), Math.max(...vals)];
    });
    return el("table", { id: "rubric-heatmap" },
      el("tr", {}, el("th", {}, "answering model"), r.traits.map((t) => el("th", { class: "num", title: t.type + " trait" }, t.name))),
      r.models.map((m, i) => el("tr", { "data-model": m }, el("td", {}, m), r.traits.map((t, j) => {
        const v = r.means[i][j];
        const [lo, hi] = ranges[j];
        const shade = v === null ? 0 : hi > lo ? (v - lo) / (hi - lo) : 0.5;
        const style = v === null ? "" : "background: rgba(21,101,192," + (0.12 + 0.6 * shade).toFixed(2) + ")";
        const iv = r.intervals[i][j];
        return el("td", { class: "num", style: style, "data-trait": t.name, "data-low": iv ? iv.low : null, "data-high": iv ? iv.high : null,
          title: "n=" + r.counts[i][j] + (iv ? " over " + iv.questions + " questions" : "") },
          el("span", { class: "mean" }, v === null ? "–" : num(v, 2)), iv ? el("small", { class: "ci" }, " [" + num(iv.low, 2) + "–" + num(iv.high, 2) + "]") : null);
      }))));
  }

  function countsTable(run, c) {
    return el("table", { id: "counts" },
      el("tr", {}, el("th", {}, "answering model"), el("th", { class: "num" }, "results"), c.columns.map((col) => el("th", { class: "num", title: col.help }, col.name.replace(/_/g, " ")))),
      c.rows.map((row) => el("tr", { "data-model": row.answering }, el("td", {}, row.answering), el("td", { class: "num" }, int(row.results)),
        c.columns.map((col) => {
          const cell = el("td", { class: "num", "data-count": col.name }, int(row[col.name]));
          if (col.name === "errors" && row.errors > 0) {
            cell.replaceChildren(el("a", { href: "#/run/" + run + "/table?answering=" + encodeURIComponent(row.answering) + "&error=yes" }, int(row.errors)));
          }
          return cell;
        }))),
      el("tr", { "data-model": "" }, el("th", {}, "all"), el("th", {}, ""), c.columns.map((col) => el("th", { class: "num", "data-total": col.name }, int(c.totals[col.name])))));
  }

  // --- scenario runs: each turn with the agent that answered and the handover that led there
  async function renderScenarios(run) {
    const found = await api("runs/" + run + "/scenarios");
    if (!found.length) {
      setMain(el("h2", {}, "Scenario runs"), el("p", { class: "muted", id: "no-scenarios" }, "This run has no scenario runs."));
      return;
    }
    const sections = found.map((s) => el("section", { class: "scenario-run", "data-scenario": s.scenario_id },
      el("h3", {}, s.scenario_id + " · " + show(s.answering_model) + " · replicate " + show(s.replicate) + " · ", badge(s.status)),
      kv([
        ["path", s.path.join(" → ")],
        ["turns", String(s.turn_count)],
        ["outcomes", Object.entries(s.outcome_results).map(([k, v]) => k + ": " + show(v)).join(", ") || "–"],
        s.failure ? ["failure", (s.failure.node_id ? "node " + s.failure.node_id + ", " : "") + show(s.failure.stage) + ": " + s.failure.reason] : null,
        s.trace.length ? ["trace", s.trace.join("\n")] : null,
      ]),
      el("table", { class: "scenario-turns" },
        el("tr", {}, ["#", "node", "agent", "handover", "question", "answer", "verdict"].map((h) => el("th", {}, h))),
        s.turns.map((t) => el("tr", { "data-turn": t.turn },
          el("td", { class: "num" }, String(t.turn)), el("td", {}, t.node_id),
          el("td", { class: "agent" }, show(t.agent_id)), el("td", { class: "handover" }, show(t.handover)),
          el("td", { title: t.prompt || t.question_text }, short(t.prompt || t.question_text, 160)),
          el("td", {}, short(t.error ? "error: " + t.error : t.raw_response, 160)),
          el("td", {}, badge(t.verify_result === true ? "pass" : t.verify_result === false ? "fail" : "none")))))));
    setMain(el("h2", {}, "Scenario runs"), ...sections);
  }

  // --- question table ---------------------------------------------------------------------
  const COLUMNS = [
    ["row", "#", true], ["question_id", "question id"], ["question_text", "question"], ["answer", "answer"], ["answering", "answering"],
    ["parsing", "parsing"], ["replicate", "rep", true], ["verdict", "verdict"], ["granular", "score", true],
    ["total_tokens", "tokens", true], ["execution_time", "time (s)", true], ["error", "error"],
  ];

  async function renderTable(run, params) {
    const limit = Number(params.limit || 50), offset = Number(params.offset || 0);
    const [facets, page] = await Promise.all([api("runs/" + run + "/facets"), api("runs/" + run + "/results", Object.assign({}, params, { limit: limit, offset: offset }))]);
    const set = (changes) => go("run/" + run + "/table", Object.assign({}, params, { offset: 0 }, changes));
    const choice = (name, label, values) => el("label", {}, label, el("select", { id: "filter-" + name, onchange: (e) => set({ [name]: e.target.value }) },
      el("option", { value: "" }, "any"), values.map((v) => el("option", { value: v, selected: params[name] === v }, v))));
    let timer = null;
    const search = el("input", { id: "filter-search", type: "search", placeholder: "id, question, answer or error text", value: params.search || "",
      oninput: (e) => { clearTimeout(timer); timer = setTimeout(() => set({ search: e.target.value }), 350); } });
    const sort = params.sort || "row";
    const head = el("tr", {}, COLUMNS.map(([key, label, numeric]) => el("th", { class: "sortable" + (numeric ? " num" : ""), "data-sort": key,
      onclick: () => set({ sort: sort === key ? "-" + key : key }) }, label + (sort === key ? " ▲" : sort === "-" + key ? " ▼" : ""))));
    const body = page.rows.map((r) => el("tr", { class: "clickable result-row", "data-row": r.row, "data-verdict": r.verdict, onclick: () => go("run/" + run + "/result/" + r.row) },
      el("td", { class: "num" }, r.row), el("td", {}, short(r.question_id, 24)), el("td", { title: r.question_text }, short(r.question_text, 80)),
      el("td", { class: "answer", title: r.answer || "" }, short(r.answer || "", 60)),
      el("td", {}, r.answering), el("td", {}, r.parsing), el("td", { class: "num" }, show(r.replicate)), el("td", {}, badge(r.verdict)),
      el("td", { class: "num" }, num(r.granular, 2)), el("td", { class: "num" }, int(r.total_tokens)), el("td", { class: "num" }, num(r.execution_time, 2)),
      el("td", { class: "error-text", title: r.error }, short(r.error, 60))));
    const last = Math.min(page.total, offset + page.rows.length);
    setMain(
      runInfo(run),
      el("div", { class: "filters" },
        choice("answering", "answering model", facets.answering), choice("parsing", "parsing model", facets.parsing),
        choice("verdict", "verdict", facets.verdicts), facets.keywords.length ? choice("keyword", "keyword", facets.keywords) : null,
        choice("error", "error", ["yes", "no"]), el("label", {}, "search", search),
        el("button", { id: "filter-clear", onclick: () => go("run/" + run + "/table", {}) }, "clear")),
      el("div", { class: "pager" },
        el("button", { id: "page-prev", disabled: offset <= 0, onclick: () => set({ offset: Math.max(0, offset - limit), sort: params.sort }) }, "‹ previous"),
        el("span", { id: "page-info", "data-total": page.total }, page.total ? (offset + 1) + "–" + last + " of " + int(page.total) : "no results match"),
        el("button", { id: "page-next", disabled: offset + limit >= page.total, onclick: () => set({ offset: offset + limit, sort: params.sort }) }, "next ›")),
      el("table", { id: "results" }, head, body));
    // The box is redrawn with the results: keep typing where it left off.
    if (document.activeElement !== search && params.search) {
      search.focus();
      search.setSelectionRange(search.value.length, search.value.length);
    }
  }

  // --- one result ------------------------------------------------------------------------
  function highlighted(text, excerpts) {
    // Mark every occurrence of every excerpt (case-insensitive); overlaps keep the first.
    const lower = text.toLowerCase();
    const spans = [];
    for (const ex of excerpts) {
      const needle = ex.text.toLowerCase();
      for (let at = lower.indexOf(needle); at >= 0 && needle; at = lower.indexOf(needle, at + needle.length)) {
        spans.push([at, at + needle.length, ex]);
      }
    }
    spans.sort((a, b) => a[0] - b[0]);
    const out = [];
    let pos = 0;
    for (const [start, end, ex] of spans) {
      if (start < pos) continue;
      out.push(text.slice(pos, start));
      out.push(el("mark", { title: ex.kind + " " + ex.name + (ex.confidence ? " (" + ex.confidence + ")" : ""), "data-excerpt": ex.name }, text.slice(start, end)));
      pos = end;
    }
    out.push(text.slice(pos));
    return out;
  }

  function kv(rows) {
    return el("table", { class: "kv" }, rows.filter((r) => r).map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v))));
  }

  // Every model call of the result: the messages sent and the raw reply, one
  // collapsible block each (open: these are what explains a verdict).
  function modelCalls(calls, m) {
    const head = el("h3", {}, "Prompts and replies (" + calls.length + " model calls)");
    if (!calls.length) {
      const prompts = [m.answering_system_prompt ? ["answering system prompt", el("pre", {}, m.answering_system_prompt)] : null,
        m.parsing_system_prompt ? ["parsing system prompt", el("pre", {}, m.parsing_system_prompt)] : null];
      return [head, el("div", { id: "model-calls" }, el("p", { class: "muted" },
        "No model calls recorded in this result (results written before verifleet recorded them, with record_model_calls off, or of rubric_only runs)."),
        prompts.some(Boolean) ? kv(prompts) : null)];
    }
    return [head, el("div", { id: "model-calls" }, calls.map((c, i) => el("details", { class: "model-call", open: true, "data-stage": c.stage },
      el("summary", {}, (i + 1) + ". " + c.stage + (c.model ? " · " + c.model : "") + (c.kind === "json" ? " · JSON" : "") +
        (c.cached ? " · from the call cache" : "") + (c.truncated ? " · truncated" : "") + (c.error ? " · failed" : "")),
      (c.messages || []).map((msg) => el("div", { class: "trace-msg role-" + msg.role }, el("div", { class: "trace-role" }, msg.role),
        el("pre", { class: "call-content" }, msg.content || ""))),
      c.reply !== null && c.reply !== undefined ? el("div", { class: "trace-msg role-reply" }, el("div", { class: "trace-role" }, "raw reply"),
        el("pre", { class: "call-reply" }, c.reply)) : null,
      c.error ? el("p", { class: "error-text" }, c.error) : null)))];
  }

  function templateSource(tpl) {
    return [el("h3", {}, "Answer template"), el("div", { id: "template" },
      el("p", { class: "muted", id: "template-note" }, tpl.note || "Template source not available."),
      tpl.source ? el("details", { open: true }, el("summary", {}, "source"), el("pre", { id: "template-source" }, tpl.source)) : null)];
  }

  async function renderResult(run, row) {
    const d = await api("runs/" + run + "/results/" + row);
    const r = d.result, m = r.metadata, t = r.template || {}, rb = r.rubric || {}, dj = r.deep_judgment || {}, djr = r.deep_judgment_rubric || {};
    const answer = t.raw_llm_response || m.raw_answer || "";
    const yes = (b) => (b === true ? "yes" : b === false ? "no" : "–");
    const sections = [
      el("p", {}, el("a", { href: "#/run/" + run + "/table" }, "‹ questions"), " · ",
        row > 0 ? el("a", { id: "prev-result", href: "#/run/" + run + "/result/" + (row - 1) }, "previous") : "previous", " · ",
        el("a", { id: "next-result", href: "#/run/" + run + "/result/" + (row + 1) }, "next")),
      el("h2", { id: "result-title" }, m.question_id + " ", badge(d.verdict)),
      kv([["answering", d.answering], ["parsing", d.parsing], ["replicate", show(m.replicate)], ["run", show(m.run_name)],
        ["keywords", (m.keywords || []).join(", ") || "–"], ["result id", m.result_id], ["evaluation mode", show(m.evaluation_mode)],
        m.error ? ["error", el("span", { class: "error-text", id: "result-error" }, m.error)] : null]),
      judging.labelSection(run, row, d),
      el("h3", {}, "Question"), el("pre", { id: "question" }, m.question_text),
      el("h3", {}, "Answer", d.excerpts.length ? " (deep-judgment excerpts highlighted)" : ""),
      el("div", { class: "answer", id: "answer" }, highlighted(answer, d.excerpts)),
    ];
    if (d.fields.length) {
      sections.push(el("h3", {}, "Parsed answer vs ground truth"), el("table", { id: "fields" },
        el("tr", {}, el("th", {}, "field"), el("th", {}, "parsed"), el("th", {}, "ground truth"), el("th", {}, "match")),
        d.fields.map((f) => el("tr", { "data-field": f.name }, el("td", {}, f.name), el("td", { class: "parsed" }, show(f.parsed)), el("td", { class: "expected" }, show(f.expected)),
          el("td", {}, f.match === true ? "✓" : f.match === false ? "✗" : "–")))));
    }
    sections.push(el("h3", {}, "Checks"), el("table", { id: "checks" },
      el("tr", {}, el("th", {}, "check"), el("th", {}, "outcome"), el("th", {}, "overrode verdict"), el("th", {}, "reasoning / details")),
      el("tr", {}, el("td", {}, "template verify()"), el("td", {}, show(t.verify_result) + (t.verify_granular_result !== undefined && t.verify_granular_result !== null ? " (score " + show(t.verify_granular_result) + ")" : "")), el("td", {}, "–"),
        el("td", {}, [t.template_validation_error, t.field_verification_error, t.composition_strategy ? "composition: " + t.composition_strategy : null].filter(Boolean).join(" · "))),
      t.embedding_check_performed ? el("tr", {}, el("td", {}, "embedding"), el("td", {}, "similarity " + num(t.embedding_similarity_score, 3)), el("td", {}, yes(t.embedding_override_applied)), el("td", {}, show(t.embedding_model_used))) : null,
      t.regex_validations_performed ? el("tr", {}, el("td", {}, "regex"), el("td", {}, yes(t.regex_overall_success)), el("td", {}, "–"), el("td", {}, show(t.regex_validation_results))) : null,
      t.abstention_check_performed ? el("tr", { "data-check": "abstention" }, el("td", {}, "abstention"), el("td", {}, "detected: " + yes(t.abstention_detected)), el("td", {}, yes(t.abstention_override_applied)), el("td", {}, show(t.abstention_reasoning))) : null,
      t.sufficiency_check_performed ? el("tr", { "data-check": "sufficiency" }, el("td", {}, "sufficiency"), el("td", {}, "sufficient: " + yes(t.sufficiency_detected)), el("td", {}, yes(t.sufficiency_override_applied)), el("td", {}, show(t.sufficiency_reasoning))) : null,
      t.recursion_limit_reached ? el("tr", {}, el("td", {}, "agent"), el("td", {}, "recursion limit reached"), el("td", {}, "–"), el("td", {}, "")) : null));
    const traits = Object.entries(d.trait_scores);
    if (traits.length) {
      const labels = rb.llm_trait_labels || {}, reasons = djr.rubric_trait_reasoning || {}, failed = djr.traits_without_valid_excerpts || [];
      const deepScores = djr.deep_judgment_rubric_scores || {};
      sections.push(el("h3", {}, "Rubric scores"), el("table", { id: "rubric-scores" },
        el("tr", {}, el("th", {}, "trait"), el("th", {}, "score"), el("th", {}, "deep-judgment score"), el("th", {}, "deep-judgment reasoning")),
        traits.map(([name, v]) => el("tr", { "data-trait": name }, el("td", {}, name),
          el("td", {}, show(v) + (labels[name] ? " (" + labels[name] + ")" : "") + (failed.includes(name) ? " — auto-failed: no valid excerpt" : "")),
          el("td", {}, show(name in deepScores ? deepScores[name] : null)), el("td", {}, show(reasons[name] || null))))));
    }
    if (dj.deep_judgment_performed) {
      const ex = dj.extracted_excerpts || {}, why = dj.attribute_reasoning || {}, risk = dj.hallucination_risk_assessment || {};
      const names = Array.from(new Set([...Object.keys(ex), ...Object.keys(why)]));
      sections.push(el("h3", {}, "Deep judgment"), el("table", { id: "deep-judgment" },
        el("tr", {}, el("th", {}, "attribute"), el("th", {}, "excerpts"), el("th", {}, "reasoning"), el("th", {}, "hallucination risk")),
        names.map((n) => el("tr", {}, el("td", {}, n), el("td", {}, (ex[n] || []).map((e) => el("div", {}, "“" + e.text + "”" + (e.confidence ? " (" + e.confidence + ")" : "")))),
          el("td", {}, show(why[n] || null)), el("td", {}, show(risk[n] || null))))));
    }
    const trace = t.trace_messages || [];
    sections.push(el("h3", {}, "Agent trace (" + trace.length + " messages)"), el("div", { id: "trace" }, trace.length ? trace.map((msg) => {
      const role = msg.role || msg.type || "message";
      const content = typeof msg.content === "string" ? msg.content : JSON.stringify(msg.content, null, 2);
      const extra = Object.assign({}, msg);
      delete extra.role; delete extra.content;
      return el("div", { class: "trace-msg role-" + role }, el("div", { class: "trace-role" }, role), el("div", { class: "trace-content" }, content || ""),
        Object.keys(extra).length ? el("pre", {}, JSON.stringify(extra, null, 2)) : null);
    }) : el("p", { class: "muted" }, "No trace recorded.")));
    sections.push(...modelCalls(t.model_calls || [], m), ...templateSource(d.template_source || {}));
    const usage = t.usage_metadata || {};
    sections.push(el("h3", {}, "Tokens and timing"), el("table", { id: "usage" },
      el("tr", {}, el("th", {}, "stage"), el("th", { class: "num" }, "input"), el("th", { class: "num" }, "output"), el("th", { class: "num" }, "total"), el("th", {}, "model"),
        el("th", { class: "num" }, "cost (USD)"), el("th", { class: "num" }, "cache hits")),
      Object.entries(usage).map(([stage, u]) => el("tr", { "data-stage": stage }, el("td", {}, stage), el("td", { class: "num" }, int(u.input_tokens)), el("td", { class: "num" }, int(u.output_tokens)),
        el("td", { class: "num" }, int(u.total_tokens)), el("td", {}, show(u.model || null)),
        el("td", { class: "num cost" }, u.cost_usd == null ? "–" : num(u.cost_usd, 6)), el("td", { class: "num" }, int(u.cache_hits || 0))))),
    kv([["execution time", num(m.execution_time, 3) + " s"], ["timestamp", m.timestamp], t.agent_metrics ? ["agent metrics", show(t.agent_metrics)] : null]));
    sections.push(el("details", {}, el("summary", {}, "Full result as JSON"), el("pre", {}, JSON.stringify(r, null, 2))));
    setMain(...sections);
  }

  // --- the question x model matrix ---------------------------------------------------------
  async function renderMatrix(params) {
    const by = params.by || "answering", offset = Number(params.offset || 0), limit = 200;
    const m = await api("matrix", { by: by, differ: params.differ || "", offset: offset, limit: limit, runs: params.runs || "" });
    const set = (changes) => go("matrix", Object.assign({}, params, { offset: 0 }, changes));
    const head = el("tr", {}, el("th", {}, "question id"), el("th", {}, "question"),
      m.columns.map((c) => el("th", { class: "num", "data-column": c.label, title: c.passed + " passed of " + c.judged + " judged" },
        c.label, el("br"), el("span", { class: "muted" }, c.judged ? pct(c.passed / c.judged) : "–"))));
    const cell = (c) => {
      if (!c) return el("td", { class: "missing", "data-verdict": "" }, "–");
      const counts = ["pass", "fail", "none", "error"].filter((v) => c[v]).map((v) => v + " " + c[v]).join(", ");
      const mark = badge(c.verdict);
      return el("td", { "data-verdict": c.verdict, title: counts },
        STATIC ? mark : el("a", { href: "#/run/" + c.run + "/result/" + c.row }, mark),
        c.pass + c.fail + c.none + c.error > 1 ? el("span", { class: "muted" }, " " + counts) : null);
    };
    const body = m.rows.map((r) => el("tr", { class: "matrix-row" + (r.disagree ? " disagree" : ""), "data-question": r.question_id },
      el("td", {}, r.question_id), el("td", { title: r.question_text }, short(r.question_text, 70)), r.cells.map(cell)));
    const last = Math.min(m.total, offset + m.rows.length);
    setMain(
      el("h2", {}, "Questions × models"),
      el("p", { class: "muted" }, "Each question's verdict per " + (by === "pair" ? "answering / parsing pair" : by + " model") +
        (runs.length > 1 ? ", across all runs" : "") + ": the majority over replicates, counts on hover."),
      el("div", { class: "filters" },
        el("label", {}, "columns ", el("select", { id: "matrix-by", onchange: (e) => set({ by: e.target.value }) },
          [["answering", "answering models"], ["parsing", "parsing models (judges)"], ["pair", "model pairs"]].map(([v, label]) => el("option", { value: v, selected: v === by }, label)))),
        el("label", {}, el("input", { type: "checkbox", id: "matrix-differ", checked: params.differ === "yes", onchange: (e) => set({ differ: e.target.checked ? "yes" : "" }) }), " only questions where they disagree")),
      el("table", { id: "matrix" }, head, body),
      el("p", { id: "matrix-info", "data-total": m.total }, m.total ? (offset + 1) + "–" + last + " of " + int(m.total) + " questions" : "no questions",
        offset > 0 ? el("button", { onclick: () => go("matrix", Object.assign({}, params, { offset: Math.max(0, offset - limit) })) }, "previous") : null,
        last < m.total ? el("button", { onclick: () => go("matrix", Object.assign({}, params, { offset: offset + limit })) }, "next") : null));
  }

  // Labels and the paired comparison live in judging.js, loaded first; it gets these helpers.
  const judging = window.verifleetJudging({ el, api, go, setMain, badge, pct, int, short, show, STATIC, runs: () => runs, render });

  // --- start -------------------------------------------------------------------------------
  async function start() {
    document.getElementById("title").textContent = BOOT.title || "";
    document.getElementById("run-select").addEventListener("change", (e) => go("run/" + e.target.value));
    try { runs = await api("runs"); } catch (err) { setMain(el("p", { class: "error-text" }, String(err.message))); return; }
    window.addEventListener("hashchange", render);
    await render();
    document.body.setAttribute("data-ready", "1");
  }
  start();
})();
