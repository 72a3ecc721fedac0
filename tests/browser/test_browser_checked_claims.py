""""Show checked claims": a reader reveals the sentences the build proved.

The pages come from the last build's record of what its checks proved
(``_build/doctrees/claims.json``): every page with claims is opened once to see
that each checked sentence is found and highlighted as the sentence; the page
with the most claims (and the landing page, when it has any) is driven at a
phone's and a desktop's width, light and dark: the toggle, every detail, the
keyboard, sideways overflow, axe-core, and no layout shift while it is off.
"""

from __future__ import annotations

import json

import pytest
from built_site import DESKTOP, PHONE, ROOT, SITE, inject_axe, next_frame
from playwright.sync_api import expect
from test_browser_pages import accessibility_problems, phone_problems

pytestmark = [pytest.mark.browser, pytest.mark.build]

CLAIMS_FILE = ROOT / "_build" / "doctrees" / "claims.json"
TOGGLE = ".checked-claims-toggle button"


def claimed_pages() -> dict[str, list[dict]]:
    """Page path -> the claims its checks proved, for the pages that have any."""
    if not CLAIMS_FILE.is_file():
        return {}
    recorded = json.loads(CLAIMS_FILE.read_text(encoding="utf8"))
    return {f"{docname}.html": claims for docname, claims in recorded.items() if claims}


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

# The sentences the reveal highlights, as text.
HIGHLIGHTED = """() => CSS.highlights.has('checked-claim')
  ? [...CSS.highlights.get('checked-claim')].map(r => r.toString().replace(/\\s+/g, ' '))
  : []"""

# Layout shifts since the page started loading, with what moved.
LAYOUT_SHIFTS = """() => new Promise(done => {
  const shifts = [];
  new PerformanceObserver(list => list.getEntries().forEach(entry => {
    // Furo's header (its icons) shifts a little, or not, as the page loads,
    // with claims or without: a shift only it moved is not the script's.
    const inHeader = s => Boolean(s.node && s.node.closest && s.node.closest('header'));
    if (!entry.hadRecentInput && !entry.sources.every(inHeader)) shifts.push({value: entry.value,
      sources: entry.sources.map(s => s.node ? s.node.nodeName + '.' + s.node.className : '?')});
  })).observe({type: 'layout-shift', buffered: true});
  requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => done(shifts), 300)));
})"""


def open_page(page, path: str, viewport: dict, scheme: str = "light") -> None:
    page.set_viewport_size(viewport)
    page.emulate_media(color_scheme=scheme)
    page.goto(path, wait_until="load")
    next_frame(page)


def reveal(page, on: bool = True) -> None:
    toggle = page.locator(TOGGLE)
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true" if on else "false")


def detail_problems(page, claims: list[dict]) -> list[str]:
    """Open every marker's detail; each must say its check, where it is and the torch."""
    problems = []
    markers = page.locator(".claim-marker")
    for index in range(markers.count()):
        marker = markers.nth(index)
        marker.click()
        expect(marker).to_have_attribute("aria-expanded", "true")
        detail = page.locator("#" + marker.get_attribute("aria-controls"))
        expect(detail).to_be_visible()
        text = " ".join(detail.inner_text().split())
        line = next((int(word.rstrip(".")) for before, word in zip(text.split(), text.split()[1:])
                     if before == "line"), None)
        claim = next((c for c in claims if c["check_line"] == line), None)
        if claim is None:
            problems.append(f"detail {index + 1} names no check line of the page's: {text!r}")
            continue
        wanted = [claim["check"], f"torch {claim['torch']}"]
        if claim["check"] == "check_property":
            wanted += [*claim["families"], f"{claim['examples']} examples"]
        problems += [f"detail {index + 1} does not say {word!r}: {text!r}"
                     for word in wanted if word not in text]
        source = detail.locator("a")
        if not (source.get_attribute("href") or "").startswith(("_sources/", "../")):
            problems.append(f"detail {index + 1} does not link the page's source")
    return problems


