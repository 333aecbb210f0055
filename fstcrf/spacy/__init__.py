"""fstcrf models in spaCy pipelines: the component "fstcrf" (see docs/spacy.md).

    nlp = spacy.blank("en")
    nlp.add_pipe("fstcrf", config={"model": "chunker.model"})
    doc = nlp(...)   # doc.spans["chunks"], each span's span._.probability

spaCy (>= 3.7) is needed by this package only (``pip install fstcrf[spacy]``); spaCy
finds the factory (:mod:`fstcrf.spacy.factory`) through fstcrf's entry point, without
an import.  The component is :class:`fstcrf.spacy.component.FstcrfComponent`; this
package imports nothing more, since spaCy imports it whenever it builds a pipeline.
"""

from fstcrf.extras import require

require("spacy", "the spaCy component fstcrf.spacy")
