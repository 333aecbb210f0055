"""The document view's page read back with Python's HTML parser: the sentences, each
table row (its class, layer and heading) and each cell (its attributes and the text
a reader sees), and every tag the page uses."""

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Cell:
    attributes: dict
    text: str = ""

    @property
    def classes(self) -> set[str]:
        return set(self.attributes.get("class", "").split())


@dataclass
class Row:
    attributes: dict
    heading: str = ""
    cells: list[Cell] = field(default_factory=list)


@dataclass
class SentenceTable:
    identifier: str
    rows: list[Row] = field(default_factory=list)


class _Reader(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sentences: list[SentenceTable] = []
        self.headings: list[str] = []
        self.tags: set[str] = set()
        self.style = ""
        self._text: list | None = None  # where the text being read goes
        self._heading = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.add(tag)
        if tag == "div" and "sentence" in attributes.get("class", ""):
            self.sentences.append(SentenceTable(attributes["id"]))
        elif tag == "tr":
            self.sentences[-1].rows.append(Row(attributes))
        elif tag == "th":
            self._text = []
        elif tag == "td":
            self.sentences[-1].rows[-1].cells.append(Cell(attributes))
            self._text = []
        elif tag == "h2":
            self._heading = True

    def handle_endtag(self, tag):
        if tag == "th":
            self.sentences[-1].rows[-1].heading = "".join(self._text or [])
            self._text = None
        elif tag == "td":
            self.sentences[-1].rows[-1].cells[-1].text = "".join(self._text or [])
            self._text = None
        elif tag == "h2":
            self._heading = False

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)
        if self._heading:
            self.headings.append(data)
        if self.lasttag == "style":
            self.style += data


def read_page(page: str) -> _Reader:
    reader = _Reader()
    reader.feed(page)
    reader.close()
    return reader
