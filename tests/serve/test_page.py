"""The page at ``/`` in headless Chromium (Debian's, driven by Playwright): text typed
into it and submitted comes back as the document view, whose chunk cells (type,
tokens, probability) are the entities the JSON API gives for the same text; CoNLL
lines with gold labels show gold rows; an error is shown, not thrown.  The correction
loop with real clicks: a chunk retyped, one removed, a new one marked, each time the
view decoded again as the API decodes it under the same constraints; chunks below the
threshold flagged; a correction the model cannot write refused and undone; the
download of partial labels, which ``fstcrf train --init`` continues from.  The same
loop by keyboard alone.  A refused, empty or unreadable Tag, or a server out of reach,
says so and keeps the last answer and its corrections.  ``fstcrf view --edit`` opens
the page on a file's sentences, tagged, under its --title and --low-confidence.
While an answer is awaited (held back with page.route), corrections, withdrawals and a
new threshold wait and go together in the next request, none lost, and a selection made
meanwhile stays open (or is closed, saying why); a refused request undoes what it
carried alone.  An empty threshold is the default; a right-to-left override in a token
reorders nothing around it; a new bearer token keeps the model chosen.  A corrected
sentence the download cannot hold (a token ``-DOCSTART-``) is named, not refused.

Skipped where Playwright or Chromium is missing, except under CI, whose .ci/run
installs both."""

import time

import needs_serve  # noqa: F401  (skips the module without the extra serve)
import httpx
import pytest

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.labels import corrected_labels
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine.constraints import Constraints
from fstcrf.model.decoders import load_decoder
from needs import import_or_skip, program_or_skip, uninstrumented

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
    with uninstrumented():  # Playwright's driver and Chromium; the servers the test starts keep a sanitizer's runtime
        playwright = playwright_api.sync_playwright().start()
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGUMENTS)
    try:
        page = browser.new_page()
        page.set_default_timeout(30_000)
        yield page
    finally:
        browser.close()
        playwright.stop()


def shown_chunks(element, layer: str) -> list[dict]:
    """The predicted chunk cells of a layer of the view inside ``element`` (the page or
    one of its sentences), as the page shows them."""
    return element.eval_on_selector_all(
        f'tr.layer[data-layer="{layer}"] td.span',
        """cells => cells.map(cell => ({type: cell.dataset.type, first: Number(cell.dataset.first),
             last: Number(cell.dataset.last), probability: Number(cell.dataset.probability)}))""",
    )


def opened(start_server, page, model: str, name: str = "default"):
    """A server of ``model`` (its texts tokenised by the regex rule) and ``page`` open
    on it, once the model is listed: the server."""
    server = start_server(model, "--tokenizer", "regex")
    page.goto(server.url + "/")
    page.wait_for_selector(f'#model option[value="{name}"]', state="attached")
    return server


@pytest.mark.slow
def test_text_typed_into_the_page_shows_the_entities_the_api_gives(pipeline_folder, start_server, browser_page):
    page = browser_page
    server = opened(start_server, page, f"pipeline={pipeline_folder / 'pipeline.model'}", "pipeline")
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
    page = browser_page
    opened(start_server, page, str(demo_chunker))
    page.check('input[name="input"][value="conll"]')
    page.fill("#input", "the DT B-NP\nlight NN I-NP\nbuilds VBZ B-VP\n")
    page.click("#submit")
    page.wait_for_selector("#view tr.gold")
    assert len(shown_chunks(page, "chunk")) >= 1

    page.fill("#input", "three fields here\ntwo only")
    page.click("#submit")
    page.wait_for_selector("#status.error")
    assert "422" in page.text_content("#status") and "(conll)" in page.text_content("#status")


@pytest.fixture(scope="module")
def words_model(tmp_path_factory):
    """A chunker of words alone (the words-rich template, 5 iterations on the demo corpus)."""
    path = tmp_path_factory.mktemp("words") / "words.model"
    arguments = [str(DATA_DIR / "demo_train.txt"), "--template", "words-rich", "--max-iter", "5", "-o", str(path)]
    assert main(["-q", "train", *arguments]) == 0
    return path


