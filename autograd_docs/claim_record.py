"""The record a passing check publishes when it quotes its page: one definition
for both sides. ``snippets/oracle.py`` writes it from inside a page's kernel (so
this module imports nothing); ``execution/claims.py`` reads it in the build.

A record is a ``display_data`` output of the check's cell with one mime type,
``MIMETYPE``, whose value holds ``quote`` (the sentence, verbatim), ``claim``
(what a failure would say), ``check`` (the oracle function), ``line`` (the
check's line within its cell), ``torch`` (the version that ran it) and, for
property checks, ``examples`` and ``families``.
"""

MIMETYPE = "application/vnd.autograd-docs.claim+json"

# Set in every page kernel the build starts (kernels/environment.py): a check
# publishes records only there, never in a reader's Jupyter or a script.
PUBLISHED_WHEN = "AUTOGRAD_DOCS_CLAIM_RECORDS"
