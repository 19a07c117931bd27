/*
 * mnemoql: GraphiQL with the query-builder (explorer) plugin, talking to POST /graphql.
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

  // A new fetcher per token: GraphiQL re-runs introspection when the fetcher changes,
  // so a schema that needs the token loads as soon as the token is saved.
  function makeFetcher() {
    var auth = window.mnemoqlAuth.authHeaders();
    return function fetcher(params, options) {
      var headers = Object.assign(
        { 'Content-Type': 'application/json', Accept: 'application/json' },
        auth,
        (options && options.headers) || {}
      );
      return fetch('/graphql', {
        method: 'POST',
        headers: headers,
        body: JSON.stringify(params),
        credentials: 'same-origin'
      }).then(function (response) {
        return response.text().then(function (body) {
          try {
            return JSON.parse(body);
          } catch (err) {
            // Not JSON (a proxy error page, say): show it as a GraphQL error.
            return {
              errors: [{
                message: 'HTTP ' + response.status + ' ' + response.statusText + ': ' + body.slice(0, 500),
                extensions: { code: 'HTTP_' + response.status }
              }]
            };
          }
        });
      });
    };
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