def chunk_rows(page, layer: str = "chunk") -> list[list[tuple]]:
    """Per sentence, the chunks the page shows: (type, first, last, probability, flagged low)."""
    return [
        [(c["type"], c["first"], c["last"], c["probability"], c["low"]) for c in chunks]
        for chunks in page.eval_on_selector_all(
            "#view .sentence",
            f"""sentences => sentences.map(sentence => Array.from(
                 sentence.querySelectorAll('tr.layer[data-layer="{layer}"] td.span'), cell => ({{
                   type: cell.dataset.type, first: Number(cell.dataset.first), last: Number(cell.dataset.last),
                   probability: Number(cell.dataset.probability), low: cell.classList.contains("low")}})))""",
        )
    ]


def api_rows(url: str, body: dict, low: float) -> list[list[tuple]]:
    """The same, from the JSON API's answer to ``body``."""
    answer = httpx.post(f"{url}/v1/models/default/tag", json=body, timeout=30).json()
    return [
        [(e["type"], e["first"], e["last"], e["probability"], e["probability"] < low) for e in result["entities"]]
        for result in answer["results"]
    ]


def decoded_again(page, answers: int) -> None:
    """Wait until the page has shown its answer number ``answers`` and is idle."""
    page.wait_for_function(f"window.page.answers === {answers} && !window.page.busy")


