"""Plotly figures: the per-job lease timeline (the article's key picture) and the fleet overview.

Both are built as plain plotly figure dicts first (`timeline_spec`, `overview_spec`), without paying
plotly.py's per-property validation; `timeline_figure` and `overview_figure` wrap the same dicts in
`plotly.graph_objects.Figure` for notebooks. The HTML report embeds the overview's dict and draws each
timeline in the browser from its data table (timeline_table.py, assets/timeline.js). The pieces: timeline.py
(a job's panels stacked), lanes.py (one panel), markers.py (event markers, finding rows), overview.py,
plotting.py (colours, escaping, the time axis and format, the label dict).
"""

from __future__ import annotations

from leaselog.render.overview import overview_figure, overview_spec
from leaselog.render.timeline import timeline_figure, timeline_spec

__all__ = ["overview_figure", "overview_spec", "timeline_figure", "timeline_spec"]
