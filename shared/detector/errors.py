"""Exceptions of the detector SDK.

Three kinds, because the runtime treats them differently:

* :class:`DeclarationError` / :class:`ManifestError`: the detector or its manifest is wrong. A
  deployment mistake: the runtime refuses to start, with one line naming the field to fix.
* :class:`RetriableError`: raised by a detector (or anything it calls) for a failure that may
  pass if tried again (a lookup service timing out). The runtime retries the record a bounded
  number of times before dead-lettering it.
* Anything else raised by ``detect`` is a poison pill for that record: dead-lettered, counted,
  and the detector goes on (subject to the error-rate policy).
"""

from __future__ import annotations

from shared.errors import ConfigError, MeshError


class DetectorError(MeshError):
    """Base class of the detector SDK's errors."""


class DeclarationError(DetectorError, ConfigError):
    """A detector declaration (decorator arguments, state specs) is unusable."""


class ManifestError(DetectorError, ConfigError):
    """A detector manifest is missing, unreadable, or has a bad or missing field."""


class RetriableError(DetectorError):
    """A transient failure: the runtime may try the same record again."""


class StateError(DetectorError):
    """A detector used its state wrongly (unknown store, non-string key, value not JSON)."""
