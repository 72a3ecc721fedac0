""""Show checked claims": a reader reveals the sentences the build checked, and
what each check compared and over what.

The pages come from the last build's record of what its checks proved
(``_build/doctrees/claims.json``): on every page with claims, each checked
sentence is found and highlighted as the sentence (``highlight_problems``, run
on test_browser_pages.py's one load of each page); the page
with the most claims (and the landing page, when it has any) is driven at a
phone's and a desktop's width: the toggle, every detail, the keyboard, sideways
overflow, axe-core in the light theme at both widths and in the dark one at the
desktop's (switched in the same load), and no layout shift while it is off.
"""

from __future__ import annotations

import json
import re

import pytest
from built_site import (
    DESKTOP,
    PHONE,
    ROOT,
    SITE,
    accessibility_problems,
    inject_axe,
    next_frame,
    render_every_section,
)
from playwright.sync_api import expect
from test_browser_phone_fit import past_the_edge

pytestmark = [pytest.mark.browser, pytest.mark.build]

CLAIMS_FILE = ROOT / "_build" / "doctrees" / "claims.json"
TOGGLE = ".checked-claims-toggle button"


def claimed_pages() -> dict[str, list[dict]]:
    """Page path -> the checks that quote it, for the pages that have any: one per
    quote and check line (a check run in a loop is one marker, with its runs)."""
    if not CLAIMS_FILE.is_file():
        return {}
    recorded = json.loads(CLAIMS_FILE.read_text(encoding="utf8"))
    pages = {}
    for docname, claims in recorded.items():
        first_runs: dict[tuple, dict] = {}
        for claim in claims:  # the reveal shows a looped check's first run
            first_runs.setdefault((claim["quote"], claim["check_line"]), claim)
        if first_runs:
            pages[f"{docname}.html"] = list(first_runs.values())
    return pages


CLAIMED = claimed_pages()
# Driven in full: the page with the most claims, and the landing page.
DRIVEN = sorted({max(CLAIMED, key=lambda path: len(CLAIMED[path]), default=None),
                 "index.html" if "index.html" in CLAIMED else None} - {None})
NO_CLAIMS = pytest.mark.skipif(not CLAIMED, reason=f"no page has checked claims in {CLAIMS_FILE}")

VIEWPORTS = {"phone": PHONE, "desktop": DESKTOP}

# Where every element of the article and its header is drawn: what a layout
# shift would move.
POSITIONS = """() => [...document.querySelectorAll(
    '.content-icon-container *, article h1, article h2, article p, article li, article pre')]
  .map(el => { const r = el.getBoundingClientRect();
               return [Math.round(r.x), Math.round(r.y), Math.round(r.width)]; })"""



def settled_positions(page) -> list:
    """POSITIONS once two readings 100 ms apart agree (at most 2 s): a rehearsal CI saw
    one page's text 42 px lower after the reveal went on and off, from a layout still
    settling when the first reading was taken."""
    last = page.evaluate(POSITIONS)
    for _ in range(20):
        page.wait_for_timeout(100)
        now = page.evaluate(POSITIONS)
        if now == last:
            break
        last = now
    return last


# The sentences the reveal highlights, as text.
HIGHLIGHTED = """() => CSS.highlights.has('checked-claim')
  ? [...CSS.highlights.get('checked-claim')].map(r => r.toString().replace(/\\s+/g, ' '))
  : []"""

# From now on, every layout shift and what it moved (read with SHIFTS_SEEN).
WATCH_SHIFTS = """() => {
  window.shiftsSeen = [];
  new PerformanceObserver(list => list.getEntries().forEach(entry => {
    if (!entry.hadRecentInput) window.shiftsSeen.push({value: entry.value,
      sources: entry.sources.map(s => s.node ? s.node.nodeName + '.' + s.node.className : '?')});
  })).observe({type: 'layout-shift'});
}"""
SHIFTS_SEEN = """() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(
  () => setTimeout(() => done(window.shiftsSeen), 300))))"""


