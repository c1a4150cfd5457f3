"""Result files on disk, shared by ``benchmarks`` and ``paper_figures`` (which must not import each other).

``atomic``: write a file whole or not at all; ``resumable``: units of work kept as pickles so a long run resumes;
``tables``: CSV and Markdown tables, published-vs-ours comparisons.
"""
