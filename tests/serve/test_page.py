"""The page at ``/`` in headless Chromium (Debian's, driven by Playwright): text typed
into it and submitted comes back as the document view, whose chunk cells (type,
tokens, probability) are the entities the JSON API gives for the same text; CoNLL
lines with gold labels show gold rows; an error is shown, not thrown.

Skipped where Playwright or Chromium is missing, except under CI, whose .ci/run
installs both."""

import needs_serve  # noqa: F401  (skips the module without the extra serve)
import httpx
import pytest

from needs import import_or_skip, program_or_skip

CHROMIUM = program_or_skip("chromium", "chromium")
playwright_api = import_or_skip("playwright.sync_api", "the page test needs Playwright: pip install playwright")

#: Chromium's switches for a headless run in a container (no sandbox, no GPU, nothing fetched).
CHROMIUM_ARGUMENTS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

TEXT = "the light might build a quiet house .\n\nmany old cities quietly grow ."


@pytest.fixture
def browser_page():
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGUMENTS)
        try:
            page = browser.new_page()
            page.set_default_timeout(30_000)
            yield page
        finally:
            browser.close()


def shown_chunks(element, layer: str) -> list[dict]:
    """The predicted chunk cells of a layer of the view inside ``element`` (the page or
    one of its sentences), as the page shows them."""
    return element.eval_on_selector_all(
        f'tr.layer[data-layer="{layer}"] td.span',
        """cells => cells.map(cell => ({type: cell.dataset.type, first: Number(cell.dataset.first),
             last: Number(cell.dataset.last), probability: Number(cell.dataset.probability)}))""",
    )


@pytest.mark.slow
def test_text_typed_into_the_page_shows_the_entities_the_api_gives(pipeline_folder, start_server, browser_page):
    server = start_server(f"pipeline={pipeline_folder / 'pipeline.model'}", "--tokenizer", "regex")
    page = browser_page
    page.goto(server.url + "/")
    page.wait_for_selector('#model option[value="pipeline"]', state="attached")
    assert "composed" in page.text_content("#model-kind")
    page.fill("#input", TEXT)
    page.click("#submit")
    page.wait_for_selector("#view .sentence")
    assert page.text_content("#status").startswith("2 sentences")

    answer = httpx.post(f"{server.url}/v1/models/pipeline/tag", json={"text": TEXT}, timeout=30).json()
    expected = [
        (b, entity["type"], entity["first"], entity["last"], entity["probability"])
        for b, result in enumerate(answer["results"])
        for entity in result["entities"]
    ]
    sentences = page.query_selector_all("#view .sentence")
    shown = [
        (b, cell["type"], cell["first"], cell["last"], cell["probability"])
        for b, sentence in enumerate(sentences)
        for cell in shown_chunks(sentence, "ner")
    ]
    assert expected and shown == expected
    layers = sentences[0].eval_on_selector_all("tr.layer", "rows => rows.map(row => row.dataset.layer)")
    assert layers == ["pos", "chunk", "ner"]
    tokens = page.eval_on_selector_all("#view .sentence tr.tokens td", "cells => cells.map(cell => cell.textContent)")
    assert tokens == TEXT.split()


@pytest.mark.slow
def test_conll_lines_show_gold_rows_and_errors_are_shown(demo_chunker, start_server, browser_page):
    server = start_server(str(demo_chunker), "--tokenizer", "regex")
    page = browser_page
    page.goto(server.url + "/")
    page.wait_for_selector('#model option[value="default"]', state="attached")
    page.check('input[name="input"][value="conll"]')
    page.fill("#input", "the DT B-NP\nlight NN I-NP\nbuilds VBZ B-VP\n")
    page.click("#submit")
    page.wait_for_selector("#view tr.gold")
    assert len(shown_chunks(page, "chunk")) >= 1

    page.fill("#input", "three fields here\ntwo only")
    page.click("#submit")
    page.wait_for_selector("#status.error")
    assert "422" in page.text_content("#status") and "(conll)" in page.text_content("#status")
