"""The experiment runner (``mixer-run``): declarative experiment files (``spec``),
the stock fairseq commands of each stage (``stages``), scheduling, resuming and
progress (``runner``), and results tables and plots rebuilt from the run folders
(``results``)."""
