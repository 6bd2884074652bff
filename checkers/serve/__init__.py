"""`groupspec serve`: the runtime coordinator over Kafka's protocol, for real clients (server.py)."""
