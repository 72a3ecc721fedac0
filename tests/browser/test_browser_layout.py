"""Where links to headings land, and whether figures a phone shows can be read.

* A link to a heading lands on it: every link on a page to a heading of the same
  page (the text's own links, and every entry of "On this page"), clicked; and
  every heading another page links to: per page, the last of them in the page
  opened as a deep link (``page.html#anchor``: the layout above it has the most
  to move while the page loads), the others then set as the address's fragment
  in that page. Each is measured once the page has come to rest (no scrolling,
  no layout moving): the heading must sit where the browser aims it, under the
  header (the target's ``scroll-margin-top``), or, near the end of a page that
  cannot scroll that far, be on screen. At a phone's width (375 px), where the
  header covers the top of the page, and as by a reader who asked for reduced
  motion: site.css turns furo's smooth scroll off for them, so the jump is the
  site's own and must take one frame. (furo's smooth scroll itself is furo's:
  only its computed ``scroll-behavior`` is checked here, on one page.)
* (Code, tables and equations on a phone: test_browser_phone_fit.py.)
* Figures a phone can read: the smallest text of every figure (which the build
  writes into its PNG) is at least 9 CSS px at the size a phone shows it. The
  text column is narrowest there, so no wider screen shows a figure smaller.
"""

from __future__ import annotations

import re
import sys
import time
from urllib.parse import unquote, urldefrag, urlparse

import pytest
from built_site import DESKTOP, PHONE, ROOT, SITE, render_every_section, site_pages, site_prefix
from PIL import Image
from playwright.sync_api import Error as PlaywrightError

sys.path.insert(0, str(ROOT / "snippets"))
from figures import LEGIBLE_PX, SMALLEST_TEXT_KEY  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.build]

CONTENT = [path for path in site_pages()
           if path not in {"genindex.html", "search.html", "404.html"}]

# A heading's anchor: the id of its section, or of a label's span just before the
# section's heading (Sphinx writes a heading's second id that way). A label in the
# middle of a section (before an admonition, say) names no heading.
HEADING_TARGET = """id => {
  const target = document.getElementById(id);
  if (!target) return false;
  let next = target.nextElementSibling;
  while (next && next.matches('span:empty')) next = next.nextElementSibling;
  const section = target.matches('section') ? target
    : target.parentElement && target.parentElement.matches('section')
      && next?.matches('h1, h2, h3, h4, h5, h6')
      ? target.parentElement : null;
  return Boolean(section && section.querySelector(':scope > h1, :scope > h2, :scope > h3, '
                                                  + ':scope > h4, :scope > h5, :scope > h6'));
}"""

# The links on the open page, as [href, same page?, [selector, index]: the link
# itself]: each of the text's links (a heading's own link too), then each entry
# of "On this page".
TEXT_LINKS, CONTENTS_LINKS = 'article a[href*="#"]', '.toc-tree a[href*="#"]'
LINKS = f"""() => [['{TEXT_LINKS}'], ['{CONTENTS_LINKS}']].flatMap(([selector]) =>
  [...document.querySelectorAll(selector)]
    .map((a, index) => [a.href, a.pathname === location.pathname, [selector, index]]))"""

