"""A 375 px phone shows every page whole: code, tables, equations, the page's
actions and its title, without a long page blocking the phone's main thread.

* The columns the build holds code to (``CODE_COLUMNS`` in
  ``autograd_docs/authoring.py``, 44 in the text column and 40 in an admonition
  or a list item) are what the phone's boxes hold, measured in the site's own
  code font at 375 px.
* No code block or table is wider than its box, on any page; a display equation
  that is has the scroll shadows (site.css) and takes keyboard focus (site.js).
* The page's actions are labelled targets of at least 24 px, above the title:
  the title starts at the column's left edge, below them.
* A long page's total blocking time on a phone-class CPU (4x throttled) is
  measured (median of 3 loads) against 600 ms: not yet held (xfail).
"""

from __future__ import annotations

import pytest
from built_site import PHONE, SITE, next_frame, site_pages

from autograd_docs.authoring import CODE_COLUMNS

pytestmark = [pytest.mark.browser, pytest.mark.build]

CONTENT = [path for path in site_pages()
           if path not in {"genindex.html", "search.html", "404.html"}]
# The three largest pages: the most inline SVG math, the most DOM.
LONGEST = sorted(CONTENT, key=lambda path: (SITE / path).stat().st_size)[-3:]

# How many characters of code each visible box shows: [in an admonition or a
# list item?, characters], measured with the box's own font.
COLUMNS = """() => [...document.querySelectorAll('article div.highlight pre')]
  .filter(pre => pre.getClientRects().length && !pre.closest('.cell_output'))
  .map(pre => {
    const style = getComputedStyle(pre), probe = document.createElement('span');
    probe.style.whiteSpace = 'pre';
    probe.textContent = 'x'.repeat(100);
    pre.appendChild(probe);
    const char = probe.getBoundingClientRect().width / 100;
    probe.remove();
    const inner = pre.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return [Boolean(pre.closest('.admonition, li')), Math.floor(inner / char + 0.01)];
  })"""

# What is wider than its box: [kind, how many px hidden, has a scroll cue?, text].
OVERFLOWING = """() => {
  document.querySelectorAll('article details').forEach(d => { d.open = true; });
  const shown = e => e.getClientRects().length > 0;
  const cue = e => getComputedStyle(e).backgroundImage.includes('gradient')
                   && e.getAttribute('tabindex') === '0';
  const out = [], counted = {code: 0, table: 0, equation: 0};
  const look = (kind, box, inner) => {
    if (!shown(box)) return;
    counted[kind] += 1;
    const hidden = Math.round(inner.getBoundingClientRect().width - box.clientWidth);
    if (box.scrollWidth > box.clientWidth + 1 || hidden > 1)
      out.push([kind, Math.max(hidden, box.scrollWidth - box.clientWidth), cue(box),
                box.textContent.trim().slice(0, 50)]);
  };
  document.querySelectorAll('article div.highlight pre').forEach(pre => look('code', pre, pre));
  document.querySelectorAll('article table.docutils').forEach(table =>
    look('table', table.closest('.table-wrapper') || table.parentElement, table));
  document.querySelectorAll('article mjx-container[display="true"]').forEach(m =>
    look('equation', m, m));
  return [out, counted];
}"""


def test_the_phone_boxes_hold_the_columns_the_build_allows(page, traffic):
    page.set_viewport_size(PHONE)
    fits = {"column": [], "admonition or list item": []}
    for path in CONTENT:
        page.goto(path, wait_until="load")
        for nested, columns in page.evaluate(COLUMNS):
            fits["admonition or list item" if nested else "column"].append(columns)
    print({box: f"{min(c)} to {max(c)} characters over {len(c)} boxes"
           for box, c in fits.items() if c})
    for box, columns in fits.items():
        assert columns, f"no code in a {box}: is the site built?"
        assert min(columns) >= CODE_COLUMNS[box], (
            f"a phone's code box in a {box} holds {min(columns)} characters, "
            f"the build allows {CODE_COLUMNS[box]}")
    assert not traffic.console_errors


