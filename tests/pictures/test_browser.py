"""The document view in a real browser: headless Chromium lays out and draws the page,
and its screenshot has every chunk where the page's layout puts it, in its type's
colour (tags in the neutral colour), with a red border where the chunk or tag is not
gold.  The layout comes from the same page with a probe script appended (Chromium
dumps the cells' boxes); the screenshot is of the page as written, without it.

Skipped where Chromium is missing, except under CI, whose .ci/run installs it."""

import html
import json
import re
import subprocess

import pytest

from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.model.compose import load_any
from fstcrf.pictures.html import NEUTRAL, type_colours, view_page
from fstcrf.pictures.tagged import chunk_types, tagged_sentences
from needs import import_or_skip, program_or_skip, uninstrumented

CHROMIUM = program_or_skip("chromium", "chromium")
Image = import_or_skip("PIL.Image", "reading the screenshot needs Pillow (pip install pillow)")

WIDTH, HEIGHT = 1800, 2000

#: Appended to a copy of the page: the box of every cell of a layer or gold row, as JSON.
PROBE = """<script>
const cells = [...document.querySelectorAll("td.span, td.gold, td.tag")].map((td) => {
  const box = td.getBoundingClientRect();
  const view = td.closest(".scroll").getBoundingClientRect();
  return {classes: td.className, type: td.dataset.type || null, layer: td.parentElement.dataset.layer,
          x: box.x, y: box.y, width: box.width, height: box.height,
          visible: box.left >= view.left && box.right <= view.right && box.bottom <= innerHeight};
});
const pre = document.createElement("pre");
pre.id = "boxes";
pre.textContent = JSON.stringify(cells);
document.body.appendChild(pre);
</script>"""


def chromium(*arguments: str, profile) -> str:
    """Run headless Chromium at a fixed window size and scale; its standard output."""
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--force-color-profile=srgb",
        f"--window-size={WIDTH},{HEIGHT}",
        f"--user-data-dir={profile}",
        *arguments,
    ]
    with uninstrumented():
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))


def near(pixel, colour: str, tolerance: int = 3) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel[:3], rgb(colour)))


@pytest.mark.slow
def test_chromium_draws_each_chunk_in_its_types_colour_where_the_layout_puts_it(demo_joint, tmp_path):
    joint = load_any(demo_joint)
    sentences = read_conll(DATA_DIR / "demo_test.txt").sentences[:8]
    page = view_page("demo", tagged_sentences(joint, sentences), chunk_types(joint))
    (tmp_path / "page.html").write_text(page, encoding="utf-8")
    (tmp_path / "probe.html").write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")

    dump = chromium("--dump-dom", (tmp_path / "probe.html").as_uri(), profile=tmp_path / "profile")
    cells = json.loads(html.unescape(re.search(r'<pre id="boxes">(.*?)</pre>', dump, re.S).group(1)))
    chromium(f"--screenshot={tmp_path / 'shot.png'}", (tmp_path / "page.html").as_uri(), profile=tmp_path / "profile")
    shot = Image.open(tmp_path / "shot.png").convert("RGB")
    assert shot.size == (WIDTH, HEIGHT)

    spans = joint.predict_spans(sentences)[1]
    predicted = [cell for cell in cells if "span" in cell["classes"].split()]
    assert [cell["type"] for cell in predicted] == [chunk.type for found in spans for chunk in found]
    colours = type_colours(chunk_types(joint)["chunk"])
    checked = 0
    for cell in cells:
        if not cell["visible"]:
            continue
        classes = cell["classes"].split()
        expected = colours[cell["type"]] if cell["layer"] == "chunk" else NEUTRAL
        middle = int(cell["y"] + cell["height"] / 2)
        # inside the cell's left padding: its background, clear of the text
        assert near(shot.getpixel((int(cell["x"]) + 5, middle)), expected), cell
        if "wrong" in classes and "low" not in classes:  # a solid red border
            assert near(shot.getpixel((int(cell["x"]) + 1, middle)), "#d62728", tolerance=40), cell
        checked += 1
    assert checked >= 0.9 * len(cells) and len({cell["type"] for cell in predicted}) >= 3
    assert any("wrong" in cell["classes"] for cell in cells if cell["visible"])  # the border check ran
