"""`python -m leaselog.cli`."""

from leaselog.cli.app import main

raise SystemExit(main())
