"""Running scenarios: topics, generator and streamlet drivers, drained and recorded."""
