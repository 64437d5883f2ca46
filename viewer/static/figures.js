// verifleet viewer: the overview's statistics beyond the bars: the overall pass
// rate's interval and the replicate figures (pass@k, pass^k, consistency, the
// flakiest questions). The server computes every number with results.stats;
// this file only shows them. Loaded before app.js, which calls
// window.verifleetFigures with its helpers.
"use strict";
window.verifleetFigures = function (h) {
  const { el, pct, int } = h;

  const DOCS = "docs/results.md explains each figure and when it is the wrong one.";
  const ci = (lo, hi) => "[" + pct(lo) + "–" + pct(hi) + "]";

  // The overall pass rate's interval, from stats.rate_interval_from_sums over questions.
  function overallInterval(i) {
    if (!i) return null;
    return el("small", { class: "ci", id: "pass-rate-ci", "data-low": i.low, "data-high": i.high, "data-method": i.method,
      title: "95 % interval over " + i.clusters + " questions (" + i.method + ")" }, "95 % CI " + ci(i.low, i.high));
  }

  // pass@k, pass^k, consistency per pair and the flakiest questions (stats.replicate_stats).
  function replicateSection(run, r) {
    if (!r) return [el("h2", {}, "Replicates"), el("p", { class: "muted", id: "no-replicates" }, "Each question has one verdict per model pair: no replicate statistics.")];
    const k = r.k;
    return [
      el("h2", {}, "Replicates: pass@" + k + ", pass^" + k + " and consistency"),
      el("p", { class: "muted explain" }, "pass@" + k + ": the chance that at least one of " + k + " tries passes (can the model answer?); pass^" + k +
        ": that all " + k + " pass (does it answer reliably?); both unbiased from each question's replicates and averaged over the questions with " + k +
        ". Consistency: the share of a question's replicates that agree with its majority verdict. " + DOCS),
      el("table", { id: "replicates" },
        el("tr", {}, el("th", {}, "answering"), el("th", {}, "parsing"), el("th", { class: "num" }, "questions"), el("th", { class: "num", title: "questions with " + k + " verdicts" }, "with " + k),
          el("th", { class: "num" }, "pass@" + k), el("th", { class: "num" }, "pass^" + k), el("th", { class: "num" }, "consistency"), el("th", { class: "num" }, "flaky questions")),
        r.pairs.map((p) => el("tr", { "data-answering": p.answering, "data-parsing": p.parsing }, el("td", {}, p.answering), el("td", {}, p.parsing),
          el("td", { class: "num" }, int(p.questions)), el("td", { class: "num" }, int(p.questions_with_k)),
          el("td", { class: "num", "data-figure": "pass_at_k" }, pct(p.pass_at_k)), el("td", { class: "num", "data-figure": "pass_hat_k" }, pct(p.pass_hat_k)),
          el("td", { class: "num", "data-figure": "consistency" }, pct(p.consistency)), el("td", { class: "num", "data-figure": "flaky" }, int(p.flaky))))),
      el("h3", {}, "Flakiest questions (" + int(r.flaky) + " question × model pairs with both passes and failures; closest to a coin toss first)"),
      r.flakiest.length ? el("table", { id: "flaky" },
        el("tr", {}, el("th", {}, "question id"), el("th", {}, "answering"), el("th", {}, "parsing"), el("th", { class: "num" }, "passed"), el("th", { class: "num" }, "consistency")),
        r.flakiest.map((q) => el("tr", { class: "flaky-row", "data-question": q.question_id, "data-answering": q.answering, "data-parsing": q.parsing },
          el("td", {}, el("a", { href: "#/run/" + run + "/table?" + new URLSearchParams({ search: q.question_id, answering: q.answering, parsing: q.parsing }).toString() }, q.question_id)),
          el("td", {}, q.answering), el("td", {}, q.parsing), el("td", { class: "num" }, q.passed + " of " + q.replicates), el("td", { class: "num" }, pct(q.consistency)))))
        : el("p", { class: "muted", id: "flaky" }, "No question changed its verdict between replicates."),
    ];
  }

  return { DOCS, ci, overallInterval, replicateSection };
};
