"""The experiment runner (``mixer-run``): experiment files (their schema ``spec``, read and checked
by ``spec_loader``), the stock fairseq commands of each stage (``stages``), scheduling, resuming and
progress (``runner``), and the records, tables and plots rebuilt from the run folders (``collect``,
``claims``, ``report``, ``readme``)."""
