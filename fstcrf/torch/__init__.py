"""PyTorch layers over fstcrf's topologies: ``from fstcrf.torch import CRF``.

torch is needed by this package only (``pip install 'fstcrf[torch]'``); ``import
fstcrf`` never imports it.  See docs/torch.md.
"""

from fstcrf.extras import require

require("torch", "fstcrf.torch")

from fstcrf.torch.crf import CRF  # noqa: E402
from fstcrf.torch.joint import JointCRF  # noqa: E402
from fstcrf.grammar.declaration import label_topology  # noqa: E402
from fstcrf.torch.structure import LabelStructure  # noqa: E402

__all__ = ["CRF", "JointCRF", "LabelStructure", "label_topology"]