@pytest.mark.slow
def test_a_person_corrects_chunks_and_downloads_partial_labels(
    words_model, start_server, browser_page, tmp_path, monkeypatch
):
    page = browser_page
    server = opened(start_server, page, str(words_model))
    page.fill("#input", TEXT)
    page.click("#submit")
    decoded_again(page, 1)
    assert chunk_rows(page) == api_rows(server.url, {"text": TEXT}, 0.5)
    first = chunk_rows(page)[0]

    def check_against_the_api(answers: int) -> dict:
        decoded_again(page, answers)
        body = page.evaluate("window.page.last.body")
        assert page.text_content("#status").startswith("2 sentences"), page.text_content("#status")
        assert chunk_rows(page) == api_rows(server.url, body, body["low_confidence"])
        return body

    # retype the first chunk of sentence 0
    kind, start, end = first[0][:3]
    page.click(f'#sentence-0 tr.layer td.span[data-first="{start}"]')
    assert page.is_visible("#editor") and f"{kind} “" in page.text_content("#selection")
    retyped = "VP" if kind != "VP" else "NP"
    page.click(f'#types button[data-type="{retyped}"]')
    body = check_against_the_api(2)
    assert body["constraints"] == [{"spans": [{"first": start, "last": end, "type": retyped}]}, None]
    assert chunk_rows(page)[0][0][:4] == (retyped, start, end, pytest.approx(1.0))
    assert page.get_attribute(f'#sentence-0 td.span[data-first="{start}"]', "class").endswith("corrected")

    # remove the last chunk of sentence 0
    kind, start, end = chunk_rows(page)[0][-1][:3]
    page.click(f'#sentence-0 tr.layer td.span[data-first="{start}"]')
    page.click("#remove")
    body = check_against_the_api(3)
    assert body["constraints"][0]["fixed"] == {str(t): "O" for t in range(start, end + 1)}
    removed = (start, end)

    # mark tokens 0..2 of sentence 1 ("many old cities") as a chunk
    page.click("#sentence-1 tr.tokens td:nth-child(2)")
    page.click("#sentence-1 tr.tokens td:nth-child(4)", modifiers=["Shift"])
    assert "“many old cities”" in page.text_content("#selection")
    page.click('#types button[data-type="NP"]')
    body = check_against_the_api(4)
    assert body["constraints"][1] == {"spans": [{"first": 0, "last": 2, "type": "NP"}]}
    assert page.text_content("#sentence-1 .corrections").startswith("corrections:marked NP “many old cities”")

    # a correction the model cannot write (a two-token PP: it has no I-PP) is refused and undone
    page.click("#sentence-1 tr.tokens td:nth-child(5)")
    page.click("#sentence-1 tr.tokens td:nth-child(6)", modifiers=["Shift"])
    page.click('#types button[data-type="PP"]')
    page.wait_for_selector("#status.error")
    assert "constraints[1]" in page.text_content("#status") and "not applied" in page.text_content("#status")
    assert page.evaluate("window.page.corrections.size") == 3

    # chunks below the threshold are flagged; "next to check" selects the least probable
    page.fill("#threshold", "0.95")
    page.press("#threshold", "Tab")  # the field's change event, as a person leaving it fires it
    body = check_against_the_api(5)
    assert body["low_confidence"] == 0.95
    flagged = [row for rows in chunk_rows(page) for row in rows if row[4]]
    assert flagged and all(row[3] < 0.95 for row in flagged)
    page.click("#next-check")
    least = min(flagged, key=lambda row: row[3])
    assert f"p = {least[3]:.4f}" in page.text_content("#selection")
    page.click("#cancel")

    # the download: the partial labels the API gives under the same constraints
    with page.expect_download() as download:
        page.click("#download")
    saved = tmp_path / "corrections.txt"
    download.value.save_as(saved)
    answer = httpx.post(f"{server.url}/v1/models/default/tag", json=body, timeout=30).json()
    assert saved.read_text(encoding="utf-8") == answer["partial_labels"]["conll"]
    columns = page.text_content("#train-command").split("--columns ")[1].split()[0]
    assert columns == "word,pos,chunk"  # the training file's layout; the model reads no pos
    sentences = read_conll(saved, columns).sentences
    model = load_decoder(str(words_model))
    assert {tag for sentence in sentences for tag in sentence["pos"]} == {"_"}
    for sentence, result, given in zip(sentences, answer["results"], body["constraints"]):
        assert sentence["chunk"] == corrected_labels(Constraints.from_dict(given), result["labels"], model.labels_)
    assert sentences[0]["chunk"][removed[0] : removed[1] + 1] == ["O"] * (removed[1] - removed[0] + 1)
    assert sentences[1]["chunk"][:3] == ["B-NP", "I-NP", "I-NP"] and sentences[1]["chunk"][4:] == ["?", "?"]
    # the command the page shows, run in the model's folder with TRAIN the model's training file
    command = page.text_content("#train-command")
    assert command.startswith("cat TRAIN corrections.txt > more.txt && fstcrf train more.txt ")
    monkeypatch.chdir(words_model.parent)
    (words_model.parent / "more.txt").write_text(
        (DATA_DIR / "demo_train.txt").read_text(encoding="utf-8") + saved.read_text(encoding="utf-8"), encoding="utf-8"
    )
    assert main(["-q", *command.split(" && fstcrf ")[1].split(), "--max-iter", "1"]) == 0
    assert (words_model.parent / "words.corrected.model").exists()

    # a correction withdrawn
    page.click("#sentence-1 .corrections button.withdraw")
    body = check_against_the_api(6)
    assert body["constraints"][1] is None

    # the whole of sentence 0 confirmed: every token looked at, its labels the training data's
    page.click("#sentence-0 tr.tokens td:nth-child(2)")
    page.click("#sentence-right")
    check_against_the_api(7)
    answer = page.evaluate("window.page.last.answer")
    lines = answer["partial_labels"]["conll"].split("\n\n")[0].splitlines()
    assert [line.split()[2] for line in lines] == answer["results"][0]["labels"]


@pytest.mark.slow
def test_view_edit_opens_the_page_on_the_files_sentences(words_model, start_server, browser_page):
    title = "<b>chunks</b> to check"
    arguments = (str(words_model), str(DATA_DIR / "demo_test.txt"), "--max-sentences", "3")
    arguments += ("--low-confidence", "0.99", "--title", title)
    server = start_server(*arguments, command=("view", "--edit"))
    assert server.url.startswith("http://127.0.0.1:")
    document = httpx.get(f"{server.url}/v1/document", timeout=30).json()["conll"]
    assert document.count("\n\n") == 3 and document.startswith("the DT B-NP\n")  # the model's columns
    page = browser_page
    page.goto(server.url + "/")
    decoded_again(page, 1)
    assert page.input_value("#input") == document
    assert chunk_rows(page) == api_rows(server.url, {"conll": document}, 0.99)
    assert len(page.query_selector_all("#view tr.gold")) == 3  # the file's chunks, as gold
    # the command's heading (as text) and threshold
    assert page.text_content("h1") == title and page.title() == title
    assert page.input_value("#threshold") == "0.99"


