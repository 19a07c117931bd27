/*
 * mnemoql: GraphiQL with the query-builder (explorer) plugin, talking to POST /graphql and,
 * for subscriptions, to the websocket at /graphql.
 * Libraries come from /static/vendor/ (see vendor/VERSIONS); nothing is loaded from a CDN.
 */
(function () {
  'use strict';

  var DEFAULT_QUERY = [
    '# mnemoql: graph memory for LLM agents.',
    '# Run: play button or Ctrl-Enter.',
    '# Build queries in the Explorer (left),',
    '# read the schema in Docs. The graph',
    '# view is "Graph explorer" (top bar).',
    '',
    'query MemoryIndex {',
    '  memoryIndex {',
    '    model',
    '    dimensions',
    '    counts {',
    '      events',
    '    }',
    '  }',
    '}',
    ''
  ].join('\n');

  // Answers that are not JSON (a proxy's error page, say) become a GraphQL error to show.
  function jsonOnly(input, init) {
    return window.fetch(input, init).then(function (response) {
      return response.text().then(function (body) {
        try {
          JSON.parse(body);
          return new Response(body, { status: 200, headers: { 'Content-Type': 'application/json' } });
        } catch (err) {
          var error = {
            errors: [{
              message: 'HTTP ' + response.status + ' ' + response.statusText + ': ' + body.slice(0, 500),
              extensions: { code: 'HTTP_' + response.status }
            }]
          };
          return new Response(JSON.stringify(error), { status: 200, headers: { 'Content-Type': 'application/json' } });
        }
      });
    });
  }

  // A new fetcher per token: GraphiQL re-runs introspection when the fetcher changes, so a
  // schema that needs the token loads as soon as the token is saved. Queries and writes go
  // to POST /graphql; subscriptions (revectorize progress, memoryChanges) to the websocket at
  // the same path (graphql-transport-ws), with the token in connection_init.
  function makeFetcher() {
    var auth = window.mnemoqlAuth.authHeaders();
    var ws = (window.location.protocol === 'https:' ? 'wss://' : 'ws://') + window.location.host + '/graphql';
    return window.GraphiQL.createFetcher({
      url: '/graphql',
      subscriptionUrl: ws,
      headers: Object.assign({ Accept: 'application/json' }, auth),
      wsConnectionParams: auth,
      fetch: jsonOnly
    });
  }

  var explorer = window.GraphiQLPluginExplorer.explorerPlugin({ showAttribution: false });
  var root = window.ReactDOM.createRoot(document.getElementById('graphiql'));

  function render() {
    root.render(
      window.React.createElement(
        window.GraphiQL,
        {
          fetcher: makeFetcher(),
          defaultQuery: DEFAULT_QUERY,
          plugins: [explorer],
          visiblePlugin: explorer,
          isHeadersEditorEnabled: true,
          shouldPersistHeaders: false
        },
        window.React.createElement(window.GraphiQL.Logo, null, 'mnemoql')
      )
    );
  }

  window.addEventListener('mnemoql:token-changed', render);
  render();
})();
