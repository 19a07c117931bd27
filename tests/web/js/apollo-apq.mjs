// Apollo Client 4 with Apollo's own persisted-query link (@apollo/client/link/persisted-queries)
// against a running mnemoql, recording every HTTP request the link chain makes.
//
//   node apollo-apq.mjs '<plan json>'
//
// plan: {"url": ".../graphql", "token": "..." | null, "get": true | false,
//        "clients": [[{"query": "...", "variables": {...}, "mutation": false}, ...], ...]}
// Each inner list runs on a fresh ApolloClient (a fresh link and cache, as a new page load);
// every operation is fetched from the network (fetchPolicy "network-only").
// Prints {"results": [[{data} | {error}], ...], "requests": [{method, hashed, withQuery, status}]}.
import { createHash } from "node:crypto";
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";

const plan = JSON.parse(process.argv[2]);
const requests = [];

async function recordingFetch(input, init = {}) {
  const url = new URL(String(input));
  const method = (init.method || "GET").toUpperCase();
  let body = {};
  if (method === "GET") {
    for (const key of ["query", "extensions"]) {
      const value = url.searchParams.get(key);
      if (value !== null) body[key] = key === "extensions" ? JSON.parse(value) : value;
    }
  } else {
    body = JSON.parse(init.body);
  }
  const response = await fetch(input, init);
  requests.push({
    method,
    hashed: Boolean(body.extensions?.persistedQuery?.sha256Hash),
    withQuery: typeof body.query === "string",
    status: response.status,
  });
  return response;
}

function client() {
  const headers = plan.token ? { authorization: `Bearer ${plan.token}` } : {};
  const persisted = new PersistedQueryLink({
    sha256: (text) => createHash("sha256").update(text, "utf8").digest("hex"),
    useGETForHashedQueries: plan.get,
  });
  const http = new HttpLink({ uri: plan.url, headers, fetch: recordingFetch });
  return new ApolloClient({ link: ApolloLink.from([persisted, http]), cache: new InMemoryCache() });
}

const results = [];
for (const operations of plan.clients) {
  const apollo = client();
  const got = [];
  for (const op of operations) {
    const document = gql(op.query);
    try {
      const result = op.mutation
        ? await apollo.mutate({ mutation: document, variables: op.variables })
        : await apollo.query({ query: document, variables: op.variables, fetchPolicy: "network-only" });
      got.push(result.error ? { error: String(result.error.message) } : { data: result.data });
    } catch (error) {
      got.push({ error: String(error.message) });
    }
  }
  results.push(got);
  apollo.stop();
}
process.stdout.write(JSON.stringify({ results, requests }));
