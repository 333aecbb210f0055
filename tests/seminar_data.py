"""Hand-made seminar announcements and newswire NER sentences for the transfer tests."""

from __future__ import annotations

from pathlib import Path

from fstcrf.corpus.conll import Corpus, Sentence
from fstcrf.experiments import transfer
from fstcrf.experiments.seminars import read_seminar
from fstcrf.features.template import parse_template
from fstcrf.model import ChainCRF

ANNOUNCEMENTS = [
    "Type: cmu.cs.robotics\nWho: <speaker>John Smith</speaker>\nHost: Mary Jones\n"
    "Time: <stime>3:30</stime> - <etime>5:00</etime>\nPlace: <location>Wean Hall 5409</location>\n"
    "<paragraph><sentence><speaker>Smith</speaker> of IBM will talk in Pittsburgh .</sentence></paragraph>\n",
    "Who: <speaker>Ann Lee</speaker>\nHost: Bob Green\nTime: <stime>4:00 PM</stime>\n"
    "Place: <location>Doherty Hall 1112</location>\n<sentence>Lee visits from Intel in Boston .</sentence>\n",
    "Topic: vision\nWho: <speaker>Mark Brown</speaker> , Microsoft\nHost: Sue White\n"
    "Time: <stime>10:00</stime>\nPlace: <location>Wean Hall 4623</location>\n",
    "Speaker: <speaker>Kim Park</speaker>\nHost: Ted Black\nDates: 3-May-95\nTime: <stime>2:00</stime> - "
    "<etime>3:00</etime>\nPlace: <location>Smith Hall 100</location>\n",
]

NEWSWIRE = [
    ("John Smith visited IBM in Boston .", "B-PER I-PER O B-ORG O B-LOC O"),
    ("Mary Jones of Intel said .", "B-PER I-PER O B-ORG O O"),
    ("Host Bob Green spoke in Pittsburgh", "O B-PER I-PER O O B-LOC"),
    ("Microsoft hired Ann Lee", "B-ORG O B-PER I-PER"),
    ("Ted Black met Sue White in Smith Hall", "B-PER I-PER O B-PER I-PER O B-LOC I-LOC"),
]


def announcement_documents(folder: Path) -> list:
    """The announcements written to ``folder`` and read back: documents of sentences."""
    result = []
    for number, text in enumerate(ANNOUNCEMENTS):
        path = folder / f"{number}.txt"
        path.write_text(text)
        result.append(read_seminar(path).sentences)
    return result


def newswire_ner() -> ChainCRF:
    """The transfer's word-only NER CRF trained on the newswire sentences."""
    sentences = [Sentence({"word": words.split(), "ner": tags.split()}) for words, tags in NEWSWIRE]
    template = parse_template(transfer.ner_template_text())
    return ChainCRF(template, max_iter=30, threads=1).fit(Corpus(("word", "ner"), sentences), "ner")
