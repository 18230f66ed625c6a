'use strict';
// The sweep page: opening a point of a plot (click, Enter, Space) or a setting's button lists
// the runs it fired on, below its panel. Every text is set with textContent.
(function () {
  var data = JSON.parse(document.getElementById('harness-sweep').textContent);
  var SHOWN = 200;
  var outcomes = {
    caught: '\u2713 caught',
    false_alarm: '\u2717 false alarm',
    before_loop: '\u25cb before the loop began',
    unlabelled_or_failed: '\u00b7 unlabelled or failed run'
  };

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }

  function runsTable(fires, limit) {
    var table = el('table');
    var head = el('tr');
    ['run', 'fired at call', 'verdict', 'what it was'].forEach(function (h) {
      var th = el('th', h);
      th.scope = 'col';
      head.appendChild(th);
    });
    var thead = el('thead');
    thead.appendChild(head);
    table.appendChild(thead);
    var body = el('tbody');
    fires.slice(0, limit).forEach(function (f) {
      var tr = el('tr');
      tr.appendChild(el('td', data.runs[f[0]], 'mono'));
      tr.appendChild(el('td', String(f[1]), 'num'));
      tr.appendChild(el('td', f[2]));
      tr.appendChild(el('td', outcomes[f[3]] || f[3], 'o-' + f[3]));
      body.appendChild(tr);
    });
    table.appendChild(body);
    return table;
  }

  function setting(i) {
    var s = data.settings[i];
    var fires = data.fires[i];
    var box = el('div', undefined, 'sw-setting');
    box.appendChild(el('h4', s.detector + ' ' + s.params));
    box.appendChild(el('p',
      'caught ' + s.caught + ' of ' + s.stuck + ' stuck runs (recall ' + s.recall + '); false alarms ' +
      s.false_alarms + ' of ' + s.successful + ' successful runs; precision ' + s.precision +
      '; median detection delay ' + s.delay + ' calls; turns saved ' + s.turns_saved +
      (s.tokens_saved === null ? '' : '; tokens saved ' + s.tokens_saved) + '.'));
    if (!fires.length) {
      box.appendChild(el('p', 'It fired on no run.'));
      return box;
    }
    box.appendChild(el('p', 'Fired on ' + fires.length + ' run' + (fires.length === 1 ? '' : 's') + ':'));
    var table = runsTable(fires, SHOWN);
    box.appendChild(table);
    if (fires.length > SHOWN) {
      var more = el('button', 'Show all ' + fires.length + ' runs');
      more.type = 'button';
      more.addEventListener('click', function () {
        table.replaceWith(runsTable(fires, fires.length));
        more.remove();
      });
      box.appendChild(more);
    }
    return box;
  }

  function open(target) {
    var panel = document.getElementById('fires-' + target.getAttribute('data-panel'));
    var chosen = target.getAttribute('data-s').split(',');
    panel.replaceChildren();
    chosen.forEach(function (i) { panel.appendChild(setting(+i)); });
    panel.hidden = false;
    var points = document.querySelectorAll('.pt.sel');
    for (var k = 0; k < points.length; k++) points[k].classList.remove('sel');
    if (target.classList.contains('pt')) target.classList.add('sel');
  }

  document.addEventListener('click', function (e) {
    var t = e.target.closest('[data-s]');
    if (t) open(t);
  });
  document.addEventListener('keydown', function (e) {
    var t = e.target.closest && e.target.closest('.pt[data-s]');
    if (t && (e.key === 'Enter' || e.key === ' ')) {
      e.preventDefault();
      open(t);
    }
  });
})();
