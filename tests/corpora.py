"""Toy corpora and training problems shared by the tests: a chunked toy grammar
whose chunks the words determine, random sentences, and their training sets."""

import random


from fstcrf.corpus.conll import Corpus, Sentence
from fstcrf.features.encoding import EncodedSentences, build_features
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.template import parse_template
from fstcrf.corpus.labels import chain_topology, gold_label_set, gold_states, parse_gold
from fstcrf.model.fitting import token_classes, transition_layout
from fstcrf.model import ChainCRF
from fstcrf.learn.objective import Scorer, TrainingSet


TEMPLATE = "bias\nword[0]\nword[-1]|word[0]\npos[-1]\npos[0]\npos[0]|pos[+1]\n"

WORDS = {
    "DT": ["the", "a", "every"],
    "JJ": ["big", "red", "old", "new"],
    "NN": ["dog", "cat", "park", "ball", "idea"],
    "VB": ["sees", "likes", "chased", "is"],
    "IN": ["in", "near", "with"],
    ".": [".", "!"],
}


def chunk_corpus(seed: int, num_sentences: int) -> Corpus:
    """Sentences of a toy grammar, NP VP NP (PP NP)? ., whose chunks the words determine."""
    rng = random.Random(seed)
    sentences = []
    for _ in range(num_sentences):
        words, tags, chunks = [], [], []

        def add(pos, chunk):
            words.append(rng.choice(WORDS[pos]))
            tags.append(pos)
            chunks.append(chunk)

        def noun_phrase():
            parts = (["DT"] if rng.random() < 0.7 else []) + ["JJ"] * rng.randint(0, 2) + ["NN"]
            for position, pos in enumerate(parts):
                add(pos, "B-NP" if position == 0 else "I-NP")

        noun_phrase()
        add("VB", "B-VP")
        noun_phrase()
        if rng.random() < 0.5:
            add("IN", "B-PP")
            noun_phrase()
        add(".", "O")
        sentences.append(Sentence({"word": words, "pos": tags, "chunk": chunks}))
    return Corpus(("word", "pos", "chunk"), sentences)


def random_corpus(seed: int, num_sentences: int) -> Corpus:
    """Random words and POS with random (IOB2-valid) chunk tags: nothing to learn."""
    rng = random.Random(seed)
    sentences = []
    for _ in range(num_sentences):
        length = rng.randint(1, 6)
        chunks, previous = [], "O"
        for _ in range(length):
            choices = ["O", "B-NP", "B-VP"] + (["I-" + previous[2:]] if previous != "O" else [])
            previous = rng.choice(choices)
            chunks.append(previous)
        sentences.append(
            Sentence(
                {
                    "word": [rng.choice("abcdef") for _ in range(length)],
                    "pos": [rng.choice("XYZ") for _ in range(length)],
                    "chunk": chunks,
                }
            )
        )
    return Corpus(("word", "pos", "chunk"), sentences)


def training_set(corpus: Corpus, order: int, feature_set: str, threads: int = 2, constraint=None) -> TrainingSet:
    """The training problem of ``corpus``'s chunk column (which may hold partial
    labels), optionally under a constraint acceptor."""
    extractor = FeatureExtractor(parse_template(TEMPLATE))
    encoded = EncodedSentences.from_corpus(extractor, corpus, fit=True)
    gold = corpus.column("chunk")
    topology = chain_topology(order, gold_label_set(gold))
    label_ids, allowed = parse_gold(topology, gold)
    states = gold_states(topology, label_ids, encoded.offsets)
    features = build_features(
        encoded,
        label_ids if order == 1 else states,
        label_ids,
        topology,
        order,
        feature_set,
        extractor.vocabulary_.get("bias"),
    )
    return TrainingSet(Scorer(features, topology, threads, constraint), encoded, states, allowed)


READING_TEMPLATE = "bias\nword[0]\nword[-1]\npos[0]\npos[0]|word[0]\n"


def reading_training_set(corpus: Corpus, order: int, constraint=None, threads: int = 2) -> TrainingSet:
    """The training problem of a model that reads the pos column, with transitions
    that depend on the pos label at the new token (read_transitions)."""
    model = ChainCRF(READING_TEMPLATE, order=order, reads="pos")
    extractor = FeatureExtractor(parse_template(READING_TEMPLATE))
    lower_labels = sorted({value for values in corpus.column("pos") for value in values})
    encoded = EncodedSentences.from_corpus(
        extractor, corpus, fit=True, token_class=token_classes(model, corpus, lower_labels)
    )
    gold = corpus.column("chunk")
    topology = chain_topology(order, gold_label_set(gold))
    label_ids, allowed = parse_gold(topology, gold)
    states = gold_states(topology, label_ids, encoded.offsets)
    features = build_features(
        encoded,
        label_ids if order == 1 else states,
        label_ids,
        topology,
        order,
        "supported",
        extractor.vocabulary_.get("bias"),
    )
    scorer = Scorer(features, topology, threads, constraint, transition_layout(model, topology.num_edges, lower_labels))
    return TrainingSet(scorer, encoded, states, allowed)
