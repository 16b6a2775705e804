/* regress site: the overview's search box, the label pages' commit picker and the trend charts.
 *
 * Works from file:// with no network: a page's data is in the page itself
 * (<script type="application/json">), in data/commits.js or in a chart's chunk
 * scripts (data/bench/), never fetched.
 * Text that came from commits or benchmark names is set with textContent,
 * and escaped before Plotly renders it (Plotly reads labels as HTML-like markup).
 */
(function () {
  "use strict";

  function readJSON(id) {
    return JSON.parse(document.getElementById(id).textContent);
  }

  function esc(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function truncate(text, n) {
    return text.length > n ? text.slice(0, n - 1) + "…" : text;
  }

  function fmtTime(seconds) {
    var units = [[1e-6, 1e-9, "ns"], [1e-3, 1e-6, "us"], [1, 1e-3, "ms"]];
    for (var i = 0; i < units.length; i++) {
      if (seconds < units[i][0]) return Number((seconds / units[i][1]).toPrecision(4)) + " " + units[i][2];
    }
    return Number(seconds.toPrecision(4)) + " s";
  }

  function commits() {
    // {repo: url or "", commits: {sha: [index, short, subject, author, date]},
    //  series: {name: {sha: [...], runs: [...]}}: per series, by position in its history}
    return window.REGRESS_COMMITS;
  }

  /* A chart page's data, its points (in chunk files of history positions, `REGRESS_CHUNKS`) joined
   * back into each line and their commits (named by position in their series' history) resolved:
   * parsed once, for the chart and the metric switch. */
  var benchCache = null;
  function benchData() {
    if (benchCache) return benchCache;
    var data = benchCache = readJSON("bench-data");
    var chunks = (window.REGRESS_CHUNKS || []).slice().sort(function (a, b) { return a.k - b.k; });
    function join(line, parts, columns) {
      columns.forEach(function (c) { line[c] = []; });
      parts.forEach(function (p) {
        if (p) columns.forEach(function (c) { Array.prototype.push.apply(line[c], p[c]); });
      });
    }
    var named = commits().series || {};
    data.series.forEach(function (s) {
      join(s, chunks.map(function (c) { return c.series[s.name]; }), ["at", "level", "lo", "hi"]);
      var of = named[s.name] || { sha: [], runs: [] };
      s.sha = s.at.map(function (k) { return of.sha[k]; });
      s.runs = s.at.map(function (k) { return of.runs[k]; });
    });
    (data.metrics || []).forEach(function (m) {
      m.series.forEach(function (s) {
        join(s, chunks.map(function (c) { return (c.metrics[m.metric] || {})[s.name]; }), ["at", "y", "text"]);
        s.y = s.y.map(function (v) { return v / m.scale; });
        var of = named[s.name] || { sha: [] };
        s.sha = s.at.map(function (k) { return of.sha[k]; });
      });
    });
    return data;
  }

  function commitURL(sha) {
    var repo = commits().repo;
    return repo ? repo + "/commit/" + sha : "";
  }

  /* A commit as a line of text nodes: sha (linked when the repository is known), subject, author, date. */
  function fillCommit(el, sha) {
    var c = commits().commits[sha];
    el.textContent = "";
    var url = commitURL(sha);
    var code = document.createElement(url ? "a" : "code");
    code.className = "sha";
    code.textContent = c[1];
    if (url) code.href = url;
    var subject = document.createElement("span");
    subject.className = "subject";
    subject.textContent = c[2];
    var meta = document.createElement("span");
    meta.className = "meta";
    meta.textContent = c[3] + " · " + c[4] + " UTC";
    el.append(code, " ", subject, " ", meta);
  }

  /* Overview: hide every row whose benchmark name lacks one of the typed words. */
  function search() {
    var input = document.getElementById("search");
    var status = document.getElementById("search-status");
    var rows = Array.prototype.slice.call(document.querySelectorAll("tr[data-name]"));
    var names = rows.map(function (r) { return r.getAttribute("data-name").toLowerCase(); });
    var groups = Array.prototype.slice.call(document.querySelectorAll("tbody.label-group"));
    var tables = Array.prototype.filter.call(document.querySelectorAll("table"), function (t) { return t.querySelector("tr[data-name]"); });
    var indexRows = document.querySelectorAll("table.index tr[data-name]");
    function apply() {
      var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      rows.forEach(function (row, i) {
        row.hidden = !terms.every(function (t) { return names[i].indexOf(t) >= 0; });
      });
      groups.forEach(function (g) { g.hidden = !g.querySelector("tr[data-name]:not([hidden])"); });
      tables.forEach(function (t) {
        t.hidden = !t.querySelector("tr[data-name]:not([hidden])");
        if (t.parentElement.tagName === "DETAILS") t.parentElement.hidden = t.hidden;
      });
      var shown = Array.prototype.filter.call(indexRows, function (r) { return !r.hidden; }).length;
      status.hidden = !terms.length;
      status.textContent = shown + " of " + indexRows.length + " benchmarks match “" + input.value.trim() + "”";
    }
    input.addEventListener("input", apply);
    if (input.value) apply(); // a browser may restore typed text on back
  }

  /* Label pages: fill the Compare table with the chosen commit's row of cells. */
  /* A label page's tables come in chunk files of commits (REGRESS_CHUNKS), joined here per series,
   * oldest first; the picker lists their commits newest first, named from data/commits.js. */
  function labelSections(data) {
    var chunks = (window.REGRESS_CHUNKS || []).slice().sort(function (a, b) { return a.k - b.k; });
    var C = commits().commits;
    data.sections.forEach(function (d) {
      d.tables = [];
      chunks.forEach(function (c) { Array.prototype.push.apply(d.tables, c.sections[d.name] || []); });
    });
    return function option(table, i) {
      var o = document.createElement("option");
      var c = C[table.sha];
      o.value = String(i);
      o.textContent = c[1] + " · " + c[4] + " · " + truncate(c[2], 90);
      return o;
    };
  }

  function labels() {
    var data = readJSON("label-data");
    var option = labelSections(data);
    Array.prototype.forEach.call(document.querySelectorAll(".compare-section"), function (section) {
      var d = data.sections[Number(section.getAttribute("data-series"))];
      var select = section.querySelector(".commit-select");
      for (var i = d.tables.length - 1; i >= 0; i--) select.appendChild(option(d.tables[i], i));
      var cells = section.querySelectorAll("table.compare td");
      var rows = section.querySelectorAll("table.compare tbody tr:not(.group)");
      var bodies = section.querySelectorAll("table.compare tbody");
      function show(i) {
        var table = d.tables[i];
        // A cell: [median text, "", ""] (["failed", "fail", message] where it failed); the newest
        // commits' tables are judged: their cells' [class from the differ's verdict, "verdict against
        // sha: reason"] laid over them, null where a cell has no verdict (its first measurement).
        var over = d.judged[table.sha];
        table.cells.forEach(function (c, k) {
          var td = cells[k];
          var v = over && c && c[1] !== "fail" ? over[k] : null;
          var cls = v ? v[0] : c ? c[1] : "";
          td.className = "num" + (c ? " " + (cls || "none") : "");
          if (td.firstChild) td.firstChild.textContent = c ? c[0] : "";
          td.title = !c ? "" : v ? v[1] : c[2] ? c[2] : over
            ? "no verdict: the first measurement of this benchmark on this series"
            : "no verdict: colours for the newest " + data.judged_commits + " commits only";
        });
        section.querySelector(".judged-note").hidden = !!over;
        Array.prototype.forEach.call(rows, function (tr) {
          tr.hidden = !Array.prototype.some.call(tr.querySelectorAll("td"), function (td) { return td.textContent; });
        });
        Array.prototype.forEach.call(bodies, function (b) { b.hidden = !b.querySelector("tr:not(.group):not([hidden])"); });
        fillCommit(section.querySelector(".selected-commit"), table.sha);
        section.querySelector(".unit").textContent = table.unit
          ? "Times are in " + table.unit_name + "s (" + table.unit + ")." : "Nothing was measured at this commit.";
      }
      select.addEventListener("change", function () { show(Number(select.value)); });
      show(Number(select.value));
    });
  }

  var PALETTE = ["#3b5bdb", "#e8590c", "#2b8a3e", "#9c36b5", "#0c8599", "#c2255c", "#5c940d", "#e67700"];

  function rgba(hex, alpha) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + alpha + ")";
  }

  /* Chart pages: per machine/environment series (never joined), one line of levels (the fastest
   * round's fastest block per commit, the statistic the differ and the change points use) with a
   * band of the rounds' quartiles; change-point markers sit on the line at their commit. */
  // Past this many points a chart draws with WebGL (scattergl), where the browser has it.
  var GL_POINTS = 1000;
  var HAS_GL = (function () {
    try {
      var c = document.createElement("canvas");
      return !!(window.WebGLRenderingContext && (c.getContext("webgl") || c.getContext("experimental-webgl")));
    } catch (e) {
      return false;
    }
  })();

  function median(values) {
    var v = values.slice().sort(function (a, b) { return a - b; });
    var h = Math.floor(v.length / 2);
    return v.length % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
  }

  // Per commit, the level of its segment between the change points `regress regressions` found:
  // the first step's level before it up to that step, each step's level after it from there on;
  // the median level when there are no steps. One jump per step.
  function fitted(s) {
    if (!s.level.length) return [];
    var at = {};
    s.steps.forEach(function (st) { at[st[0]] = st; });
    var current = s.steps.length ? s.steps[0][1] : median(s.level);
    return s.sha.map(function (sha) {
      if (at[sha]) current = at[sha][2];
      return current;
    });
  }

  function chart() {
    var data = benchData();
    var C = commits().commits;
    var gd = document.getElementById("chart");
    var mode = "commit";

    function stepText(st) { return (st[3] > 1 ? "+" : "−") + Math.abs((st[3] - 1) * 100).toFixed(1) + "%"; }
    function x(sha) { return mode === "commit" ? C[sha][1] : C[sha][4]; }
    function about(sha) { var c = C[sha]; return [c[1], esc(truncate(c[2], 90)), esc(c[3]), c[4], sha]; }
    var head = "<b>%{customdata[0]}</b> %{customdata[1]}<br>%{customdata[2]} · %{customdata[3]} UTC<br>";

    function traces() {
      var out = [];
      data.series.forEach(function (s, k) {
        var color = PALETTE[k % PALETTE.length];
        var group = "series" + k;
        var xs = s.sha.map(x);
        var common = { legendgroup: group, showlegend: false, meta: { series: k } };
        // A change point's marker sits on the fitted line where it jumps; the commit's own point
        // may take the hover there, so its hover says what the marker's does.
        var stepAt = {};
        s.steps.forEach(function (st) {
          stepAt[st[0]] = "<br>change point (" + esc(st[4]) + "): " + stepText(st) + "<br>level " + fmtTime(st[1]) + " → " + fmtTime(st[2]);
        });
        // WebGL past a thousand points: a chart of 10,000 commits still pans smoothly.
        var type = s.sha.length > GL_POINTS && HAS_GL ? "scattergl" : "scatter";
        out.push(Object.assign({ type: type, x: xs, y: s.hi, mode: "lines", line: { width: 0, color: color }, hoverinfo: "skip", name: "rounds q3" }, common));
        out.push(Object.assign({
          type: type, x: xs, y: s.lo, mode: "lines", line: { width: 0, color: color }, hoverinfo: "skip", name: "rounds' quartiles",
          fill: "tonexty", fillcolor: rgba(color, 0.18)
        }, common));
        // The line is the history's fitted levels (what the differ sees); each commit's level a faint point.
        out.push(Object.assign({}, common, {
          type: type, x: xs, y: fitted(s), mode: "lines", line: { color: color, width: 2.5, shape: "hv" },
          hoverinfo: "skip", name: "fitted level", meta: { series: k, kind: "fitted" }
        }));
        out.push(Object.assign({}, common, {
          type: type, x: xs, y: s.level, showlegend: true, mode: "markers",
          // Levels of several CPU models are each run's shift taken out; the legend says how many.
          name: esc(s.name) + (s.cpus && s.cpus.length > 1 ? " (" + s.cpus.length + " CPU models)" : ""),
          marker: { color: color, opacity: 0.45, size: s.sha.length > 300 ? 4 : 6 },
          customdata: s.sha.map(function (sha, i) {
            var runs = s.runs && s.runs[i] ? "<br>" + esc(s.runs[i]) : "";
            return about(sha).concat([s.lo[i], s.hi[i], stepAt[sha] || "", runs]);
          }),
          hovertemplate: head + "level %{y:.4s}s · rounds' quartiles %{customdata[5]:.3s}s – %{customdata[6]:.3s}s%{customdata[8]}%{customdata[7]}<extra>%{fullData.name}</extra>",
          meta: { series: k, kind: "level" }
        }));
        if (s.steps.length) {
          out.push(Object.assign({}, common, {
            x: s.steps.map(function (st) { return x(st[0]); }), y: s.steps.map(function (st) { return st[2]; }),  // on the fitted line, where it jumps
            name: "change points", mode: "markers+text",
            text: s.steps.map(stepText),
            textposition: "top center",
            textfont: { color: s.steps.map(function (st) { return st[4] === "regression" ? "#c92a2a" : "#2b8a3e"; }), size: 12 },
            marker: {
              size: 14, line: { width: 1, color: "#fff" },
              symbol: s.steps.map(function (st) { return st[4] === "regression" ? "triangle-up" : "triangle-down"; }),
              color: s.steps.map(function (st) { return st[4] === "regression" ? "#c92a2a" : "#2b8a3e"; })
            },
            customdata: s.steps.map(function (st) { return about(st[0]).concat([st[1], st[2], st[4]]); }),
            hovertemplate: head + "change point (%{customdata[7]}): %{text}<br>level %{customdata[5]:.4s}s → %{customdata[6]:.4s}s<extra>" + esc(s.name) + "</extra>",
            meta: { series: k, kind: "steps" }
          }));
        }
        if (s.failed.length) {
          out.push(Object.assign({}, common, {
            x: s.failed.map(function (f) { return x(f[0]); }), y: s.failed.map(function (f) { return f[1]; }),
            name: "failed", mode: "markers", marker: { symbol: "x-thin", size: 11, color: "#c92a2a", line: { width: 3, color: "#c92a2a" } },
            customdata: s.failed.map(function (f) { return about(f[0]).concat([esc(truncate(f[2], 160))]); }),
            hovertemplate: head + "<b>failed</b>: %{customdata[5]}<extra>" + esc(s.name) + "</extra>",
            meta: { series: k, kind: "failed" }
          }));
        }
      });
      return out;
    }

    function layout() {
      var xaxis;
      if (mode === "commit") {
        var all = {};
        data.series.forEach(function (s) {
          s.sha.forEach(function (sha) { all[sha] = 1; });
          s.failed.forEach(function (f) { all[f[0]] = 1; });
        });
        var order = Object.keys(all).sort(function (a, b) { return C[a][0] - C[b][0]; });
        xaxis = {
          type: "category", categoryorder: "array", categoryarray: order.map(function (sha) { return C[sha][1]; }),
          title: { text: "commit, in history order" }, tickangle: -40, nticks: 14, tickfont: { family: "monospace", size: 11 }
        };
      } else {
        xaxis = { type: "date", title: { text: "commit date (UTC)" } };
      }
      xaxis.automargin = true;
      xaxis.showgrid = false;
      return {
        margin: { l: 70, r: 24, t: 40, b: 60 }, hovermode: "closest", dragmode: "zoom",
        legend: { orientation: "h", x: 0, y: 1.12 },
        hoverlabel: { namelength: -1, align: "left" },
        xaxis: xaxis,
        yaxis: { title: { text: "level per run (line: fitted between change points; points: each commit); band: quartiles of the rounds" }, tickformat: ".3s", ticksuffix: "s", automargin: true, gridcolor: "#eef1f5" },
        plot_bgcolor: "#fff", paper_bgcolor: "#fff", font: { family: "system-ui, sans-serif", size: 12 }
      };
    }

    Plotly.newPlot(gd, traces(), layout(), { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"] });

    Array.prototype.forEach.call(document.querySelectorAll("input[name=xaxis]"), function (radio) {
      radio.addEventListener("change", function () {
        mode = radio.value;
        var hidden = {};
        gd.data.forEach(function (t) { if (t.visible === "legendonly") hidden[t.meta.series] = true; });
        var next = traces();
        next.forEach(function (t) { if (hidden[t.meta.series]) t.visible = "legendonly"; });
        Plotly.react(gd, next, layout());
      });
    });

    var detail = document.getElementById("commit-detail");
    gd.on("plotly_click", function (ev) {
      var point = ev.points[0];
      var sha = point.customdata && point.customdata[4];
      if (!sha) return;
      var c = C[sha];
      detail.hidden = false;
      detail.querySelector(".sha").textContent = c[1];
      detail.querySelector(".subject").textContent = c[2];
      detail.querySelector(".meta").textContent = c[3] + " · " + c[4] + " UTC · " + sha;
      var kind = point.data.meta.kind;
      var series = data.series[point.data.meta.series];
      detail.querySelector(".value").textContent = series.name + ": " + (
        kind === "failed" ? "failed: " + series.failed[point.pointIndex][2]
          : (kind === "steps" ? "change point, level now " : "level ") + fmtTime(point.y));
      var link = detail.querySelector(".link");
      link.textContent = "";
      var url = commitURL(sha);
      if (url) {
        var a = document.createElement("a");
        a.href = url;
        a.textContent = "open on the repository host";
        link.append(a);
        window.open(url, "_blank", "noopener");
      } else {
        link.textContent = "No repository URL is configured (repo_url in [tool.regress]), so the commit is shown here.";
      }
    });
  }


  /* Metrics beyond time (issue 14): a switch between the time chart (or the time Compare
   * tables) and one metric's chart or table. Values arrive formatted (bytes with binary
   * prefixes); they are only ever placed as text. */
  function metrics(id) {
    var box = document.getElementById("metrics");
    var data = id === "bench-data" ? benchData() : readJSON(id);
    var list = (data && data.metrics) || [];
    if (!box || !list.length) return;
    box.hidden = false;
    var select = box.querySelector("select");
    list.forEach(function (m, k) {
      var o = document.createElement("option");
      o.value = String(k); o.textContent = m.title;
      select.appendChild(o);
    });
    var timeParts = document.querySelectorAll(id === "bench-data" ? "#chart" : ".compare-section, .legend");
    var out = box.querySelector(".metric-view");
    var note = box.querySelector(".metric-note");
    function show() {
      var k = select.value;
      Array.prototype.forEach.call(timeParts, function (el) { el.hidden = k !== "time"; });
      out.hidden = k === "time";
      note.textContent = k === "time" ? "" : list[+k].note;
      if (k === "time") return;
      var m = list[+k];
      out.textContent = "";
      if (id === "bench-data") {
        var C = commits().commits;
        var traces = m.series.map(function (s, i) {
          return { x: s.sha.map(function (sha) { return C[sha][1]; }), y: s.y, text: s.text, name: esc(s.name),
                   mode: "lines+markers", line: { color: PALETTE[i % PALETTE.length] },
                   hovertemplate: "%{x}: %{text}<extra>%{fullData.name}</extra>" };
        });
        Plotly.newPlot(out, traces, { margin: { l: 70, r: 24, t: 30, b: 60 }, yaxis: { title: { text: m.title }, rangemode: "tozero" },
                                       xaxis: { type: "category", title: { text: "commit, in history order" } } },
                       { displaylogo: false, responsive: true });
        return;
      }
      var table = document.createElement("table");
      table.className = "compare metric-table";
      var headRow = table.createTHead().insertRow();
      ["series", "benchmark", m.title, "change", "verdict"].forEach(function (h) {
        var th = document.createElement("th"); th.textContent = h; headRow.appendChild(th);
      });
      var body = table.createTBody();
      m.rows.forEach(function (r) {
        var tr = body.insertRow();
        [r.series, r.name, r.value, r.change, r.verdict].forEach(function (v, i) {
          var td = tr.insertCell(); td.textContent = v;
          if (i >= 2) td.className = "num";
          if (i === 4 && v) td.classList.add(v === "regression" ? "up" : v === "improvement" ? "dn" : "unchanged");
        });
      });
      out.appendChild(table);
    }
    select.addEventListener("change", show);
    // A page with nothing timed (a track_* value): its first metric, not an empty time chart.
    var timed = id === "bench-data" ? data.series.some(function (s) { return s.level.length; }) : timeParts.length > 1;
    if (!timed) { select.value = "0"; show(); }
  }

  // What this benchmark can detect, a line per series, from data/detects.js (written at every build, so the
  // page itself stays as it is when a commit is added); text only, never HTML.
  function detects() {
    var el = document.getElementById("detects");
    var all = (window.REGRESS_DETECTS || {}).series || {};
    var slug = benchData().slug;
    var names = Object.keys(all).filter(function (n) { return all[n][slug]; });
    names.forEach(function (n) {
      var line = document.createElement("span");
      line.className = all[n][slug][1] ? "reaches" : "short";
      line.textContent = (names.length > 1 ? n + ": " : "") + all[n][slug][0];
      el.appendChild(line);
    });
    el.hidden = !names.length;
  }

  window.Regress = {
    search: search,
    labels: function () { labels(); metrics("label-data"); },
    chart: function () { detects(); chart(); metrics("bench-data"); },
    metrics: metrics
  };
})();
