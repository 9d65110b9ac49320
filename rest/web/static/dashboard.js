// jobgraph dashboard: plain JavaScript over Flink's REST API v1 (the paths and field names of
// apache/flink's rest_v1_dispatcher.yml). Every request uses a relative URL, so the page works
// wherever it is mounted; routing is by URL fragment (#/, #/jobs/<jid>, #/jobs/<jid>/vertices/<vid>),
// so the server serves only "/". Text from the server is set with textContent, never as HTML.
"use strict";

(function () {
  const POLL_MS = 1000;         // how often a page refreshes itself while something may change
  const PAGE_SIZE = 100;        // subtasks per page of the subtask table
  const TERMINAL = new Set(["FINISHED", "CANCELED", "FAILED", "SUSPENDED"]);
  const SVGNS = "http://www.w3.org/2000/svg";

  // ---- small DOM helpers ----
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    append(e, children);
    return e;
  }
  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    append(e, children);
    return e;
  }
  function setAttrs(e, attrs) {
    for (const k in attrs || {}) {
      const v = attrs[k];
      if (v === undefined || v === null || v === false) continue;
      if (k === "onclick") e.addEventListener("click", v);
      else if (k === "text") e.textContent = String(v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
  }
  // append adds a node, a string, or an array of them (nested arrays too); null and false are skipped.
  function append(e, children) {
    const list = Array.isArray(children) ? children.flat(Infinity) : [children];
    for (const c of list) {
      if (c === undefined || c === null || c === false) continue;
      e.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
    }
  }
  function byId(id) { return document.getElementById(id); }
  function stateBadge(state, attrs) {
    return el("span", Object.assign({ class: "state", "data-status": state || "UNKNOWN" }, attrs || {}), state || "UNKNOWN");
  }

  // ---- formatting ----
  function fmtTime(ms) {
    if (typeof ms !== "number" || ms <= 0) return "–";
    const d = new Date(ms);
    const p = (n) => String(n).padStart(2, "0");
    return d.getFullYear() + "-" + p(d.getMonth() + 1) + "-" + p(d.getDate()) + " " +
      p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds());
  }
  function fmtDuration(ms) {
    if (typeof ms !== "number" || ms < 0) return "–";
    if (ms < 1000) return ms + " ms";
    let s = Math.floor(ms / 1000);
    const h = Math.floor(s / 3600); s -= h * 3600;
    const m = Math.floor(s / 60); s -= m * 60;
    if (h > 0) return h + "h " + m + "m " + s + "s";
    if (m > 0) return m + "m " + s + "s";
    return s + "s";
  }
  function fmtBytes(n) {
    if (typeof n !== "number" || n < 0) return "–";
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n : n.toFixed(1)) + " " + u[i];
  }
  function short(s, n) {
    s = String(s == null ? "" : s);
    return s.length > n ? s.slice(0, n - 1) + "…" : s;
  }

  // ---- REST client ----
  // A failed request rejects with an Error carrying the HTTP status and Flink's {"errors": [...]}.
  async function api(path, opts) {
    const res = await fetch(path, Object.assign({ headers: { "Accept": "application/json" }, cache: "no-store" }, opts || {}));
    const text = await res.text();
    let body = null;
    if (text) {
      try { body = JSON.parse(text); } catch (e) { body = { errors: [text] }; }
    }
    if (!res.ok) {
      const msg = body && Array.isArray(body.errors) ? body.errors.join("; ") : res.statusText;
      const err = new Error(path + ": " + res.status + " " + msg);
      err.status = res.status;
      throw err;
    }
    return body;
  }
  // Flink's JobDetails fields, as Flink's serializer writes them (jid, name, state) or as the
  // generated spec names them (jobId, jobName, status): the page accepts either.
  function jobId(j) { return j.jid || j.jobId || j.id; }
  function jobName(j) { return j.name != null ? j.name : j.jobName; }
  function jobState(j) { return j.state || j.status; }
  function startTime(j) { return j["start-time"] != null ? j["start-time"] : j.startTime; }
  function endTime(j) { return j["end-time"] != null ? j["end-time"] : j.endTime; }

  function showError(err) {
    const box = byId("error");
    if (!err) { box.hidden = true; box.textContent = ""; return; }
    box.hidden = false;
    box.textContent = String(err.message || err);
  }
  function touched() { byId("updated").textContent = "updated " + fmtTime(Date.now()); }

  // ---- polling: one page at a time, one refresh in flight, stopped when the page changes ----
  // The next round starts POLL_MS after this one ended, or twice as long as this one took if that
  // is longer, so a slow server (a vertex of 10,000 subtasks) is not asked faster than it answers.
  let current = null; // { stop: bool, timer: id }
  function poll(page, refresh) {
    const run = async () => {
      if (page.stop) return;
      let again = true;
      const started = performance.now();
      try {
        again = (await refresh()) !== false;
        if (!page.stop) { showError(null); touched(); }
      } catch (e) {
        if (!page.stop) showError(e);
      }
      const took = performance.now() - started;
      if (!page.stop && again) page.timer = setTimeout(run, Math.max(POLL_MS, 2 * took));
    };
    run();
  }

  function route() {
    if (current) { current.stop = true; clearTimeout(current.timer); }
    const page = { stop: false, timer: 0 };
    current = page;
    showError(null);
    const h = location.hash.replace(/^#/, "") || "/";
    const m = h.match(/^\/jobs\/([0-9a-fA-F]+)(?:\/vertices\/([0-9a-fA-F]+))?\/?$/);
    const app = byId("app");
    app.textContent = "";
    if (m) jobPage(page, app, m[1], m[2] || null);
    else overviewPage(page, app);
  }

  // ---- overview: cluster figures, TaskExecutors, job list ----
  function overviewPage(page, app) {
    app.setAttribute("data-page", "overview");
    const cards = el("div", { class: "cards", id: "overview" });
    const jobsBox = el("div", { id: "jobs-box" });
    const tmBox = el("div", { id: "taskmanagers-box" });
    append(app, [el("h1", {}, "Cluster overview"), cards, el("h2", {}, "Jobs"), jobsBox,
      el("h2", {}, "TaskExecutors"), tmBox]);
    poll(page, async () => {
      const [ov, jobs, tms] = await Promise.all([api("overview"), api("jobs/overview"), api("taskmanagers")]);
      if (page.stop) return false;
      renderCards(cards, ov);
      renderJobs(jobsBox, (jobs && jobs.jobs) || []);
      renderTaskManagers(tmBox, (tms && tms.taskmanagers) || []);
    });
  }

  function card(id, label, value) {
    return el("div", { class: "card", id: id, "data-value": value },
      el("div", { class: "label" }, label), el("div", { class: "value" }, value));
  }
  function renderCards(box, ov) {
    box.textContent = "";
    append(box, [
      card("ov-taskmanagers", "TaskExecutors", ov.taskmanagers),
      card("ov-slots", "Slots free / total", ov["slots-available"] + " / " + ov["slots-total"]),
      card("ov-jobs-running", "Running jobs", ov["jobs-running"]),
      card("ov-jobs-finished", "Finished jobs", ov["jobs-finished"]),
      card("ov-jobs-cancelled", "Canceled jobs", ov["jobs-cancelled"]),
      card("ov-jobs-failed", "Failed jobs", ov["jobs-failed"]),
    ]);
    box.querySelector("#ov-slots").setAttribute("data-slots-available", ov["slots-available"]);
    box.querySelector("#ov-slots").setAttribute("data-slots-total", ov["slots-total"]);
  }

  function renderJobs(box, jobs) {
    box.textContent = "";
    if (jobs.length === 0) { append(box, el("p", { class: "empty", id: "jobs-empty" }, "No jobs.")); return; }
    jobs = jobs.slice().sort((a, b) => (startTime(b) || 0) - (startTime(a) || 0));
    const tbody = el("tbody");
    for (const j of jobs) {
      const id = jobId(j), st = jobState(j);
      const t = j.tasks || {};
      append(tbody, el("tr", { "data-job-id": id, "data-status": st },
        el("td", {}, el("a", { href: "#/jobs/" + id, class: "job-link" }, jobName(j) || id)),
        el("td", {}, stateBadge(st)),
        el("td", {}, fmtTime(startTime(j))),
        el("td", {}, fmtDuration(j.duration)),
        el("td", {}, t.total != null ? String(t.total) : (j.numTasks != null ? String(j.numTasks) : "–")),
        el("td", { class: "mono" }, id)));
    }
    append(box, el("table", { id: "jobs" },
      el("thead", {}, el("tr", {}, ["Name", "State", "Start", "Duration", "Tasks", "Job ID"].map((h) => el("th", {}, h)))),
      tbody));
  }

  function renderTaskManagers(box, tms) {
    box.textContent = "";
    if (tms.length === 0) { append(box, el("p", { class: "empty" }, "No TaskExecutors registered.")); return; }
    const tbody = el("tbody");
    for (const tm of tms) {
      append(tbody, el("tr", { "data-taskmanager-id": tm.id },
        el("td", {}, tm.id), el("td", {}, tm.path || "–"),
        el("td", {}, String(tm.slotsNumber)), el("td", {}, String(tm.freeSlots)),
        el("td", {}, fmtDuration(typeof tm.timeSinceLastHeartbeat === "number" && tm.timeSinceLastHeartbeat > 1e12 ? Date.now() - tm.timeSinceLastHeartbeat : tm.timeSinceLastHeartbeat))));
    }
    append(box, el("table", { id: "taskmanagers" },
      el("thead", {}, el("tr", {}, ["ID", "Address", "Slots", "Free slots", "Last heartbeat"].map((h) => el("th", {}, h)))),
      tbody));
  }

  // ---- job page ----
  function jobPage(page, app, jid, selected) {
    app.setAttribute("data-page", "job");
    app.setAttribute("data-job-id", jid);
    const st = {
      jid: jid, selected: selected, subtaskPage: 0, plan: null, graphKey: "", vertexData: null,
      state: "",
    };
    const head = el("div", { class: "jobhead", id: "job-head" });
    const graphBox = el("div", { class: "graphbox", id: "graph-box" }, el("span", { class: "empty" }, "Loading the job graph…"));
    const subtasksBox = el("div", { id: "subtasks-box" });
    const excBox = el("div", { id: "exceptions-box" });
    const cpBox = el("div", { id: "checkpoints-box" });
    const accBox = el("div", { id: "accumulators-box" });
    append(app, [head, el("h2", {}, "Job graph"), graphBox,
      el("h2", {}, "Subtasks"), subtasksBox,
      el("h2", {}, "Exceptions"), excBox,
      el("h2", {}, "Checkpoints"), cpBox,
      el("h2", {}, "Accumulators"), accBox]);

    // The header is built once; its parts are updated in place so a click between polls works.
    const nameEl = el("h1", { id: "job-name" });
    const stateEl = stateBadge("", { id: "job-state" });
    const metaEl = el("span", { class: "meta", id: "job-meta" });
    const cancelBtn = el("button", { id: "cancel-job", class: "danger", onclick: () => cancelJob(st, cancelBtn) }, "Cancel");
    const spDir = el("input", { type: "text", id: "savepoint-dir", placeholder: "savepoint directory (optional)" });
    const spBtn = el("button", { id: "savepoint-job", onclick: () => triggerSavepoint(st, spBtn, spDir) }, "Savepoint");
    const spResult = el("span", { id: "savepoint-result", class: "meta" });
    append(head, [nameEl, stateEl, metaEl, el("div", { class: "actions" }, spDir, spBtn, cancelBtn), spResult]);

    st.renderSubtasks = () => renderSubtasks(st, subtasksBox);
    poll(page, async () => {
      // The job's details carry its plan (Flink's JobDetailsInfo "plan"); GET jobs/<jid>/plan is
      // asked only when they do not. The selected vertex's subtasks are fetched in parallel with
      // the details when the fragment names the vertex, else as soon as the details (their plan)
      // name the first vertex in topological order.
      const jobP = api("jobs/" + jid);
      const planP = st.plan ? Promise.resolve(st.plan)
        : jobP.then((j) => (j.plan && typeof j.plan === "object" && Array.isArray(j.plan.nodes)) ? j.plan : planOf(jid));
      const vertexP = (st.selected ? Promise.resolve(st.selected)
        : Promise.all([jobP, planP]).then(([j, p]) => topoOrder(p, j.vertices || [])[0]))
        .then((vid) => vid ? api("jobs/" + jid + "/vertices/" + vid).then((d) => ({ vid, d }), (e) => ({ vid, d: { error: e } })) : null);
      vertexP.catch(() => {}); // a failure here is the details' failure, reported below
      const [job, plan] = await Promise.all([jobP, planP]);
      if (page.stop) return false;
      if (plan) st.plan = plan;
      const state = jobState(job);
      st.state = state;
      app.setAttribute("data-job-status", state);
      nameEl.textContent = jobName(job) || jid;
      stateEl.textContent = state;
      stateEl.setAttribute("data-status", state);
      metaEl.textContent = "started " + fmtTime(startTime(job)) + " · duration " + fmtDuration(job.duration) + " · " + jid;
      const terminal = TERMINAL.has(state);
      cancelBtn.disabled = terminal || state === "CANCELLING";
      spBtn.disabled = terminal;
      const vertices = job.vertices || [];
      renderGraph(st, graphBox, vertices);
      const vr = await vertexP;
      if (page.stop) return false;
      if (vr) {
        if (!st.selected) { st.selected = vr.vid; renderGraph(st, graphBox, vertices); }
        st.vertexData = vr.d;
        renderVertexTabs(st, subtasksBox, vertices);
        st.renderSubtasks();
        if (!st.marked) {
          // The graph and the first page of subtasks are in the DOM: a mark a test (or a person
          // in the browser's performance panel) can read, in ms since the navigation started.
          st.marked = true;
          performance.mark("jobgraph:job-page-rendered");
        }
      }
      await Promise.all([
        api("jobs/" + jid + "/exceptions").then((x) => renderExceptions(excBox, x), (e) => renderUnavailable(excBox, e)),
        api("jobs/" + jid + "/checkpoints").then((x) => renderCheckpoints(cpBox, x), (e) => renderUnavailable(cpBox, e)),
        api("jobs/" + jid + "/accumulators").then((x) => renderAccumulators(accBox, x), (e) => renderUnavailable(accBox, e)),
      ]);
      // A finished job's details change no more: this round showed its final state; stop polling.
      return !terminal;
    });
  }

  async function planOf(jid) {
    try {
      const p = await api("jobs/" + jid + "/plan");
      return p && p.plan ? p.plan : p;
    } catch (e) {
      return null; // the details' own "plan" field, or vertices without edges, serve instead
    }
  }

  // Topological order of the job's vertices: the plan's nodes ordered by longest path from the
  // sources (column), then by their order in the plan. Vertices the plan does not name follow.
  function layout(plan, vertices) {
    const nodes = (plan && Array.isArray(plan.nodes)) ? plan.nodes : [];
    const ids = [];
    const seen = new Set();
    for (const n of nodes) if (!seen.has(n.id)) { seen.add(n.id); ids.push(n.id); }
    for (const v of vertices) if (!seen.has(v.id)) { seen.add(v.id); ids.push(v.id); }
    const inputs = new Map(ids.map((id) => [id, []]));
    for (const n of nodes) {
      for (const inp of n.inputs || []) {
        if (inputs.has(inp.id) && inputs.has(n.id)) inputs.get(n.id).push(inp);
      }
    }
    // Kahn's algorithm over the edges; col = longest path from a source.
    const indeg = new Map(ids.map((id) => [id, 0]));
    const outs = new Map(ids.map((id) => [id, []]));
    for (const id of ids) for (const inp of inputs.get(id)) { indeg.set(id, indeg.get(id) + 1); outs.get(inp.id).push(id); }
    const col = new Map(ids.map((id) => [id, 0]));
    const queue = ids.filter((id) => indeg.get(id) === 0);
    const order = [];
    for (let i = 0; i < queue.length; i++) {
      const id = queue[i];
      order.push(id);
      for (const o of outs.get(id)) {
        col.set(o, Math.max(col.get(o), col.get(id) + 1));
        indeg.set(o, indeg.get(o) - 1);
        if (indeg.get(o) === 0) queue.push(o);
      }
    }
    for (const id of ids) if (!order.includes(id)) order.push(id); // a cycle: never in a valid graph
    return { order, col, inputs };
  }
  function topoOrder(plan, vertices) { return layout(plan, vertices).order; }

  const BOX_W = 220, BOX_H = 64, COL_GAP = 110, ROW_GAP = 28, PAD = 16;

  // The graph's shape is drawn once per job; each poll updates each box's status in place.
  function renderGraph(st, box, vertices) {
    const byVid = new Map(vertices.map((v) => [v.id, v]));
    const key = vertices.map((v) => v.id).join(",") + "|" + (st.plan ? "p" : "");
    if (st.graphKey !== key) {
      st.graphKey = key;
      box.textContent = "";
      const { order, col, inputs } = layout(st.plan, vertices);
      const rows = new Map();
      const pos = new Map();
      let maxCol = 0, maxRow = 0;
      for (const id of order) {
        const c = col.get(id), r = rows.get(c) || 0;
        rows.set(c, r + 1);
        pos.set(id, { x: PAD + c * (BOX_W + COL_GAP), y: PAD + r * (BOX_H + ROW_GAP) });
        maxCol = Math.max(maxCol, c); maxRow = Math.max(maxRow, r);
      }
      const width = PAD * 2 + (maxCol + 1) * BOX_W + maxCol * COL_GAP;
      const height = PAD * 2 + (maxRow + 1) * BOX_H + maxRow * ROW_GAP;
      const g = svg("svg", { class: "graph", id: "job-graph", width: width, height: height, viewBox: "0 0 " + width + " " + height });
      append(g, svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
        svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#6b7280" }))));
      for (const id of order) {
        for (const inp of inputs.get(id)) {
          const a = pos.get(inp.id), b = pos.get(id);
          const x1 = a.x + BOX_W, y1 = a.y + BOX_H / 2, x2 = b.x, y2 = b.y + BOX_H / 2;
          const mx = (x1 + x2) / 2;
          const label = inp.ship_strategy || "";
          const lw = Math.max(24, label.length * 6 + 8);
          append(g, svg("g", { class: "edge", "data-source": inp.id, "data-target": id, "data-ship-strategy": label },
            svg("path", { d: "M " + x1 + " " + y1 + " C " + mx + " " + y1 + ", " + mx + " " + y2 + ", " + x2 + " " + y2, "marker-end": "url(#arrow)" }),
            label ? svg("rect", { x: mx - lw / 2, y: (y1 + y2) / 2 - 8, width: lw, height: 16, rx: 3 }) : null,
            label ? svg("text", { x: mx, y: (y1 + y2) / 2 + 4, "text-anchor": "middle", class: "ship-strategy" }, label) : null));
        }
      }
      for (const id of order) {
        const v = byVid.get(id);
        const node = (st.plan && st.plan.nodes || []).find((n) => n.id === id);
        const name = v ? v.name : (node ? (node.description || node.operator) : id);
        const p = pos.get(id);
        const vg = svg("g", { class: "vertex", "data-vertex-id": id, "data-name": name, transform: "translate(" + p.x + "," + p.y + ")",
          onclick: () => { location.hash = "#/jobs/" + st.jid + "/vertices/" + id; } },
          svg("title", {}, name),
          svg("rect", { class: "box", width: BOX_W, height: BOX_H, rx: 5 }),
          svg("rect", { class: "band", width: BOX_W, height: 18, rx: 5 }),
          svg("text", { class: "vstatus", x: 8, y: 13 }, ""),
          svg("text", { class: "vname", x: 8, y: 36 }, short(name, 28)),
          svg("text", { class: "vmeta", x: 8, y: 54 }, ""));
        append(g, vg);
      }
      append(box, g);
    }
    for (const vg of box.querySelectorAll("g.vertex")) {
      const id = vg.getAttribute("data-vertex-id");
      const v = byVid.get(id);
      const status = v ? vertexStatus(v) : "CREATED";
      vg.setAttribute("data-status", status);
      vg.classList.toggle("selected", id === st.selected);
      vg.querySelector(".vstatus").textContent = status;
      const par = v ? v.parallelism : "?";
      vg.setAttribute("data-parallelism", par);
      vg.querySelector(".vmeta").textContent = "parallelism " + par + (v && v.tasks ? " · " + taskCounts(v.tasks) : "");
    }
  }

  // A vertex's status: its "status" field, or, when a server sends only subtasks, the state most
  // of them are in.
  function vertexStatus(v) {
    if (v.status) return v.status;
    if (Array.isArray(v.subtasks) && v.subtasks.length) {
      const c = {};
      for (const s of v.subtasks) c[s.status] = (c[s.status] || 0) + 1;
      return Object.keys(c).sort((a, b) => c[b] - c[a])[0];
    }
    return "CREATED";
  }
  function taskCounts(tasks) {
    const parts = [];
    for (const k of Object.keys(tasks)) if (tasks[k] > 0) parts.push(tasks[k] + " " + k.toLowerCase());
    return parts.join(", ");
  }

  function renderVertexTabs(st, box, vertices) {
    let tabs = box.querySelector(".tabs");
    if (!tabs) {
      tabs = el("div", { class: "tabs", id: "vertex-tabs" });
      box.textContent = "";
      append(box, [tabs, el("div", { class: "pager", id: "subtask-pager" }), el("div", { id: "subtask-table-box" })]);
    }
    tabs.textContent = "";
    for (const id of topoOrder(st.plan, vertices)) {
      const v = vertices.find((x) => x.id === id);
      if (!v) continue;
      append(tabs, el("button", { "data-vertex-id": id, disabled: id === st.selected,
        onclick: () => { location.hash = "#/jobs/" + st.jid + "/vertices/" + id; } }, short(v.name, 40)));
    }
  }

  // One page of PAGE_SIZE subtasks of the selected vertex: however many subtasks the vertex has,
  // the DOM holds at most PAGE_SIZE rows.
  function renderSubtasks(st, box) {
    const pager = box.querySelector("#subtask-pager");
    const tableBox = box.querySelector("#subtask-table-box");
    if (!pager || !tableBox) return;
    const vd = st.vertexData;
    tableBox.textContent = "";
    pager.textContent = "";
    if (!vd || vd.error) { append(tableBox, el("p", { class: "empty" }, vd ? String(vd.error.message) : "–")); return; }
    const subtasks = vd.subtasks || [];
    const pages = Math.max(1, Math.ceil(subtasks.length / PAGE_SIZE));
    if (st.subtaskPage >= pages) st.subtaskPage = pages - 1;
    const from = st.subtaskPage * PAGE_SIZE, to = Math.min(subtasks.length, from + PAGE_SIZE);
    append(pager, [
      el("button", { id: "subtask-prev", disabled: st.subtaskPage === 0, onclick: () => { st.subtaskPage--; st.renderSubtasks(); } }, "‹ Prev"),
      el("span", { id: "subtask-page", "data-page": st.subtaskPage + 1, "data-pages": pages, "data-total": subtasks.length },
        "subtasks " + (subtasks.length ? from + 1 : 0) + "–" + to + " of " + subtasks.length + " · page " + (st.subtaskPage + 1) + " of " + pages),
      el("button", { id: "subtask-next", disabled: st.subtaskPage >= pages - 1, onclick: () => { st.subtaskPage++; st.renderSubtasks(); } }, "Next ›"),
    ]);
    const tbody = el("tbody");
    for (let i = from; i < to; i++) {
      const s = subtasks[i];
      const start = s["start-time"] != null ? s["start-time"] : s.start_time;
      append(tbody, el("tr", { "data-subtask": s.subtask, "data-status": s.status, "data-attempt": s.attempt },
        el("td", {}, String(s.subtask)),
        el("td", {}, stateBadge(s.status)),
        el("td", {}, String(s.attempt)),
        el("td", {}, s.host || "–"),
        el("td", { class: "taskmanager" }, s["taskmanager-id"] || "–"),
        el("td", {}, fmtTime(start)),
        el("td", {}, fmtDuration(s.duration))));
    }
    append(tableBox, el("table", { id: "subtasks", "data-vertex-id": vd.id },
      el("thead", {}, el("tr", {}, ["Subtask", "Status", "Attempt", "Host", "TaskExecutor", "Start", "Duration"].map((h) => el("th", {}, h)))),
      tbody));
  }

  function renderUnavailable(box, err) {
    box.textContent = "";
    append(box, el("p", { class: "empty" }, err.status === 404 ? "Not available for this job." : String(err.message)));
  }

  function renderExceptions(box, x) {
    box.textContent = "";
    const entries = (x && x.exceptionHistory && x.exceptionHistory.entries) || [];
    if (entries.length === 0 && !(x && x["root-exception"])) {
      append(box, el("p", { class: "empty", id: "exceptions-empty" }, "No exceptions."));
      return;
    }
    const tbody = el("tbody");
    const list = entries.length ? entries : [{ exceptionName: "", stacktrace: x["root-exception"], timestamp: x.timestamp }];
    for (const e of list) {
      const first = String(e.stacktrace || e.exceptionName || "").split("\n")[0];
      append(tbody, el("tr", { class: "exception" },
        el("td", {}, fmtTime(e.timestamp)),
        el("td", {}, e.taskName || "–"),
        el("td", {}, e.location || "–"),
        el("td", { class: "wrap" }, el("details", {}, el("summary", {}, short(e.exceptionName ? e.exceptionName + ": " + first : first, 160)),
          el("pre", {}, e.stacktrace || ""),
          (e.concurrentExceptions || []).length ? el("div", {}, (e.concurrentExceptions || []).length + " concurrent exception(s)") : null))));
    }
    append(box, el("table", { id: "exceptions", "data-count": list.length },
      el("thead", {}, el("tr", {}, ["Time", "Task", "Location", "Exception"].map((h) => el("th", {}, h)))), tbody));
    if (x.exceptionHistory && x.exceptionHistory.truncated) append(box, el("p", { class: "empty" }, "Older entries were dropped."));
  }

  function renderCheckpoints(box, x) {
    box.textContent = "";
    const c = (x && x.counts) || {};
    append(box, el("div", { class: "counts", id: "checkpoint-counts", "data-completed": c.completed || 0, "data-failed": c.failed || 0, "data-in-progress": c.in_progress || 0 },
      el("span", {}, "completed " + (c.completed || 0)), el("span", {}, "in progress " + (c.in_progress || 0)),
      el("span", {}, "failed " + (c.failed || 0)), el("span", {}, "restored " + (c.restored || 0))));
    const latest = (x && x.latest) || {};
    if (latest.restored) append(box, el("p", {}, "Restored from " + (latest.restored.is_savepoint ? "savepoint " : "checkpoint ") + latest.restored.id + (latest.restored.external_path ? " (" + latest.restored.external_path + ")" : "")));
    const hist = (x && x.history) || [];
    if (hist.length === 0) { append(box, el("p", { class: "empty" }, "No checkpoints yet.")); return; }
    const tbody = el("tbody");
    for (const h of hist) {
      append(tbody, el("tr", { "data-checkpoint-id": h.id, "data-status": h.status },
        el("td", {}, String(h.id)),
        el("td", {}, stateBadge(h.status)),
        el("td", {}, h.checkpoint_type || (h.is_savepoint ? "SAVEPOINT" : "CHECKPOINT")),
        el("td", {}, fmtTime(h.trigger_timestamp)),
        el("td", {}, fmtDuration(h.end_to_end_duration)),
        el("td", {}, fmtBytes(h.state_size)),
        el("td", {}, (h.num_acknowledged_subtasks || 0) + " / " + (h.num_subtasks || 0)),
        el("td", { class: "wrap" }, h.external_path || h.failure_message || "")));
    }
    append(box, el("table", { id: "checkpoints" },
      el("thead", {}, el("tr", {}, ["ID", "Status", "Type", "Triggered", "Duration", "State size", "Acknowledged", "Path / failure"].map((h) => el("th", {}, h)))), tbody));
  }

  function renderAccumulators(box, x) {
    box.textContent = "";
    const acc = (x && x["user-task-accumulators"]) || [];
    if (acc.length === 0) { append(box, el("p", { class: "empty", id: "accumulators-empty" }, "No accumulators.")); return; }
    const tbody = el("tbody");
    for (const a of acc) {
      append(tbody, el("tr", { "data-accumulator": a.name }, el("td", {}, a.name), el("td", {}, a.type), el("td", { class: "wrap value" }, a.value)));
    }
    append(box, el("table", { id: "accumulators" },
      el("thead", {}, el("tr", {}, ["Name", "Type", "Value"].map((h) => el("th", {}, h)))), tbody));
  }

  // ---- actions: PATCH /jobs/:jobid?mode=cancel, POST /jobs/:jobid/savepoints ----
  async function cancelJob(st, btn) {
    btn.disabled = true;
    try {
      await api("jobs/" + st.jid + "?mode=cancel", { method: "PATCH" });
      btn.textContent = "Cancelling…";
    } catch (e) {
      showError(e);
      btn.disabled = false;
    }
  }

  async function triggerSavepoint(st, btn, dir) {
    const out = byId("savepoint-result");
    btn.disabled = true;
    const body = { "cancel-job": false };
    if (dir.value.trim()) body["target-directory"] = dir.value.trim();
    try {
      const r = await api("jobs/" + st.jid + "/savepoints", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      const trigger = r["request-id"];
      out.setAttribute("data-status", "IN_PROGRESS");
      out.textContent = "savepoint in progress (trigger " + trigger + ")";
      for (;;) {
        await new Promise((res) => setTimeout(res, 500));
        const s = await api("jobs/" + st.jid + "/savepoints/" + trigger);
        if (s.status && s.status.id === "COMPLETED") {
          const op = s.operation || {};
          if (op.location) {
            out.setAttribute("data-status", "COMPLETED");
            out.textContent = "savepoint completed: " + op.location;
          } else {
            const fc = op["failure-cause"] || {};
            out.setAttribute("data-status", "FAILED");
            out.textContent = "savepoint failed: " + (fc["serialized-throwable"] || fc.message || fc.class || JSON.stringify(fc));
          }
          break;
        }
      }
    } catch (e) {
      out.setAttribute("data-status", "FAILED");
      out.textContent = "savepoint failed: " + e.message;
    } finally {
      btn.disabled = TERMINAL.has(st.state);
    }
  }

  window.addEventListener("hashchange", route);
  route();
})();
