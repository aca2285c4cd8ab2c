"""PySpark streamlets. Each runs as its own driver and knows nothing of the chaos driver."""
