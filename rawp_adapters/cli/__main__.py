"""``python -m rawp_adapters.cli``."""

from rawp_adapters.cli import main

raise SystemExit(main())
