"""Opens a catalog's HTML page in headless Chromium (Debian's, driven by Playwright through
executable_path) at 1280 px wide and measures what a reader sees: the runs table fits the page
(no sideways scrolling), and in the chart of what changed, the bar of run RUN is at least
MIN_PX high as drawn (not a sliver under a registration's thousands of new paths).

usage: check_catalog.py CHROMIUM CATALOG.html RUN MIN_PX
"""

import pathlib
import sys

from playwright.sync_api import sync_playwright


def main():
    chromium, html, run, min_px = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    problems = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(pathlib.Path(html).resolve().as_uri())
        page.wait_for_load_state("load")
        wide, box = page.eval_on_selector(
            "#runs-table", "t => [t.scrollWidth, t.parentElement.clientWidth]")
        if wide > box + 1:
            problems.append(f"the runs table is {wide} px wide in a box of {box} px")
        # Drawn heights, in CSS pixels on the page (the SVG is scaled to its box).
        drawn = page.eval_on_selector_all(
            f'#runs-problems .mark[data-bar="#{run}"]',
            "els => els.map(e => e.getBoundingClientRect().height)")
        if sum(drawn) < min_px:
            problems.append(f"run {run}'s bar of what changed is {sum(drawn):.1f} px high: {drawn}")
        browser.close()
    for pr in problems:
        print(pr)
    if problems:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
