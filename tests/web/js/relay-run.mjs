// Runs relay-compiler's generated pagination queries against a running mnemoql with
// relay-runtime, the way a Relay app's loadNext / loadPrevious would, and reports what the
// Relay store made of them and every warning relay-runtime printed.
//
// Usage: node relay-run.mjs <graphql url> <token or ""> <plan.json>
// plan.json: [{artifact, key, parent, filters, variables, direction}], where artifact is the
// path of a generated refetch query, key its @connection key, parent the record the
// connection hangs on ("client:root" for Query), direction "forward", "backward" or "once"
// (a plain query, run once).
// Prints one JSON object: {warnings: [...], connections: [{key, pages, edges, pageInfo}]}.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

const require = createRequire(import.meta.url);
const {
  ConnectionHandler,
  Environment,
  Network,
  RecordSource,
  Store,
  commitLocalUpdate,
  fetchQuery,
} = require('relay-runtime');

const [url, token, planFile] = process.argv.slice(2);
const plan = JSON.parse(readFileSync(planFile, 'utf8'));
const warnings = [];
for (const level of ['error', 'warn']) {
  console[level] = (...args) => warnings.push(args.map(String).join(' '));
}

let lastResponse = null;
const network = Network.create(async (params, variables) => {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/graphql-response+json, application/json',
  };
  if (token) headers.authorization = `Bearer ${token}`;
  const response = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query: params.text, variables }),
  });
  lastResponse = await response.json();
  if (lastResponse.errors) warnings.push('server errors: ' + JSON.stringify(lastResponse.errors));
  return lastResponse;
});
const environment = new Environment({ network, store: new Store(new RecordSource()) });

function findPageInfo(value) {
  if (value === null || typeof value !== 'object') return null;
  if (value.pageInfo) return value.pageInfo;
  for (const child of Object.values(value)) {
    const found = findPageInfo(child);
    if (found) return found;
  }
  return null;
}

function readConnection(parentId, key, filters) {
  let out = null;
  commitLocalUpdate(environment, (store) => {
    const parent = parentId === 'client:root' ? store.getRoot() : store.get(parentId);
    const connection = parent && ConnectionHandler.getConnection(parent, key, filters);
    if (!connection) return;
    const edges = (connection.getLinkedRecords('edges') || []).map((edge) => {
      const node = edge && edge.getLinkedRecord('node');
      return node ? node.getValue('id') : null;
    });
    const info = connection.getLinkedRecord('pageInfo');
    out = {
      edges,
      pageInfo: {
        hasNextPage: info.getValue('hasNextPage'),
        hasPreviousPage: info.getValue('hasPreviousPage'),
      },
    };
  });
  return out;
}

const connections = [];
for (const step of plan) {
  const query = require(step.artifact);
  const variables = { ...step.variables };
  let pages = 0;
  if (step.direction === 'once') {
    // a plain query: run it once; what matters is what the store says while normalising it
    await fetchQuery(environment, query, variables).toPromise();
    connections.push({ key: step.key, pages: 1, edges: [], pageInfo: null });
    continue;
  }
  // like usePaginationFragment: the first page, then loadNext / loadPrevious until the end
  for (let i = 0; i < 10; i += 1) {
    await fetchQuery(environment, query, variables).toPromise();
    pages += 1;
    const info = findPageInfo(lastResponse && lastResponse.data);
    const more = step.direction === 'forward' ? info && info.hasNextPage : info && info.hasPreviousPage;
    if (!more) break;
    variables.cursor = step.direction === 'forward' ? info.endCursor : info.startCursor;
  }
  connections.push({ key: step.key, pages, ...readConnection(step.parent, step.key, step.filters || {}) });
}
process.stdout.write(JSON.stringify({ warnings, connections }) + '\n');
