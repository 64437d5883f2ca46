// verifleet viewer: human labels on a result, and the Compare page (the paired
// comparison of `verifleet compare`, computed by the server from the same code).
// Loaded before app.js, which calls window.verifleetJudging with its helpers.
"use strict";
window.verifleetJudging = function (h) {
  const { el, api, go, setMain, badge, pct, int, short, show, STATIC } = h;

  async function post(path, body) {
    const res = await fetch("api/" + path, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    const reply = await res.json();
    if (!res.ok) throw new Error(reply.detail || res.statusText);
    return reply;
  }

  // --- human labels ------------------------------------------------------------------
  function labelText(label) {
    if (!label) return "not labelled";
    return (label.correct ? "right" : "wrong") + (label.note ? " — " + label.note : "");
  }

  // A person's word on the answer: kept beside the results file, never changes the verdict.
  function labelSection(run, row, d) {
    const state = d.labelling;
    if (STATIC || !state) return null;
    const current = el("span", { id: "label-current", "data-correct": state.label ? String(state.label.correct) : "" }, labelText(state.label));
    const head = el("h3", {}, "Your label of this answer");
    if (!state.writable) return el("div", { id: "labelling" }, head, el("p", { class: "muted", id: "label-why" }, state.why));
    const note = el("input", { type: "text", id: "label-note", size: 60, maxlength: 2000, placeholder: "note (why)", value: state.label && state.label.note ? state.label.note : "" });
    const status = el("span", { id: "label-status", class: "muted" });
    const send = async (correct) => {
      status.textContent = "saving…";
      try {
        const after = await post("runs/" + run + "/results/" + row + "/label", { correct: correct, note: note.value });
        current.textContent = labelText(after.label);
        current.setAttribute("data-correct", after.label ? String(after.label.correct) : "");
        status.textContent = "saved";
        status.setAttribute("data-saved", String(Date.now()));
      } catch (err) {
        status.textContent = "not saved: " + err.message;
        status.className = "error-text";
      }
    };
    return el("div", { id: "labelling" }, head,
      el("p", {}, "Now: ", current, el("span", { class: "muted" }, " (the recorded verdict stays " + d.verdict + ")")),
      el("p", {}, note, " ",
        el("button", { id: "label-right", onclick: () => send(true) }, "answer is right"), " ",
        el("button", { id: "label-wrong", onclick: () => send(false) }, "answer is wrong"), " ",
        el("button", { id: "label-clear", onclick: () => send(null) }, "clear"), " ", status));
  }

  // --- the Compare page ----------------------------------------------------------------
  const pp = (x) => (x === null || x === undefined ? "–" : (x >= 0 ? "+" : "") + (100 * x).toFixed(1) + " pp");
  const ci = (i) => (i ? "[" + pp(i.low) + ", " + pp(i.high) + "]" : "n/a (one question)");
  const pval = (p) => (p === null || p === undefined ? "–" : p < 0.001 ? p.toExponential(2) : p.toFixed(3));

  function pairedRow(name, c) {
    // Every figure also sits raw in data-value: what a test or a script reads.
    const cell = (field, value, text) => el("td", { class: "num", "data-field": field, "data-value": value === null || value === undefined ? "" : String(value) }, text);
    const d = c.difference;
    return el("tr", { class: "paired-row", "data-group": name },
      el("td", {}, name), cell("pairs", c.pairs, int(c.pairs)), cell("clusters", c.clusters, int(c.clusters)),
      cell("rate_a", c.rate_a, pct(c.rate_a)), cell("rate_b", c.rate_b, pct(c.rate_b)),
      cell("estimate", d ? d.estimate : c.rate_b - c.rate_a, pp(c.rate_b - c.rate_a)),
      el("td", { class: "num", "data-field": "ci", "data-low": d ? String(d.low) : "", "data-high": d ? String(d.high) : "" }, ci(d)),
      cell("bootstrap", c.bootstrap ? c.bootstrap.low + "," + c.bootstrap.high : null, ci(c.bootstrap)),
      cell("mcnemar_p", c.mcnemar_p, pval(c.mcnemar_p)),
      cell("a_only", c.a_only, int(c.a_only)), cell("b_only", c.b_only, int(c.b_only)));
  }

  function pairedSection(p) {
    const level = Math.round(100 * p.level) + " %";
    if (!p.overall) return el("div", { id: "paired" }, el("p", { id: "paired-none" }, "No pair has a verdict in both runs (same question, answering model, judge and replicate)."));
    const head = el("tr", {}, ["", "pairs", "questions", "A", "B", "B − A", level + " CI (questions as clusters)", "bootstrap CI", "McNemar exact p", "A only", "B only"].map((x) => el("th", {}, x)));
    return el("div", { id: "paired" },
      el("p", { class: "muted" }, "Pairs: the same question, answering model, judge and replicate with a verdict in both runs. " +
        "B − A is the paired difference in pass rate; its interval treats questions as clusters, so replicates do not count as independent evidence. " +
        "McNemar's exact p tests whether the pairs lost (A only) and gained (B only) differ by more than chance. " +
        "These are the figures of `verifleet compare A B`."),
      el("table", { id: "paired-table" }, head, pairedRow("overall", p.overall), Object.entries(p.groups).map(([name, c]) => pairedRow(name, c))),
      p.only_a || p.only_b ? el("p", { class: "muted", id: "paired-unpaired", "data-only-a": p.only_a, "data-only-b": p.only_b },
        "unpaired (left out): " + p.only_a + " in A only, " + p.only_b + " in B only") : null,
      el("h3", {}, "Why verdicts flipped (" + int(p.flips_total) + " flips)"),
      el("ul", { id: "flip-reasons" }, Object.entries(p.flip_reasons).map(([reason, n]) =>
        el("li", { "data-reason": reason, "data-count": n }, reason + ": " + n))),
      p.flips.length ? el("table", { id: "flips" },
        el("tr", {}, ["question id", "answering", "parsing", "rep", "A", "B", "what changed"].map((x) => el("th", {}, x))),
        p.flips.map((f) => el("tr", { class: "flip-row", "data-question": f.question_id, "data-reasons": f.reasons.join(",") },
          el("td", {}, f.question_id), el("td", {}, f.answering), el("td", {}, f.parsing), el("td", {}, show(f.replicate)),
          el("td", {}, badge(f.before ? "pass" : "fail")), el("td", {}, badge(f.after ? "pass" : "fail")), el("td", {}, f.reasons.join(", "))))) : null,
      p.flips_total > p.flips.length ? el("p", { class: "muted" }, "first " + p.flips.length + " of " + p.flips_total + " flips shown (all: verifleet compare --json)") : null);
  }

  async function renderCompare(params) {
    const runs = h.runs();
    const a = Number(params.a || 0), b = Number(params.b !== undefined ? params.b : Math.min(1, runs.length - 1));
    const pick = (name, value) => el("select", { id: "compare-" + name, onchange: (e) => go("compare", Object.assign({ a: a, b: b }, { [name]: e.target.value })) },
      runs.map((r) => el("option", { value: r.id, selected: r.id === value }, r.name)));
    const [c, p] = await Promise.all([api("compare", { a: a, b: b, limit: 1000 }), api("compare/paired", { a: a, b: b })]);
    setMain(
      el("h2", {}, "Compare runs"),
      el("p", {}, "A (before) ", pick("a", a), " B (after) ", pick("b", b)),
      el("h3", {}, "Is B better than A, or is it noise?"),
      pairedSection(p),
      el("h3", {}, "Every evaluation whose verdict changed"),
      el("div", { class: "cards", id: "compare-summary" },
        [["matched", "in both runs"], ["changed", "verdict changed"], ["only_before", "only in before"], ["only_after", "only in after"]].map(([k, label]) =>
          el("div", { class: "card", "data-compare": k }, el("b", {}, int(c[k])), el("span", {}, label)))),
      c.matched === 0 ? el("p", { id: "compare-hint" }, "No result is in both runs with the same models and replicate. To compare different models on the same questions, see the ",
        el("a", { href: "#/matrix?runs=" + a + "," + b }, "questions × models matrix"), ".") :
        el("p", {}, el("a", { href: "#/matrix?runs=" + a + "," + b }, "Both runs as a questions × models matrix")),
      el("p", { id: "transitions" }, Object.entries(c.transitions).map(([k, v]) => k + ": " + v).join(" · ")),
      el("table", { id: "changed" },
        el("tr", {}, ["question id", "question", "answering", "parsing", "rep", "before", "after"].map((x) => el("th", {}, x))),
        c.rows.map((r) => el("tr", { class: "changed-row", "data-question": r.question_id },
          el("td", {}, r.question_id), el("td", {}, short(r.question_text, 70)), el("td", {}, r.answering), el("td", {}, r.parsing), el("td", {}, show(r.replicate)),
          el("td", {}, el("a", { href: "#/run/" + a + "/result/" + r.row_a }, badge(r.verdict_a))),
          el("td", {}, el("a", { href: "#/run/" + b + "/result/" + r.row_b }, badge(r.verdict_b)))))),
      c.total > c.rows.length ? el("p", { class: "muted" }, "first " + c.rows.length + " of " + c.total + " shown") : null);
  }

  return { labelSection: labelSection, renderCompare: renderCompare };
};