def test_nothing_is_cut_off_on_a_phone(page, traffic):
    page.set_viewport_size(PHONE)
    cut, scrolling, totals = [], [], {"code": 0, "table": 0, "equation": 0}
    for path in CONTENT:
        page.goto(path, wait_until="load")
        next_frame(page)
        overflowing, counted = page.evaluate(OVERFLOWING)
        for kind, n in counted.items():
            totals[kind] += n
        for kind, hidden, has_cue, text in overflowing:
            seen = f"{path}: {kind} {hidden} px wider than its box: {text!r}"
            (scrolling if kind == "equation" and has_cue else cut).append(seen)
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], path
    print(f"at {PHONE['width']} px over {len(CONTENT)} pages: {totals}; cut off: "
          f"{len(cut)}; equations that scroll, with shadows: {len(scrolling)}")
    print("\n".join(scrolling))
    assert totals["code"] > 100, "too few code blocks: is the site built?"
    assert not cut, "cut off on a phone:\n" + "\n".join(cut)
    assert not traffic.console_errors


def test_the_page_actions_are_labelled_targets_above_the_title(page, traffic):
    page.set_viewport_size(PHONE)
    page.goto("reference/misconceptions.html", wait_until="load")
    actions = page.evaluate("""() => [...document.querySelectorAll(
        '.content-icon-container a, .content-icon-container button')]
      .filter(e => e.getClientRects().length)
      .map(e => { const r = e.getBoundingClientRect();
                  return [e.textContent.trim().replace(/\\s+/g, ' '), r.width, r.height, r.bottom]; })""")
    assert len(actions) >= 4, actions
    for label, width, height, _bottom in actions:
        assert label, "a page action without a name"
        assert width >= 24 and height >= 24, f"{label!r} is {width:.0f}x{height:.0f} px"
    title = page.locator("article h1").bounding_box()
    assert title["y"] >= max(bottom for *_, bottom in actions), (
        "the actions sit beside the title, breaking its lines short")
    assert not traffic.console_errors


# Every long task from the page's first script on, recorded before the page's
# own scripts run; total blocking time is each task's time past 50 ms (an
# upper bound of Lighthouse's, which starts counting at the first paint).
RECORD_LONG_TASKS = """window.__longTasks = [];
new PerformanceObserver(list => window.__longTasks.push(...list.getEntries()))
  .observe({type: 'longtask'});"""
BLOCKING = """() => new Promise(done => setTimeout(() => done(
  window.__longTasks.reduce((sum, t) => sum + Math.max(0, t.duration - 50), 0)), 1500))"""


# Not held reliably: on the 2-core machine shared with other builds (load
# average 24 to 35, so upper bounds) the median of 3 for the three largest
# pages was 58, 218 and 546 ms in one run and 479, 1,239 and 1,350 ms in
# another; most of a long task is style and layout of the inline SVG math.
@pytest.mark.xfail(reason="issue 40: long pages may still block a throttled phone for "
                          "more than 600 ms (style and layout of inline SVG math)")
def test_long_pages_do_not_block_a_phone(context, traffic):
    context.add_init_script(RECORD_LONG_TASKS)
    page = context.new_page()
    page.set_viewport_size(PHONE)
    context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": 4})
    page.goto("index.html", wait_until="load")  # the browser's own first-load costs
    blocking = {}
    for path in LONGEST:
        runs = []
        for _ in range(3):
            page.goto(path, wait_until="load")
            runs.append(page.evaluate(BLOCKING))
        blocking[path] = sorted(runs)[1]
    print("total blocking time, median of 3, CPU 4x slower:",
          {path: f"{ms:.0f} ms" for path, ms in blocking.items()})
    assert max(blocking.values()) < 600, f"total blocking time over 600 ms: {blocking}"
    assert not traffic.console_errors
