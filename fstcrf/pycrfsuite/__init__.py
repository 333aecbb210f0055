"""python-crfsuite's API over fstcrf: ``import fstcrf.pycrfsuite as pycrfsuite``.

``ItemSequence``, ``Trainer`` (and ``BaseTrainer``), ``Tagger``,
``CRFSUITE_VERSION`` and ``CRFSuiteError`` behave as python-crfsuite 0.9's,
and ``fstcrf.pycrfsuite._logparser.TrainLogParser`` reads the training log as
``pycrfsuite._logparser.TrainLogParser`` does; the models are fstcrf model
files.  :func:`install_as_pycrfsuite` makes ``import pycrfsuite`` give this
package, for code that cannot be edited (NLTK's CRFTagger).  Nothing here
needs python-crfsuite or scikit-learn.  See docs/pycrfsuite.md.
"""

from fstcrf.errors import FstcrfError
from fstcrf.pycrfsuite.alias import install_as_pycrfsuite
from fstcrf.pycrfsuite.dump import ParsedDump
from fstcrf.pycrfsuite.items import ItemSequence
from fstcrf.pycrfsuite.tagger import Tagger
from fstcrf.pycrfsuite.trainer import BaseTrainer, Trainer

#: The CRFsuite release whose behaviour this package follows (python-crfsuite 0.9 builds CRFsuite 0.12).
CRFSUITE_VERSION = "0.12"
#: python-crfsuite's training error: every error fstcrf raises for bad input is one.
CRFSuiteError = FstcrfError

__all__ = [
    "CRFSUITE_VERSION",
    "BaseTrainer",
    "CRFSuiteError",
    "ItemSequence",
    "ParsedDump",
    "Tagger",
    "Trainer",
    "install_as_pycrfsuite",
]
