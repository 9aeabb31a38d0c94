/*
 * The Detector Mesh trace viewer: search Jaeger for traces and show one as a span tree.
 *
 * Why hand-written: the Jaeger binary built from its Go module has no jaeger-ui assets and no
 * reachable registry publishes them. This script needs no build step and talks only to Jaeger's
 * HTTP API, by URLs relative to the page's <base> (Jaeger rewrites it under a base path):
 *   api/services                      service names
 *   api/services/<service>/operations operation names of one service
 *   api/traces?service=&operation=&start=&end=&limit=
 *                                     search; start/end are microseconds since the epoch
 *                                     (Jaeger's search ignores `lookback`, it is sent for parity)
 *   api/traces/<traceID>              one trace
 *
 * Layout: the pure part first (trace model, formatting, HTML rendering, routes: no DOM, so
 * node can load this file and test it), then the browser glue. Every text from a trace goes
 * through esc() before it becomes HTML.
 */
(function () {
  "use strict";

  var LOOKBACK_UNITS_US = { m: 60e6, h: 3600e6, d: 86400e6 };
  var TRACE_ID = /^[0-9a-f]{1,32}$/;

  // ---------------------------------------------------------------- formatting

  function esc(value) {
    return String(value === undefined || value === null ? "" : value)
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;")
      .replace(/'/g, "&#39;");
  }

  /** 850µs, 5.42ms, 15.7ms, 1.23s, 2m 3.4s: short enough for a bar label. */
  function formatDuration(us) {
    us = Math.max(0, Math.round(us));
    if (us < 1000) return us + "µs";
    if (us < 1e6) return trim((us / 1000).toFixed(us < 10000 ? 2 : 1)) + "ms";
    if (us < 60e6) return trim((us / 1e6).toFixed(2)) + "s";
    var minutes = Math.floor(us / 60e6);
    return minutes + "m " + trim(((us - minutes * 60e6) / 1e6).toFixed(1)) + "s";
  }

  function trim(fixed) {
    return fixed.indexOf(".") < 0 ? fixed : fixed.replace(/\.?0+$/, "");
  }

  /** Local wall-clock time with milliseconds: 2026-11-22 16:48:01.807. */
  function formatTime(us) {
    var d = new Date(Math.floor(us / 1000));
    function pad(n, width) {
      return String(n).padStart(width || 2, "0");
    }
    return (
      d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
      pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + "." +
      pad(d.getMilliseconds(), 3)
    );
  }

  /** "just now", "42 s ago", "3 min ago", "5 h ago", "2 d ago". */
  function formatAgo(us, nowUs) {
    var s = Math.max(0, (nowUs - us) / 1e6);
    if (s < 5) return "just now";
    if (s < 60) return Math.floor(s) + " s ago";
    if (s < 3600) return Math.floor(s / 60) + " min ago";
    if (s < 86400) return Math.floor(s / 3600) + " h ago";
    return Math.floor(s / 86400) + " d ago";
  }

  /** A stable colour per service, so one service looks the same in every trace. */
  function serviceColor(name) {
    var hash = 0;
    for (var i = 0; i < name.length; i++) hash = (hash * 31 + name.charCodeAt(i)) | 0;
    return "hsl(" + (Math.abs(hash) % 360) + ", 55%, 52%)";
  }

  function tagText(tag) {
    return tag.type === "string" || typeof tag.value === "string"
      ? String(tag.value)
      : JSON.stringify(tag.value);
  }

  function tagValue(tags, key) {
    for (var i = 0; i < (tags || []).length; i++) if (tags[i].key === key) return tags[i].value;
    return undefined;
  }

  // ---------------------------------------------------------------- trace model

  function parentId(span) {
    var refs = span.references || [];
    for (var i = 0; i < refs.length; i++) if (refs[i].refType === "CHILD_OF") return refs[i].spanID;
    return refs.length ? refs[0].spanID : null;
  }

  function byStart(a, b) {
    return a.startTime - b.startTime || (a.spanID < b.spanID ? -1 : a.spanID > b.spanID ? 1 : 0);
  }

  /**
   * One trace of Jaeger's JSON as the rows of its span tree, depth first, children by start
   * time. A span whose parent is not in the trace (not exported, not sampled, still in flight)
   * becomes a root marked parentMissing, so no span is ever hidden.
   */
  function buildTree(trace) {
    var processes = trace.processes || {};
    var spans = (trace.spans || []).slice().sort(byStart);
    var byId = {};
    spans.forEach(function (s) {
      byId[s.spanID] = s;
    });
    var children = {};
    var roots = [];
    spans.forEach(function (s) {
      var parent = parentId(s);
      if (parent && parent !== s.spanID && byId[parent]) {
        (children[parent] = children[parent] || []).push(s);
      } else {
        roots.push(s);
      }
    });
    var startUs = spans.length ? Infinity : 0;
    var endUs = 0;
    spans.forEach(function (s) {
      startUs = Math.min(startUs, s.startTime);
      endUs = Math.max(endUs, s.startTime + s.duration);
    });
    var totalUs = Math.max(1, endUs - startUs);

    var rows = [];
    var seen = {};
    function visit(span, depth) {
      if (seen[span.spanID]) return;
      seen[span.spanID] = true;
      var process = span.process || processes[span.processID] || {};
      var parent = parentId(span);
      var kids = children[span.spanID] || [];
      rows.push({
        spanID: span.spanID,
        parentID: parent,
        parentMissing: Boolean(parent) && !byId[parent],
        depth: depth,
        service: process.serviceName || "?",
        operation: span.operationName || "",
        kind: String(tagValue(span.tags, "span.kind") || "internal").toLowerCase(),
        error: isError(span),
        startUs: span.startTime,
        durationUs: span.duration,
        offsetUs: span.startTime - startUs,
        leftPct: ((span.startTime - startUs) / totalUs) * 100,
        widthPct: (span.duration / totalUs) * 100,
        childCount: kids.length,
        tags: span.tags || [],
        logs: span.logs || [],
        processTags: process.tags || [],
        references: span.references || [],
        warnings: (span.warnings || []).concat(parent && !byId[parent] ? ["parent span " + parent + " is not in this trace"] : []),
      });
      kids.forEach(function (kid) {
        visit(kid, depth + 1);
      });
    }
    roots.forEach(function (r) {
      visit(r, 0);
    });
    spans.forEach(function (s) {
      visit(s, 0); // spans in a parent cycle: shown, not lost
    });

    var counts = {};
    rows.forEach(function (r) {
      counts[r.service] = (counts[r.service] || 0) + 1;
    });
    var services = Object.keys(counts)
      .map(function (name) {
        return { name: name, count: counts[name] };
      })
      .sort(function (a, b) {
        return b.count - a.count || (a.name < b.name ? -1 : 1);
      });
    return {
      traceID: trace.traceID || (spans[0] && spans[0].traceID) || "",
      startUs: startUs,
      durationUs: endUs - startUs,
      rows: rows,
      services: services,
      depth: rows.reduce(function (m, r) {
        return Math.max(m, r.depth + 1);
      }, 0),
      errorCount: rows.filter(function (r) {
        return r.error;
      }).length,
      warnings: trace.warnings || [],
    };
  }

  function isError(span) {
    var error = tagValue(span.tags, "error");
    return error === true || error === "true" || tagValue(span.tags, "otel.status_code") === "ERROR";
  }

  /** What the result list shows of one trace. */
  function summarise(trace) {
    var model = buildTree(trace);
    var root = model.rows[0] || { service: "?", operation: "(no spans)" };
    return {
      traceID: model.traceID,
      rootService: root.service,
      rootName: root.operation,
      spanCount: model.rows.length,
      services: model.services,
      durationUs: model.durationUs,
      startUs: model.startUs,
      errorCount: model.errorCount,
    };
  }

  // ---------------------------------------------------------------- rendering (HTML strings)

  function serviceChip(name, count) {
    return (
      '<span class="chip" style="--svc:' + serviceColor(name) + '">' + esc(name) +
      (count ? ' <b>' + count + "</b>" : "") + "</span>"
    );
  }

  function renderResults(summaries, nowUs) {
    if (!summaries.length) {
      return '<p class="empty">No traces found. Widen the lookback, or check that records are sampled (MESH_TRACE_SAMPLE_RATIO).</p>';
    }
    var sorted = summaries.slice().sort(function (a, b) {
      return b.startUs - a.startUs;
    });
    var longest = Math.max.apply(null, sorted.map(function (s) { return s.durationUs; }).concat([1]));
    var rows = sorted.map(function (s) {
      var id = esc(s.traceID);
      return (
        '<tr data-trace="' + id + '">' +
        '<td class="when">' + esc(formatTime(s.startUs)) + '<br><span class="muted">' + esc(formatAgo(s.startUs, nowUs)) + "</span></td>" +
        '<td><a href="#/trace/' + id + '">' + serviceChip(s.rootService) + " " + esc(s.rootName) + "</a>" +
        '<br><code class="muted">' + id + "</code></td>" +
        '<td class="num">' + s.spanCount + (s.errorCount ? ' <span class="err">' + s.errorCount + " error" + (s.errorCount > 1 ? "s" : "") + "</span>" : "") + "</td>" +
        "<td>" + s.services.map(function (svc) { return serviceChip(svc.name, svc.count); }).join(" ") + "</td>" +
        '<td class="num">' + esc(formatDuration(s.durationUs)) +
        '<div class="mini-bar" style="width:' + Math.max(1, (s.durationUs / longest) * 100).toFixed(2) + '%"></div></td>' +
        "</tr>"
      );
    });
    return (
      '<p class="muted">' + sorted.length + " trace" + (sorted.length === 1 ? "" : "s") + ", newest first</p>" +
      '<table class="results"><thead><tr><th>Started</th><th>Root span / trace ID</th><th>Spans</th>' +
      "<th>Services (spans)</th><th>Duration</th></tr></thead><tbody>" + rows.join("") + "</tbody></table>"
    );
  }

  function renderTags(title, tags) {
    if (!tags.length) return "";
    return (
      (title ? "<h4>" + esc(title) + "</h4>" : "") + '<table class="kv">' +
      tags.map(function (t) {
        return "<tr><th>" + esc(t.key) + "</th><td>" + esc(tagText(t)) + "</td></tr>";
      }).join("") + "</table>"
    );
  }

  function renderDetails(row, model) {
    var facts = [
      ["Service", row.service],
      ["Operation", row.operation],
      ["Kind", row.kind],
      ["Span ID", row.spanID],
      ["Parent", row.parentID ? row.parentID + (row.parentMissing ? " (not in this trace)" : "") : "none (root)"],
      ["Start", "+" + formatDuration(row.offsetUs) + " (" + formatTime(row.startUs) + ")"],
      ["Duration", formatDuration(row.durationUs)],
    ];
    var others = row.references.filter(function (r) {
      return r.spanID !== row.parentID;
    });
    var logs = row.logs.map(function (log) {
      return (
        '<div class="log"><span class="muted">+' + esc(formatDuration(log.timestamp - model.startUs)) + "</span>" +
        renderTags("", log.fields || []) + "</div>"
      );
    });
    return (
      '<div class="details">' +
      '<table class="kv">' + facts.map(function (f) {
        return "<tr><th>" + esc(f[0]) + "</th><td>" + esc(f[1]) + "</td></tr>";
      }).join("") + "</table>" +
      renderTags("Attributes", row.tags) +
      (logs.length ? "<h4>Events</h4>" + logs.join("") : "") +
      renderTags("Resource (" + row.service + ")", row.processTags) +
      (others.length ? "<h4>Other references</h4><ul>" + others.map(function (r) {
        return "<li>" + esc(r.refType) + " " + esc(r.traceID) + " / " + esc(r.spanID) + "</li>";
      }).join("") + "</ul>" : "") +
      (row.warnings.length ? '<h4>Warnings</h4><ul class="err">' + row.warnings.map(function (w) {
        return "<li>" + esc(w) + "</li>";
      }).join("") + "</ul>" : "") +
      "</div>"
    );
  }

  /** A bar's duration label: after the bar, inside a long bar that ends late, else before it. */
  function barLabel(left, width, text) {
    var end = left + width;
    var inside = end > 85 && width >= 15;
    var place = end <= 85 ? "left:" + end.toFixed(3) : "right:" + (100 - (inside ? end : left)).toFixed(3);
    return '<span class="bar-label' + (inside ? " inside" : "") + '" style="' + place + '%">' + esc(text) + "</span>";
  }

  /**
   * The trace view. state.collapsed / state.open: span IDs whose subtree is folded / whose
   * details are shown. Rows under a folded span are left out.
   */
  function renderTrace(model, state) {
    state = state || {};
    var collapsed = state.collapsed || {};
    var open = state.open || {};
    var root = model.rows[0] || { service: "?", operation: "(no spans)" };
    var ticks = [0, 25, 50, 75, 100].map(function (p) {
      return '<span class="tick" style="left:' + p + '%">' + esc(formatDuration((model.durationUs * p) / 100)) + "</span>";
    });
    var html = [];
    var foldedBelow = Infinity;
    model.rows.forEach(function (row) {
      if (row.depth > foldedBelow) return;
      foldedBelow = collapsed[row.spanID] ? row.depth : Infinity;
      var id = esc(row.spanID);
      var left = Math.min(row.leftPct, 99.7);
      var width = Math.max(0.3, Math.min(row.widthPct, 100 - left));
      var toggle = row.childCount
        ? '<button class="fold" data-fold="' + id + '" title="' + (collapsed[row.spanID] ? "show" : "hide") + " " + row.childCount +
          ' child span(s)">' + (collapsed[row.spanID] ? "▸" : "▾") + "</button>"
        : '<span class="fold"></span>';
      html.push(
        '<div class="span-row' + (row.error ? " error" : "") + (open[row.spanID] ? " open" : "") + '" data-span="' + id + '">' +
        '<div class="span-name" style="padding-left:' + (row.depth * 16) + 'px">' + toggle +
        serviceChip(row.service) + ' <span class="op">' + esc(row.operation) + "</span>" +
        ' <span class="kind">' + esc(row.kind) + "</span>" +
        (row.parentMissing ? ' <span class="err" title="its parent span is not in this trace">orphan</span>' : "") +
        "</div>" +
        '<div class="span-timing"><div class="bar" style="left:' + left.toFixed(3) + "%;width:" + width.toFixed(3) +
        "%;--svc:" + serviceColor(row.service) + '"></div>' +
        barLabel(left, width, formatDuration(row.durationUs)) + "</div></div>" +
        (open[row.spanID] ? renderDetails(row, model) : "")
      );
    });
    return (
      '<div class="trace-head"><h2>' + serviceChip(root.service) + " " + esc(root.operation) + "</h2>" +
      '<dl class="facts">' +
      "<dt>Trace ID</dt><dd><code>" + esc(model.traceID) + "</code></dd>" +
      "<dt>Started</dt><dd>" + esc(formatTime(model.startUs)) + "</dd>" +
      "<dt>Duration</dt><dd>" + esc(formatDuration(model.durationUs)) + "</dd>" +
      "<dt>Spans</dt><dd>" + model.rows.length + (model.errorCount ? ' <span class="err">' + model.errorCount + " with error</span>" : "") + "</dd>" +
      "<dt>Depth</dt><dd>" + model.depth + "</dd>" +
      "<dt>Services</dt><dd>" + model.services.map(function (s) { return serviceChip(s.name, s.count); }).join(" ") + "</dd>" +
      "</dl>" +
      '<div class="actions">' +
      '<button data-action="unfold-all">Expand tree</button>' +
      '<button data-action="fold-all">Collapse tree</button>' +
      '<button data-action="open-all">Show all attributes</button>' +
      '<button data-action="close-all">Hide all attributes</button>' +
      '<a href="api/traces/' + esc(model.traceID) + '" target="_blank" rel="noopener">JSON</a>' +
      '<span class="muted">Click a span for its attributes.</span>' +
      "</div></div>" +
      '<div class="span-row ruler"><div class="span-name muted">Service · operation · kind</div>' +
      '<div class="span-timing">' + ticks.join("") + "</div></div>" +
      html.join("")
    );
  }

  // ---------------------------------------------------------------- routes and queries

  /** decodeURIComponent that keeps a malformed escape as it is instead of throwing. */
  function decode(text) {
    try {
      return decodeURIComponent(text);
    } catch (ignored) {
      return text;
    }
  }

  function normaliseTraceId(text) {
    var id = String(text || "").trim().toLowerCase();
    return TRACE_ID.test(id) ? id : null;
  }

  /**
   * Which view a location asks for. Hash routes are the viewer's own (#/trace/<id>,
   * #/search?service=...); Jaeger UI's path links (/trace/<id>, /search?service=...) are
   * understood too, since Jaeger serves this page for them. relPath is the path after <base>.
   */
  function parseRoute(hash, relPath, search) {
    var h = String(hash || "").replace(/^#\/?/, "");
    var p = String(relPath || "").replace(/^\/+/, "");
    var m = /^trace\/([^/?#]+)/.exec(h) || (h ? null : /^trace\/([^/?#]+)/.exec(p));
    if (m) return { view: "trace", traceID: normaliseTraceId(decode(m[1])), raw: decode(m[1]) };
    var query = h ? h.replace(/^search\/?/, "").replace(/^\?/, "") : String(search || "").replace(/^\?/, "");
    var params = {};
    query.split("&").forEach(function (pair) {
      if (!pair) return;
      var kv = pair.split("=");
      params[decode(kv[0])] = decode((kv[1] || "").replace(/\+/g, " "));
    });
    return { view: "search", params: params };
  }

  /** "1h" -> microseconds; null for anything else. */
  function lookbackUs(text) {
    var m = /^(\d+)([mhd])$/.exec(String(text || ""));
    return m ? Number(m[1]) * LOOKBACK_UNITS_US[m[2]] : null;
  }

  /** The api/traces query string of a search made at nowUs. */
  function searchQuery(params, nowUs) {
    var lookback = lookbackUs(params.lookback) ? params.lookback : "1h";
    var end = Math.floor(nowUs);
    var fields = [
      ["service", params.service],
      ["operation", params.operation || ""],
      ["start", end - lookbackUs(lookback)],
      ["end", end],
      ["lookback", lookback],
      ["limit", Math.max(1, Math.min(1500, parseInt(params.limit, 10) || 20))],
    ];
    return fields
      .filter(function (f) {
        return f[1] !== "";
      })
      .map(function (f) {
        return encodeURIComponent(f[0]) + "=" + encodeURIComponent(f[1]);
      })
      .join("&");
  }

  var api = {
    esc: esc,
    formatDuration: formatDuration,
    formatTime: formatTime,
    formatAgo: formatAgo,
    buildTree: buildTree,
    summarise: summarise,
    renderResults: renderResults,
    renderTrace: renderTrace,
    parseRoute: parseRoute,
    lookbackUs: lookbackUs,
    searchQuery: searchQuery,
    normaliseTraceId: normaliseTraceId,
  };

  if (typeof module === "object" && module.exports) {
    module.exports = api;
    return;
  }
  if (typeof document === "undefined") return;

  // ---------------------------------------------------------------- browser glue

  var el = {};
  var current = { model: null, state: null };
  var request = 0; // answers to an older request are dropped
  var servicesLoaded = false;

  function $(id) {
    return document.getElementById(id);
  }

  function nowUs() {
    return Date.now() * 1000;
  }

  function status(text, isErr) {
    el.status.textContent = text || "";
    el.status.className = "status" + (isErr ? " error" : "");
  }

  /** GET a Jaeger API path; its `data`. Throws an Error with Jaeger's own message. */
  function getData(path) {
    return fetch(path, { headers: { Accept: "application/json" } }).then(function (answer) {
      return answer.text().then(function (text) {
        var body = null;
        try {
          body = JSON.parse(text);
        } catch (ignored) {
          body = null;
        }
        var errors = (body && body.errors) || [];
        if (!answer.ok || (body && body.data === null && errors.length)) {
          var error = new Error(errors.length ? errors.map(function (e) { return e.msg; }).join("; ") : "HTTP " + answer.status + " " + text.slice(0, 200));
          error.status = answer.status;
          throw error;
        }
        if (!body) throw new Error("Jaeger answered something that is not JSON");
        return body.data || [];
      });
    });
  }

  function fillSelect(select, values, selected, first) {
    select.innerHTML = (first === undefined ? "" : '<option value="">' + esc(first) + "</option>") +
      values.map(function (v) {
        return '<option value="' + esc(v) + '"' + (v === selected ? " selected" : "") + ">" + esc(v) + "</option>";
      }).join("");
  }

  function loadServices(selected) {
    return getData("api/services").then(function (services) {
      servicesLoaded = true;
      services = services.slice().sort();
      if (!services.length) {
        fillSelect(el.service, [], "", "no services yet");
        status("No service has sent spans yet: they arrive when sampled records pass through the mesh (MESH_TRACE_SAMPLE_RATIO).");
        return;
      }
      fillSelect(el.service, services, selected || el.service.value, "choose a service");
    }, function (error) {
      fillSelect(el.service, [], "", "unavailable");
      status("Could not list services: " + error.message, true);
    });
  }

  function loadOperations(service, selected) {
    if (!service) {
      fillSelect(el.operation, [], "", "all");
      return Promise.resolve();
    }
    return getData("api/services/" + encodeURIComponent(service) + "/operations").then(function (ops) {
      fillSelect(el.operation, ops.slice().sort(), selected || "", "all");
    }, function () {
      fillSelect(el.operation, [], "", "all");
    });
  }

  function showSearch(params) {
    el.trace.hidden = true;
    el.results.hidden = false;
    document.title = "Detector Mesh traces";
    if (lookbackUs(params.lookback)) {
      if (![].some.call(el.lookback.options, function (o) { return o.value === params.lookback; })) {
        el.lookback.insertAdjacentHTML("beforeend", "<option>" + esc(params.lookback) + "</option>");
      }
      el.lookback.value = params.lookback;
    }
    if (params.limit) el.limit.value = params.limit;
    var service = params.service || "";
    loadServices(service).then(function () {
      if (service && el.service.value !== service) {
        fillSelect(el.service, [service].concat([].map.call(el.service.options, function (o) { return o.value; }).filter(Boolean)), service);
      }
      return loadOperations(el.service.value, params.operation);
    }).then(function () {
      if (!service) {
        el.results.innerHTML = "";
        return;
      }
      var mine = ++request;
      status("Searching " + service + " …");
      getData("api/traces?" + searchQuery(params, nowUs())).then(function (traces) {
        if (mine !== request) return;
        status("");
        el.results.innerHTML = renderResults(traces.map(summarise), nowUs());
      }, function (error) {
        if (mine !== request) return;
        status("Search failed: " + error.message, true);
      });
    });
  }

  function showTrace(route) {
    el.results.hidden = true;
    el.trace.hidden = false;
    el.trace.innerHTML = "";
    if (!route.traceID) {
      status("Not a trace ID: " + route.raw + " (expected up to 32 hex digits)", true);
      return;
    }
    el.traceId.value = route.traceID;
    if (!servicesLoaded) loadServices();
    document.title = "Trace " + route.traceID.slice(0, 8) + " · Detector Mesh";
    var mine = ++request;
    status("Loading trace " + route.traceID + " …");
    getData("api/traces/" + route.traceID).then(function (traces) {
      if (mine !== request) return;
      if (!traces.length) throw Object.assign(new Error("trace not found"), { status: 404 });
      status("");
      current.model = buildTree(traces[0]);
      current.state = { collapsed: {}, open: {} };
      draw();
    }).catch(function (error) {
      if (mine !== request) return;
      status(
        error.status === 404
          ? "Trace " + route.traceID + " is not in Jaeger: it keeps traces in memory, so a restart or many newer traces drop it."
          : "Could not load the trace: " + error.message,
        true
      );
    });
  }

  function draw() {
    el.trace.innerHTML = renderTrace(current.model, current.state);
  }

  function onTraceClick(event) {
    if (!current.model) return;
    var target = event.target;
    var fold = target.closest("[data-fold]");
    var action = target.closest("[data-action]");
    var row = target.closest(".span-row[data-span]");
    var state = current.state;
    if (fold) {
      var id = fold.getAttribute("data-fold");
      state.collapsed[id] = !state.collapsed[id];
    } else if (action) {
      var what = action.getAttribute("data-action");
      current.model.rows.forEach(function (r) {
        if (what === "fold-all" && r.childCount) state.collapsed[r.spanID] = true;
        if (what === "open-all") state.open[r.spanID] = true;
      });
      if (what === "unfold-all") state.collapsed = {};
      if (what === "close-all") state.open = {};
    } else if (row && !target.closest("a")) {
      var span = row.getAttribute("data-span");
      state.open[span] = !state.open[span];
    } else {
      return;
    }
    draw();
  }

  /** Navigate to a hash route; the same one again (a repeated search) runs it again. */
  function go(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  }

  function route() {
    var basePath = new URL(document.baseURI).pathname;
    var rel = location.pathname.indexOf(basePath) === 0 ? location.pathname.slice(basePath.length) : "";
    var r = parseRoute(location.hash, rel, location.search);
    if (r.view === "trace") showTrace(r);
    else showSearch(r.params);
  }

  function start() {
    ["status", "results", "trace", "service", "operation", "lookback", "limit", "version"].forEach(function (id) {
      el[id] = $(id);
    });
    el.traceId = $("trace-id");
    var version = window.JAEGER_VERSION;
    if (version && version.gitVersion) el.version.textContent = "Jaeger " + version.gitVersion;

    el.service.addEventListener("change", function () {
      loadOperations(el.service.value, "");
    });
    $("search-form").addEventListener("submit", function (event) {
      event.preventDefault();
      go("#/search?" + [
        ["service", el.service.value],
        ["operation", el.operation.value],
        ["lookback", el.lookback.value],
        ["limit", el.limit.value],
      ].filter(function (f) { return f[1]; }).map(function (f) {
        return f[0] + "=" + encodeURIComponent(f[1]);
      }).join("&"));
    });
    $("trace-form").addEventListener("submit", function (event) {
      event.preventDefault();
      var id = normaliseTraceId(el.traceId.value);
      if (!id) {
        status("Not a trace ID: " + el.traceId.value + " (expected up to 32 hex digits)", true);
        return;
      }
      go("#/trace/" + id);
    });
    el.trace.addEventListener("click", onTraceClick);
    window.addEventListener("hashchange", route);
    route();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
