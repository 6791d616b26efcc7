"""``python -m sdp_expect.cli``: the ``sdp-expect`` command."""

from sdp_expect.cli import main

raise SystemExit(main())
