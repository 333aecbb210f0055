"""The experiments of the papers that are not part of the tagger: the CMU
seminar announcements and their scorers, and Sutton and McCallum's transfer
experiment."""