def focused(page) -> str:
    """Where the keyboard focus is: "chunk S F" or "token S T" for a cell of the view
    (sentence, first token or token), else the focused element's id."""
    return page.evaluate(
        """() => {
             const active = document.activeElement;
             const cell = active.closest("td");
             if (!cell || !active.closest(".sentence")) return active.id;
             const sentence = active.closest(".sentence").id.replace("sentence-", "");
             return cell.closest("tr").classList.contains("tokens")
               ? `token ${sentence} ${cell.cellIndex - 1}` : `chunk ${sentence} ${cell.dataset.first}`;
           }"""
    )


def tab_to(page, wanted, most: int = 60) -> None:
    """Press Tab until ``wanted(focused(page))``, at most ``most`` times."""
    for _ in range(most):
        if wanted(focused(page)):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached it; the focus is on {focused(page)!r}")


@pytest.mark.slow
def test_a_person_corrects_by_keyboard_alone(words_model, start_server, browser_page):
    page = browser_page
    opened(start_server, page, str(words_model))
    page.focus("#input")
    page.keyboard.type(TEXT)
    tab_to(page, lambda where: where == "submit")
    page.keyboard.press("Enter")
    decoded_again(page, 1)

    # Tab reaches the first chunk of sentence 0; Enter selects it and moves to its actions
    first = chunk_rows(page)[0][0]
    tab_to(page, lambda where: where.startswith("chunk 0"))
    assert focused(page) == f"chunk 0 {first[1]}"
    page.keyboard.press("Escape")  # nothing selected: Escape changes nothing
    page.keyboard.press("Enter")
    assert page.is_visible("#editor") and f"{first[0]} “" in page.text_content("#selection")
    page.keyboard.press("Escape")
    assert not page.is_visible("#editor") and focused(page) == f"chunk 0 {first[1]}"
    page.keyboard.press("Enter")
    tab_to(page, lambda where: where == "remove")
    page.keyboard.press("Enter")
    decoded_again(page, 2)
    body = page.evaluate("window.page.last.body")
    assert body["constraints"][0]["fixed"] == {str(t): "O" for t in range(first[1], first[2] + 1)}
    assert focused(page).startswith(("chunk 0", "token 0"))  # back on the sentence drawn anew

    # tokens 0..2 of sentence 1 marked as a chunk: Enter, the arrows, Shift+Enter, a type
    tab_to(page, lambda where: where == "token 1 0")
    page.keyboard.press("Enter")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert focused(page) == "token 1 2"
    page.keyboard.press("Shift+Enter")
    assert "“many old cities”" in page.text_content("#selection")
    assert page.evaluate("document.activeElement.closest('#editor') !== null")  # on to the actions
    type_of_focus = "document.activeElement.closest('#types') && document.activeElement.dataset.type"
    tab_to(page, lambda where: page.evaluate(type_of_focus) == "NP")
    page.keyboard.press("Enter")
    decoded_again(page, 3)
    assert page.evaluate("window.page.last.body")["constraints"][1] == {
        "spans": [{"first": 0, "last": 2, "type": "NP"}]
    }

    # one token: Enter selects it, Enter again goes on to the actions
    tab_to(page, lambda where: where == "token 1 4")
    page.keyboard.press("Enter")
    assert focused(page) == "token 1 4"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.closest('#editor') !== null")
    assert "“grow”" in page.text_content("#selection")


