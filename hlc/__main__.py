"""``python -m hlc`` is the ``hlc`` command."""

from hlc.cli import main

raise SystemExit(main())
