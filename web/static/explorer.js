/*
 * mnemoql graph explorer: a read-only view of the memory graph, drawn with cytoscape.js.
 *
 * Plain JavaScript, no build step. Everything it sends is a GraphQL *query* to POST /graphql
 * (gql() refuses anything else), plus one read-only subscription, memoryChanges, over the
 * websocket (live.js): the graph follows saves and forgets without a reload. The page never
 * calls a mutation.
 *
 * For browser tests: window.mnemoqlExplorer = {
 *   cy,            // the cytoscape instance (a getter: large graphs get a new instance)
 *   ready,         // Promise, resolves with {nodes, relationships} once the first graph is drawn,
 *                  // rejects if that first load fails
 *   reload(), search(text), select(id), expand(id), exportData()
 * }
 * and <body data-state="loading|ready|error">; #live-state has data-state
 * connecting|live|offline|refused and data-sequence, the last change applied.
 */
(function () {
  'use strict';

  /* ------------------------------------------------------------------ *
   * GraphQL documents: all read-only
   * ------------------------------------------------------------------ */

  // Graph views name nodes by nodeId and relationships by relationshipId (no `id` field, so a
  // normalising client cache never confuses them with Node records); aliased back to `id` here.
  var NODE_FIELDS = 'id: nodeId label name properties';
  var RELATIONSHIP_FIELDS = 'id: relationshipId type source target properties';

  var GRAPH_QUERY =
    'query ExplorerGraph { graph(maxNodes: 5000, maxRelationships: 30000, includeTopics: true) {' +
    ' nodes { ' + NODE_FIELDS + ' }' +
    ' relationships { ' + RELATIONSHIP_FIELDS + ' }' +
    ' truncatedNodes truncatedRelationships } }';

  var SEARCH_QUERY =
    'query ExplorerSearch($q: String!) {' +
    ' search(query: $q, session: "explorer", resetSeen: true) {' +
    ' items { event { id summary } quote { text start end total } }' +
    ' text(locale: EN) } }';

  var EVENT_QUERY =
    'query ExplorerEvent($id: ID!) { node(id: $id) { ... on Event {' +
    ' id summary length' +
    ' content(start: 0, limit: 2000) { text start end total next }' +
    ' chunks { index start end } } } }';

  var READ_MORE_QUERY =
    'query ExplorerReadMore($id: ID!, $start: Int!) { node(id: $id) { ... on Event {' +
    ' id content(start: $start, limit: 2000) { text start end total next } } } }';

  var NEIGHBOURHOOD_QUERY =
    'query ExplorerNeighbourhood($id: ID!) { neighbourhood(id: $id, first: 100) {' +
    ' nodes { ' + NODE_FIELDS + ' }' +
    ' relationships { ' + RELATIONSHIP_FIELDS + ' } } }';

  var CHANGES_SUBSCRIPTION =
    'subscription ExplorerChanges { memoryChanges { sequence kind eventIds nodeIds deletedIds' +
    ' nodes { ' + NODE_FIELDS + ' }' +
    ' relationships { ' + RELATIONSHIP_FIELDS + ' } } }';

  /* ------------------------------------------------------------------ *
   * Settings
   * ------------------------------------------------------------------ */

  var LABELS = ['Event', 'Person', 'Concept', 'Location', 'Topic'];
  var SHAPES = {
    Event: 'round-rectangle',
    Person: 'ellipse',
    Concept: 'diamond',
    Location: 'triangle',
    Topic: 'hexagon'
  };
  // Above this many nodes: a linear-time grid layout and cheaper rendering. cose is
  // all-pairs per iteration; on a busy 2-core machine without a GPU it took seconds for
  // 600 nodes and ~27 s for 1500, so the page stops using it well before 1500.
  var COSE_LIMIT = 600;
  // Relationships between topics and to topics (the graph snapshot may not have them yet).
  var EDGE_STYLES = {
    SUBTOPIC: { 'line-color': '#c9a3bf', 'target-arrow-color': '#c9a3bf', width: 1.5 },
    BINDS: { 'line-color': '#dcc5d6', 'target-arrow-color': '#dcc5d6', 'line-style': 'dashed' }
  };
  var EVENT_LABEL_WIDTH = 110; // px at zoom 1; longer event labels end in an ellipsis
  // Event labels are drawn once the view is zoomed in past the default fit (EVENT_LABEL_STEP
  // times its zoom), and never below EVENT_LABEL_ZOOM (10 px text drawn smaller than 9 px).
  // Drawings with at most ALWAYS_LABEL_EVENTS events always show them.
  var EVENT_LABEL_ZOOM = 0.9;
  var EVENT_LABEL_STEP = 1.2;
  var ALWAYS_LABEL_EVENTS = 8;
  var LAYOUT_ROOM = 4.5; // cose gets this many times the area of the nodes and their labels
  var MAX_FIT_ZOOM = 1.6; // a fit never blows a tiny graph up further than this
  var NEIGHBOUR_LIST_LIMIT = 200;
  var NAME_LENGTH = 32;
  var FOCUS_ZOOM = 1.4; // focusing on a few nodes never zooms in further than this

  /* ------------------------------------------------------------------ *
   * Page elements
   * ------------------------------------------------------------------ */

  function $(id) {
    return document.getElementById(id);
  }

  var ui = {
    status: $('status'),
    nodeCount: $('node-count'),
    live: $('live-state'),
    banner: $('truncation-banner'),
    canvas: $('cy'),
    empty: $('empty-state'),
    labelHint: $('label-hint'),
    legend: $('legend'),
    details: $('details'),
    searchForm: $('search-form'),
    searchInput: $('search-input'),
    searchButton: $('search-button'),
    searchClear: $('search-clear'),
    resultsSection: $('search-results-section'),
    results: $('search-results'),
    searchTextBox: $('search-text-box'),
    searchText: $('search-text'),
    fitButton: $('fit-button'),
    reloadButton: $('reload-button'),
    exportButton: $('export-button')
  };

  /* ------------------------------------------------------------------ *
   * State
   * ------------------------------------------------------------------ */

  var cy = null;
  var large = false;
  var hiddenLabels = new Set();
  var truncated = { nodes: false, relationships: false };
  var selectedId = null;
  var zoomLabels = null; // are event labels on (see updateZoomLabels)
  var eventLabelZoom = EVENT_LABEL_ZOOM;
  var detailsRequest = 0; // discards answers for a node that is no longer shown
  var loadRequest = 0;

  /* ------------------------------------------------------------------ *
   * Small helpers
   * ------------------------------------------------------------------ */

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === undefined || value === null || value === false) {
        return;
      }
      if (key === 'text') {
        node.textContent = value;
      } else if (key === 'className') {
        node.className = value;
      } else if (key === 'onclick') {
        node.addEventListener('click', value);
      } else {
        node.setAttribute(key, value === true ? '' : value);
      }
    });
    (children || []).forEach(function (child) {
      if (child !== null && child !== undefined) {
        node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
      }
    });
    return node;
  }

  function shorten(text, length) {
    var chars = Array.from(String(text));
    return chars.length > length ? chars.slice(0, length - 1).join('') + '…' : chars.join('');
  }

  function asObject(value) {
    if (typeof value === 'string') {
      try {
        value = JSON.parse(value);
      } catch (err) {
        return { value: value };
      }
    }
    return value && typeof value === 'object' ? value : {};
  }

  function plural(count, word) {
    return count.toLocaleString('en') + ' ' + word + (count === 1 ? '' : 's');
  }

  function labelColour(label) {
    var css = getComputedStyle(document.documentElement);
    var value = css.getPropertyValue('--label-' + label).trim();
    return value || css.getPropertyValue('--label-other').trim() || '#9ca3af';
  }

  function swatch(label) {
    return el('span', { className: 'swatch', 'data-label': label, 'aria-hidden': 'true' });
  }

  /* ------------------------------------------------------------------ *
   * Status line
   * ------------------------------------------------------------------ */

  function setStatus(state, text, code) {
    ui.status.setAttribute('data-state', state);
    ui.status.textContent = text;
    if (code) {
      ui.status.setAttribute('data-code', code);
    } else {
      ui.status.removeAttribute('data-code');
    }
  }

  function showError(what, err) {
    var code = err && err.code ? err.code : 'CLIENT_ERROR';
    var hint = /UNAUTH|FORBIDDEN|HTTP_401|HTTP_403/i.test(code) ? ' Save a bearer token above, then reload.' : '';
    setStatus(
      'error',
      what + ' failed: ' + (err && err.message ? err.message : String(err)) + ' [' + code + ']' + hint,
      code
    );
  }

  /* ------------------------------------------------------------------ *
   * GraphQL over POST /graphql
   * ------------------------------------------------------------------ */

  function RequestError(message, code, errors) {
    var err = new Error(message);
    err.name = 'RequestError';
    err.code = code;
    err.errors = errors || [];
    return err;
  }

  function gql(query, variables) {
    if (!/^\s*query\b/.test(query)) {
      return Promise.reject(RequestError('the explorer only sends queries', 'READ_ONLY'));
    }
    return window.mnemoqlAuth.postQuery(query, variables).then(
      function (response) {
        return response.text().then(function (text) {
          var body = null;
          try {
            body = JSON.parse(text);
          } catch (err) {
            body = null;
          }
          if (body && Array.isArray(body.errors) && body.errors.length) {
            var first = body.errors[0] || {};
            var code = (first.extensions && first.extensions.code) || 'GRAPHQL_ERROR';
            var more = body.errors.length > 1 ? ' (and ' + (body.errors.length - 1) + ' more)' : '';
            throw RequestError((first.message || 'unknown error') + more, code, body.errors);
          }
          if (!response.ok || !body || !body.data) {
            throw RequestError(
              'HTTP ' + response.status + (response.statusText ? ' ' + response.statusText : ''),
              'HTTP_' + response.status
            );
          }
          return body.data;
        });
      },
      function (err) {
        throw RequestError('network error: ' + err.message, 'NETWORK_ERROR');
      }
    );
  }

  /* ------------------------------------------------------------------ *
   * Cytoscape
   * ------------------------------------------------------------------ */

  function graphStyle() {
    var style = [
      {
        selector: 'node',
        style: {
          width: 18,
          height: 18,
          'background-color': labelColour('other'),
          'border-width': 1,
          'border-color': '#ffffff',
          label: 'data(short)',
          'font-size': large ? 9 : 12,
          color: '#1f2937',
          'text-valign': 'bottom',
          'text-margin-y': 3,
          'text-max-width': '130px',
          'text-wrap': 'ellipsis',
          // a halo in the canvas colour keeps labels legible where they cross edges
          'text-outline-color': '#fafafa',
          'text-outline-width': large ? 0 : 2,
          'text-outline-opacity': 0.9,
          // entity labels stay on; large graphs drop the ones too small to read
          'min-zoomed-font-size': large ? 10 : 6,
          'text-events': 'no'
        }
      },
      {
        // Event labels (long summaries) are drawn only when zoomed in (class zoom-label, set
        // by updateZoomLabels), or for a selected, hovered or search-hit node. They keep their
        // size while hidden, so the layout leaves room for them.
        selector: 'node[label = "Event"]',
        style: {
          'font-size': 10,
          'text-max-width': EVENT_LABEL_WIDTH + 'px',
          'text-opacity': 0,
          'min-zoomed-font-size': 0
        }
      },
      {
        selector: 'node[label = "Event"].zoom-label, node[label = "Event"].neighbour',
        style: { 'text-opacity': 1, color: '#374151' }
      },
      {
        selector: 'node[label = "Topic"]',
        style: { width: 24, height: 24, 'font-weight': 'bold' }
      },
      {
        selector: 'edge',
        style: large
          ? {
              width: 0.6,
              'curve-style': 'haystack',
              'haystack-radius': 0,
              'line-color': '#cbd5e1',
              opacity: 0.7
            }
          : {
              width: 1,
              'curve-style': 'straight',
              'line-color': '#cbd5e1',
              'target-arrow-shape': 'triangle',
              'target-arrow-color': '#cbd5e1',
              'arrow-scale': 0.6
            }
      }
    ];
    LABELS.forEach(function (label) {
      style.push({
        selector: 'node[label = "' + label + '"]',
        style: { 'background-color': labelColour(label), shape: SHAPES[label] }
      });
    });
    Object.keys(EDGE_STYLES).forEach(function (type) {
      style.push({ selector: 'edge[type = "' + type + '"]', style: EDGE_STYLES[type] });
    });
    style.push(
      {
        // Only a selected node's own relationships carry their type as a label, drawn
        // towards the other end (the ends are spread out; the middles of short edges
        // bunch up around the selected node). Parallel ones bend apart.
        selector: 'edge.focus',
        style: {
          width: 2,
          'curve-style': 'bezier',
          'control-point-step-size': 28,
          opacity: 1,
          'line-color': '#64748b',
          'target-arrow-color': '#64748b',
          'target-arrow-shape': 'triangle',
          'arrow-scale': 0.8,
          'font-size': 10,
          'font-family': 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace',
          color: '#1e293b',
          'text-background-color': '#ffffff',
          'text-background-opacity': 1,
          'text-background-padding': 2,
          'text-background-shape': 'round-rectangle',
          'text-border-color': '#cbd5e1',
          'text-border-width': 1,
          'text-border-opacity': 1,
          'min-zoomed-font-size': 0,
          'text-events': 'no',
          'z-index': 5
        }
      },
      {
        selector: 'edge.focus-out',
        style: {
          'target-label': 'data(type)',
          'target-text-offset': 'data(labelOffset)',
          'target-text-rotation': 'autorotate'
        }
      },
      {
        selector: 'edge.focus-in',
        style: {
          'source-label': 'data(type)',
          'source-text-offset': 'data(labelOffset)',
          'source-text-rotation': 'autorotate'
        }
      },
      {
        selector: 'node.faded',
        style: { opacity: 0.2 }
      },
      {
        // faded event labels would only be grey noise
        selector: 'node[label = "Event"].faded',
        style: { 'text-opacity': 0 }
      },
      {
        selector: 'edge.faded',
        style: { opacity: 0.07 }
      },
      {
        selector: 'node.search-hit',
        style: {
          'border-width': 4,
          'border-color': '#f59e0b',
          'underlay-color': '#f59e0b',
          'underlay-padding': 6,
          'underlay-opacity': 0.35,
          'underlay-shape': 'ellipse',
          'text-opacity': 1,
          'font-weight': 'bold',
          color: '#111827',
          'min-zoomed-font-size': 0,
          'z-index': 10
        }
      },
      {
        // a node the live feed just brought in
        selector: 'node.live-new',
        style: {
          'underlay-color': '#2e8b57',
          'underlay-padding': 6,
          'underlay-opacity': 0.3,
          'text-opacity': 1,
          'min-zoomed-font-size': 0
        }
      },
      {
        // a faded search hit stays findable
        selector: 'node.search-hit.faded',
        style: { opacity: 0.55 }
      },
      {
        selector: 'node.hover',
        style: {
          opacity: 1,
          'text-opacity': 1,
          color: '#111827',
          'text-background-color': '#ffffff',
          'text-background-opacity': 0.95,
          'text-background-padding': 2,
          'text-background-shape': 'round-rectangle',
          'min-zoomed-font-size': 0,
          'z-index': 30
        }
      },
      {
        selector: 'node:selected',
        style: {
          opacity: 1,
          'border-width': 3,
          'border-color': '#111827',
          'text-opacity': 1,
          'font-weight': 'bold',
          color: '#111827',
          'text-background-color': '#ffffff',
          'text-background-opacity': 0.95,
          'text-background-padding': 2,
          'text-background-shape': 'round-rectangle',
          'min-zoomed-font-size': 0,
          'z-index': 20
        }
      },
      {
        selector: '.filtered',
        style: { display: 'none' }
      }
    );
    return style;
  }

  function createCy(isLarge) {
    if (cy) {
      cy.destroy();
    }
    large = isLarge;
    cy = window.cytoscape({
      container: ui.canvas,
      elements: [],
      style: graphStyle(),
      minZoom: 0.02,
      maxZoom: 4,
      boxSelectionEnabled: false,
      selectionType: 'single',
      // cheaper drawing while panning and zooming big graphs
      hideEdgesOnViewport: isLarge,
      textureOnViewport: isLarge,
      pixelRatio: isLarge ? 1 : 'auto'
    });
    zoomLabels = null;
    cy.on('zoom', function () {
      updateZoomLabels(false);
    });
    cy.on('mouseover', 'node', function (event) {
      event.target.addClass('hover');
    });
    cy.on('mouseout', 'node', function (event) {
      event.target.removeClass('hover');
    });
    cy.on('tap', 'node', function (event) {
      select(event.target.id());
    });
    cy.on('dragfree', 'node', function () {
      if (selectedId) {
        applyFocus();
      }
    });
    cy.on('tap', function (event) {
      if (event.target === cy) {
        clearSelection();
      }
    });
    return cy;
  }

  /* Event labels on from eventLabelZoom up; only touches the nodes when the zoom crosses it. */
  function updateZoomLabels(force) {
    var on = cy.zoom() >= eventLabelZoom;
    if (on === zoomLabels && !force) {
      return;
    }
    zoomLabels = on;
    var events = cy.nodes('[label = "Event"]');
    cy.batch(function () {
      events.toggleClass('zoom-label', on);
    });
    ui.labelHint.hidden = on || events.empty();
  }

  /* After a load, from the zoom of the default fit. */
  function setEventLabelZoom(fitZoom) {
    var events = cy.nodes('[label = "Event"]').length;
    if (large) {
      // the grid leaves no room for long labels: only focused events show theirs
      eventLabelZoom = Infinity;
    } else if (events <= ALWAYS_LABEL_EVENTS) {
      eventLabelZoom = 0;
    } else {
      eventLabelZoom = Math.max(EVENT_LABEL_ZOOM, (fitZoom || 1) * EVENT_LABEL_STEP);
    }
    ui.labelHint.textContent = large
      ? 'Point at an event, or click it, to read its summary.'
      : 'Zoom in, or point at an event, to read its summary.';
    updateZoomLabels(true);
  }

  /* Where a selected node's relationship type goes, in px from the other end: clear of the
   * other node, about a third of the way in, and never past the middle. */
  function edgeLabelOffset(edge) {
    var a = edge.source().position();
    var b = edge.target().position();
    var length = Math.max(0, Math.sqrt(Math.pow(a.x - b.x, 2) + Math.pow(a.y - b.y, 2)) - 20);
    var halfLabel = String(edge.data('type')).length * 3 + 4;
    return Math.round(Math.min(length / 2, Math.max(length * 0.33, halfLabel + 14)));
  }

  /* While a node is selected: its relationships are labelled, its neighbours' labels shown
   * and, in drawings up to COSE_LIMIT nodes, everything else is faded. Only elements whose
   * state changes are touched (a class change restyles the element): moving the selection
   * from node to node stays cheap. Large drawings are not faded: restyling thousands of
   * elements on every click costs too much on a small machine. */
  function applyFocus() {
    if (!cy) {
      return;
    }
    var node = selectedId ? cy.getElementById(selectedId) : cy.collection();
    var keep = node.nonempty() ? node.closedNeighborhood() : cy.collection();
    var edges = node.nonempty() ? node.connectedEdges() : cy.collection();
    var neighbours = node.nonempty() ? node.neighborhood('node') : cy.collection();
    cy.batch(function () {
      cy.edges('.focus').difference(edges).removeClass('focus focus-out focus-in');
      cy.nodes('.neighbour').difference(neighbours).removeClass('neighbour');
      edges.forEach(function (edge) {
        edge.data('labelOffset', edgeLabelOffset(edge));
        // a self-loop is both; it keeps the outgoing label
        var outgoing = edge.source().same(node);
        edge.addClass('focus').toggleClass('focus-out', outgoing).toggleClass('focus-in', !outgoing);
      });
      neighbours.addClass('neighbour');
      keep.filter('.faded').removeClass('faded');
      if (node.nonempty() && !large) {
        cy.elements().filter(function (ele) {
          return !ele.hasClass('faded') && !keep.has(ele);
        }).addClass('faded');
      } else {
        cy.elements('.faded').removeClass('faded');
      }
    });
  }

  function nodeElement(n) {
    var name = n.name === null || n.name === undefined || n.name === '' ? String(n.id) : String(n.name);
    return {
      group: 'nodes',
      data: {
        id: String(n.id),
        label: String(n.label),
        name: name,
        short: shorten(name, NAME_LENGTH),
        properties: asObject(n.properties)
      }
    };
  }

  function edgeElement(r) {
    return {
      group: 'edges',
      data: {
        // "rel:" keeps relationship ids apart from node ids inside cytoscape
        id: 'rel:' + r.id,
        relId: String(r.id),
        type: String(r.type),
        source: String(r.source),
        target: String(r.target),
        properties: asObject(r.properties)
      }
    };
  }

  /* Adds nodes and relationships that are not drawn yet; returns the added collection. */
  function addElements(nodes, relationships, place) {
    var added = cy.collection();
    var newNodes = [];
    (nodes || []).forEach(function (n) {
      if (cy.getElementById(String(n.id)).empty()) {
        newNodes.push(nodeElement(n));
      }
    });
    if (place) {
      place(newNodes);
    }
    added = added.union(cy.add(newNodes));
    var newEdges = [];
    (relationships || []).forEach(function (r) {
      var id = 'rel:' + r.id;
      if (
        cy.getElementById(id).empty() &&
        cy.getElementById(String(r.source)).nonempty() &&
        cy.getElementById(String(r.target)).nonempty()
      ) {
        newEdges.push(edgeElement(r));
      }
    });
    added = added.union(cy.add(newEdges));
    added.nodes().forEach(function (node) {
      if (hiddenLabels.has(node.data('label'))) {
        node.addClass('filtered');
      }
      if (zoomLabels && node.data('label') === 'Event') {
        node.addClass('zoom-label');
      }
    });
    return added;
  }

  function labelRank(node) {
    var rank = LABELS.indexOf(node.data('label'));
    return rank < 0 ? LABELS.length : rank;
  }

  function layoutBox(nodes) {
    var area = 0;
    nodes.forEach(function (node) {
      var size = node.layoutDimensions({ nodeDimensionsIncludeLabels: true });
      area += size.w * size.h;
    });
    var aspect = Math.max(0.4, Math.min(2.5, cy.width() / Math.max(cy.height(), 1)));
    var w = Math.max(200, Math.sqrt(LAYOUT_ROOM * area * aspect));
    return { x1: 0, y1: 0, w: w, h: w / aspect };
  }

  function runLayout(eles) {
    var count = eles.nodes().length;
    var options;
    if (count > COSE_LIMIT) {
      // grid, grouped by label and then by degree: linear time, and colours stay in blocks
      options = {
        name: 'grid',
        animate: false,
        avoidOverlap: true,
        avoidOverlapPadding: 6,
        condense: true,
        nodeDimensionsIncludeLabels: false,
        sort: function (a, b) {
          return labelRank(a) - labelRank(b) || b.degree() - a.degree();
        }
      };
    } else {
      var iterations = count <= 200 ? 1000 : count <= 400 ? 500 : 250;
      options = {
        name: 'cose',
        animate: false,
        fit: false,
        randomize: true,
        // nodes are boxes that include their labels (event labels too, although they are
        // only drawn when zoomed in), so that labels do not pile up on each other
        nodeDimensionsIncludeLabels: true,
        // cose starts from random positions in this box and mostly keeps its size: give it
        // room for every label (LAYOUT_ROOM times their area) in the shape of the canvas
        boundingBox: layoutBox(eles.nodes()),
        numIter: iterations,
        // cool down within the iterations we can afford
        coolingFactor: count <= 200 ? 0.99 : Math.pow(1 / 1000, 1 / iterations),
        idealEdgeLength: function () {
          return 80;
        },
        edgeElasticity: function () {
          return 100;
        },
        nodeRepulsion: function () {
          return 400000;
        },
        nodeOverlap: 10,
        componentSpacing: 80,
        padding: 30
      };
    }
    var layout = eles.layout(options);
    var done = layout.promiseOn('layoutstop');
    layout.run();
    return done;
  }

  /* Zoom that shows eles with padding around them, at most maxZoom. */
  function zoomFor(eles, pad, maxZoom) {
    var box = eles.boundingBox();
    var fitZoom = Math.min(
      (cy.width() - 2 * pad) / Math.max(box.w, 1),
      (cy.height() - 2 * pad) / Math.max(box.h, 1)
    );
    return Math.max(cy.minZoom(), Math.min(fitZoom, maxZoom));
  }

  /* Pans and zooms so that eles are in view, without zooming in further than FOCUS_ZOOM. */
  function focusOn(eles, padding) {
    if (!eles || eles.empty()) {
      return;
    }
    var zoom = zoomFor(eles, padding === undefined ? 60 : padding, FOCUS_ZOOM);
    cy.stop();
    if (large) {
      cy.zoom(zoom);
      cy.center(eles);
    } else {
      cy.animate({ zoom: zoom, center: { eles: eles } }, { duration: 300 });
    }
  }

  /* The whole (visible) drawing in view; returns the zoom. */
  function fitView(animate) {
    var eles = visibleElements().nodes;
    if (eles.empty()) {
      return cy.zoom();
    }
    var zoom = zoomFor(eles, 30, MAX_FIT_ZOOM);
    cy.stop();
    if (animate && !large) {
      cy.animate({ zoom: zoom, center: { eles: eles } }, { duration: 300 });
    } else {
      cy.zoom(zoom);
      cy.center(eles);
    }
    return zoom;
  }

  /* ------------------------------------------------------------------ *
   * Legend, filters, counts
   * ------------------------------------------------------------------ */

  function labelsInGraph() {
    var counts = {};
    LABELS.forEach(function (label) {
      counts[label] = 0;
    });
    cy.nodes().forEach(function (node) {
      var label = node.data('label');
      counts[label] = (counts[label] || 0) + 1;
    });
    return counts;
  }

  function renderLegend() {
    var counts = labelsInGraph();
    Array.from(ui.legend.querySelectorAll('label, .legend-empty')).forEach(function (node) {
      node.remove();
    });
    // only labels that have nodes: a "Topic (0)" entry would be a filter for nothing
    Object.keys(counts).filter(function (label) {
      return counts[label] > 0;
    }).forEach(function (label) {
      var id = 'filter-' + label.replace(/[^A-Za-z0-9_-]/g, '_');
      var box = el('input', {
        type: 'checkbox',
        id: id,
        'data-label-filter': label,
        'data-testid': 'label-filter-' + label
      });
      box.checked = !hiddenLabels.has(label);
      box.addEventListener('change', function () {
        if (box.checked) {
          hiddenLabels.delete(label);
        } else {
          hiddenLabels.add(label);
        }
        applyFilters();
      });
      ui.legend.appendChild(
        el('label', { for: id, 'data-legend-label': label }, [
          box,
          swatch(label),
          label,
          el('span', { className: 'count', text: '(' + counts[label].toLocaleString('en') + ')' })
        ])
      );
    });
    if (!ui.legend.querySelector('label')) {
      ui.legend.appendChild(el('p', { className: 'hint legend-empty', text: 'No nodes yet.' }));
    }
  }

  function applyFilters() {
    cy.batch(function () {
      cy.nodes().forEach(function (node) {
        node.toggleClass('filtered', hiddenLabels.has(node.data('label')));
      });
    });
    if (selectedId) {
      var selected = cy.getElementById(selectedId);
      if (selected.nonempty() && selected.hasClass('filtered')) {
        clearSelection();
      }
    }
    renderCounts();
  }

  function visibleElements() {
    var nodes = cy.nodes().filter(function (node) {
      return !node.hasClass('filtered');
    });
    var edges = cy.edges().filter(function (edge) {
      return !edge.source().hasClass('filtered') && !edge.target().hasClass('filtered');
    });
    return { nodes: nodes, edges: edges };
  }

  function renderCounts() {
    var total = cy.nodes().length;
    var edges = cy.edges().length;
    var visible = visibleElements();
    var text = plural(total, 'node') + ' · ' + plural(edges, 'relationship');
    if (visible.nodes.length !== total) {
      text += ' · ' + visible.nodes.length.toLocaleString('en') + ' nodes shown';
    }
    ui.nodeCount.textContent = text;
    ui.nodeCount.setAttribute('data-nodes', String(total));
    ui.nodeCount.setAttribute('data-relationships', String(edges));
    ui.nodeCount.setAttribute('data-visible-nodes', String(visible.nodes.length));
    ui.empty.hidden = total !== 0;
  }

  function renderBanner(shownNodes, shownRelationships) {
    var parts = [];
    if (truncated.nodes) {
      parts.push('Showing the first ' + shownNodes.toLocaleString('en') + ' nodes: memory is larger.');
    }
    if (truncated.relationships) {
      parts.push(
        'Showing the first ' + shownRelationships.toLocaleString('en') + ' relationships: memory has more.'
      );
    }
    if (parts.length) {
      parts.push('Search, or expand a node, to bring in more.');
    }
    ui.banner.textContent = parts.join(' ');
    ui.banner.hidden = parts.length === 0;
  }

  /* ------------------------------------------------------------------ *
   * Loading the graph
   * ------------------------------------------------------------------ */

  function load() {
    var request = ++loadRequest;
    document.body.setAttribute('data-state', 'loading');
    setStatus('loading', 'Loading the graph…');
    ui.reloadButton.disabled = true;
    return gql(GRAPH_QUERY)
      .then(function (data) {
        if (request !== loadRequest) {
          return null;
        }
        var graph = data.graph || {};
        var nodes = graph.nodes || [];
        var relationships = graph.relationships || [];
        truncated = { nodes: !!graph.truncatedNodes, relationships: !!graph.truncatedRelationships };

        createCy(nodes.length > COSE_LIMIT);
        clearSelection();
        clearSearch();
        cy.startBatch();
        addElements(nodes, relationships);
        cy.endBatch();

        renderLegend();
        renderCounts();
        renderBanner(nodes.length, relationships.length);
        setStatus('loading', 'Laying out ' + plural(nodes.length, 'node') + '…');
        var layoutStarted = performance.now();

        return runLayout(cy.elements()).then(function () {
          var layoutSeconds = ((performance.now() - layoutStarted) / 1000).toFixed(1);
          if (request !== loadRequest) {
            return null;
          }
          setEventLabelZoom(fitView(false));
          var skipped = relationships.length - cy.edges().length;
          setStatus(
            'ok',
            'Loaded ' + plural(nodes.length, 'node') + ' and ' + plural(cy.edges().length, 'relationship') +
              (skipped > 0 ? ' (' + skipped + ' with an endpoint outside the drawing left out)' : '') +
              (large ? '. Large graph: grid layout grouped by label' : '') +
              ' (layout ' + layoutSeconds + ' s).'
          );
          document.body.setAttribute('data-state', 'ready');
          return { nodes: cy.nodes().length, relationships: cy.edges().length };
        });
      })
      .catch(function (err) {
        if (request === loadRequest) {
          document.body.setAttribute('data-state', 'error');
          showError('Loading the graph', err);
        }
        throw err;
      })
      .finally(function () {
        ui.reloadButton.disabled = false;
      });
  }

  /* ------------------------------------------------------------------ *
   * The live feed: memoryChanges over the websocket
   * ------------------------------------------------------------------ */

  var LIVE_TEXT = {
    connecting: 'live: connecting…',
    live: 'live',
    offline: 'live: offline (retrying)',
    refused: 'live: refused (token?)'
  };
  var LIVE_FALLBACK_MS = 5000; // load without the feed when it does not answer in time
  var live = { waiting: true, pending: null, first: null };

  /* The graph is loaded once the feed is READY, so no change falls between the two; changes
   * that arrive while it loads wait and are applied after (adding is idempotent). */
  function loadNow() {
    live.waiting = false;
    live.pending = [];
    var run = load();
    run.then(
      function () {
        var queued = live.pending || [];
        live.pending = null;
        queued.forEach(applyChange);
      },
      function () {
        live.pending = null;
      }
    );
    if (live.first) {
      run.then(live.first.resolve, live.first.reject);
      live.first = null;
    }
    return run;
  }

  function setLive(state) {
    if (!ui.live) {
      return;
    }
    ui.live.setAttribute('data-state', state);
    ui.live.textContent = LIVE_TEXT[state] || state;
    if ((state === 'refused' || state === 'offline') && live.waiting) {
      loadNow().catch(function () {}); // show what HTTP says (401, say) rather than wait
    }
  }

  function applyChange(change) {
    if (!change || !cy) {
      return;
    }
    if (change.kind === 'READY' || change.kind === 'RESYNC') {
      loadNow().catch(function () {});
      return;
    }
    if (live.pending) {
      live.pending.push(change);
      return;
    }
    if (ui.live) {
      ui.live.setAttribute('data-sequence', String(change.sequence));
    }
    if (change.kind === 'SAVED' || change.kind === 'MERGED') {
      (change.nodes || []).forEach(function (n) {
        var drawn = cy.getElementById(String(n.id));
        if (drawn.nonempty()) {
          var fresh = nodeElement(n).data;
          drawn.data({ name: fresh.name, short: fresh.short, properties: fresh.properties });
        }
      });
      var anchor = (change.relationships || [])
        .map(function (r) {
          return cy.getElementById(String(r.source)).nonempty() ? r.source : r.target;
        })
        .filter(function (id) {
          return cy.getElementById(String(id)).nonempty();
        })[0];
      var added = addElements(change.nodes, change.relationships, placeAround(String(anchor || '')));
      added.nodes().addClass('live-new');
      renderLegend();
      renderCounts();
      if (change.kind === 'SAVED') {
        setStatus(
          'ok',
          'Live: saved ' + (change.eventIds || []).join(', ') + ' (' + plural(added.nodes().length, 'new node') +
            ', ' + plural(added.edges().length, 'new relationship') + ').'
        );
      }
    } else if (change.kind === 'FORGOTTEN') {
      var gone = cy.collection();
      (change.deletedIds || []).forEach(function (id) {
        gone = gone.union(cy.getElementById(String(id)));
      });
      if (selectedId && gone.some(function (n) { return n.id() === selectedId; })) {
        clearSelection();
      }
      cy.remove(gone);
      renderLegend();
      renderCounts();
      setStatus('ok', 'Live: forgot ' + plural(gone.length, 'node') + '.');
    } else if (change.kind === 'REVECTORIZED') {
      setStatus('ok', 'Live: the memory was re-embedded with the configured model.');
    }
  }

  function startLive() {
    var first = new Promise(function (resolve, reject) {
      live.first = { resolve: resolve, reject: reject };
    });
    if (!window.WebSocket || !window.mnemoqlLive) {
      loadNow().catch(function () {});
      return first;
    }
    window.mnemoqlLive.subscribe(CHANGES_SUBSCRIPTION, {
      state: setLive,
      next: function (data) {
        applyChange(data && data.memoryChanges);
      },
      error: function (errors) {
        var first = (errors && errors[0]) || {};
        setStatus('error', 'Live updates: ' + (first.message || 'refused'), (first.extensions || {}).code);
        if (live.waiting) {
          loadNow().catch(function () {});
        }
      }
    });
    window.addEventListener('mnemoql:token-changed', function () {
      live.waiting = true; // the feed reconnects with the new token; its READY reloads
    });
    window.setTimeout(function () {
      if (live.waiting) {
        loadNow().catch(function () {});
      }
    }, LIVE_FALLBACK_MS);
    return first;
  }

  /* ------------------------------------------------------------------ *
   * Selection and the details panel
   * ------------------------------------------------------------------ */

  function clearSelection() {
    selectedId = null;
    detailsRequest++;
    if (cy) {
      cy.elements(':selected').unselect();
      applyFocus();
    }
    ui.details.replaceChildren(
      el('p', {
        className: 'hint',
        text: 'Click a node to see its properties, its neighbours and, for an event, its original text.'
      })
    );
    ui.details.removeAttribute('data-node-id');
  }

  function select(id, options) {
    var node = cy.getElementById(String(id));
    if (node.empty()) {
      return false;
    }
    if (node.hasClass('filtered')) {
      hiddenLabels.delete(node.data('label'));
      renderLegend();
      applyFilters();
    }
    cy.elements(':selected').unselect();
    node.select();
    selectedId = node.id();
    applyFocus();
    renderDetails(node);
    if (options && options.center) {
      focusOn(node);
    }
    return true;
  }

  function propertiesTable(properties) {
    var keys = Object.keys(properties);
    if (!keys.length) {
      return el('p', { className: 'hint', text: 'No properties.' });
    }
    return el('table', { className: 'props', id: 'properties', 'data-testid': 'properties' }, [
      el(
        'tbody',
        {},
        keys.map(function (key) {
          var value = properties[key];
          var text =
            value === null || value === undefined
              ? '—'
              : typeof value === 'object'
                ? JSON.stringify(value)
                : String(value);
          return el('tr', { 'data-property': key }, [
            el('th', { scope: 'row', text: key }),
            el('td', { text: text })
          ]);
        })
      )
    ]);
  }

  function neighbourList(node) {
    var rows = node.connectedEdges().map(function (edge) {
      var outgoing = edge.source().id() === node.id();
      var other = outgoing ? edge.target() : edge.source();
      return { edge: edge, other: other, outgoing: outgoing };
    });
    rows.sort(function (a, b) {
      return (
        a.edge.data('type').localeCompare(b.edge.data('type')) ||
        a.other.data('name').localeCompare(b.other.data('name'))
      );
    });
    if (!rows.length) {
      return el('p', { className: 'hint', text: 'No neighbours in the drawing. Try "Expand neighbourhood".' });
    }
    var list = el('ul', { className: 'neighbours', id: 'neighbours', 'data-testid': 'neighbours' });
    rows.slice(0, NEIGHBOUR_LIST_LIMIT).forEach(function (row) {
      var otherId = row.other.id();
      list.appendChild(
        el('li', { 'data-neighbour-id': otherId }, [
          el('span', {
            className: 'rel-type',
            text: (row.outgoing ? '→ ' : '← ') + row.edge.data('type'),
            title: row.outgoing ? 'outgoing relationship' : 'incoming relationship'
          }),
          swatch(row.other.data('label')),
          el('button', {
            type: 'button',
            text: row.other.data('short'),
            title: row.other.data('label') + ' ' + otherId,
            onclick: function () {
              select(otherId, { center: true });
            }
          })
        ])
      );
    });
    if (rows.length > NEIGHBOUR_LIST_LIMIT) {
      list.appendChild(el('li', { className: 'hint', text: '… and ' + (rows.length - NEIGHBOUR_LIST_LIMIT) + ' more' }));
    }
    return list;
  }

  function renderDetails(node) {
    var request = ++detailsRequest;
    var id = node.id();
    var label = node.data('label');
    var isEvent = label === 'Event';
    var expandButton = el('button', {
      type: 'button',
      className: 'action',
      id: 'expand-button',
      'data-testid': 'expand-button',
      text: 'Expand neighbourhood',
      onclick: function () {
        expand(id);
      }
    });
    var centerButton = el('button', {
      type: 'button',
      className: 'action',
      id: 'center-button',
      'data-testid': 'center-button',
      text: 'Centre on node',
      onclick: function () {
        focusOn(cy.getElementById(id));
      }
    });
    var children = [
      el('div', { className: 'details-head' }, [
        swatch(label),
        el('div', {}, [
          el('p', { className: 'details-name', id: 'details-name', 'data-testid': 'details-name', text: node.data('name') }),
          el('span', { className: 'details-id', text: label + ' · ' + id })
        ])
      ]),
      el('div', { className: 'details-actions' }, [expandButton, centerButton])
    ];
    var properties = node.data('properties') || {};
    var contentBox = null;
    if (isEvent) {
      // an event reads top-down: its summary (the heading), the original text, then the rest
      contentBox = el('div', { id: 'event-content', 'data-testid': 'event-content' }, [
        el('p', { className: 'hint', text: 'Loading the original text…' })
      ]);
      children.push(el('h3', { text: 'Original text' }), contentBox);
      if (typeof properties.summary === 'string' && properties.summary === node.data('name')) {
        // already the heading
        properties = Object.assign({}, properties);
        delete properties.summary;
      }
    }
    children.push(
      el('h3', { text: 'Properties' }),
      propertiesTable(properties),
      el('h3', { text: 'Neighbours (' + node.degree(false) + ')' }),
      neighbourList(node)
    );
    ui.details.replaceChildren.apply(ui.details, children);
    ui.details.setAttribute('data-node-id', id);
    if (isEvent) {
      loadEventText(id, contentBox, request);
    }
  }

  function loadEventText(id, box, request) {
    gql(EVENT_QUERY, { id: id })
      .then(function (data) {
        if (request !== detailsRequest) {
          return;
        }
        var event = data.node;
        if (!event || !event.content) {
          box.replaceChildren(el('p', { className: 'hint', text: 'This event has no readable text.' }));
          return;
        }
        var content = event.content;
        var meta = el('p', { className: 'content-meta', id: 'content-meta', 'data-testid': 'content-meta' });
        var text = el('pre', { className: 'content-text', id: 'content-text', 'data-testid': 'content-text' });
        var more = el('button', {
          type: 'button',
          className: 'action',
          id: 'read-more-button',
          'data-testid': 'read-more-button',
          text: 'Read more'
        });
        var chunks = Array.isArray(event.chunks) ? event.chunks.length : 0;
        var state = { start: content.start, end: content.end, total: content.total, next: content.next };
        function update() {
          meta.textContent =
            'Characters ' + state.start.toLocaleString('en') + '–' + state.end.toLocaleString('en') +
            ' of ' + state.total.toLocaleString('en') +
            (chunks ? ' · ' + plural(chunks, 'source chunk') : ' · no source chunks yet');
          more.hidden = state.next === null || state.next === undefined;
        }
        text.textContent = content.text;
        update();
        more.addEventListener('click', function () {
          more.disabled = true;
          setStatus('loading', 'Reading ' + id + ' from ' + state.next + '…');
          gql(READ_MORE_QUERY, { id: id, start: state.next })
            .then(function (next) {
              if (request !== detailsRequest) {
                return;
              }
              var range = next.node && next.node.content;
              if (!range) {
                throw RequestError('no text returned', 'EMPTY');
              }
              text.textContent += range.text;
              state.end = range.end;
              state.total = range.total;
              state.next = range.next;
              update();
              setStatus('ok', 'Read ' + id + ' up to character ' + range.end.toLocaleString('en') + '.');
            })
            .catch(function (err) {
              showError('Reading the text', err);
            })
            .finally(function () {
              more.disabled = false;
            });
        });
        box.replaceChildren(meta, text, more);
      })
      .catch(function (err) {
        if (request !== detailsRequest) {
          return;
        }
        box.replaceChildren(el('p', { className: 'hint', text: 'Could not load the text.' }));
        showError('Loading the event text', err);
      });
  }

  /* ------------------------------------------------------------------ *
   * Expand neighbourhood
   * ------------------------------------------------------------------ */

  function placeAround(centreId) {
    return function (newNodes) {
      var centre = cy.getElementById(centreId);
      var extent = cy.extent();
      var origin = centre.nonempty()
        ? centre.position()
        : { x: (extent.x1 + extent.x2) / 2, y: (extent.y1 + extent.y2) / 2 };
      var ring = newNodes.filter(function (n) {
        return n.data.id !== centreId;
      });
      var radius = Math.max(80, (ring.length * 34) / (2 * Math.PI));
      ring.forEach(function (n, i) {
        var angle = (2 * Math.PI * i) / Math.max(1, ring.length);
        n.position = { x: origin.x + radius * Math.cos(angle), y: origin.y + radius * Math.sin(angle) };
      });
      newNodes.forEach(function (n) {
        if (n.data.id === centreId) {
          n.position = { x: origin.x, y: origin.y };
        }
      });
    };
  }

  function expand(id) {
    var button = $('expand-button');
    if (button) {
      button.disabled = true;
    }
    setStatus('loading', 'Expanding ' + id + '…');
    return gql(NEIGHBOURHOOD_QUERY, { id: String(id) })
      .then(function (data) {
        var hood = data.neighbourhood || {};
        var added = addElements(hood.nodes, hood.relationships, placeAround(String(id)));
        applyFocus();
        renderLegend();
        renderCounts();
        var nodeCount = added.nodes().length;
        var edgeCount = added.edges().length;
        setStatus(
          'ok',
          'Expanded ' + id + ': ' + plural(nodeCount, 'new node') + ', ' + plural(edgeCount, 'new relationship') + '.'
        );
        var centre = cy.getElementById(String(id));
        if (centre.nonempty()) {
          if (selectedId === centre.id() || !selectedId) {
            select(centre.id());
          }
          focusOn(centre.closedNeighborhood());
        }
        return { nodes: nodeCount, relationships: edgeCount };
      })
      .catch(function (err) {
        showError('Expanding ' + id, err);
        throw err;
      })
      .finally(function () {
        var again = $('expand-button');
        if (again) {
          again.disabled = false;
        }
      });
  }

  /* ------------------------------------------------------------------ *
   * Search
   * ------------------------------------------------------------------ */

  function clearSearch() {
    if (cy) {
      cy.nodes('.search-hit').removeClass('search-hit');
    }
    ui.results.replaceChildren();
    ui.searchText.textContent = '';
    ui.resultsSection.hidden = true;
  }

  function search(text) {
    var q = String(text || '').trim();
    if (!q) {
      setStatus('error', 'Type something to search for.', 'EMPTY_QUERY');
      return Promise.resolve(null);
    }
    ui.searchButton.disabled = true;
    setStatus('loading', 'Searching for “' + q + '”…');
    return gql(SEARCH_QUERY, { q: q })
      .then(function (data) {
        var page = data.search || {};
        var items = page.items || [];
        clearSearch();
        var hits = cy.collection();
        items.forEach(function (item, index) {
          var event = item.event || {};
          var eventId = String(event.id);
          var node = cy.getElementById(eventId);
          if (node.nonempty()) {
            hits = hits.union(node);
          }
          ui.results.appendChild(resultItem(index, event, item.quote, node.nonempty()));
        });
        hits.addClass('search-hit');
        // centre on the hits that are drawn and not hidden by a label filter
        focusOn(
          hits.filter(function (n) {
            return !n.hasClass('filtered');
          }),
          80
        );
        ui.searchText.textContent = page.text || '';
        ui.searchTextBox.hidden = !page.text;
        if (!items.length) {
          ui.results.appendChild(
            el('li', { className: 'hint', text: 'No new evidence. An empty result does not prove absence.' })
          );
        }
        ui.resultsSection.hidden = false;
        setStatus(
          'ok',
          'Search “' + q + '”: ' + plural(items.length, 'result') + ', ' + hits.length + ' in the drawing.'
        );
        return { items: items.length, highlighted: hits.length };
      })
      .catch(function (err) {
        showError('Search', err);
        throw err;
      })
      .finally(function () {
        ui.searchButton.disabled = false;
      });
  }

  function resultItem(index, event, quote, drawn) {
    var eventId = String(event.id);
    var title = el('button', {
      type: 'button',
      className: 'result-title',
      text: event.summary || eventId,
      onclick: function () {
        if (cy.getElementById(eventId).nonempty()) {
          select(eventId, { center: true });
        } else {
          expand(eventId).then(function () {
            cy.getElementById(eventId).addClass('search-hit');
            select(eventId, { center: true });
          }, function () {});
        }
      }
    });
    var parts = [
      title,
      el('span', { className: 'result-id', text: eventId }),
      drawn ? null : el('span', { className: 'result-note', text: ' · not in the drawing: click to load it' })
    ];
    if (quote && quote.text) {
      parts.push(
        el('blockquote', { className: 'quote', 'data-testid': 'search-quote' }, [
          quote.text,
          el('span', {
            className: 'quote-range',
            text: 'characters ' + quote.start + '–' + quote.end + ' of ' + quote.total
          })
        ])
      );
    }
    return el(
      'li',
      { 'data-testid': 'search-result', 'data-event-id': eventId, 'data-drawn': drawn ? 'true' : 'false' },
      parts
    );
  }

  /* ------------------------------------------------------------------ *
   * Export
   * ------------------------------------------------------------------ */

  function exportData() {
    var visible = visibleElements();
    return {
      exportedAt: new Date().toISOString(),
      source: '/graphql',
      truncatedNodes: truncated.nodes,
      truncatedRelationships: truncated.relationships,
      hiddenLabels: Array.from(hiddenLabels).sort(),
      nodes: visible.nodes.map(function (node) {
        return {
          id: node.id(),
          label: node.data('label'),
          name: node.data('name'),
          properties: node.data('properties')
        };
      }),
      relationships: visible.edges.map(function (edge) {
        return {
          id: edge.data('relId'),
          type: edge.data('type'),
          source: edge.data('source'),
          target: edge.data('target'),
          properties: edge.data('properties')
        };
      })
    };
  }

  function downloadExport() {
    var doc = exportData();
    var blob = new Blob([JSON.stringify(doc, null, 2)], { type: 'application/json' });
    var url = URL.createObjectURL(blob);
    var stamp = doc.exportedAt.replace(/[:]/g, '').replace(/\..*$/, '');
    var link = el('a', { href: url, download: 'mnemoql-graph-' + stamp + '.json', hidden: true });
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(function () {
      URL.revokeObjectURL(url);
    }, 10000);
    setStatus(
      'ok',
      'Exported ' + plural(doc.nodes.length, 'node') + ' and ' + plural(doc.relationships.length, 'relationship') + '.'
    );
    return doc;
  }

  /* ------------------------------------------------------------------ *
   * Wiring
   * ------------------------------------------------------------------ */

  ui.searchForm.addEventListener('submit', function (event) {
    event.preventDefault();
    search(ui.searchInput.value).catch(function () {});
  });
  ui.searchClear.addEventListener('click', function () {
    ui.searchInput.value = '';
    clearSearch();
    setStatus('ok', 'Search cleared.');
  });
  ui.fitButton.addEventListener('click', function () {
    fitView(true);
  });
  ui.reloadButton.addEventListener('click', function () {
    load().catch(function () {});
  });
  ui.exportButton.addEventListener('click', downloadExport);
  createCy(false);
  var ready = startLive();
  ready.catch(function () {}); // reported in the status line; tests may still await the rejection

  window.mnemoqlExplorer = {
    get cy() {
      return cy;
    },
    ready: ready,
    reload: load,
    search: search,
    select: function (id) {
      return select(id, { center: true });
    },
    expand: expand,
    exportData: exportData
  };
})();
