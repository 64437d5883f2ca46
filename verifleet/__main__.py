"""``python -m verifleet`` runs the CLI."""

from verifleet.orchestrator.cli import main

raise SystemExit(main())