@pytest.mark.slow
def test_a_refused_tag_keeps_the_last_answer_and_its_corrections(words_model, start_server, browser_page, tmp_path):
    page = browser_page
    opened(start_server, page, str(words_model))
    page.fill("#input", TEXT)
    page.click("#submit")
    decoded_again(page, 1)
    start = chunk_rows(page)[0][-1][1]
    page.click(f'#sentence-0 tr.layer td.span[data-first="{start}"]')
    page.click("#remove")
    decoded_again(page, 2)
    shown = chunk_rows(page)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    def refused(expected: str) -> None:
        page.wait_for_selector("#status.error")
        assert expected in page.text_content("#status"), page.text_content("#status")
        assert chunk_rows(page) == shown and page.evaluate("window.page.corrections.size") == 1
        assert page.is_enabled("#download")
        page.evaluate("document.getElementById('status').className = ''")

    # a request the server refuses, lines of the wrong layout
    page.check('input[name="input"][value="conll"]')
    page.fill("#input", "three fields here\ntwo only")
    page.click("#submit")
    refused("422")
    # nothing typed: nothing sent
    page.fill("#input", "  \n ")
    page.click("#submit")
    refused("nothing to tag")
    # an answer that is not JSON (a proxy's page), and a server that cannot be reached
    page.check('input[name="input"][value="text"]')
    page.fill("#input", "a new text .")
    page.route("**/v1/models/*/tag", lambda route: route.fulfill(status=200, body="<html>proxy</html>"))
    page.click("#submit")
    refused("could not be read")
    page.unroute("**/v1/models/*/tag")
    page.route("**/v1/models/*/tag", lambda route: route.abort())
    page.click("#submit")
    refused("cannot reach the server")
    page.click(f'#sentence-1 tr.layer td.span[data-first="{chunk_rows(page)[1][0][1]}"]')
    page.click("#remove")
    refused("cannot reach the server")
    page.unroute("**/v1/models/*/tag")

    # the last answer's corrections are still what downloads
    with page.expect_download() as download:
        page.click("#download")
    saved = tmp_path / "kept.txt"
    download.value.save_as(saved)
    assert saved.read_text(encoding="utf-8") == page.evaluate("window.page.last.answer.partial_labels.conll")
    assert saved.read_text(encoding="utf-8").count("\n\n") == 1  # sentence 0, the one corrected
    assert errors == []


def tagged(start_server, page, model: str):
    """A server of ``model`` and ``page`` open on it, showing TEXT tagged: the server."""
    server = opened(start_server, page, model)
    page.fill("#input", TEXT)
    page.click("#submit")
    decoded_again(page, 1)
    return server


class HeldAnswers:
    """The page's tag requests held back (through page.route) until ``release``: a
    request stays under way for as long as the test needs, however fast the server."""

    def __init__(self, page):
        self.page = page
        self.routes = []
        self.released = False
        page.route("**/v1/models/*/tag", self.hold)

    def hold(self, route) -> None:
        if self.released:
            route.continue_()
        else:
            self.routes.append(route)

    def wait_for(self, count: int, timeout: float = 30.0) -> None:
        """Wait until ``count`` requests are held (a failure after ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        while len(self.routes) < count:
            assert time.monotonic() < deadline, f"{len(self.routes)} requests held, not {count}"
            self.page.wait_for_timeout(20)  # lets Playwright hand over the requests it intercepted

    def release(self) -> None:
        """Let the held requests go on to the server, and the later ones pass."""
        self.released = True
        for route in self.routes:
            route.continue_()

    def refuse(self) -> None:
        """Fail the held requests (the server out of reach), and let the later ones pass."""
        self.released = True
        for route in self.routes:
            route.abort()


def settled(page, answers: int) -> int:
    """Wait until the page has shown at least ``answers`` answers and is idle: how many it showed."""
    page.wait_for_function(f"window.page.answers >= {answers} && !window.page.busy")
    return page.evaluate("window.page.answers")


def listed_corrections(page) -> list[str]:
    """The corrections each sentence lists, as the page shows them."""
    return page.eval_on_selector_all("#view .correction", "items => items.map(item => item.textContent)")


def page_errors(page) -> list[str]:
    """The page's uncaught errors from now on (a list the page fills)."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


