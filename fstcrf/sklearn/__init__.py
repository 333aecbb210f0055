"""A drop-in replacement for sklearn_crfsuite: ``from fstcrf.sklearn import CRF``.

scikit-learn is needed by this package only (``pip install fstcrf[sklearn]``).
See docs/sklearn.md.
"""

from fstcrf.extras import require

require("sklearn", "fstcrf.sklearn")

from fstcrf.sklearn import metrics, scorers  # noqa: E402  (after the check that names the extra)
from fstcrf.sklearn.estimator import CRF  # noqa: E402
from fstcrf.sklearn.joint import JointCRF  # noqa: E402

__all__ = ["CRF", "JointCRF", "metrics", "scorers"]
