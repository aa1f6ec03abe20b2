"""A pod's wall clock against its own log: where it stepped, decided by one set of rules
(`leaselog.clocks.rules`), undone while the events are built (`leaselog.clocks.undo`), and the
`clock_steps` frame the clock checks, the causal anchors and the offsets read (`leaselog.clocks.steps`)."""
