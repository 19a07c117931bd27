/*
 * mnemoql atlas: a neighbourhood-first graph view for large memories.
 *
 * WebGL drawing (sigma.js over a graphology graph), the ForceAtlas2 layout in a Web Worker
 * (graphology-layout-forceatlas2/worker), and data read one page at a time (atlas-data.js).
 * The view starts from a search, a node id or a topic (the form, or ?q= / ?id= / ?topic= in
 * the address) and grows on click: each click on a node adds the next page of its neighbours,
 * placed around it. Labels show by zoom (sigma's label grid and rendered-size threshold);
 * filters hide nodes by label, person and event date. Saves arriving on the live feed
 * (memoryChanges) join the drawing beside a neighbour already drawn; a save with no drawn
 * neighbour is only counted, so a large memory never floods the view.
 *
 * For tests and the bench: window.__atlas = { sigma, graph, ready, start, expand, placements,
 * layoutRunning, firstPaintMs, viewport(id) }. ?page=N sets the page size (1..100).
 */
(function () {
  'use strict';

  var data = window.mnemoqlAtlasData;
  var LABELS = ['Event', 'Person', 'Concept', 'Location', 'Topic'];
  var COLOURS = { // the classic explorer's label colours (explorer.css)
    Event: '#4e79a7',
    Person: '#f28e2b',
    Concept: '#59a14f',
    Location: '#e15759',
    Topic: '#b07aa1'
  };
  var SIZES = { Event: 4, Person: 6, Concept: 5, Location: 5, Topic: 6 };
  var LAYOUT_MS = 1500; // each change runs the layout this long, then the drawing holds still
  var SEED_PAGE = 10; // neighbours per connection of each start node
  // above this many nodes a drag draws nodes only (sigma's hide*OnMove): edges and labels come
  // back when the view stops. Drawing the edges is most of a frame where the browser renders
  // WebGL in software (headless, no GPU): 600 nodes panned at 83 ms a frame with them, 33 without
  var LIGHT_MOVES_ABOVE = 300;
  // a small neighbourhood labels its events too (their summaries are what a reader came for);
  // above this many nodes only entities are labelled until the reader zooms in
  var EVENT_LABELS_UP_TO = 60;
  var params = new URLSearchParams(window.location.search);
  var pageSize = Math.max(1, Math.min(data.PAGE_MAX, parseInt(params.get('page'), 10) || 50));

  var ui = {
    form: document.getElementById('start-form'),
    mode: document.getElementById('start-mode'),
    input: document.getElementById('start-input'),
    status: document.getElementById('status'),
    count: document.getElementById('node-count'),
    live: document.getElementById('live-state'),
    labels: document.getElementById('label-filter'),
    person: document.getElementById('person-filter'),
    from: document.getElementById('date-from'),
    to: document.getElementById('date-to'),
    details: document.getElementById('details'),
    fit: document.getElementById('fit-button')
  };

  var container = document.getElementById('atlas');
  var graph = new graphology.MultiDirectedGraph();
  var renderer = new Sigma(graph, container, {
    renderEdgeLabels: false,
    labelDensity: 0.08,
    labelGridCellSize: 80,
    labelRenderedSizeThreshold: 5, // entities labelled at first; events (size 4) once zoomed in
    labelFont: 'system-ui, "Noto Sans", "WenQuanYi Micro Hei", sans-serif',
    zIndex: true,
    minCameraRatio: 0.02,
    maxCameraRatio: 20
  });
  var layout = new FA2Layout(graph, {
    settings: { barnesHutOptimize: true, gravity: 0.5, scalingRatio: 8, slowDown: 8 }
  });
  var layoutTimer = null;
  var hiddenLabels = new Set();
  var selected = null;
  var placements = [];
  var outside = 0;
  var atlas = {
    sigma: renderer,
    graph: graph,
    placements: placements,
    layoutRunning: false,
    firstPaintMs: null,
    pageSize: pageSize
  };

  /* ---------------------------------------------------------------- status */

  function setStatus(state, text) {
    ui.status.textContent = text;
    ui.status.setAttribute('data-state', state);
    document.body.setAttribute('data-state', state);
  }

  function showCount() {
    var shown = 0;
    graph.forEachNode(function (id, a) {
      if (!a.hidden) {
        shown += 1;
      }
    });
    ui.count.textContent =
      shown + ' of ' + graph.order + ' nodes shown' + (outside ? ' · ' + outside + ' new outside the view' : '');
    ui.count.setAttribute('data-nodes', String(graph.order));
    ui.count.setAttribute('data-shown', String(shown));
  }

  /* ---------------------------------------------------------------- layout */

  function runLayout() {
    if (graph.order < 2) {
      return;
    }
    window.clearTimeout(layoutTimer);
    if (!layout.isRunning()) {
      layout.start();
    }
    atlas.layoutRunning = true;
    layoutTimer = window.setTimeout(function () {
      layout.stop();
      atlas.layoutRunning = false;
    }, LAYOUT_MS);
  }

  function jitter(span) {
    return (Math.random() - 0.5) * span;
  }

  /** Where a node goes: beside `near` (a drawn node) or, with none, on a ring round the centre. */
  function position(near, i, n) {
    if (near && graph.hasNode(near)) {
      var a = graph.getNodeAttributes(near);
      var angle = Math.random() * 2 * Math.PI;
      var r = 0.5 + Math.random() * 0.5;
      return { x: a.x + r * Math.cos(angle), y: a.y + r * Math.sin(angle) };
    }
    var t = (2 * Math.PI * i) / Math.max(1, n);
    return { x: 10 * Math.cos(t) + jitter(1), y: 10 * Math.sin(t) + jitter(1) };
  }

  /* ---------------------------------------------------------------- graph */

  function shortName(name) {
    var text = String(name || '');
    return text.length > 48 ? text.slice(0, 47) + '…' : text;
  }

  function addNode(rec, near, i, n) {
    if (graph.hasNode(rec.id)) {
      graph.mergeNodeAttributes(rec.id, { label: shortName(rec.name), fullName: rec.name });
      return false;
    }
    var at = position(near, i || 0, n || 1);
    graph.addNode(rec.id, {
      x: at.x,
      y: at.y,
      label: shortName(rec.name),
      fullName: rec.name,
      kind: rec.label,
      date: rec.date || '',
      size: SIZES[rec.label] || 4,
      color: COLOURS[rec.label] || '#888',
      hidden: false
    });
    return true;
  }

  function addEdge(e) {
    if (graph.hasEdge(e.id) || !graph.hasNode(e.source) || !graph.hasNode(e.target)) {
      return;
    }
    graph.addDirectedEdgeWithKey(e.id, e.source, e.target, { relType: e.type, size: 1, color: '#c8ccd4' });
  }

  /** Add a page of neighbours around `centre` (each new node beside it). */
  function addBatch(batch, centre) {
    var added = 0;
    batch.nodes.forEach(function (rec) {
      if (addNode(rec, centre)) {
        added += 1;
      }
    });
    batch.edges.forEach(addEdge);
    return added;
  }

  function afterChange() {
    var light = graph.order > LIGHT_MOVES_ABOVE;
    if (renderer.getSetting('hideEdgesOnMove') !== light) {
      renderer.setSetting('hideEdgesOnMove', light);
      renderer.setSetting('hideLabelsOnMove', light);
      container.classList.toggle('large', light);
    }
    var threshold = graph.order <= EVENT_LABELS_UP_TO ? 3 : 5;
    if (renderer.getSetting('labelRenderedSizeThreshold') !== threshold) {
      renderer.setSetting('labelRenderedSizeThreshold', threshold);
    }
    refreshPersons();
    applyFilters();
    runLayout();
  }

  /* ---------------------------------------------------------------- first paint */

  function noteFirstPaint() {
    if (atlas.firstPaintMs !== null || graph.order === 0) {
      return;
    }
    renderer.once('afterRender', function () {
      if (atlas.firstPaintMs === null) {
        atlas.firstPaintMs = performance.now();
        document.body.setAttribute('data-painted', 'true');
      }
    });
    renderer.refresh();
  }

  /* ---------------------------------------------------------------- start and expand */

  function start(mode, value) {
    setStatus('loading', 'Loading…');
    return data
      .start(mode, value, mode === 'search' ? Math.min(pageSize, 20) : pageSize)
      .then(function (seeds) {
        graph.clear();
        data.reset();
        placements.length = 0;
        outside = 0;
        selected = null;
        seeds.forEach(function (rec, i) {
          addNode(rec, null, i, seeds.length);
        });
        if (!seeds.length) {
          setStatus('empty', 'Nothing matches "' + value + '".');
          showCount();
          return [];
        }
        return data
          .expand(
            seeds.map(function (rec) {
              return { id: rec.id, label: rec.label };
            }),
            Math.min(pageSize, SEED_PAGE)
          )
          .then(function (batch) {
            batch.nodes.forEach(function (rec) {
              addNode(rec, neighbourIn(batch.edges, rec.id));
            });
            batch.edges.forEach(addEdge);
            afterChange();
            noteFirstPaint();
            renderer.getCamera().animatedReset({ duration: 0 });
            setStatus('ok', 'Showing ' + seeds.length + ' start node' + (seeds.length === 1 ? '' : 's') + ' and their first neighbours. Click a node for more.');
            return seeds;
          });
      })
      .catch(function (err) {
        setStatus('error', 'Could not load: ' + err.message);
        throw err;
      });
  }

  /** A node already drawn that an edge of the batch links to `id`. */
  function neighbourIn(edges, id) {
    for (var i = 0; i < edges.length; i += 1) {
      var e = edges[i];
      var other = e.source === id ? e.target : e.target === id ? e.source : null;
      if (other && graph.hasNode(other)) {
        return other;
      }
    }
    return null;
  }

  function expand(id) {
    if (!graph.hasNode(id)) {
      return Promise.resolve(0);
    }
    select(id);
    if (!data.hasMore(id)) {
      setStatus('ok', 'Every neighbour of ' + id + ' is drawn.');
      return Promise.resolve(0);
    }
    setStatus('loading', 'Loading the next page of ' + id + '…');
    return data
      .expand([{ id: id, label: graph.getNodeAttribute(id, 'kind') }], pageSize)
      .then(function (batch) {
        if (!graph.hasNode(id)) {
          return 0;
        }
        var added = addBatch(batch, id);
        afterChange();
        setStatus('ok', 'Added ' + added + ' node' + (added === 1 ? '' : 's') + ' around ' + id + (data.hasMore(id) ? '; click again for more.' : '.'));
        select(id);
        return added;
      })
      .catch(function (err) {
        setStatus('error', 'Could not expand ' + id + ': ' + err.message);
        throw err;
      });
  }

  /* ---------------------------------------------------------------- details */

  function el(tag, text, attrs) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) {
      node.textContent = text;
    }
    Object.keys(attrs || {}).forEach(function (k) {
      node.setAttribute(k, attrs[k]);
    });
    return node;
  }

  function select(id) {
    selected = id;
    ui.details.textContent = '';
    if (!graph.hasNode(id)) {
      return;
    }
    var a = graph.getNodeAttributes(id);
    ui.details.appendChild(el('p', a.kind, { class: 'kind', 'data-testid': 'details-kind' }));
    ui.details.appendChild(el('p', a.fullName, { class: 'name', 'data-testid': 'details-name' }));
    ui.details.appendChild(el('p', id + (a.date ? ' · ' + a.date : ''), { class: 'meta' }));
    ui.details.appendChild(el('p', graph.degree(id) + ' relationships drawn', { class: 'meta' }));
    if (data.hasMore(id)) {
      var more = el('button', 'Load next page', { type: 'button', 'data-testid': 'load-more' });
      more.addEventListener('click', function () {
        expand(id).catch(function () {});
      });
      ui.details.appendChild(more);
    } else {
      ui.details.appendChild(el('p', 'All neighbours drawn.', { class: 'meta', 'data-testid': 'all-drawn' }));
    }
  }

  /* ---------------------------------------------------------------- filters */

  function buildLabelFilter() {
    LABELS.forEach(function (label) {
      var box = el('input', null, { type: 'checkbox', value: label, 'data-testid': 'label-' + label });
      box.checked = true;
      box.addEventListener('change', function () {
        if (box.checked) {
          hiddenLabels.delete(label);
        } else {
          hiddenLabels.add(label);
        }
        applyFilters();
      });
      var wrap = el('label', null, { class: 'label-choice' });
      var swatch = el('span', null, { class: 'swatch' });
      swatch.style.background = COLOURS[label];
      wrap.appendChild(box);
      wrap.appendChild(swatch);
      wrap.appendChild(document.createTextNode(label));
      ui.labels.appendChild(wrap);
    });
  }

  function refreshPersons() {
    var keep = ui.person.value;
    var persons = [];
    graph.forEachNode(function (id, a) {
      if (a.kind === 'Person') {
        persons.push([a.fullName, id]);
      }
    });
    persons.sort(function (x, y) {
      return x[0].localeCompare(y[0]);
    });
    ui.person.textContent = '';
    ui.person.appendChild(el('option', 'anyone', { value: '' }));
    persons.forEach(function (p) {
      ui.person.appendChild(el('option', p[0], { value: p[1] }));
    });
    ui.person.value = graph.hasNode(keep) ? keep : '';
  }

  /** Hide what the filters exclude: events by date and person first, then entities whose
   * drawn events are all hidden (an entity with no drawn event stays). */
  function applyFilters() {
    var person = ui.person.value;
    var from = ui.from.value;
    var to = ui.to.value;
    var eventShown = new Map();
    graph.forEachNode(function (id, a) {
      if (a.kind !== 'Event') {
        return;
      }
      var ok = !hiddenLabels.has('Event');
      if (from && a.date && a.date < from) {
        ok = false;
      }
      if (to && a.date && a.date > to) {
        ok = false;
      }
      if (person && !graph.areNeighbors(id, person)) {
        ok = false;
      }
      eventShown.set(id, ok || (!person && !from && !to)); // a label filter alone hides no entity
    });
    graph.forEachNode(function (id, a) {
      var hide;
      if (a.kind === 'Event') {
        hide = hiddenLabels.has('Event') || !eventShown.get(id);
      } else {
        var events = 0;
        var shownEvents = 0;
        graph.forEachNeighbor(id, function (other, b) {
          if (b.kind === 'Event') {
            events += 1;
            if (eventShown.get(other)) {
              shownEvents += 1;
            }
          }
        });
        hide = hiddenLabels.has(a.kind) || (events > 0 && shownEvents === 0 && id !== person);
      }
      if (Boolean(a.hidden) !== hide) {
        graph.setNodeAttribute(id, 'hidden', hide);
      }
    });
    showCount();
  }

  /* ---------------------------------------------------------------- live feed */

  var CHANGES =
    'subscription AtlasChanges { memoryChanges { sequence kind deletedIds' +
    ' nodes { id: nodeId label name properties }' +
    ' relationships { id: relationshipId type source target } } }';

  /** Add the change's nodes that touch the drawing, each beside a drawn neighbour. */
  function placeChange(change) {
    var pending = change.nodes.filter(function (n) {
      return !graph.hasNode(n.id);
    });
    change.nodes.forEach(function (n) {
      if (graph.hasNode(n.id)) {
        addNode(data.toRecord(n));
      }
    });
    var progress = true;
    while (progress && pending.length) {
      progress = false;
      pending = pending.filter(function (n) {
        var near = neighbourIn(change.relationships, n.id);
        if (!near) {
          return true;
        }
        addNode(data.toRecord(n), near);
        var at = graph.getNodeAttributes(n.id);
        var by = graph.getNodeAttributes(near);
        placements.push({ id: n.id, neighbour: near, x: at.x, y: at.y, nx: by.x, ny: by.y });
        progress = true;
        return false;
      });
    }
    outside += pending.filter(function (n) {
      return n.label === 'Event';
    }).length;
    change.relationships.forEach(addEdge);
  }

  function onChange(payload) {
    var change = payload && payload.memoryChanges;
    if (!change) {
      return;
    }
    if (change.kind === 'SAVED' || change.kind === 'MERGED') {
      placeChange(change);
      afterChange();
    } else if (change.kind === 'FORGOTTEN') {
      change.deletedIds.forEach(function (id) {
        if (graph.hasNode(id)) {
          graph.dropNode(id);
        }
        data.forget(id);
      });
      afterChange();
    } else if (change.kind === 'RESYNC') {
      setStatus('stale', 'Some changes were missed: start again to refresh the drawing.');
    }
  }

  function startLive() {
    var resolveReady;
    atlas.ready = new Promise(function (resolve) {
      resolveReady = resolve;
    });
    window.mnemoqlLive.subscribe(CHANGES, {
      next: function (payload) {
        if (payload && payload.memoryChanges && payload.memoryChanges.kind === 'READY') {
          resolveReady(true);
        }
        onChange(payload);
      },
      error: function (errors) {
        ui.live.textContent = 'live: ' + ((errors[0] && errors[0].message) || 'error');
      },
      state: function (state) {
        ui.live.setAttribute('data-state', state);
        ui.live.textContent = 'live: ' + (state === 'live' ? 'on' : state);
      }
    });
  }

  /* ---------------------------------------------------------------- wiring */

  // While the camera moves (a wheel zoom, Fit), the layers that draw nothing then are hidden
  // (atlas.css): sigma stacks seven full-size canvases, and where the browser composites in
  // software (no GPU, headless) each visible layer costs every frame
  var movingTimer = null;
  renderer.getCamera().on('updated', function () {
    container.classList.add('moving');
    window.clearTimeout(movingTimer);
    movingTimer = window.setTimeout(function () {
      container.classList.remove('moving');
    }, 200);
  });

  // Drag to pan, as cytoscape does: while the button is down the drawn layers move as they are
  // (a CSS transform), and the camera moves once, on release. Sigma's own drag renders every
  // layer again each frame: on a software-rendered canvas that was 100 ms a frame at 3,000
  // nodes. A drag never reaches sigma (so it is not a click on a node either).
  var drag = null;
  var layers = Array.prototype.filter.call(container.querySelectorAll('canvas'), function (c) {
    return !c.classList.contains('sigma-mouse'); // the mouse layer stays: it takes the events
  });

  function shift(x, y) {
    var t = x || y ? 'translate(' + x + 'px, ' + y + 'px)' : '';
    layers.forEach(function (c) {
      c.style.transform = t;
    });
  }

  window.addEventListener('mousedown', function (e) {
    if (e.button !== 0 || !container.contains(e.target)) {
      return;
    }
    drag = { x: e.clientX, y: e.clientY, dx: 0, dy: 0, moved: false };
    e.stopPropagation();
  }, true);
  window.addEventListener('mousemove', function (e) {
    if (!drag) {
      return;
    }
    drag.dx = e.clientX - drag.x;
    drag.dy = e.clientY - drag.y;
    if (!drag.moved && Math.abs(drag.dx) + Math.abs(drag.dy) > 3) {
      drag.moved = true;
      container.classList.add('dragging');
    }
    if (drag.moved) {
      shift(drag.dx, drag.dy);
    }
    e.stopPropagation();
  }, true);
  window.addEventListener('mouseup', function (e) {
    if (!drag) {
      return;
    }
    var done = drag;
    drag = null;
    e.stopPropagation();
    if (!done.moved) {
      return; // a click: sigma's click event follows
    }
    var a = renderer.viewportToFramedGraph({ x: 0, y: 0 });
    var b = renderer.viewportToFramedGraph({ x: done.dx, y: done.dy });
    var camera = renderer.getCamera();
    var state = camera.getState();
    renderer.once('afterRender', function () {
      shift(0, 0); // the new frame is drawn: the layers go back in place
      container.classList.remove('dragging');
    });
    camera.setState({ x: state.x - (b.x - a.x), y: state.y - (b.y - a.y) });
    function swallow(c) {
      c.stopPropagation(); // the click that ends a drag is not a click on a node
    }
    window.addEventListener('click', swallow, true); // dispatched right after this mouseup
    window.setTimeout(function () {
      window.removeEventListener('click', swallow, true);
    }, 0);
    window.setTimeout(function () {
      shift(0, 0);
      container.classList.remove('dragging');
    }, 1000); // should no frame come (nothing drawn)
  }, true);

  renderer.on('clickNode', function (event) {
    expand(event.node).catch(function () {});
  });
  ui.form.addEventListener('submit', function (event) {
    event.preventDefault();
    start(ui.mode.value, ui.input.value).catch(function () {});
  });
  ui.person.addEventListener('change', applyFilters);
  ui.from.addEventListener('change', applyFilters);
  ui.to.addEventListener('change', applyFilters);
  ui.fit.addEventListener('click', function () {
    renderer.getCamera().animatedReset();
  });
  buildLabelFilter();
  startLive();
  showCount();

  atlas.start = start;
  atlas.expand = expand;
  atlas.select = select;
  atlas.applyFilters = applyFilters;
  /** A node's position on the canvas, in CSS pixels (null when it is not drawn). */
  atlas.viewport = function (id) {
    if (!graph.hasNode(id)) {
      return null;
    }
    var a = graph.getNodeAttributes(id);
    return renderer.graphToViewport({ x: a.x, y: a.y });
  };
  window.__atlas = atlas;

  var initial = params.get('q') ? ['search', params.get('q')] : params.get('id') ? ['id', params.get('id')] : params.get('topic') ? ['topic', params.get('topic')] : null;
  if (initial) {
    ui.mode.value = initial[0];
    ui.input.value = initial[1];
    atlas.started = start(initial[0], initial[1]).catch(function () {});
  }
})();