@pytest.mark.slow
def test_corrections_made_while_an_answer_is_awaited_are_sent_together(words_model, start_server, browser_page):
    page = browser_page
    server = tagged(start_server, page, str(words_model))
    errors = page_errors(page)
    rows = chunk_rows(page)

    # the last chunk of sentence 0 removed: its answer is held back
    held = HeldAnswers(page)
    _, start, end = rows[0][-1][:3]
    page.click(f'#sentence-0 tr.layer td.span[data-first="{start}"]')
    page.click("#remove")
    held.wait_for(1)
    # meanwhile the first chunk of sentence 1 kept, and "quietly grow" selected
    kind, first, last = rows[1][0][:3]
    page.click(f'#sentence-1 tr.layer td.span[data-first="{first}"]')
    page.click("#keep")
    page.click("#sentence-1 tr.tokens td:nth-child(5)")
    page.click("#sentence-1 tr.tokens td:nth-child(6)", modifiers=["Shift"])
    held.release()

    assert settled(page, 2) == 3  # the held answer, then one under both corrections
    body = page.evaluate("window.page.last.body")
    assert body["constraints"] == [
        {"fixed": {str(t): "O" for t in range(start, end + 1)}},
        {"spans": [{"first": first, "last": last, "type": kind}]},
    ]
    assert chunk_rows(page) == api_rows(server.url, body, 0.5)
    shown = listed_corrections(page)
    assert len(shown) == 2 and shown[0].startswith("removed O") and shown[1].startswith(f"kept {kind}")
    assert page.text_content("#status").endswith("2 corrections")
    # the selection made meanwhile is still open, on the same tokens
    assert page.is_visible("#editor") and "“quietly grow”" in page.text_content("#selection")
    selected = page.eval_on_selector_all("#sentence-1 tr.tokens td.selected", "cells => cells.map(c => c.textContent)")
    assert selected == ["quietly", "grow"]
    page.click('#types button[data-type="NP"]')
    assert settled(page, 4) == 4
    spans = page.evaluate("window.page.last.body")["constraints"][1]["spans"]
    assert spans[-1] == {"first": 3, "last": 4, "type": "NP"}

    # a chunk selected again while its removal is awaited: closed when it is gone, saying so
    _, start, end = chunk_rows(page)[0][0][:3]
    chunk = f'#sentence-0 tr.layer td.span[data-first="{start}"]'
    held = HeldAnswers(page)
    page.click(chunk)
    page.click("#remove")
    held.wait_for(1)
    page.click(chunk)  # the view shown until the answer comes
    assert page.is_visible("#editor")
    held.release()
    assert settled(page, 5) == 5
    assert not page.is_visible("#editor")
    closed = f"the chunk selected (sentence 0, tokens {start}–{end}) is not in the new answer"
    assert closed in page.text_content("#status")
    assert errors == []


