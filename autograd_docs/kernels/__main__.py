"""``python -m autograd_docs.kernels stop [SITE]``: stop the site's warm fork
server (``make clean`` and the end of ``make livehtml`` do)."""

from autograd_docs.kernels.warm_server import main

main()