def open_page(page, path: str, viewport: dict) -> None:
    page.set_viewport_size(viewport)
    page.goto(path, wait_until="load")
    next_frame(page)


def reveal(page, on: bool = True) -> None:
    toggle = page.locator(TOGGLE)
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true" if on else "false")


# Each marker's state once clicked: [aria-expanded, its detail shown?, the
# detail's text, the href of its link to the source]. Read in one call.
DETAILS = """() => [...document.querySelectorAll('.claim-marker')].map(marker => {
  const detail = document.getElementById(marker.getAttribute('aria-controls'));
  const link = detail && detail.querySelector('a');
  return [marker.getAttribute('aria-expanded'),
          Boolean(detail && !detail.hidden && detail.getClientRects().length),
          detail ? detail.innerText : '', link ? link.getAttribute('href') || '' : ''];
})"""


# Clicks every marker, then reads what a mouse at each marker's centre would hit,
# in one call (a Playwright click each took 0.15 s, 183 of them on the page
# driven, most of it a layout of the page between clicks). Read with every
# detail open, the hit test sees whatever an open detail covers, above or below
# it: a marker it does not find under its own centre would give a reader's click
# to what covers it. What covered each marker, or null. (Playwright's real mouse
# click on a marker: test_a_detail_opens_the_check_at_its_line.)
CLICK_EACH_MARKER = """() => {
  const markers = [...document.querySelectorAll('.claim-marker')];
  markers.forEach(marker => marker.dispatchEvent(
    new MouseEvent('click', {bubbles: true, cancelable: true, view: window})));
  return markers.map(marker => {
    marker.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
    const r = marker.getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return hit && marker.contains(hit) ? null
      : hit ? `${hit.nodeName}.${hit.className}` : 'nothing (off screen)';
  });
}"""


def said_by(claim: dict) -> list[str]:
    """What a check's detail says: its scope, what was compared (shortened as the
    record shortens it), the torch, its families."""
    scope = (f"Checked over {claim['members']} member" if claim["scope"] == "family"
             else "Checked on ")
    return [scope, " ".join(claim["compared"].split())[:40], f"torch {claim['torch']}",
            *claim.get("families", []), *([claim["fixed"]] if "fixed" in claim else [])]


def detail_problems(page, claims: list[dict]) -> list[str]:
    """Open every marker's detail, as a reader clicks it; each must say its check,
    where it is and the torch."""
    # Every section laid out first: one that renders as a click scrolls to it
    # moves the markers below it between the aim and the click.
    render_every_section(page)
    problems = [f"marker {index + 1} is covered by {cover}"
                for index, cover in enumerate(page.evaluate(CLICK_EACH_MARKER)) if cover]
    for index, (expanded, shown, text, href) in enumerate(page.evaluate(DETAILS)):
        if expanded != "true" or not shown:
            problems.append(f"detail {index + 1} not open after its marker's click")
            continue
        text = " ".join(text.split())
        line = next((int(word.rstrip(".")) for before, word in zip(text.split(), text.split()[1:])
                     if before == "line"), None)
        # One line may hold a check run in a loop over several quotes, each drawing
        # its own members: the detail must say what one of them ran.
        unsaid = [[word for word in said_by(claim) if word not in text]
                  for claim in claims if claim["check_line"] == line]
        if not unsaid:
            problems.append(f"detail {index + 1} names no check line of the page's: {text!r}")
            continue
        if all(unsaid):
            problems += [f"detail {index + 1} does not say {word!r}: {text!r}"
                         for word in unsaid[0]]
        # Reader words: code whole (not cut inside a backtick), a family by its name.
        problems += [f"detail {index + 1} says {words!r}: {text!r}"
                     for words in ("…`", "values Hypothesis draws", "the stated value")
                     if words in text]
        scope_said = text.split(" Compared: ")[0]  # the detail's own words on its reach
        if "proved" in scope_said or "proven" in scope_said:
            problems.append(f"detail {index + 1} claims proof: {text!r}")
        if not re.fullmatch(rf"(\.\./)*_source-lines/.+\.md\.html#L-{line}", href):
            problems.append(f"detail {index + 1} does not link the numbered source: {href!r}")
    return problems


