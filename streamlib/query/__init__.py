"""Interactive queries on a running application (DESIGN.md "Interactive queries").

- :mod:`.replica`: driver-side replicas of the stores, kept current from the changelogs,
  published one committed batch at a time;
- :mod:`.reads`: reads pinned to one published version;
- :mod:`.frozen`: frozen copies for Spark readers (``Streams.table``);
- :mod:`.service`: what ``Streams`` calls; :mod:`.http`: the JSON endpoint's routes,
  :mod:`.paging`: its pages and cursors, :mod:`.server`: its connections and workers,
  :mod:`.metrics`: its ``/metrics`` (Prometheus).
"""
