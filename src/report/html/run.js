'use strict';
// The run report: pages through the case index (failing first), filters it, and opens a
// case by turning its inert detail block into DOM. Every text from the results is set with
// textContent or comes from a block the report already escaped.
(function () {
  var index = JSON.parse(document.getElementById('harness-index').textContent);
  var cases = index.cases;
  var form = document.getElementById('filters');
  var rows = document.getElementById('case-rows');
  var shown = document.getElementById('shown');
  var pageOf = document.getElementById('page-of');
  var pager = document.getElementById('pager');
  var marks = { failed: '\u2717 FAILED', flaky: '~ flaky', passed: '\u2713 passed', ungated: '\u25cb not gated' };
  var list = cases;
  var page = 0;
  var opened = {};

  function field(name) { return form.elements[name].value; }

  // Text as a reviewer must read it: the characters that hide or reorder what is there
  // (controls, bidirectional controls, invisible ones) spelled out, as the report's own
  // escaping and the terminal spell them.
  var hidden = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;
  function visible(text) {
    return String(text).replace(hidden, function (ch) {
      return ch === '\n' ? '\\n' : ch === '\r' ? '\\r' : '\\u{' + ch.charCodeAt(0).toString(16) + '}';
    });
  }

  function filter() {
    var st = field('status'), fam = field('family'), pro = field('profile'), tag = field('tag');
    var q = field('q').toLowerCase();
    list = cases.filter(function (c) {
      return (!st || c.status === st) && (!fam || c.family === fam) && (!pro || c.profile === pro) &&
        (!tag || c.tags.indexOf(tag) >= 0) && (!q || c.id.toLowerCase().indexOf(q) >= 0);
    });
    page = 0;
    draw();
  }

  function cell(tr, text, cls) {
    var td = document.createElement('td');
    td.textContent = visible(text);
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  // A detail block: raw deflate, base64; resolves to its HTML.
  function inflate(id) {
    var block = document.getElementById(id);
    if (!block) return Promise.resolve('<p class="note">This report has no detail block ' + id + '.</p>');
    var bin = atob(block.textContent);
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
    return new Response(stream).text();
  }

  function fill(td, n) {
    return inflate('d' + n).then(function (html) {
      td.innerHTML = html;
      var slot = td.querySelector('.cmp-slot');
      if (!slot) return;
      return inflate(slot.getAttribute('data-block')).then(function (lanes) {
        slot.innerHTML = lanes;
        var own = slot.querySelector('.tl-label[data-n="' + n + '"]');
        if (own) own.classList.add('current');
      });
    }).then(function () {
      td.setAttribute('data-ready', 'true');
    }, function (e) {
      td.textContent = 'This case could not be shown: ' + e;
    });
  }

  function detailRow(n) {
    var tr = document.createElement('tr');
    tr.className = 'detail';
    var td = document.createElement('td');
    td.colSpan = 9;
    td.textContent = 'loading\u2026';
    tr.appendChild(td);
    if (document.readyState === 'loading') {
      document.addEventListener('DOMContentLoaded', function () { fill(td, n); });
    } else {
      fill(td, n);
    }
    return tr;
  }

  function caseRow(c) {
    var tr = document.createElement('tr');
    tr.className = c.status;
    cell(tr, marks[c.status] || c.status, 'st');
    var td = document.createElement('td');
    td.className = 'id';
    var b = document.createElement('button');
    b.type = 'button';
    b.className = 'open';
    b.textContent = visible(c.id);
    b.setAttribute('aria-expanded', opened[c.n] ? 'true' : 'false');
    b.setAttribute('data-n', c.n);
    td.appendChild(b);
    tr.appendChild(td);
    cell(tr, c.profile);
    cell(tr, c.family);
    cell(tr, c.outcome);
    cell(tr, c.iterations, 'num');
    cell(tr, c.interventions, 'num');
    cell(tr, c.time, 'num');
    cell(tr, c.why, 'why');
    return tr;
  }

  function draw() {
    var size = +field('size');
    var pages = Math.max(1, Math.ceil(list.length / size));
    if (page >= pages) page = pages - 1;
    var from = page * size;
    var to = Math.min(list.length, from + size);
    var frag = document.createDocumentFragment();
    for (var i = from; i < to; i++) {
      frag.appendChild(caseRow(list[i]));
      if (opened[list[i].n]) frag.appendChild(detailRow(list[i].n));
    }
    if (!list.length) {
      var tr = document.createElement('tr');
      cell(tr, 'No case matches these filters.').colSpan = 9;
      frag.appendChild(tr);
    }
    rows.replaceChildren(frag);
    var failing = list.filter(function (c) { return c.status === 'failed' || c.status === 'regressed'; }).length;
    shown.textContent = (list.length ? 'Showing ' + (from + 1) + '\u2013' + to + ' of ' + list.length : 'Showing 0 of 0') +
      ' cases' + (list.length < cases.length ? ' (filtered from ' + cases.length + ')' : '') +
      '; ' + failing + ' failing.';
    pageOf.textContent = 'page ' + (page + 1) + ' of ' + pages;
    pager.querySelector('[data-page=prev]').disabled = page === 0;
    pager.querySelector('[data-page=next]').disabled = page >= pages - 1;
  }

  function toggle(button) {
    var n = button.getAttribute('data-n');
    var tr = button.closest('tr');
    var next = tr.nextElementSibling;
    if (opened[n]) {
      delete opened[n];
      if (next && next.className === 'detail') next.remove();
      button.setAttribute('aria-expanded', 'false');
    } else {
      opened[n] = true;
      tr.after(detailRow(n));
      button.setAttribute('aria-expanded', 'true');
    }
  }

  form.addEventListener('submit', function (e) { e.preventDefault(); });
  form.addEventListener('input', filter);
  form.addEventListener('change', filter);
  pager.addEventListener('click', function (e) {
    var b = e.target.closest('button');
    if (!b) return;
    page += b.getAttribute('data-page') === 'next' ? 1 : -1;
    if (page < 0) page = 0;
    draw();
  });
  rows.addEventListener('click', function (e) {
    var b = e.target.closest('button.open');
    if (b) { toggle(b); return; }
    var all = e.target.closest('button.expand-lines');
    if (all) {
      var lines = all.closest('.tl').querySelectorAll('details.lines');
      var open = all.getAttribute('aria-pressed') !== 'true';
      for (var i = 0; i < lines.length; i++) lines[i].open = open;
      all.setAttribute('aria-pressed', open ? 'true' : 'false');
      all.textContent = open ? 'Hide the event lines' : 'Show every event line';
    }
  });

  // `#case=ID` opens that case.
  var wanted = /^#case=(.*)$/.exec(location.hash);
  if (wanted) {
    var id = decodeURIComponent(wanted[1]);
    for (var i = 0; i < cases.length; i++) {
      if (cases[i].id === id) {
        opened[cases[i].n] = true;
        page = Math.floor(i / +field('size'));
        break;
      }
    }
  }
  draw();
  if (window.performance && performance.mark) performance.mark('harness-cases-drawn');
})();