# Resolves once nothing has moved for `still` frames in a row (scrolling, images
# arriving, fonts), or after 5 s: then where the target's heading is.
LANDING = """async ([id, still]) => {
  const target = document.getElementById(id);
  const section = target.matches('section') ? target : target.parentElement;
  const heading = section.querySelector(':scope > h1, :scope > h2, :scope > h3, '
                                        + ':scope > h4, :scope > h5, :scope > h6');
  const frame = () => new Promise(done => requestAnimationFrame(done));
  const place = () => `${scrollY} ${target.getBoundingClientRect().top}`;
  // still = 0: measured at once; still = 1: compared, a frame on, with where the
  // jump put the page.
  let last = still === 1 ? place() : null, calm = 0, moving = 0;
  for (const start = performance.now(); calm < still && performance.now() - start < 5000;) {
    await frame();
    const now = place();
    calm = now === last ? calm + 1 : 0;
    moving += last !== null && now !== last;
    last = now;
  }
  const root = document.scrollingElement;
  const header = document.querySelector('.mobile-header');
  const headerBottom = header && getComputedStyle(header).display !== 'none'
    ? header.getBoundingClientRect().bottom : 0;
  return {
    top: Math.round(target.getBoundingClientRect().top),
    aim: parseFloat(getComputedStyle(target).scrollMarginTop) || 0,
    headingTop: Math.round(heading.getBoundingClientRect().top),
    headingBottom: Math.round(heading.getBoundingClientRect().bottom),
    headerBottom: Math.round(headerBottom),
    atAnEnd: root.scrollTop <= 0 || root.scrollTop >= root.scrollHeight - root.clientHeight - 1,
    height: innerHeight,
    behavior: getComputedStyle(document.documentElement).scrollBehavior,
    movingFrames: moving,
  };
}"""

TOLERANCE = 10  # px: the target within this of where the browser aims it


def missed(landing: dict) -> str | None:
    """Why a heading did not land, or None when it did."""
    if "error" in landing:
        return f"not measured: {landing['error']}"
    on_screen = (landing["headingTop"] >= landing["headerBottom"]
                 and landing["headingBottom"] <= landing["height"])
    if abs(landing["top"] - landing["aim"]) <= TOLERANCE and on_screen:
        return None
    if landing["atAnEnd"] and on_screen:  # the page cannot scroll any further
        return None
    return (f"target at {landing['top']} px, aimed at {landing['aim']:.0f} px "
            f"(heading {landing['headingTop']}-{landing['headingBottom']} px, "
            f"header ends at {landing['headerBottom']} px)")


# Follows, in the open page, each of ``links`` in turn ([how: [selector, index]:
# the link clicked, as a reader clicks it, even in a closed drawer; "hash": the
# fragment set as the address's; null: the page was just opened at #id], id) and
# measures where each came to rest (LANDING), with the page's path and whether it
# jumped within the open page. The first waits for the page to come to rest
# (STILL_FRAMES); each jump after it, on a page at rest, is measured at once, in
# the same task as the click: an instant jump has landed by then, a smooth
# scroll has not moved yet (a miss). Drawing a frame for each jump was most of
# the test's time (29 links: 2.1 s with a frame each, 0.3 s without). The last
# jump is measured again a frame on: nothing a jump sets off later (a hashchange
# handler, say) may move it.
# The answers so far are in ``window.landedSoFar``, all of them in
# ``window.landed`` (null until then): each window works through its page
# without waiting for the others, and Python looks once a poll, not once a link.
START_LANDINGS = f"""([links, still]) => {{
  window.landed = null;
  window.landedSoFar = [];
  const land = {LANDING};
  (async () => {{
    for (const [how, id] of links) {{
      if (how === 'hash') location.hash = id;
      else if (how !== null) document.querySelectorAll(how[0])[how[1]].click();
      const rest = window.landedSoFar.length ? 0 : still;
      const where = await land([id, rest]).catch(error => ({{error: String(error)}}));
      window.landedSoFar.push({{...where, page: location.pathname, clicked: how !== null}});
    }}
    if (links.length > 1) {{
      const again = await land([links.at(-1)[1], 1]).catch(error => ({{error: String(error)}}));
      Object.assign(window.landedSoFar.at(-1), again);
    }}
  }})().then(() => {{ window.landed = window.landedSoFar; }},
            error => {{ window.landed = links.map((_, i) => window.landedSoFar[i]
                                                  ?? {{error: String(error)}}); }});
}}"""
# [all answered?, the answers so far]; null once another page is open.
PROGRESS = "() => window.landedSoFar ? [window.landed !== null, window.landedSoFar] : null"
STILL_FRAMES = 6  # frames in a row without movement: the page has come to rest
POLL = 0.05  # s between looks at the windows still at work
# s a link may take to answer (LANDING itself gives up after 5 s): past it the
# page hung; a miss, not a wait.
ANSWER_WITHIN = 20

