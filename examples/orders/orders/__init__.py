"""An example of a user's own pipeline: order events, validated, enriched, upserted into SQLite.

Nothing here is part of the harness: it is written only on the public streamlet API (pipelines.api), as a
team would write its own pipeline, and named in orders.yaml by module and class.
"""
