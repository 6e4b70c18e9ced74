// tests/vmprofd/flamegraph_selftest.js — drives a vmprofd flame graph the
// way a user would, inside headless Chromium: flamegraph_test.sh appends
// this script to a copy of the SVG (after the SVG's own script, so that
// one has run), Chromium loads it with --dump-dom, and this script leaves
// what it saw as JSON in a desc element with the id "selftest", for
// check_flamegraph_svg.py to judge against the SVG's numbers. It hovers
// Richards>>benchmark, clicks it (zoom), clicks "Reset zoom", searches
// with the Search button and with Ctrl-F (window.prompt answered here),
// and presses Escape.
(function () {
    'use strict';
    var R = {errors: []};
    function all() { return Array.prototype.slice.call(document.querySelectorAll('g.f')); }
    // the widest frame of that name (a method can be drawn under several
    // callers), or with `under`, the widest among that frame's callees
    function frame(name, under) {
        return all().filter(function (g) {
            if (g.querySelector('title').textContent.indexOf(name + ' (') !== 0)
                return false;
            if (!under)
                return true;
            var x = +g.getAttribute('data-x'), ux = +under.getAttribute('data-x');
            return +g.getAttribute('data-d') === +under.getAttribute('data-d') + 1 && x >= ux &&
                x < ux + +under.getAttribute('data-w');
        }).sort(function (a, b) { return b.getAttribute('data-n') - a.getAttribute('data-n'); })[0];
    }
    function width(g) { return +g.querySelector('rect').getAttribute('width'); }
    function hidden() { return all().filter(function (g) { return g.style.display === 'none'; }).length; }
    function mouse(el, type) { el.dispatchEvent(new MouseEvent(type, {bubbles: true, cancelable: true})); }
    function key(k, ctrl) {
        var e = new KeyboardEvent('keydown', {key: k, ctrlKey: !!ctrl, bubbles: true, cancelable: true});
        document.dispatchEvent(e);
    }
    try {
        var status = document.getElementById('status'), matched = document.getElementById('matched');
        var reset = document.getElementById('reset');
        var bench = frame('Richards>>benchmark'), child = bench && frame('RichardsScheduler>>schedule', bench);
        R.frames = all().length;
        R.found = !!bench && !!child;
        if (R.found) {
            R.benchDepth = +bench.getAttribute('data-d');
            mouse(bench, 'mouseover');
            R.hover = status.textContent;
            mouse(bench, 'mouseout');
            R.hoverOut = status.textContent;

            mouse(bench, 'click');
            R.zoomWidth = width(bench);
            R.zoomLabel = bench.querySelector('text').textContent;
            R.zoomChildWidth = width(child);
            R.zoomHidden = hidden();
            R.zoomDimmed = document.querySelectorAll('g.f.dim').length;
            R.resetShownWhenZoomed = reset.style.display !== 'none';

            mouse(reset, 'click');
            R.resetWidth = width(bench);
            R.resetHidden = hidden();
            R.resetDimmed = document.querySelectorAll('g.f.dim').length;
            R.resetShownAfterReset = reset.style.display !== 'none';
        }
        window.prompt = function () { return 'Richards'; };
        mouse(document.getElementById('search'), 'click');
        R.search = matched.textContent;
        R.searchHits = document.querySelectorAll('g.f.hit').length;

        window.prompt = function () { return '^main$'; };
        key('f', true);
        R.ctrlF = matched.textContent;
        R.ctrlFHits = document.querySelectorAll('g.f.hit').length;

        key('Escape');
        R.escape = matched.textContent;
        R.escapeHits = document.querySelectorAll('g.f.hit').length;
    } catch (e) {
        R.errors.push(String(e && e.stack || e));
    }
    var out = document.createElementNS('http://www.w3.org/2000/svg', 'desc');
    out.setAttribute('id', 'selftest');
    out.textContent = JSON.stringify(R);
    document.documentElement.appendChild(out);
})();