# The ids on the open page that HEADING_TARGET accepts.
HEADING_IDS = f"() => [...document.querySelectorAll('[id]')].map(e => e.id).filter({HEADING_TARGET})"


def clicks_on(path: str, elsewhere: set[str], headings: dict[str, set[str]]):
    """A task: open ``path``; its links to a heading of the same page, each once,
    each to be clicked in turn, as (what is done, the link, [selector, index]).
    Collects the links to other pages into ``elsewhere`` and the page's heading
    ids into ``headings``."""
    def task(window):
        window.goto(path, wait_until="load")
        ids = set(window.evaluate(HEADING_IDS))
        headings[urldefrag(window.url).url] = ids
        links = window.evaluate(LINKS)
        elsewhere.update(href for href, same, _ in links if not same)
        once: dict[tuple[str, str], list] = {}  # (selector, href) -> the first such link
        for href, same, link in links:
            if same and urldefrag(href).fragment in ids:
                once.setdefault((link[0], href), link)
        return [(f"{path}: click #{urldefrag(href).fragment}"
                 + (" in On this page" if selector == CONTENTS_LINKS else ""), href, link)
                for (selector, href), link in once.items()]
    return task


def in_page_order(path: str, fragments: set[str]) -> list[str]:
    """``fragments`` of the built page ``path`` in the order its ids come."""
    html = (SITE / path).read_text(encoding="utf8")
    return sorted(fragments, key=lambda fragment: (html.find(f'id="{fragment}"'), fragment))


def opens(page_url: str, fragments: set[str], base_url: str):
    """A task: open ``page_url`` as a deep link to the last of ``fragments`` in the
    page (the one the most layout above it could push away while the page loads),
    then go to each of the others as the address's fragment. Measured where they
    name a heading."""
    def task(window):
        *others, last = in_page_order(unquote(page_url[len(base_url):]), fragments)
        window.goto(f"{page_url}#{last}", wait_until="load")
        named = [f for f in [last, *others] if window.evaluate(HEADING_TARGET, f)]
        return [(f"{page_url[len(base_url):]}#{fragment} "
                 + ("opened as a deep link" if fragment == last else "as the address's fragment"),
                 f"{page_url}#{fragment}", None if fragment == last else "hash")
                for fragment in named]
    return task


def may_name_a_heading(href: str, headings: dict[str, set[str]]) -> bool:
    """False only for a link into a page already opened whose fragment is none of
    its headings; a page not opened yet is opened to find out."""
    page, fragment = urldefrag(href)
    return page not in headings or fragment in headings[page]


def stopped(count: int, why: str) -> list[dict]:
    """Answers for the ``count`` links left when a window stopped answering."""
    return [{"error": why}] + [{"error": "not followed: the link before it failed"}] * (count - 1)


def side_by_side(windows: list, tasks) -> list[tuple[str, dict]]:
    """Run ``tasks`` in the windows, each window one task at a time and each at
    its own pace: a window whose links have all come to rest is read and sets
    its next task going while the others are still at work. Returns (what was
    done, where the heading landed) for every link."""
    tasks, landed = iter(tasks), []
    # window -> [its links, their answers so far, when the last came], until done
    waiting: dict[int, list] = {}

    def start_next(index: int) -> None:
        for task in tasks:
            if links := task(windows[index]):
                windows[index].evaluate(START_LANDINGS, [
                    [[link, urldefrag(href).fragment] for _, href, link in links], STILL_FRAMES])
                waiting[index] = [links, [], time.monotonic()]
                return

    def finish(index: int, answers: list[dict]) -> None:
        links = waiting.pop(index)[0]
        landed.extend((done, at) for (done, _, _), at in zip(links, answers, strict=True))
        start_next(index)

    for index in range(len(windows)):
        start_next(index)
    while waiting:
        for index, state in list(waiting.items()):
            links, so_far, since = state
            try:
                progress = windows[index].evaluate(PROGRESS)
            except PlaywrightError:  # a page being replaced, or closed
                progress = None
            if progress is None:
                finish(index, so_far + stopped(len(links) - len(so_far),
                                               "this click opened another page"))
            elif progress[0]:
                finish(index, progress[1])
            elif len(progress[1]) > len(so_far):
                state[1:] = [progress[1], time.monotonic()]
            elif time.monotonic() - since > ANSWER_WITHIN:
                finish(index, so_far + stopped(len(links) - len(so_far),
                                               f"no answer within {ANSWER_WITHIN} s"))
        time.sleep(POLL)
    return landed


