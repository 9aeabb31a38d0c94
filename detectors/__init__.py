"""Reference detectors, one folder each: ``manifest.yaml`` plus a ``detector.py``.

Run one with ``python -m services.detector_runtime detectors/<name>``.
"""
