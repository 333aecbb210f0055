"""Corpora: CoNLL column files, tagging schemes and conlleval's chunks, gold
label columns, scoring (conlleval and token accuracy, McNemar's test) and
the synthetic demo corpus."""
