"""A fix for ``applyInPandasWithState`` on pyspark 4.0.0 with pyarrow >= 2x (the project's pins).

What breaks: the Python worker reads, per Arrow batch, a struct column of chunk information
(``startOffset``, ``numRows``, ``isLastChunk`` ...) padded with null rows. Current pyarrow turns
the integer fields of a struct column holding nulls into floats when converting it to pandas, and
the worker then calls ``RecordBatch.slice(0.0, 5.0)``, which pyarrow refuses with
``TypeError: 'float' object cannot be interpreted as an integer``: every micro-batch with data
fails.

The fix converts that one column with ``to_pylist()`` (plain dicts of ints, None for padding),
which is what the worker expects; every other column goes through pyspark's own conversion.
:func:`apply` runs when :mod:`stateful` is imported, which happens in each Python worker when it
unpickles the step function, before it reads the first batch. Drop this module once pyspark is
upgraded past the bug (the check is cheap: remove it and run the integration test).
"""

from __future__ import annotations

from typing import Any

_PATCHED = "_mesh_state_info_fix"


def apply() -> None:
    """Patch pyspark's ApplyInPandasWithStateSerializer once per process (idempotent)."""
    import pandas as pd
    import pyarrow.types as pa_types
    from pyspark.sql.pandas.serializers import ApplyInPandasWithStateSerializer as Serializer

    if getattr(Serializer, _PATCHED, False):
        return
    original = Serializer.arrow_to_pandas

    def arrow_to_pandas(self: Any, arrow_column: Any, *args: Any, **kwargs: Any) -> Any:
        kind = arrow_column.type
        if pa_types.is_struct(kind) and kind.get_field_index("startOffset") >= 0:
            return pd.Series(arrow_column.to_pylist(), dtype=object)
        return original(self, arrow_column, *args, **kwargs)

    Serializer.arrow_to_pandas = arrow_to_pandas  # type: ignore[method-assign]
    setattr(Serializer, _PATCHED, True)
