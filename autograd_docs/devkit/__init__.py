"""The toolkit of the tools, ``make bench`` and the tests: not part of the Sphinx extension.

Everything that builds the site from outside and reads back what the build did
lives here, once:

- ``scratch_copy``: a copy of the repository to build somewhere else;
- ``builds``: ``make html`` (or another target) in a folder, and the build's
  results as the build states them (``build_log``'s page lines, problems and
  warnings, each warning with its ``AuthorError``), never read from message prose;
- ``executed``: the notebooks a build executed, each code cell's outputs by the
  page and line of the cell;
- ``stock_kernel``: a page run in a stock Jupyter kernel, as a reader runs it
  (the tests' oracle for the page runner);
- ``livehtml``: ``make livehtml`` started on a free port, fetched from, and
  stopped with its whole process group;
- ``warm_autobuild``: what ``make livehtml`` runs, sphinx-autobuild with each
  rebuild forked from a process that imported Sphinx and the extensions once.

The engine (``autograd_docs``) never imports it.
"""