def highlight_problems(page, path: str) -> list[str]:
    """On ``path``, open at a desktop's width: the build marked the right element,
    and its pattern finds the sentence there (or, for at most one sentence in five,
    paints the element whole); turned off, the reveal leaves the page as it was.
    Run by test_browser_pages.py's per-page test, on the one load of each page."""
    claims = CLAIMED[path]
    before = settled_positions(page)
    toggle = page.locator(TOGGLE)
    expect(toggle).to_have_accessible_name(f"Show checked claims: {len(claims)} checks")
    reveal(page)
    expect(page.locator(".claim-marker")).to_have_count(len(claims))
    problems = []
    # A sentence the build's pattern cannot find (e.g. across an equation it
    # cannot spell) has its whole element painted instead: allowed, but rare.
    # Counted in sentences (distinct quotes, elements painted whole), not checks:
    # several checks proving one table row are one sentence painted whole.
    in_whole = page.eval_on_selector_all(".claim-whole .claim-marker", "els => els.length")
    wholes = page.eval_on_selector_all(".claim-whole", "els => els.length")
    sentences = len({claim["quote"] for claim in claims})
    if wholes > sentences // 5:
        problems.append(
            f"{wholes} of {sentences} sentences not found in the element marked for them: "
            + str(page.eval_on_selector_all(".claim-whole", "els => els.map(e => e.textContent)")))
    highlighted = page.evaluate(HIGHLIGHTED)
    if len(highlighted) + in_whole < len(claims) or not all(text.strip() for text in highlighted):
        problems.append(f"{len(claims)} claims, highlighted {highlighted}")
    reveal(page, on=False)
    expect(page.locator(".claim-marker, .claim-detail")).to_have_count(0)
    if page.evaluate(HIGHLIGHTED) != []:
        problems.append("highlights left after the reveal was turned off")
    if settled_positions(page) != before:
        problems.append("the text moved after the reveal went on and off")
    return [f"checked claims: {problem}" for problem in problems]


@NO_CLAIMS
@pytest.mark.parametrize("width", sorted(VIEWPORTS))
@pytest.mark.parametrize("path", DRIVEN)
def test_the_reveal_shows_what_proved_each_sentence(page, traffic, path, width):
    claims, viewport = CLAIMED[path], VIEWPORTS[width]
    open_page(page, path, viewport)
    problems = []
    expect(page.locator(TOGGLE)).to_be_visible()
    reveal(page)
    problems += detail_problems(page, claims)
    # Numbered as a reader meets them (checks may come in another order).
    names = page.eval_on_selector_all(".claim-marker", "els => els.map(el => el.textContent.trim())")
    expected = [f"What check {k} of {len(claims)} compared" for k in range(1, len(names) + 1)]
    if [name.removesuffix(" (partly checked)") for name in names] != expected:
        problems.append(f"markers not numbered in reading order: {names[:6]}")
    # Touch targets of 24 px at least: the toggle and every marker.
    small = page.eval_on_selector_all(f"{TOGGLE}, .claim-marker", """els => els
        .map(el => el.getBoundingClientRect()).filter(r => r.width < 24 || r.height < 24)
        .map(r => [r.width, r.height])""")
    if small:
        problems.append(f"touch targets under 24 px: {small[:5]}")
    inject_axe(page)
    # With every detail open: nothing runs off a phone, nothing fails axe, in the
    # light theme and (at the desktop's width) the dark one, switched in this load
    # as furo's toggle does: the dark theme changes colours, CSS variables that no
    # width changes, so its colour rules run once.
    problems += accessibility_problems(page, "article, .content-icon-container",
                                       dark=viewport == DESKTOP)
    if viewport == PHONE:
        problems += past_the_edge(page)
    problems += [f"console error: {error}" for error in traffic.console_errors]
    assert not problems, f"{path} at {width}:\n  " + "\n  ".join(problems)


