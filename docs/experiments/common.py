"""Steps the experiment scripts share; public fstcrf API only."""
import numpy as np


def labels_per_sentence(model, states, sentences):
    """Label lists [B][T] of a model's state paths [N] over ``sentences``."""
    names = np.array(model.labels_, dtype=object)[model.topology_.state_label[states]]
    return [list(part) for part in np.split(names, np.cumsum([len(s) for s in sentences])[:-1])]


def with_lower_labels(sentences, lower, states, column="pos"):
    """The sentences with ``column`` set to the labels of the lower model's state paths [N]."""
    return [sentence.with_column(column, labels)
            for sentence, labels in zip(sentences, labels_per_sentence(lower, states, sentences))]


def joint_labels(joint, paths, sentences):
    """Label lists [K components][B][T] of joint state paths [N]."""
    states = joint.space.component_states(paths)
    return [labels_per_sentence(model, states[:, k], sentences) for k, model in enumerate(joint.components)]


def token_accuracy(gold, predicted):
    """Percentage of tokens whose predicted label is the gold one ([B][T] each)."""
    return 100 * np.mean([a == b for g, p in zip(gold, predicted) for a, b in zip(g, p)])