@NO_CLAIMS
@pytest.mark.parametrize("path", sorted(CLAIMED))
def test_every_checked_sentence_is_highlighted_as_the_sentence(page, traffic, path):
    """The build marked the right element, and its pattern finds the sentence there
    (or, for at most one sentence in five, paints the element whole)."""
    claims = CLAIMED[path]
    open_page(page, path, DESKTOP)
    before = page.evaluate(POSITIONS)
    toggle = page.locator(TOGGLE)
    expect(toggle).to_have_accessible_name(f"Show checked claims: {len(claims)}")
    reveal(page)
    expect(page.locator(".claim-marker")).to_have_count(len(claims))
    # A sentence the build's pattern cannot find (e.g. across an equation it
    # cannot spell) has its whole element painted instead: allowed, but rare.
    in_whole = page.eval_on_selector_all(".claim-whole .claim-marker", "els => els.length")
    assert in_whole <= len(claims) // 5, (
        f"{path}: {in_whole} of {len(claims)} sentences not found in the element marked "
        "for them: " + str(page.eval_on_selector_all(".claim-whole",
                                                     "els => els.map(e => e.textContent)")))
    highlighted = page.evaluate(HIGHLIGHTED)
    assert len(highlighted) + in_whole >= len(claims) and all(
        text.strip() for text in highlighted), (
        f"{path}: {len(claims)} claims, highlighted {highlighted}")
    reveal(page, on=False)
    expect(page.locator(".claim-marker, .claim-detail")).to_have_count(0)
    assert page.evaluate(HIGHLIGHTED) == []
    assert page.evaluate(POSITIONS) == before, f"{path}: the text moved after on and off"
    assert not traffic.console_errors, traffic.console_errors


@NO_CLAIMS
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", sorted(VIEWPORTS))
@pytest.mark.parametrize("path", DRIVEN)
def test_the_reveal_shows_what_proved_each_sentence(page, traffic, path, width, scheme):
    claims, viewport = CLAIMED[path], VIEWPORTS[width]
    open_page(page, path, viewport, scheme)
    problems = []
    expect(page.locator(TOGGLE)).to_be_visible()
    reveal(page)
    problems += detail_problems(page, claims)
    # Numbered as a reader meets them (checks may come in another order).
    names = page.eval_on_selector_all(".claim-marker", "els => els.map(el => el.textContent.trim())")
    expected = [f"How checked claim {k} of {len(claims)} was proved" for k in range(1, len(names) + 1)]
    if names != expected:
        problems.append(f"markers not numbered in reading order: {names[:6]}")
    inject_axe(page)
    # With every detail open: nothing runs off a phone, nothing fails axe.
    problems += accessibility_problems(page, "article, .content-icon-container")
    if viewport == PHONE:
        problems += phone_problems(page)
    problems += [f"console error: {error}" for error in traffic.console_errors]
    assert not problems, f"{path} at {width} ({scheme}):\n  " + "\n  ".join(problems)


@NO_CLAIMS
@pytest.mark.parametrize("width", sorted(VIEWPORTS))
def test_the_script_arriving_moves_nothing(context, traffic, width):
    """Loaded with claims.js refused and with it: every element in the same place,
    and the same layout shifts outside furo's header (its icons shift a little,
    or not, as a page loads, with claims or without: a CI run once saw a 0.0005
    header shift without the script and none with it)."""
    path = DRIVEN[0]
    seen = []
    for script in (False, True):
        page = context.new_page()
        if not script:
            page.route("**/claims.js*", lambda route: route.abort())
        open_page(page, path, VIEWPORTS[width])
        expect(page.get_by_role("status")).to_have_count(int(script))
        shifts = page.evaluate(LAYOUT_SHIFTS)
        seen.append((page.evaluate(POSITIONS), shifts))
    (positions, shifts), (positions_with, shifts_with) = seen
    moved = [(before, after) for before, after in zip(positions, positions_with)
             if before != after]
    assert not moved, f"{path}: the script moved elements (x, y, width): {moved[:5]}"
    assert shifts_with == shifts, f"{path}: layout shifts {shifts} became {shifts_with}"


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
    expect(marker).to_have_accessible_name("How checked claim 1 of "
                                           f"{len(CLAIMED[path])} was proved")
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
        p.relative_to(SITE).as_posix() for p in SITE.glob("*/*.html"))} - set(CLAIMED))
    page.goto(unclaimed[0])
    expect(page.locator(TOGGLE)).to_have_count(0)
    assert page.locator("#checked-claims-data").count() == 0