def arrival(context, path: str, viewport: dict, script: dict | None) -> tuple[list, list]:
    """Load ``path`` without claims.js and let it come to rest (fonts loaded, two
    frames); then add ``script`` (claims.js itself when None). Returns where every
    element was before and after, and the layout shifts from the moment it was added.
    Measured on one resting page, so load-time shifts of furo's own (its header's
    icons move a little, or not, as a page loads) cannot count for or against it."""
    page = context.new_page()
    page.route("**/claims.js*", lambda route: route.abort())
    open_page(page, path, viewport)
    page.evaluate("() => document.fonts.ready.then(() => null)")
    next_frame(page)
    before = page.evaluate(POSITIONS)
    page.evaluate(WATCH_SHIFTS)
    page.unroute("**/claims.js*")
    if script is None:
        expect(page.get_by_role("status")).to_have_count(0)
        page.add_script_tag(url=page.eval_on_selector('script[src*="claims.js"]', "el => el.src"))
        expect(page.get_by_role("status")).to_have_count(1)
    else:
        page.add_script_tag(**script)
    shifts = page.evaluate(SHIFTS_SEEN)
    after = page.evaluate(POSITIONS)
    page.close()
    return [(b, a) for b, a in zip(before, after) if b != a], shifts


@NO_CLAIMS
@pytest.mark.parametrize("width", sorted(VIEWPORTS))
def test_the_script_arriving_moves_nothing(context, traffic, width):
    """claims.js arriving on a page at rest moves no element and makes no layout
    shift; a script that does move the article is caught by the same measure."""
    path, viewport = DRIVEN[0], VIEWPORTS[width]
    moved, shifts = arrival(context, path, viewport, script=None)
    assert not moved, f"{path}: the script moved elements (x, y, width): {moved[:5]}"
    assert not shifts, f"{path}: the script shifted the layout: {shifts}"
    pushes = {"content": "document.querySelector('article').style.marginTop = '80px'"}
    moved, shifts = arrival(context, path, viewport, script=pushes)
    assert moved and any("ARTICLE" in source for shift in shifts for source in shift["sources"]), (
        f"{path}: a script pushing the article down 80 px went unseen: {moved[:3]}, {shifts}")


@NO_CLAIMS
@pytest.mark.parametrize("width", sorted(VIEWPORTS))
def test_the_reveal_works_from_the_keyboard(page, traffic, width):
    path = DRIVEN[0]
    open_page(page, path, VIEWPORTS[width])
    toggle = page.locator(TOGGLE)
    for _ in range(200):  # Tab from the top of the page until the toggle has focus
        page.keyboard.press("Tab")
        if toggle.evaluate("el => el === document.activeElement"):
            break
    else:
        pytest.fail(f"{path}: Tab never reaches the toggle")
    page.keyboard.press("Space")
    expect(toggle).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_role("status")).to_contain_text("checked sentences marked")
    for _ in range(300):  # on to the first marker
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.matches('.claim-marker')"):
            break
    else:
        pytest.fail(f"{path}: Tab never reaches a checked sentence's marker")
    marker = page.locator(".claim-marker:focus")
    expect(marker).to_have_accessible_name(re.compile(
        rf"What check 1 of {len(CLAIMED[path])} compared( \(partly checked\))?$"))
    page.keyboard.press("Enter")
    expect(marker).to_have_attribute("aria-expanded", "true")
    detail = page.locator("#" + marker.get_attribute("aria-controls"))
    expect(detail).to_contain_text("torch")
    page.keyboard.press("Escape")
    expect(detail).to_be_hidden()
    expect(marker).to_be_focused()
    toggle.focus()
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-pressed", "false")
    expect(page.locator(".claim-marker")).to_have_count(0)
    assert not traffic.console_errors, traffic.console_errors