@pytest.mark.slow
def test_corrections_withdrawn_while_an_answer_is_awaited_are_all_withdrawn(words_model, start_server, browser_page):
    page = browser_page
    tagged(start_server, page, str(words_model))
    errors = page_errors(page)
    for sentence in (0, 1):
        page.click(f"#sentence-{sentence} tr.layer td.span")
        page.click("#keep")
        decoded_again(page, 2 + sentence)
    assert len(listed_corrections(page)) == 2

    held = HeldAnswers(page)
    page.click("#sentence-0 .corrections button.withdraw")
    held.wait_for(1)
    page.click("#sentence-1 .corrections button.withdraw")  # on the view shown, while the first is held
    held.release()

    assert settled(page, 4) == 5
    assert "constraints" not in page.evaluate("window.page.last.body")
    assert page.evaluate("window.page.corrections.size") == 0 and listed_corrections(page) == []
    assert page.text_content("#status").endswith("0 corrections")

    # the request under way refused: its correction is undone, the one made meanwhile goes on
    held = HeldAnswers(page)
    page.click("#sentence-0 tr.layer td.span")
    page.click("#keep")
    held.wait_for(1)
    kind, first, last = chunk_rows(page)[1][0][:3]
    page.click("#sentence-1 tr.layer td.span")
    page.click("#keep")
    held.refuse()
    assert settled(page, 6) == 6
    assert page.get_attribute("#status", "class") == "error"
    assert page.text_content("#status").startswith("the correction was not applied: cannot reach the server")
    assert page.evaluate("window.page.last.body")["constraints"] == [
        None,
        {"spans": [{"first": first, "last": last, "type": kind}]},
    ]
    words = " ".join(TEXT.split("\n\n")[1].split()[first : last + 1])
    assert listed_corrections(page) == [f"kept {kind} “{words}” ×"]

    # while a new input is tagged, a correction of the last one is refused, saying so
    held = HeldAnswers(page)
    page.fill("#input", "many old cities grow .")
    page.click("#submit")
    held.wait_for(1)
    page.click("#sentence-0 tr.layer td.span")
    page.click("#keep")
    assert "a new input is being tagged" in page.text_content("#status")
    held.release()
    assert settled(page, 7) == 7
    assert page.evaluate("window.page.corrections.size") == 0
    assert "constraints" not in page.evaluate("window.page.last.body")
    assert errors == []


def agree_on_threshold(page, threshold: float) -> None:
    """The threshold field, the last request and the status line all say ``threshold``,
    and the chunks flagged are those less probable than it."""
    assert page.input_value("#threshold") == str(threshold)
    assert page.evaluate("window.page.last.body.low_confidence") == threshold
    chunks = [chunk for rows in chunk_rows(page) for chunk in rows]
    assert all(chunk[4] == (chunk[3] < threshold) for chunk in chunks)
    to_check = page.eval_on_selector_all('tr.layer[data-layer="chunk"] td.span.low:not(.corrected)', "c => c.length")
    assert f" {to_check} below {threshold} to check;" in page.text_content("#status"), page.text_content("#status")
    assert page.is_enabled("#next-check") == (to_check > 0)


@pytest.mark.slow
def test_a_threshold_changed_while_an_answer_is_awaited_or_refused_agrees_with_the_flags(
    words_model, start_server, browser_page
):
    page = browser_page
    tagged(start_server, page, str(words_model))
    errors = page_errors(page)
    agree_on_threshold(page, 0.5)

    # changed while a correction's answer is held back: applied after it
    held = HeldAnswers(page)
    page.click("#sentence-0 tr.layer td.span")
    page.click("#keep")
    held.wait_for(1)
    page.fill("#threshold", "0.95")
    page.press("#threshold", "Tab")
    held.release()
    assert settled(page, 2) == 3
    agree_on_threshold(page, 0.95)

    # refused: the field goes back to the threshold the flags are drawn with, and says why
    page.route("**/v1/models/*/tag", lambda route: route.abort())
    page.fill("#threshold", "0.2")
    page.press("#threshold", "Tab")
    page.wait_for_selector("#status.error")
    assert "threshold 0.2 was not applied" in page.text_content("#status"), page.text_content("#status")
    assert page.input_value("#threshold") == "0.95"
    assert page.evaluate("window.page.last.body.low_confidence") == 0.95
    assert errors == []


@pytest.mark.slow
def test_an_empty_threshold_is_the_default(words_model, start_server, browser_page):
    page = browser_page
    tagged(start_server, page, str(words_model))
    page.fill("#threshold", "0.95")
    page.press("#threshold", "Tab")
    decoded_again(page, 2)
    agree_on_threshold(page, 0.95)
    page.fill("#threshold", "")
    page.press("#threshold", "Tab")
    decoded_again(page, 3)
    agree_on_threshold(page, 0.5)


