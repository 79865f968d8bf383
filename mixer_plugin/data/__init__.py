"""Data preparation shared by every dataset recipe (``mixer_plugin/recipes/<dataset>.py``):
download and verify, read the release, tokenize, learn subwords, binarize for fairseq
(``prep``), and undo it on the model's output (``postprocess``).  ``mixer_plugin.recipes``
runs a recipe by name (``mixer-prepare``)."""
