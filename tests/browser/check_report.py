"""Opens a trawl HTML report in headless Chromium (Debian's, driven by Playwright through
executable_path) and checks it as a reader would meet it: no console error, no request beyond
the file itself, chart marks whose data attributes equal the JSON report's figures, tables that
sort when a header is clicked. Writes a full-page screenshot.

usage: check_report.py CHROMIUM REPORT.html REPORT.json SCREENSHOT.png
       check_report.py CHROMIUM CATALOG.html - SCREENSHOT.png   (a catalog's page)
"""

import json
import pathlib
import sys

from playwright.sync_api import sync_playwright


def main():
    chromium, html, report, shot = sys.argv[1:5]
    page_url = pathlib.Path(html).resolve().as_uri()
    r = json.load(open(report)) if report != "-" else None
    problems = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"],
        )
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("request", lambda q: q.url != page_url
                and problems.append(f"request: {q.url}"))
        page.goto(page_url)
        page.wait_for_load_state("load")

        def attrs(selector, name):
            return page.eval_on_selector_all(
                selector, f"els => els.map(e => e.getAttribute('data-{name}'))")

        red = r.get("reduction") if r else None
        if r is None:
            # A catalog's page: every run has its bars, and the age chart its buckets.
            if not page.query_selector_all("#runs .mark"):
                problems.append("no run is drawn")
            if len(page.query_selector_all("#ages .mark")) != 7:
                problems.append("the age chart lacks buckets")
        if red:
            want = [str(d["block_size"]) for d in red["dedup"]]
            got = attrs("#r0-dedup .mark[data-block-size]", "block-size")
            if got != want:
                problems.append(f"dedup block sizes drawn {got}, JSON {want}")
            want = [d["ratio"] for d in red["dedup"]]
            got = [float(v) for v in attrs("#r0-dedup .mark[data-block-size]", "ratio")]
            if got != want:
                problems.append(f"dedup ratios drawn {got}, JSON {want}")
            want = [str(b["blocks"]) for b in red["dedup"][0]["references"]]
            got = attrs("#r0-refs .mark", "blocks")
            if got != want:
                problems.append(f"reference buckets drawn {got}, JSON {want}")
            want = [str(c[k]) for c in red["compression"]
                    for k in ("logical_bytes", "compressed_bytes", "allocated_bytes")]
            got = attrs("#r0-compression .mark", "bytes")
            if got != want:
                problems.append(f"compression bars drawn {got}, JSON {want}")
            # Every bar is drawn inside its chart, with a height in proportion to its value.
            boxes = page.eval_on_selector_all(
                "#r0-file-sizes .mark",
                "els => els.map(e => [e.getBBox().height, +e.getAttribute('data-files')])")
            tallest = max(b[1] for b in boxes)
            for h, files in boxes:
                if abs(h / max(b[0] for b in boxes) - files / tallest) > 0.02:
                    problems.append(f"a file-size bar of {files} files is {h} high")
        # Byte axes count in the tables' binary units; tile labels fit their tiles as drawn.
        axes = page.eval_on_selector_all(
            "svg.chart", "cs => cs.map(c => [c.id, c.querySelector('text.axis')?.textContent,"
            " [...c.querySelectorAll('text.tick')].map(t => t.textContent)])")
        for cid, label, ticks in axes:
            if label == "bytes" and any(t != "0" and not t.endswith("iB") for t in ticks):
                problems.append(f"{cid}: byte ticks not in binary units: {ticks}")
        for text_w, tile_w, label in page.eval_on_selector_all(
                "svg.treemap text.tile-label",
                "ts => ts.map(t => [t.getBBox().width, t.previousElementSibling.getBBox().width,"
                " t.textContent])"):
            if text_w > tile_w:
                problems.append(f"tile label {label!r} is {text_w:.0f} wide in a {tile_w:.0f} tile")
        # Nothing a chart draws reaches past its box (slanted labels were cut off).
        clipped = page.eval_on_selector_all(
            "svg.chart", """cs => cs.flatMap(c => { const s = c.getBoundingClientRect();
              return [...c.querySelectorAll('text')].filter(t => { const b = t.getBoundingClientRect();
                return b.left < s.left - 0.5 || b.right > s.right + 0.5 || b.top < s.top - 0.5
                  || b.bottom > s.bottom + 0.5; }).map(t => c.id + ': ' + t.textContent); })""")
        problems += [f"cut off at its chart's edge: {c}" for c in clipped]
        if red:
            # Every codec's combined figure is a headline card, named.
            cards = page.eval_on_selector_all("#headline .card .k", "ks => ks.map(k => k.textContent)")
            for c in red["compression"]:
                name = c["codec"] + (f"-{c['level']}" if c.get("level") is not None else "")
                if f"dedup + {name}" not in cards:
                    problems.append(f"no headline card for dedup + {name}: {cards}")
        if r is not None and r.get("breakdown"):
            exts = attrs("[id$=-types-chart] .mark", "extension")
            rows = page.eval_on_selector_all(
                "table[id$=-types] tbody tr td:first-child", "tds => tds.map(t => t.textContent)")
            if len(set(rows)) != len(rows):
                problems.append(f"a type has several rows: {rows}")
            if any(e.isdigit() for e in exts + rows):
                problems.append(f"a version number taken for an extension: {rows}")
        if r is not None:
            want = [str(b["files"]) for b in r["file_sizes"]]
            got = attrs("#r0-file-sizes .mark", "files")
            if got != want:
                problems.append(f"file sizes drawn {got}, JSON {want}")

        # Sorting: click a numeric column twice; its keys go up, then down.
        table = page.query_selector("table.sortable")
        if table is None:
            problems.append("no sortable table")
        else:
            tid = table.get_attribute("id")
            col = 1
            header = page.query_selector_all(f"#{tid} th")[col]
            keys = f"#{tid} tbody tr td:nth-child({col + 1})"

            def column():
                return [float(k) for k in attrs(keys, "sort")]

            header.click()
            up = column()
            header.click()
            down = column()
            if up != sorted(up) or down != sorted(down, reverse=True) or len(up) < 2:
                problems.append(f"table {tid} does not sort: {up} then {down}")
        page.screenshot(path=shot, full_page=True)
        # A desktop window fits every table: none scrolls sideways in its box.
        page.set_viewport_size({"width": 1280, "height": 900})
        wide = page.eval_on_selector_all(
            "div.scroll", "ds => ds.filter(d => d.scrollWidth > d.clientWidth + 1)"
            ".map(d => d.firstElementChild.id + ' ' + d.scrollWidth + ' in ' + d.clientWidth)")
        problems += [f"at 1280 px wide, table {w} px wide" for w in wide]
        # A narrow window (a phone) scrolls tables inside their boxes, not the page sideways.
        page.set_viewport_size({"width": 390, "height": 800})
        wide = page.evaluate("document.documentElement.scrollWidth")
        if wide > 390:
            problems.append(f"at 390 px wide the page is {wide} px wide")
        # Printing makes a document (headless Chromium renders it to PDF).
        if len(page.pdf()) < 10_000:
            problems.append("the printed page is empty")
        browser.close()
    for pr in problems:
        print(pr)
    if problems:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
