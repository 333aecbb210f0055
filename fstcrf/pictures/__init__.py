"""Pictures of what fstcrf builds and computes (see docs/pictures.md): a grammar's
minimal acceptor and a model's topology (:mod:`~fstcrf.pictures.automata`), one
sentence's lattice with exact posteriors (:mod:`~fstcrf.pictures.lattice`), as
Graphviz dot text (:mod:`~fstcrf.pictures.dot`) written or drawn by Graphviz
(:mod:`~fstcrf.pictures.render`), and the tagged documents as one self-contained
HTML page (:mod:`~fstcrf.pictures.tagged`, :mod:`~fstcrf.pictures.html`).

Nothing is imported here: the command line's help reads the defaults in
:mod:`~fstcrf.pictures.settings` without numpy."""
