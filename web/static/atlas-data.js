/*
 * mnemoql atlas: what the page reads from POST /graphql, one page at a time.
 *
 * Nothing here asks for "everything": a start (a search, a node id or a topic) reads the first
 * page of each matching list, and each expansion reads the next page of a node's connections
 * through their Relay cursors (first/after, at most the server's page size). The cursors of
 * each node are kept here, so clicking a node again continues where the last page ended.
 *
 *   window.mnemoqlAtlasData = { gql, start(mode, value, first), expand(nodes, first),
 *                               hasMore(id), forget(id), reset(), toRecord(graphNode), PAGE_MAX }
 *
 * A batch is { nodes: [{id, label, name, date}], edges: [{id, type, source, target}] };
 * edges follow the API's relationship ids (source-TYPE-target), so the live feed's
 * relationships and these are the same edges. Plain JavaScript, no build step; queries only.
 */
(function () {
  'use strict';

  var PAGE_MAX = 100; // the server's default max_page_size
  var PAGE_INFO = 'pageInfo { hasNextPage endCursor }';
  var EVENT = 'id summary time createDate';
  var ENTITY = 'id name';

  // label -> its connections: [field, the neighbour's fields, its label, edge type, edge runs
  // from the expanded node (true) or to it]
  var CONNECTIONS = {
    Event: [
      ['participants', ENTITY, 'Person', 'PARTICIPATED_IN', false],
      ['locations', ENTITY, 'Location', 'OCCURRED_AT', true],
      ['concepts', ENTITY, 'Concept', 'MENTIONS', true]
    ],
    Person: [['events', EVENT, 'Event', 'PARTICIPATED_IN', true]],
    Concept: [['events', EVENT, 'Event', 'MENTIONS', false]],
    Location: [['events', EVENT, 'Event', 'OCCURRED_AT', false]],
    Topic: [['bindings', EVENT, 'Event', 'BINDS', true]]
  };
  var TYPENAMES = { Event: 1, Person: 1, Concept: 1, Location: 1, Topic: 1 };

  // node id -> { label, after: {field: cursor}, done: {field: true} }
  var pages = new Map();

  function gql(query, variables) {
    if (!/^\s*query\b/.test(query)) {
      return Promise.reject(new Error('the atlas only sends queries'));
    }
    return window.mnemoqlAuth.postQuery(query, variables).then(function (response) {
      return response.json().then(
        function (body) {
          if (body && body.errors && body.errors.length) {
            var first = body.errors[0];
            var err = new Error(first.message || 'GraphQL error');
            err.code = (first.extensions && first.extensions.code) || 'GRAPHQL_ERROR';
            throw err;
          }
          if (!response.ok || !body || !body.data) {
            throw new Error('HTTP ' + response.status);
          }
          return body.data;
        },
        function () {
          throw new Error('HTTP ' + response.status + ': not JSON');
        }
      );
    });
  }

  /** The date an event is filed under: its own time when it names a day, else its save date. */
  function eventDate(time, createDate) {
    var day = /^\d{4}-\d{2}-\d{2}/.exec(time || '');
    return day ? day[0] : createDate || '';
  }

  function record(node, label) {
    if (label === 'Event') {
      return { id: node.id, label: 'Event', name: node.summary, date: eventDate(node.time, node.createDate) };
    }
    return { id: node.id, label: label, name: node.name || node.path || node.id, date: '' };
  }

  /** A GraphNode of the live feed (memoryChanges) as a record. */
  function toRecord(graphNode) {
    var p = graphNode.properties || {};
    return {
      id: graphNode.id,
      label: graphNode.label,
      name: graphNode.name,
      date: graphNode.label === 'Event' ? eventDate(p.time, p.create_date) : ''
    };
  }

  function edge(type, source, target) {
    return { id: source + '-' + type + '-' + target, type: type, source: source, target: target };
  }

  function clampPage(first) {
    return Math.max(1, Math.min(PAGE_MAX, first | 0 || 20));
  }

  function state(id, label) {
    var s = pages.get(id);
    if (!s) {
      s = { label: label, after: {}, done: {} };
      pages.set(id, s);
    }
    return s;
  }

  function hasMore(id) {
    var s = pages.get(id);
    if (!s || !CONNECTIONS[s.label]) {
      return s ? false : true;
    }
    return CONNECTIONS[s.label].some(function (c) {
      return !s.done[c[0]];
    });
  }

  function connectionField(c, after) {
    return c[0] + '(first: $first' + (after ? ', after: $' + after : '') + ') { edges { node { ' + c[1] + ' } } ' + PAGE_INFO + ' }';
  }

  /** Record one connection page of node `n` into `batch` and move its cursor on. */
  function take(batch, n, c, conn) {
    var s = state(n.id, n.label);
    if (!conn) {
      s.done[c[0]] = true; // the node is gone, or is not what we thought
      return;
    }
    conn.edges.forEach(function (e) {
      var other = record(e.node, c[2]);
      batch.nodes.push(other);
      batch.edges.push(c[4] ? edge(c[3], n.id, other.id) : edge(c[3], other.id, n.id));
    });
    if (conn.pageInfo.hasNextPage && conn.pageInfo.endCursor) {
      s.after[c[0]] = conn.pageInfo.endCursor;
    } else {
      s.done[c[0]] = true;
    }
  }

  /** First pages of nodes never expanded: one nodes(ids:) query, no alias per node (the
   * server caps aliases at 30 by default). */
  function firstPages(nodes, first) {
    var labels = {};
    nodes.forEach(function (n) {
      labels[n.label] = true;
    });
    var fragments = Object.keys(labels).map(function (label) {
      return '... on ' + label + ' { ' + CONNECTIONS[label].map(function (c) {
        return connectionField(c, null);
      }).join(' ') + ' }';
    });
    var query = 'query AtlasFirstPages($ids: [ID!]!, $first: Int!) { nodes(ids: $ids) { __typename ' + fragments.join(' ') + ' } }';
    var ids = nodes.map(function (n) {
      return n.id;
    });
    return gql(query, { ids: ids, first: first }).then(function (data) {
      var batch = { nodes: [], edges: [] };
      nodes.forEach(function (n, i) {
        var holder = data.nodes[i];
        CONNECTIONS[n.label].forEach(function (c) {
          take(batch, n, c, holder && holder.__typename === n.label ? holder[c[0]] : null);
        });
      });
      return batch;
    });
  }

  /** The next page of each unfinished connection of one node. */
  function nextPages(n, first) {
    var s = state(n.id, n.label);
    var vars = { id: n.id, first: first };
    var decl = ['$id: ID!', '$first: Int!'];
    var open = CONNECTIONS[n.label].filter(function (c) {
      return !s.done[c[0]];
    });
    var fields = open.map(function (c, j) {
      vars['after' + j] = s.after[c[0]] || null;
      decl.push('$after' + j + ': String');
      return connectionField(c, 'after' + j);
    });
    var query = 'query AtlasNextPage(' + decl.join(', ') + ') { node(id: $id) { ... on ' + n.label + ' { ' + fields.join(' ') + ' } } }';
    return gql(query, vars).then(function (data) {
      var batch = { nodes: [], edges: [] };
      open.forEach(function (c) {
        take(batch, n, c, data.node ? data.node[c[0]] : null);
      });
      return batch;
    });
  }

  /**
   * The next page of each unfinished connection of these nodes.
   * @param {Array<{id: string, label: string}>} nodes
   */
  function expand(nodes, first) {
    var size = clampPage(first);
    var fresh = [];
    var started = [];
    nodes.forEach(function (n) {
      if (!CONNECTIONS[n.label]) {
        return;
      }
      if (!pages.has(n.id)) {
        fresh.push(n);
      } else if (hasMore(n.id)) {
        started.push(n);
      }
    });
    var asks = started.map(function (n) {
      return nextPages(n, size);
    });
    if (fresh.length) {
      asks.push(firstPages(fresh, size));
    }
    return Promise.all(asks).then(function (batches) {
      return batches.reduce(
        function (all, b) {
          return { nodes: all.nodes.concat(b.nodes), edges: all.edges.concat(b.edges) };
        },
        { nodes: [], edges: [] }
      );
    });
  }

  // `contains` is case-sensitive: the text as typed, in lower case and capitalised
  var SEARCH_QUERY =
    'query AtlasSearch($events: EventWhere!, $names: EntityWhere!, $first: Int!) {' +
    ' events(first: $first, where: $events) { edges { node { ' + EVENT + ' } } }' +
    ' persons(first: $first, where: $names) { edges { node { ' + ENTITY + ' } } }' +
    ' concepts(first: $first, where: $names) { edges { node { ' + ENTITY + ' } } }' +
    ' locations(first: $first, where: $names) { edges { node { ' + ENTITY + ' } } } }';

  function spellings(text) {
    var lower = text.toLowerCase();
    var all = [text, lower, lower.charAt(0).toUpperCase() + lower.slice(1)];
    return all.filter(function (s, i) {
      return all.indexOf(s) === i;
    });
  }

  function searchWhere(text) {
    var forms = spellings(text);
    return {
      events: {
        OR: forms
          .map(function (s) {
            return { summary: { contains: s } };
          })
          .concat([{ id: { eq: text } }])
      },
      names: {
        OR: forms.map(function (s) {
          return { name: { contains: s } };
        })
      }
    };
  }

  var NODE_QUERY =
    'query AtlasNode($id: ID!) { node(id: $id) { __typename id' +
    ' ... on Event { summary time createDate } ... on Person { name } ... on Concept { name }' +
    ' ... on Location { name } ... on Topic { name path } } }';

  var TOPIC_QUERY = 'query AtlasTopic($path: String!) { topic(path: $path) { id name path } }';

  /** The start nodes: search matches (first page of each list), one node, or one topic. */
  function start(mode, value, first) {
    var text = (value || '').trim();
    if (!text) {
      return Promise.resolve([]);
    }
    if (mode === 'id') {
      return gql(NODE_QUERY, { id: text }).then(function (data) {
        var n = data.node;
        return n && TYPENAMES[n.__typename] ? [record(n, n.__typename)] : [];
      });
    }
    if (mode === 'topic') {
      return gql(TOPIC_QUERY, { path: text }).then(function (data) {
        return data.topic ? [record(data.topic, 'Topic')] : [];
      });
    }
    var where = searchWhere(text);
    return gql(SEARCH_QUERY, { events: where.events, names: where.names, first: clampPage(first) }).then(function (data) {
      var out = [];
      [['events', 'Event'], ['persons', 'Person'], ['concepts', 'Concept'], ['locations', 'Location']].forEach(
        function (pair) {
          data[pair[0]].edges.forEach(function (e) {
            out.push(record(e.node, pair[1]));
          });
        }
      );
      return out;
    });
  }

  function forget(id) {
    pages.delete(id);
  }

  /** A new start: every node's neighbours are read from their first page again. */
  function reset() {
    pages.clear();
  }

  window.mnemoqlAtlasData = {
    PAGE_MAX: PAGE_MAX,
    gql: gql,
    start: start,
    expand: expand,
    hasMore: hasMore,
    forget: forget,
    reset: reset,
    toRecord: toRecord
  };
})();
