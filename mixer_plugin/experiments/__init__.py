"""The experiment runner (``mixer-run``): experiment files (``spec``), the stock fairseq commands
of each stage (``stages``), scheduling, resuming and progress (``runner``), and the records, tables
and plots rebuilt from the run folders (``collect``, ``claims``, ``report``, ``readme``)."""
