// The graphql-http server audit against a running mnemoql: prints one JSON line per audit.
// Usage: node audit.mjs http://127.0.0.1:PORT/graphql [bearer token]
import { serverAudits } from 'graphql-http';

const [url, token] = process.argv.slice(2);
const fetchFn = token
  ? (input, init = {}) => {
      const headers = new Headers(init.headers || {});
      headers.set('authorization', `Bearer ${token}`);
      return fetch(input, { ...init, headers });
    }
  : fetch;
const results = [];
for (const audit of serverAudits({ url, fetchFn })) {
  const result = await audit.fn();
  results.push({ id: audit.id, name: audit.name, status: result.status, reason: result.reason });
}
process.stdout.write(JSON.stringify(results) + '\n');
