"""Operations: the use cases behind the facade (deploy, start, cancel, retry, external
tasks, user tasks, messages, timers, scans, views, replay, retention). Each owns its
transactions, through the core."""
