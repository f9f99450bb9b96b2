"""Prometheus metrics for the processes that run bpm: the engine observer
(``PrometheusObserver``), the families read from the database (``SnapshotCollector``), the
multiprocess directory of a Celery worker and the guarded exporter it serves. Imported by
``bpm_server`` and ``bpm_workers`` only, never by ``bpm`` (the engine library stays free of
``prometheus_client``)."""