class ScriptedWindow:
    """A window whose page answers PROGRESS from a script: each look takes the
    next answer (the last one repeats). No browser: side_by_side's own logic."""

    def __init__(self, answers: list):
        self.answers = answers

    def evaluate(self, script: str, *args):
        if script == PROGRESS:
            return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return None


def test_a_window_that_leaves_its_page_or_hangs_is_a_miss_said_at_once(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ANSWER_WITHIN", 0.2)
    here = {"top": 0, "aim": 0, "headingTop": 0, "headingBottom": 10, "headerBottom": 0,
            "atAnEnd": False, "height": 100}
    links = [(f"click #{n}", f"page.html#{n}", ["a", n]) for n in range(3)]
    leaves = ScriptedWindow([[False, []], [False, [here]], None])
    hangs = ScriptedWindow([[False, [here, here]]])
    start = time.monotonic()
    landed = side_by_side([leaves, hangs], [lambda window: links, lambda window: links])
    assert time.monotonic() - start < 5
    assert sorted((done, str(missed(where))) for done, where in landed) == sorted([
        ("click #0", "None"), ("click #1", "not measured: this click opened another page"),
        ("click #2", "not measured: not followed: the link before it failed"),
        ("click #0", "None"), ("click #1", "None"),
        ("click #2", "not measured: no answer within 0.2 s")])


def clicked_and_moved(landed: list[tuple[str, dict]]) -> dict[str, bool]:
    """Page -> whether any jump within it (a click, a fragment set) scrolled over
    several frames."""
    moved: dict[str, bool] = {}
    for _, where in landed:
        if where["clicked"]:
            moved[where["page"]] = moved.get(where["page"], False) or where["movingFrames"] > 1
    return moved


@pytest.mark.parametrize("motion", ["reduce"])
def test_links_to_headings_land_on_them(windows, base_url, motion):
    pages, traffic = windows
    for page in pages:
        page.set_viewport_size(PHONE)
    elsewhere: set[str] = set()
    headings: dict[str, set[str]] = {}
    landed = side_by_side(pages, [clicks_on(path, elsewhere, headings) for path in CONTENT])
    deep: dict[str, set[str]] = {}  # page -> the fragments other pages link to
    for href in sorted(elsewhere):
        if href.startswith(base_url) and may_name_a_heading(href, headings):
            page_url, fragment = urldefrag(href)
            deep.setdefault(page_url, set()).add(fragment)
    landed += side_by_side(pages, [opens(page_url, fragments, base_url)
                                   for page_url, fragments in sorted(deep.items())])
    misses = [f"{done}: {why}" for done, where in landed if (why := missed(where))]
    contents = sum(" in On this page" in done for done, _ in landed)
    print(f"{len(landed)} links to headings followed ({contents} in On this page), "
          f"{len(misses)} missed")
    assert len(landed) > 50 and contents > 50, (
        f"only {len(landed)} links to headings found, {contents} in On this page: "
        "is the site built?")
    assert not misses, (f"at {PHONE['width']} px, {len(misses)} of {len(landed)} links "
                        "to a heading did not land on it:\n  " + "\n  ".join(misses))
    assert {where["behavior"] for _, where in landed} == {"auto"}, (
        "site.css no longer turns furo's smooth scroll off for reduced motion")
    scrolled = [page for page, moved in clicked_and_moved(landed).items() if moved]
    assert not scrolled, f"for reduced motion, a click scrolled over several frames on {scrolled}"
    assert not traffic.console_errors


def test_deep_links_into_the_longest_page_land_on_a_desktop(new_context, base_url):
    """Each section of the longest page opened as a deep link at 1280 px. site.css
    leaves sections below the screen unrendered; the one above a linked section
    rendered after the jump and pushed the heading 314 px down here, where the
    phone's header and margins hid it in the test above (site.js renders it first)."""
    path = max(CONTENT, key=lambda path: (SITE / path).stat().st_size)
    html = (SITE / path).read_text(encoding="utf8")
    sections = re.findall(r'<section id="([^"]+)"', html)[1:]  # the title's own first
    page = new_context(reduced_motion="reduce").new_page()
    page.set_viewport_size(DESKTOP)
    misses = []
    for fragment in sections:
        page.goto("about:blank")  # a load of its own, not a jump within the page
        page.goto(f"{base_url}{path}#{fragment}", wait_until="load")
        why = missed(page.evaluate(LANDING, [fragment, STILL_FRAMES]))
        if why:
            misses.append(f"{path}#{fragment}: {why}")
    assert len(sections) > 5, f"{path} has {len(sections)} sections: is the site built?"
    assert not misses, "\n".join(misses)


SCROLL_BEHAVIOR = "() => getComputedStyle(document.documentElement).scrollBehavior"


def test_only_a_reader_who_asked_for_reduced_motion_gets_the_jump(page, traffic):
    """The other side of site.css's rule: without the preference, furo's smooth
    scroll stays on (the test above holds the "auto" under reduced motion)."""
    page.goto(CONTENT[0], wait_until="load")
    assert page.evaluate(SCROLL_BEHAVIOR) == "smooth"
    page.emulate_media(reduced_motion="reduce")
    assert page.evaluate(SCROLL_BEHAVIOR) == "auto"
    assert not traffic.console_errors


# Every figure of the open page: [its file's path, its natural width, the width of
# the picture on screen (the frame site.css draws around it taken off)].
FIGURES = """() => [...document.querySelectorAll('article .cell_output img')].map(img => {
  const style = getComputedStyle(img);
  const frame = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
  return [new URL(img.currentSrc || img.src).pathname, img.naturalWidth,
          img.getBoundingClientRect().width - frame];
})"""


def test_figure_text_is_legible_on_a_phone(page, traffic):
    page.set_viewport_size(PHONE)
    prefix, seen, small = site_prefix(), 0, []
    for path in [path for path in CONTENT if "_images/" in (SITE / path).read_text("utf8")]:
        page.goto(path, wait_until="load")
        page.wait_for_function("() => [...document.images].every(img => img.complete)")
        # Every section laid out first, as a reader who scrolled to a figure sees it
        # (site.css skips those below the screen): a figure once read 0 px wide
        # here, in one rehearsal of 6 (not reproduced; the skipping is the suspect).
        render_every_section(page)
        for src, natural, shown in page.evaluate(FIGURES):
            file = SITE / unquote(urlparse(src).path).removeprefix(prefix)
            with Image.open(file) as png:
                smallest = png.text.get(SMALLEST_TEXT_KEY)
            assert smallest, f"{path}: {file.name} was not drawn by figures.show"
            seen += 1
            on_screen = float(smallest) * shown / natural
            if on_screen < LEGIBLE_PX:
                small.append(f"{path}: {file.name}: {on_screen:.1f} px")
    print(f"{seen} figures at {PHONE['width']} px")
    assert seen >= 10, f"only {seen} figures: is the site built?"
    assert not small, (f"figure text under {LEGIBLE_PX} CSS px at "
                       f"{PHONE['width']} px:\n  " + "\n  ".join(small))
    assert not traffic.console_errors