def left_of(page, selector: str, text: str) -> float:
    """Where ``text`` (within one text node of the element ``selector``) begins on the
    screen: the left edge of its rendered glyphs, in pixels."""
    return page.evaluate(
        """([selector, text]) => {
             const walker = document.createTreeWalker(document.querySelector(selector), NodeFilter.SHOW_TEXT);
             for (let node = walker.nextNode(); node; node = walker.nextNode()) {
               const at = node.data.indexOf(text);
               if (at < 0) continue;
               const range = document.createRange();
               range.setStart(node, at);
               range.setEnd(node, at + text.length);
               return range.getBoundingClientRect().left;
             }
             throw new Error(`${text} is not in ${selector}`);
           }""",
        [selector, text],
    )


@pytest.mark.slow
def test_a_right_to_left_override_in_a_token_stays_in_the_token(words_model, start_server, browser_page):
    page = browser_page
    page.set_viewport_size({"width": 1600, "height": 900})
    opened(start_server, page, str(words_model))
    page.check('input[name="input"][value="conll"]')
    page.fill("#input", "the DT\n\u202elight NN\nmight MD\nbuild VB\na DT\nhouse NN\n. .\n")
    page.click("#submit")
    decoded_again(page, 1)
    page.click("#sentence-0 tr.tokens td:nth-child(2)")
    page.click("#sentence-0 tr.tokens td:nth-child(3)", modifiers=["Shift"])
    page.click('#types button[data-type="NP"]')
    decoded_again(page, 2)

    # the chunk marked, selected: the words after the token read left to right
    page.click('#sentence-0 tr.layer td.span[data-first="0"][data-type="NP"]')
    assert "p = 1.0000" in page.text_content("#selection")
    assert (
        left_of(page, "#selection", "the")
        < left_of(page, "#selection", "light")
        < left_of(page, "#selection", "sentence 0")
        < left_of(page, "#selection", "p = 1.0000")
        < left_of(page, "#selection", "change its type")
    )
    # the list of corrections: the closing quote and the × after the token
    item = "#sentence-0 .correction"
    assert left_of(page, item, "marked") < left_of(page, item, "light") < left_of(page, item, "”")
    withdraw = page.eval_on_selector(f"{item} button.withdraw", "button => button.getBoundingClientRect().left")
    assert left_of(page, item, "”") < withdraw


@pytest.mark.slow
def test_the_model_chosen_is_kept_when_the_token_changes(words_model, demo_chunker, start_server, browser_page):
    page = browser_page
    server = start_server(f"chunks={demo_chunker}", f"words={words_model}", "--tokenizer", "regex")
    page.goto(server.url + "/")
    page.wait_for_selector('#model option[value="words"]', state="attached")
    assert page.input_value("#model") == "chunks"
    page.select_option("#model", "words")
    page.fill("#input", TEXT)
    page.click("#submit")
    decoded_again(page, 1)
    assert page.text_content("#status").startswith("2 sentences")
    page.fill("#token", "a token")  # this server asks for none: the list is the same
    page.press("#token", "Tab")
    page.wait_for_function("document.getElementById('status').textContent === ''")  # listed again
    assert page.input_value("#model") == "words"
    assert page.text_content("#model-kind").startswith("single; reads word;")


@pytest.mark.slow
def test_a_corrected_sentence_the_download_cannot_hold_is_named(words_model, start_server, browser_page):
    import_or_skip("spacy", "the test needs spaCy's tokenizer, which keeps -DOCSTART- whole: pip install spacy")
    page = browser_page
    errors = page_errors(page)
    server = start_server(str(words_model), "--tokenizer", "spacy")
    page.goto(server.url + "/")
    page.wait_for_selector('#model option[value="default"]', state="attached")
    page.fill("#input", "the -DOCSTART- light might build a house .\n\nmany old cities quietly grow .")
    page.click("#submit")
    decoded_again(page, 1)
    page.click("#sentence-0 tr.tokens td:nth-child(2)")
    page.click("#sentence-right")  # every label of sentence 0 confirmed: it was refused (a 422) before
    decoded_again(page, 2)
    status = page.text_content("#status")
    assert "the download lacks sentence 0 (token 1: " in status and "-DOCSTART-" in status
    assert page.evaluate("window.page.last.answer.partial_labels.sentences") == []
    assert page.is_disabled("#download") and errors == []
