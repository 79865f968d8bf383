"""Data preparation shared by every dataset recipe (``mixer_plugin/recipes/<dataset>.py``):
download and verify, read the release, tokenize, learn subwords, binarize for fairseq (the steps
of ``pipeline``), and undo it on the model's output (``postprocess``).  ``mixer_plugin.recipes``
runs a recipe by name (``mixer-prepare``).

A recipe declares what it downloads and how its raw splits are read; the modules here do the
rest, the same way for every dataset:

    fetch     each download to ``<name>.part``, verified (size, sha256 when known, the
              archive read to its end), then renamed; or taken from ``--downloads DIR``
              (``fetch``; ``archives`` reads members without unpacking)
    raw       the recipe's own reader writes ``raw/<split>.<lang>`` (one segment a line:
              ``text``)
    tok       Moses-style normalisation + tokenisation with sacremoses (optional
              lowercasing, truecasing), length cleaning of train (clean-corpus-n rules)
              (``tokenize``)
    subword   subword-nmt BPE or sentencepiece, joint or one model per language
              (``subwords``)
    binarize  fairseq-preprocess into ``bin/`` (run by ``binarize``)

``pipeline.run_pipeline`` runs raw, tok, subword and binarize in that order; the recipe calls
``fetch`` from its reader.  ``workspace`` holds the output folder, the options every recipe
shares and ``PrepError``; ``pool`` spreads tokenisation and BPE over ``--workers`` processes.

Every step writes into temporary names and renames at the end, then leaves a marker
in ``.steps/<step>.json`` with the options it ran with.  A rerun skips finished steps,
redoes unfinished ones from scratch, and refuses to mix steps done with different
options (``--force`` starts over).  Nothing half-written is ever taken for finished.

``prep.json`` in the output root tells the generate/score scripts how to undo the
preprocessing (subword model, tokeniser, case) and where the references are.

The modules import each other in one direction only (in a cycle, whichever is imported first
would see the other half-made): ``workspace`` imports none of them; ``text``, ``fetch``,
``archives`` and ``binarize`` import only ``workspace``; ``pool`` imports none; ``tokenize``
imports ``pool``; ``subwords`` imports ``pool``, ``text`` and ``workspace``; ``pipeline`` imports
the steps it runs (and holds the binarize step itself: it needs ``Parallel``).
"""