@NO_CLAIMS
def test_the_reveal_works_from_a_file_with_the_network_off(new_context):
    path = DRIVEN[0]
    context = new_context(offline=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto((SITE / path).as_uri())
    reveal(page)
    expect(page.locator(".claim-marker")).to_have_count(len(CLAIMED[path]))
    assert not errors, errors


def test_a_page_without_claims_has_no_toggle(page, traffic):
    unclaimed = sorted({"search.html", *(
        p.relative_to(SITE).as_posix() for p in SITE.glob("*/*.html")
        if not p.relative_to(SITE).parts[0].startswith("_"))} - set(CLAIMED))
    page.goto(unclaimed[0])
    expect(page.locator(TOGGLE)).to_have_count(0)
    assert page.locator("#checked-claims-data").count() == 0


@NO_CLAIMS
def test_a_detail_opens_the_check_at_its_line(page, traffic):
    """The link a detail gives lands on the check's line in the numbered source,
    highlighted, with the lines above it in view, and the line is the one the
    page's source has there (no id stands twice in it). The source page takes the system's theme (dark
    here) unless the reader chose one on the site (light here), and the line and
    the text around it are legible in either theme."""
    path = DRIVEN[0]
    open_page(page, path, PHONE)
    reveal(page)
    marker = page.locator(".claim-marker").first
    marker.click()
    link = page.locator("#" + marker.get_attribute("aria-controls") + " a")
    line = int(link.get_attribute("href").rsplit("#L-", 1)[1])
    # The numbered source is ~0.5 MB: its :target is set as it loads.
    with page.expect_navigation(url=re.compile(f"#L-{line}$"), wait_until="load"):
        link.click()
    target = page.locator(":target")
    expect(target, f"the :target of {page.url} is not line {line}").to_have_attribute(
        "id", f"L-{line}")
    expect(target).to_be_in_viewport()
    for near in (line - 3, line + 1):  # a few lines above it, and the next one
        expect(page.locator(f"span#L-{near}")).to_be_in_viewport()
    ids = page.evaluate("() => [...document.querySelectorAll('[id]')].map(e => e.id)")
    assert len(ids) == len(set(ids)), "an id the numbered source gives twice"
    source = (ROOT / "docs" / path.replace(".html", ".md")).read_text(encoding="utf8")
    assert " ".join(source.splitlines()[line - 1].split()) in " ".join(target.inner_text().split())
    page.emulate_media(color_scheme="dark")
    assert page.evaluate("document.body.dataset.theme") == "auto"
    assert page.evaluate(BACKGROUND_LUMINANCE, "body") < 0.05, "not dark for a dark system"
    page.evaluate("localStorage.setItem('theme', 'light')")  # as furo's toggle keeps it
    page.reload(wait_until="load")
    assert page.evaluate(BACKGROUND_LUMINANCE, "body") > 0.9, "the reader's light choice"
    inject_axe(page)
    assert not accessibility_problems(page, f"body > p, #L-{line}")
    assert not traffic.console_errors, traffic.console_errors


# The relative luminance (WCAG) of the background colour of the first element
# the selector finds; 1 (white, as a browser draws it) when it has none.
BACKGROUND_LUMINANCE = """selector => {
  const [r, g, b, alpha = 1] = getComputedStyle(document.querySelector(selector))
    .backgroundColor.match(/[\\d.]+/g).map(Number);
  if (alpha < 1) return 1;
  const [R, G, B] = [r, g, b].map(v => v / 255)
    .map(c => c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  return 0.2126 * R + 0.7152 * G + 0.0722 * B;
}"""
