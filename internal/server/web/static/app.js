// warden supervisor page: countdowns and the live queue.
// Every string from a request is rendered by the server's html/template;
// this script only moves server-rendered, escaped fragments into the page
// (DOMParser + adoptNode) and sets text with textContent: never innerHTML.
'use strict';
(function () {
  // The session's CSRF token is handed out once, in the answer to the
  // sign-in POST (which needed the supervisor's secret token), never in a
  // page a GET returns: a server on another port of this host that the
  // browser sent the session cookie to can read every page with it, but
  // cannot read this origin's localStorage (scheme, host and port).
  var KEY = 'warden-csrf';
  function stored() {
    try { return localStorage.getItem(KEY) || ''; } catch (e) { return ''; }
  }
  function forget() {
    try { localStorage.removeItem(KEY); } catch (e) { /* storage disabled */ }
  }

  var handoff = document.querySelector('meta[name="csrf-token"]');
  if (handoff) {
    try { localStorage.setItem(KEY, handoff.getAttribute('content')); } catch (e) { /* deciding will say why */ }
    handoff.remove();
    var cont = document.getElementById('continue');
    location.replace(cont ? cont.getAttribute('href') : '/');
    return;
  }
  // The sign-in page: signed out, session ended, or a refused token.
  if (document.getElementById('signin')) forget();

  var notice = document.getElementById('notice');
  function warn(text) {
    if (notice) { notice.textContent = text; notice.hidden = false; }
  }

  // Every state-changing form (decisions, revoke, sign-out) gets the
  // stored token in its empty csrf field as it is submitted.
  document.addEventListener('submit', function (e) {
    var slot = e.target.querySelector && e.target.querySelector('input[data-csrf]');
    if (!slot) return;
    var tok = stored();
    if (!tok) {
      e.preventDefault();
      warn('This browser holds no token for the forms of your session (it is kept only in the browser you signed in with): sign in again.');
      return;
    }
    slot.value = tok;
  }, true);

  var queue = document.getElementById('queue');
  var one = document.getElementById('one');
  var live = document.getElementById('live');
  var idRe = /^[0-9a-f]{32}$/;

  function fmtLeft(ms) {
    if (ms <= 0) return 'expired';
    var s = Math.round(ms / 1000);
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    var two = function (n) { return (n < 10 ? '0' : '') + n; };
    return h > 0 ? h + 'h ' + two(m) + 'm' : m + 'm ' + two(r) + 's';
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll('[data-expires]').forEach(function (el) {
      var left = Number(el.getAttribute('data-expires')) - now;
      el.textContent = fmtLeft(left);
      el.classList.toggle('urgent', left > 0 && left < 60000);
      if (left <= 0) {
        var card = el.closest('.card');
        if (card) card.classList.add('expired');
      }
    });
  }
  tick();
  setInterval(tick, 1000);

  if (!document.querySelector('.who') || (!queue && !one)) return;

  function say(text) {
    if (live) live.textContent = text;
  }

  function updateCount() {
    if (!queue) return;
    var n = queue.querySelectorAll('.card').length;
    var count = document.getElementById('count');
    if (count) count.textContent = String(n);
    var empty = document.getElementById('empty');
    if (empty) empty.hidden = n > 0;
  }

  // fragment fetches a server-rendered fragment and returns its first
  // element, parsed in an inert document.
  function fragment(url) {
    return fetch(url, { credentials: 'same-origin', headers: { 'Accept': 'text/html' } }).then(function (r) {
      if (r.status === 401) {
        forget();
        say('Your session ended: sign in again.');
        return null;
      }
      if (!r.ok) return null;
      return r.text().then(function (html) {
        var doc = new DOMParser().parseFromString(html, 'text/html');
        var el = doc.body.firstElementChild;
        return el ? document.adoptNode(el) : null;
      });
    }).catch(function () { return null; });
  }

  function refreshGrants() {
    var box = document.getElementById('grants');
    if (!box) return;
    fragment('/grants').then(function (el) {
      if (el) { box.replaceChildren(el); tick(); }
    });
  }

  function onEvent(e) {
    var ev;
    try { ev = JSON.parse(e.data); } catch (err) { return; }
    var a = ev && ev.approval;
    if (!a || typeof a.request_id !== 'string' || !idRe.test(a.request_id)) return;
    var id = a.request_id;
    if (one) {
      if (one.getAttribute('data-id') !== id) return;
      fragment('/cards/' + id + '?next=' + encodeURIComponent('/requests/' + id)).then(function (el) {
        if (el) { one.replaceChildren(el); tick(); }
      });
      if (a.state !== 'PENDING') say('Request ' + id.slice(0, 8) + ' is now ' + a.state + (a.decided_by ? ' (by ' + a.decided_by + ')' : '') + '.');
      return;
    }
    var existing = document.getElementById('req-' + id);
    if (a.state === 'PENDING') {
      if (existing) return;
      fragment('/cards/' + id).then(function (el) {
        if (!el || el.getAttribute('data-state') !== 'PENDING' || document.getElementById('req-' + id)) return;
        if (el.querySelector('.actions') === null) return; // already expired
        queue.appendChild(el);
        updateCount();
        tick();
      });
      return;
    }
    if (existing) {
      existing.remove();
      updateCount();
      say('Request ' + id.slice(0, 8) + ' (' + a.tool + ') is now ' + a.state + (a.decided_by ? ' by ' + a.decided_by : '') + '.');
    }
  }

  // resync re-reads the queue when the stream (re)connects: events sent
  // before it connected, or while it was down, are not replayed. Cards
  // already shown stay as they are (a reason being typed is kept); new
  // ones are added and decided ones removed.
  function resync() {
    if (one) {
      var id = one.getAttribute('data-id');
      fragment('/cards/' + id + '?next=' + encodeURIComponent('/requests/' + id)).then(function (el) {
        var cur = document.getElementById('req-' + id);
        if (el && cur && el.getAttribute('data-state') !== cur.getAttribute('data-state')) { one.replaceChildren(el); tick(); }
      });
      return;
    }
    fetch('/', { credentials: 'same-origin' }).then(function (r) {
      return r.ok ? r.text() : null;
    }).then(function (html) {
      if (!html) return;
      var doc = new DOMParser().parseFromString(html, 'text/html');
      var fresh = doc.getElementById('queue');
      if (!fresh) return;
      var keep = {};
      fresh.querySelectorAll('.card').forEach(function (c) {
        var id = c.getAttribute('data-id');
        keep[id] = true;
        if (!document.getElementById('req-' + id)) queue.appendChild(document.adoptNode(c));
      });
      queue.querySelectorAll('.card').forEach(function (c) {
        if (!keep[c.getAttribute('data-id')]) c.remove();
      });
      updateCount();
      tick();
      refreshGrants();
    }).catch(function () {});
  }

  var es = new EventSource('/events');
  var opened = false;
  es.addEventListener('open', function () {
    if (opened) say('Reconnected.');
    resync();
    opened = true;
    document.body.setAttribute('data-live', 'on');
  });
  es.addEventListener('error', function () {
    document.body.setAttribute('data-live', 'off');
    if (es.readyState === EventSource.CLOSED) say('Live updates stopped: reload the page (you may need to sign in again).');
    else say('Live updates interrupted; reconnecting…');
  });
  es.addEventListener('approval.requested', onEvent);
  es.addEventListener('approval.decided', onEvent);
  ['grant.created', 'grant.used', 'grant.revoked', 'grant.expired'].forEach(function (t) {
    es.addEventListener(t, refreshGrants);
  });
})();
