// Apollo Client and urql, each with its default cache policy (cache-first), against a real
// mnemoql serve: a repeated search, then the page's follow-up by its cursor.
// Usage: node followups.mjs <graphql url> <token>; prints a JSON report on stdout.
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { Client, cacheExchange, fetchExchange } from "@urql/core";

const [url, token] = process.argv.slice(2);
const SEARCH = `query Search($query: String, $session: String, $cursor: String) {
  search(query: $query, session: $session, cursor: $cursor) {
    session cursor searchAgain items { eventId quote { text start end } }
  }
}`;

function counting() {
  const seen = { requests: 0 };
  const fetcher = (input, init) => {
    seen.requests += 1;
    return fetch(input, init);
  };
  return [seen, fetcher];
}

const ids = (page) => page.items.map((i) => i.eventId);

async function apollo() {
  const [seen, fetcher] = counting();
  const client = new ApolloClient({
    link: new HttpLink({ uri: url, headers: { authorization: `Bearer ${token}` }, fetch: fetcher }),
    cache: new InMemoryCache(),
  });
  const ask = async (variables, options = {}) => {
    const { data, error } = await client.query({ query: gql(SEARCH), variables, ...options });
    if (error) throw error;
    return data.search;
  };
  const vars = { query: "meeting Berlin", session: "apollo" };
  const first = await ask(vars);
  const repeat = await ask(vars);
  const afterRepeat = seen.requests;
  const next = await ask({ ...vars, cursor: first.cursor });
  const nextAgain = await ask({ ...vars, cursor: first.cursor });
  const network = await ask(vars, { fetchPolicy: "network-only" });
  const networkNext = await ask({ ...vars, cursor: first.cursor }, { fetchPolicy: "network-only" });
  return {
    first: ids(first), repeat: ids(repeat), afterRepeat, next: ids(next),
    nextAgain: ids(nextAgain), network: ids(network), networkNext: ids(networkNext),
    requests: seen.requests, session: next.session,
  };
}

async function urql() {
  const [seen, fetcher] = counting();
  const client = new Client({
    url,
    exchanges: [cacheExchange, fetchExchange],
    fetch: fetcher,
    fetchOptions: { headers: { authorization: `Bearer ${token}` } },
  });
  const ask = async (variables, context) => {
    const result = await client.query(SEARCH, variables, context).toPromise();
    if (result.error) throw result.error;
    return result.data.search;
  };
  const vars = { query: "meeting Berlin", session: "urql" };
  const first = await ask(vars);
  const repeat = await ask(vars);
  const afterRepeat = seen.requests;
  const next = await ask({ ...vars, cursor: first.cursor });
  const nextAgain = await ask({ ...vars, cursor: first.cursor });
  const network = await ask(vars, { requestPolicy: "network-only" });
  const networkNext = await ask({ ...vars, cursor: first.cursor }, { requestPolicy: "network-only" });
  return {
    first: ids(first), repeat: ids(repeat), afterRepeat, next: ids(next),
    nextAgain: ids(nextAgain), network: ids(network), networkNext: ids(networkNext),
    requests: seen.requests, session: next.session,
  };
}

const report = { apollo: await apollo(), urql: await urql() };
process.stdout.write(JSON.stringify(report));
