/*
 * mnemoql: a small graphql-transport-ws client for the pages' live feed (memoryChanges).
 *
 *   var feed = window.mnemoqlLive.subscribe(query, {
 *     next: function (data) {},      // each result's data
 *     error: function (errors) {},   // GraphQL errors of the subscription
 *     state: function (state) {}     // 'connecting' | 'live' | 'offline' | 'refused'
 *   });
 *   feed.close();
 *
 * The bearer token of auth.js goes in connection_init, as over HTTP. A dropped connection is
 * retried with a growing pause (1 s up to 30 s); a refused one (no or bad token) waits for
 * the token to change. Plain JavaScript, no build step; only the origin's /graphql is used.
 */
(function () {
  'use strict';

  var PROTOCOL = 'graphql-transport-ws';
  var REFUSED = { 4401: true, 4403: true }; // unauthenticated, forbidden

  function url() {
    return (window.location.protocol === 'https:' ? 'wss://' : 'ws://') + window.location.host + '/graphql';
  }

  function subscribe(query, handlers) {
    var socket = null;
    var closed = false;
    var pause = 1000;
    var timer = null;
    var report = function (name, value) {
      if (handlers[name]) {
        handlers[name](value);
      }
    };

    function send(message) {
      socket.send(JSON.stringify(message));
    }

    function connect() {
      report('state', 'connecting');
      socket = new WebSocket(url(), PROTOCOL);
      socket.onopen = function () {
        send({ type: 'connection_init', payload: window.mnemoqlAuth.authHeaders() });
      };
      socket.onmessage = function (event) {
        var message = JSON.parse(event.data);
        if (message.type === 'connection_ack') {
          pause = 1000;
          send({ id: '1', type: 'subscribe', payload: { query: query } });
          report('state', 'live');
        } else if (message.type === 'ping') {
          send({ type: 'pong' });
        } else if (message.type === 'next') {
          var payload = message.payload || {};
          if (payload.errors && payload.errors.length) {
            report('error', payload.errors);
          } else {
            report('next', payload.data);
          }
        } else if (message.type === 'error') {
          report('error', message.payload || []);
        }
      };
      socket.onclose = function (event) {
        socket = null;
        if (closed) {
          return;
        }
        if (REFUSED[event.code]) {
          report('state', 'refused');
          return; // retried when the token changes
        }
        report('state', 'offline');
        timer = window.setTimeout(connect, pause);
        pause = Math.min(pause * 2, 30000);
      };
    }

    function restart() {
      if (closed) {
        return;
      }
      window.clearTimeout(timer);
      if (socket) {
        socket.onclose = null;
        socket.close(1000);
        socket = null;
      }
      pause = 1000;
      connect();
    }

    window.addEventListener('mnemoql:token-changed', restart);
    connect();
    return {
      close: function () {
        closed = true;
        window.clearTimeout(timer);
        window.removeEventListener('mnemoql:token-changed', restart);
        if (socket) {
          socket.close(1000);
        }
      }
    };
  }

  window.mnemoqlLive = { subscribe: subscribe };
})();
