"""Reading logs: sources -> format detection -> per-line records -> raw canonical columns."""
