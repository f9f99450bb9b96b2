"""The core: what every engine part shares (database, dispatcher, clock, handlers, caches)
and the transactions and retries they run in."""
