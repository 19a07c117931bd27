/*
 * mnemoql: bearer-token handling shared by graphiql.html, explorer.html and atlas.html.
 *
 * The token lives in localStorage under "mnemoql.token". When it is set, every
 * request the pages make to POST /graphql carries "Authorization: Bearer <token>"
 * (a value that already starts with "Bearer " is sent as it is). postQuery(query,
 * variables) is that request for the explorer and the atlas: it resolves to the fetch
 * Response, and each page reads the body and words its errors in its own way.
 *
 * The page may contain a small form with these ids; they are wired up here:
 *   #token-form, #token-input, #token-save, #token-clear, #token-state
 * Saving or clearing dispatches a "mnemoql:token-changed" event on window.
 */
(function () {
  'use strict';

  var KEY = 'mnemoql.token';

  function getToken() {
    try {
      return (window.localStorage.getItem(KEY) || '').trim();
    } catch (err) {
      return '';
    }
  }

  function setToken(value) {
    var token = (value || '').trim();
    try {
      if (token) {
        window.localStorage.setItem(KEY, token);
      } else {
        window.localStorage.removeItem(KEY);
      }
    } catch (err) {
      /* storage disabled: the token only lives until the page is closed */
    }
    window.dispatchEvent(new CustomEvent('mnemoql:token-changed', { detail: { set: !!token } }));
  }

  function authHeaders() {
    var token = getToken();
    if (!token) {
      return {};
    }
    return { Authorization: /^bearer\s+/i.test(token) ? token : 'Bearer ' + token };
  }

  function postQuery(query, variables) {
    var headers = Object.assign(
      { 'Content-Type': 'application/json', Accept: 'application/json' },
      authHeaders()
    );
    return fetch('/graphql', {
      method: 'POST',
      headers: headers,
      body: JSON.stringify({ query: query, variables: variables || {} }),
      credentials: 'same-origin'
    });
  }

  function showState() {
    var state = document.getElementById('token-state');
    if (state) {
      state.textContent = getToken() ? 'token set' : 'no token';
      state.setAttribute('data-token-set', getToken() ? 'true' : 'false');
    }
  }

  function wire() {
    var form = document.getElementById('token-form');
    var input = document.getElementById('token-input');
    var clear = document.getElementById('token-clear');
    if (form && input) {
      form.addEventListener('submit', function (event) {
        event.preventDefault();
        setToken(input.value);
        input.value = '';
        showState();
      });
    }
    if (clear) {
      clear.addEventListener('click', function () {
        setToken('');
        if (input) {
          input.value = '';
        }
        showState();
      });
    }
    showState();
  }

  window.mnemoqlAuth = {
    KEY: KEY,
    getToken: getToken,
    setToken: setToken,
    authHeaders: authHeaders,
    postQuery: postQuery
  };

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', wire);
  } else {
    wire();
  }
})();
