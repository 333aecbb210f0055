"""A drop-in replacement for sklearn_crfsuite: ``from fstcrf.sklearn import CRF``.

scikit-learn is needed by this package only (``pip install fstcrf[sklearn]``).
See docs/sklearn.md.
"""

from fstcrf.sklearn import metrics, scorers
from fstcrf.sklearn.estimator import CRF
from fstcrf.sklearn.joint import JointCRF

__all__ = ["CRF", "JointCRF", "metrics", "scorers"]
