"""`leaselog watch`: findings while the incident is happening (see `run.Watcher`)."""
