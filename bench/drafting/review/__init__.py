"""`bench goldset review`: a page on 127.0.0.1 to accept, reject and fix a draft's questions and choose
their evidence by selecting text; every change is saved at once and the goldset rewritten after it.

``store`` keeps the draft (journal, atomic rewrites, versions), ``server`` serves the page and its API,
``search`` finds evidence anywhere in the corpus, ``distractors`` adds a run's top misjudged passages.
"""
